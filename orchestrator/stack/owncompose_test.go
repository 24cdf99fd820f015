package stack

import (
	"context"
	"errors"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
)

func TestComposeDBCredentials(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want DBCredentials
		err  string
	}{
		{map[string]string{"POSTGRES_PASSWORD": "pw"}, DBCredentials{User: "postgres", Password: "pw", Database: "postgres", Super: "postgres"}, ""},
		{map[string]string{"POSTGRES_USER": "shop", "POSTGRES_PASSWORD": "pw", "POSTGRES_DB": "shopdb"}, DBCredentials{User: "shop", Password: "pw", Database: "shopdb", Super: "shop"}, ""},
		{map[string]string{"RTTLAB_DB_PASSWORD": "pw"}, RttlabDB("pw"), ""},
		{map[string]string{"POSTGRES_USER": "shop"}, DBCredentials{}, "neither POSTGRES_PASSWORD nor RTTLAB_DB_PASSWORD"},
	} {
		got, err := ComposeDBCredentials(c.env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v", c.env, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: %+v %v, want %+v", c.env, got, err, c.want)
		}
	}
}

// An image the engine lacks is one line naming the service and the fix.
func TestComposeImageMissing(t *testing.T) {
	file := fakelab.WriteCompose(t, fakelab.ShopCompose)
	f := enginefake.New()
	f.AddImage("example/postgres:17", nil)
	f.AddImage("example/cache:7", nil)
	err := CheckComposeImages(context.Background(), f, apps.ComposeRef{File: file, AppService: "web", DBService: "pg"})
	want := "service web's image shop_app-web is not present locally: build it first: docker compose -f " + file + " build web"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// servicesOf loads body as a user's compose file and returns its
// services.
func servicesOf(t *testing.T, body string) types.Services {
	t.Helper()
	p, err := LoadOwnCompose(context.Background(), fakelab.WriteCompose(t, body))
	if err != nil {
		t.Fatal(err)
	}
	return p.Services
}

// The app's port, when the entry does not say: the first ports: target,
// else the first expose: entry, else OwnAppPort.
func TestComposeAppPort(t *testing.T) {
	svcs := servicesOf(t, `services:
  published: {image: a, ports: ["127.0.0.1:8000:3000", "4000"], expose: ["9000"]}
  exposed: {image: a, expose: ["9000/tcp", "9100"]}
  neither: {image: a}
`)
	for name, want := range map[string]int{"published": 3000, "exposed": 9000, "neither": OwnAppPort} {
		if got := ComposeAppPort(svcs[name]); got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
}

// A service's container keeps what the file says of its process, health
// check and mounts; a mount rttlab cannot make is refused by name.
func TestComposeServiceSpec(t *testing.T) {
	svcs := servicesOf(t, `services:
  pg:
    image: example/postgres:17
    command: [postgres, -c, fsync=off]
    user: "999"
    init: true
    cap_add: [SYS_NICE]
    healthcheck: {test: [CMD, pg_isready], interval: 2s, retries: 5}
    tmpfs: [/run]
    volumes: [{type: tmpfs, target: /tmp}]
  off:
    image: a
    healthcheck: {disable: true}
  pipe:
    image: a
    volumes: [{type: npipe, source: '\\.\pipe\docker', target: /pipe}]
`)
	spec, err := composeServiceSpec(svcs["pg"], "example/postgres:17")
	if err != nil {
		t.Fatal(err)
	}
	want := &runtime.HealthCheck{Test: []string{"CMD", "pg_isready"}, Interval: 2 * time.Second, Retries: 5}
	tmpfs := []runtime.Mount{{Kind: runtime.MountTmpfs, Target: "/tmp"}, {Kind: runtime.MountTmpfs, Target: "/run"}}
	if spec.Image != "example/postgres:17" || !slices.Equal(spec.Cmd, []string{"postgres", "-c", "fsync=off"}) || spec.User != "999" || !spec.Init ||
		!slices.Equal(spec.CapAdd, []runtime.Capability{"SYS_NICE"}) || !reflect.DeepEqual(spec.Health, want) || !slices.Equal(spec.Mounts, tmpfs) {
		t.Errorf("spec %+v health %+v", spec, spec.Health)
	}
	if spec, err := composeServiceSpec(svcs["off"], "a"); err != nil || spec.Health != nil {
		t.Errorf("a disabled health check is kept: %+v %v", spec.Health, err)
	}
	if _, err := composeServiceSpec(svcs["pipe"], "a"); err == nil || err.Error() != `service pipe: volume type "npipe" at /pipe is not supported: use a bind mount, a volume or a tmpfs` {
		t.Errorf("named pipe: %v", err)
	}
}

// A user's file loads as docker compose loads it: variables from the
// environment, paths relative to the folder, the project named after
// it; an error is one line naming the file.
func TestLoadOwnCompose(t *testing.T) {
	ctx := context.Background()
	file := fakelab.WriteCompose(t, fakelab.ShopCompose)
	dir := filepath.Dir(file)
	t.Setenv("SHOP_DB_PASSWORD", "from-env")
	p, err := LoadOwnCompose(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if pw := p.Services["pg"].Environment["POSTGRES_PASSWORD"]; p.Name != "shop_app" || pw == nil || *pw != "from-env" {
		t.Errorf("project %s, password %v", p.Name, pw)
	}
	if v := p.Services["web"].Volumes; len(v) != 1 || v[0].Source != filepath.Join(dir, "config") {
		t.Errorf("web volumes %+v", v)
	}
	// The folder's .env gives what the environment does not, as with
	// docker compose; one that is not a regular file is refused.
	os.Unsetenv("SHOP_DB_PASSWORD")
	fakelab.WriteFile(t, filepath.Join(dir, ".env"), "SHOP_DB_PASSWORD=from-dotenv\n")
	if p, err = LoadOwnCompose(ctx, file); err != nil {
		t.Fatal(err)
	}
	if pw := p.Services["pg"].Environment["POSTGRES_PASSWORD"]; pw == nil || *pw != "from-dotenv" {
		t.Errorf("password from .env: %v", pw)
	}
	os.Remove(filepath.Join(dir, ".env"))
	if err := os.Symlink("/dev/zero", filepath.Join(dir, ".env")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOwnCompose(ctx, file); err == nil || !strings.Contains(err.Error(), ".env") {
		t.Errorf("a .env linked to a device: %v", err)
	}
	t.Setenv("COMPOSE_DISABLE_ENV_FILE", "true")
	if _, err := LoadOwnCompose(ctx, file); err != nil {
		t.Errorf("a .env that compose is told not to read: %v", err)
	}
	os.Remove(filepath.Join(dir, ".env"))
	bad := fakelab.WriteCompose(t, "services:\n  web:\n    image: a\n    ports: {x: 1}\n")
	if _, err := LoadOwnCompose(ctx, bad); err == nil || !strings.HasPrefix(err.Error(), "compose file "+bad+": ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("bad file: %v", err)
	}
	gone := filepath.Join(dir, "nope.yaml")
	if _, err := LoadOwnCompose(ctx, gone); err == nil || !strings.Contains(err.Error(), gone) {
		t.Errorf("no file: %v", err)
	}
}

// CheckComposeServices names the plan field at fault.
func TestCheckComposeServices(t *testing.T) {
	file := fakelab.WriteCompose(t, fakelab.ShopCompose)
	p, err := LoadOwnCompose(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	web := p.Services["web"]
	web.DependsOn = types.DependsOnConfig{"ghost": {Condition: types.ServiceConditionStarted}}
	ghost := &types.Project{Name: p.Name, Services: types.Services{"web": web, "pg": p.Services["pg"]}}
	for _, c := range []struct {
		p               *types.Project
		app, db         string
		field, contains string
	}{
		{p, "web", "pg", "", ""},
		{p, "", "pg", "app_service", "app_service is missing: name one of its services (cache, pg, web)"},
		{p, "web", "postgres", "db_service", `has no service "postgres": its services are cache, pg, web`},
		{p, "pg", "pg", "compose", `the app service and the database service are both "pg"`},
		{ghost, "web", "pg", "compose", "service web depends on ghost, which the file does not define"},
	} {
		field, err := CheckComposeServices(c.p, apps.ComposeRef{File: file, AppService: c.app, DBService: c.db})
		if field != c.field || (err == nil) != (c.contains == "") || (err != nil && !strings.Contains(err.Error(), c.contains)) {
			t.Errorf("app %q db %q: field %q err %v, want %q %q", c.app, c.db, field, err, c.field, c.contains)
		}
	}
}

// CheckComposeImages passes when the engine has every service's image,
// says to pull one that only names an image, and passes an engine error on.
func TestComposeImagesPresentOrNot(t *testing.T) {
	ctx := context.Background()
	ref := apps.ComposeRef{File: fakelab.WriteCompose(t, fakelab.ShopCompose), AppService: "web", DBService: "pg"}
	f := enginefake.New()
	f.AddImage("shop_app-web", nil)
	f.AddImage("example/postgres:17", nil)
	if err := CheckComposeImages(ctx, f, ref); err == nil || !strings.HasSuffix(err.Error(), "service cache's image example/cache:7 is not present locally: build or pull it first") {
		t.Errorf("cache missing: %v", err)
	}
	f.AddImage("example/cache:7", nil)
	if err := CheckComposeImages(ctx, f, ref); err != nil {
		t.Errorf("all present: %v", err)
	}
	boom := errors.New("inspect: engine is shutting down")
	f.FailOn("ImageID", "", 1, boom)
	if err := CheckComposeImages(ctx, f, ref); !errors.Is(err, boom) {
		t.Errorf("engine error: %v", err)
	}
	if err := CheckComposeImages(ctx, f, apps.ComposeRef{File: ref.File + ".gone"}); err == nil {
		t.Error("a file that does not load passed")
	}
}
