package rtt

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/planfile"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

func TestComposeEntryErrors(t *testing.T) {
	file := fakelab.WriteCompose(t, fakelab.ShopCompose)
	ok := PlanApp{Name: "web", Compose: file, AppService: "web", DBService: "pg", Routes: []string{"/items"}}
	if err := ValidateOwnApp(ok); err != nil {
		t.Fatalf("valid entry: %v", err)
	}
	netmode := fakelab.WriteCompose(t, strings.Replace(fakelab.ShopCompose, "    tmpfs: [/data]", "    tmpfs: [/data]\n    network_mode: host", 1))
	for name, c := range map[string]struct {
		edit  func(*PlanApp)
		field string
		want  string
	}{
		"no such file":    {func(a *PlanApp) { a.Compose = filepath.Join(t.TempDir(), "nope.yaml") }, "compose", "no such file"},
		"unknown app":     {func(a *PlanApp) { a.AppService = "api" }, "app_service", `has no service "api": its services are cache, pg, web`},
		"unknown db":      {func(a *PlanApp) { a.DBService = "postgres" }, "db_service", `has no service "postgres"`},
		"missing db":      {func(a *PlanApp) { a.DBService = "" }, "db_service", "db_service is missing"},
		"same service":    {func(a *PlanApp) { a.DBService = "web" }, "compose", "both \"web\""},
		"image and file":  {func(a *PlanApp) { a.Image = "example/shop:1" }, "compose", "not both"},
		"network_mode":    {func(a *PlanApp) { a.Compose = netmode }, "compose", "network_mode \"host\""},
		"services, image": {func(a *PlanApp) { a.Compose = ""; a.Image = "example/shop:1" }, "app_service", "an image: entry has none"},
		"no routes":       {func(a *PlanApp) { a.Routes = nil }, "routes", "routes are missing"},
	} {
		a := ok
		c.edit(&a)
		err := ValidateOwnApp(a)
		var fe *planfile.FieldError
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
			continue
		}
		if !errors.As(err, &fe) || fe.Path != "apps[name=web]."+c.field {
			t.Errorf("%s: error %v is not at field %s", name, err, c.field)
		}
	}
}

func TestComposeMeta(t *testing.T) {
	file := fakelab.WriteCompose(t, fakelab.ShopCompose)
	m, err := OwnAppMeta(PlanApp{Name: "web", Compose: file, AppService: "web", DBService: "pg", Routes: []string{"/items"}})
	if err != nil {
		t.Fatal(err)
	}
	// The image compose builds for a service without image: is
	// <project>-<service>, the project being the folder's name.
	if m.Image != "shop_app-web" || m.Port != 9000 || m.Compose == nil || m.Compose.File != file || m.Compose.DBService != "pg" {
		t.Errorf("meta %+v compose %+v", m, m.Compose)
	}
}

// A compose stack on the fake engine: every service runs under the run's
// labels on its private network, the app and database are the shaped
// pair, the database's credentials come from its environment, named
// volumes are fresh per stack, and verify counts the app role's
// statements (or says why it cannot).
func TestFakeComposeStack(t *testing.T) {
	for _, noPGSS := range []bool{false, true} {
		ctx := context.Background()
		l := fakelab.New(t)
		l.DBRole, l.NoPGSS = "shop", noPGSS
		l.IPByService["web"] = "127.0.0.1"
		file := fakelab.WriteCompose(t, strings.Replace(fakelab.ShopCompose, `expose: ["9000"]`, `expose: ["`+l.HostPort+`"]`, 1))
		m, err := OwnAppMeta(PlanApp{Name: "web", Compose: file, AppService: "web", DBService: "pg", Routes: []string{"/feed"}, Health: "/health",
			Env: map[string]string{"WORKERS": "4"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range []string{"shop_app-web", "example/postgres:17", "example/cache:7"} {
			l.AddImage(img, nil)
		}
		st, _ := startFake(t, l, stack.StackOptions{Target: apps.Target{Name: "web", Meta: m, Env: m.Env, Image: m.Image}}, "path")
		if st.DB != (stack.DBCredentials{User: "shop", Password: "s3cret", Database: "shopdb", Super: "shop"}) {
			t.Errorf("credentials %+v", st.DB)
		}
		roles := map[string]string{}
		for _, c := range l.Created() {
			if c.Labels[engine.LabelRun] != st.RunID {
				t.Errorf("%s lacks the run label", c.Name)
			}
			svc := c.Labels[engine.LabelService]
			if c.Labels[engine.LabelRole] == "agent" {
				continue
			}
			roles[svc] = c.Labels[engine.LabelRole]
			if c.Network != st.Network || !slices.Equal(c.Aliases, []string{svc}) {
				t.Errorf("%s: network %s aliases %v", svc, c.Network, c.Aliases)
			}
			switch svc {
			case "web":
				// The file's wiring stays; --env wins; nothing of rttlab's own.
				if !slices.Contains(c.Env, "DATABASE_URL=postgres://shop:s3cret@pg:5432/shopdb") || !slices.Contains(c.Env, "WORKERS=4") ||
					slices.ContainsFunc(c.Env, func(s string) bool { return strings.HasPrefix(s, "PGPASSWORD=") }) {
					t.Errorf("web env %v", c.Env)
				}
				if len(c.Binds) != 1 || !strings.HasSuffix(c.Binds[0], "/Shop_App/config:/etc/shop:ro") {
					t.Errorf("web binds %v", c.Binds)
				}
			case "pg":
				if !slices.Equal(c.Volumes, []string{"/var/lib/postgresql/data"}) {
					t.Errorf("pg volumes %v", c.Volumes)
				}
			case "cache":
				if !slices.Equal(c.Tmpfs, []string{"/data"}) {
					t.Errorf("cache tmpfs %v", c.Tmpfs)
				}
			}
		}
		if roles["web"] != "app" || roles["pg"] != "db" || roles["cache"] != "service" {
			t.Errorf("roles %v", roles)
		}
		if (st.NoStatements != "") != noPGSS {
			t.Errorf("noPGSS %v: NoStatements %q", noPGSS, st.NoStatements)
		}
		for _, c := range verifyFake(ctx, t, l, st, shaping.VerifyOptions{Requests: 4}) {
			if c.What != "statements per request" {
				continue
			}
			want := "3"
			if noPGSS {
				want = "unavailable"
			}
			if c.Observed != want || (noPGSS && !strings.Contains(c.Detail, "shared_preload_libraries")) {
				t.Errorf("noPGSS %v: statements %q (%s)", noPGSS, c.Observed, c.Detail)
			}
		}
		if err := st.Remove(ctx, engine.NewLab(l, "")); err != nil {
			t.Fatal(err)
		}
		if cs, ns := l.Live(); len(cs)+len(ns) != 0 {
			t.Errorf("left behind: %v %v", cs, ns)
		}
	}
}

// A one-shot service (a migration the app waits for with
// service_completed_successfully) runs to exit 0 before the app starts
// and does not count as a crashed member afterwards; one that fails stops
// the stack with its log.
func TestFakeComposeOneShotService(t *testing.T) {
	for _, code := range []int{0, 3} {
		ctx := context.Background()
		l := fakelab.New(t)
		l.IPByService["web"] = "127.0.0.1"
		body := strings.Replace(fakelab.ShopCompose, `expose: ["9000"]`, `expose: ["`+l.HostPort+`"]`, 1)
		body = strings.Replace(body, "    depends_on: [pg, cache]\n", "    depends_on:\n      pg: {condition: service_started}\n      cache: {condition: service_started}\n      migrate: {condition: service_completed_successfully}\n", 1)
		body = strings.Replace(body, "  cache:\n", "  migrate:\n    image: example/migrate:1\n    depends_on: [pg]\n  cache:\n", 1)
		file := fakelab.WriteCompose(t, body)
		m, err := OwnAppMeta(PlanApp{Name: "web", Compose: file, AppService: "web", DBService: "pg", Routes: []string{"/feed"}, Health: "/health"})
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range []string{"shop_app-web", "example/postgres:17", "example/cache:7", "example/migrate:1"} {
			l.AddImage(img, nil)
		}
		l.CrashOnStart("-migrate", 1, code, "migrated 12 tables\n")
		st, err := stack.StartStack(ctx, engine.NewLab(l, ""), stack.StackOptions{Target: apps.Target{Name: "web", Meta: m, Image: m.Image}, ReadyTimeout: 5 * time.Second})
		if code != 0 {
			if err == nil || !strings.Contains(err.Error(), "service migrate, which web waits for, exited 3") || !strings.Contains(err.Error(), "migrated 12 tables") {
				t.Errorf("failed migration: %v", err)
			}
			if cs, ns := l.Live(); len(cs)+len(ns) != 0 {
				t.Errorf("left behind: %v %v", cs, ns)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, mem := range st.Members {
			if err := stack.CheckRunning(ctx, engine.NewLab(l, ""), mem); err != nil {
				t.Errorf("%s: %v", mem.Service, err)
			}
		}
		if err := st.Remove(ctx, engine.NewLab(l, "")); err != nil {
			t.Fatal(err)
		}
	}
}
