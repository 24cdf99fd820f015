package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/rtt"
)

// composeFile writes a compose file of an app service web and its
// PostgreSQL service db.
func composeFile(t *testing.T, dir string) string {
	t.Helper()
	return writeFile(t, dir, "compose.yaml", `services:
  web:
    image: example/web:1
    environment:
      DATABASE_URL: postgres://shop:secret@db:5432/shop
    expose: ["3000"]
    depends_on: [db]
  db:
    image: postgres:16
    environment:
      POSTGRES_USER: shop
      POSTGRES_PASSWORD: secret
      POSTGRES_DB: shop
`)
}

// verify, trace, ci-smoke and up take the own-app flags instead of APP;
// every wrong combination is one line and exit status 2, before the
// engine is asked.
func TestOwnAppFlagsOfEveryCommand(t *testing.T) {
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.sql")
	os.WriteFile(schema, []byte("CREATE TABLE items (id int);\n"), 0o644)
	compose := composeFile(t, dir)
	image := []string{"--app-image", "example/shop:1.4", "--routes", "/api/items,/api/items/1"}
	bad := []struct {
		args []string
		want string
	}{
		{append(slices.Clone(image), "--compose", compose), "--app-image and --compose are exclusive"},
		{[]string{"--app-image", "example/shop:1.4"}, "--app-image example/shop:1.4: name the routes to drive with --routes"},
		{[]string{"go", "--app-image", "example/shop:1.4", "--routes", "/a"}, `drop the argument "go"`},
		{[]string{"go", "--port", "3000"}, "--port describes an app given by --app-image or --compose: add one of them"},
		{[]string{"go", "--db-init", schema}, "--db-init describes an app given by --app-image or --compose"},
		{[]string{"go", "--app-service", "web"}, "--app-service describes an app given by --app-image or --compose"},
		{[]string{"go", "--db-service", "db"}, "--db-service describes an app given by --app-image or --compose"},
		{append(slices.Clone(image), "--app-service", "web"), "--app-service names a service of --compose: drop it with --app-image"},
		{append(slices.Clone(image), "--port", "0"), "--port 0 is out of range 1-65535"},
		{append(slices.Clone(image), "--env", "A"), `--env "A": use NAME=VALUE`},
		{append(slices.Clone(image), "--db-init", filepath.Join(dir, "nope.sql")), "no such file or folder"},
		{[]string{"--app-image", "example/go:1", "--routes", "/a", "--name", "go"}, "--name go is one of rttlab's apps: give another"},
		{[]string{"--app-image", "example/go:1", "--routes", "/a", "--name", "My App"}, `--name "My App": use lower-case letters, digits and -`},
		{[]string{"go", "--name", "shop"}, "--name describes an app given by --app-image or --compose"},
		{[]string{"--compose", compose, "--routes", "/a"}, "--compose " + compose + ": name the app's service with --app-service and its PostgreSQL's with --db-service"},
		{[]string{"--compose", compose, "--app-service", "web", "--routes", "/a"}, "--db-service"},
		{[]string{"--compose", compose, "--app-service", "web", "--db-service", "web", "--routes", "/a"}, `--app-service and --db-service both name "web"`},
		{[]string{"--compose", filepath.Join(dir, "none.yaml"), "--app-service", "web", "--db-service", "db", "--routes", "/a"}, "none.yaml: no such file"},
		{[]string{"--compose", dir, "--app-service", "web", "--db-service", "db", "--routes", "/a"}, ": no such file"},
		{[]string{"--compose", compose, "--app-service", "web", "--db-service", "db"}, "--compose " + compose + ": name the routes to drive with --routes"},
	}
	for _, name := range []string{"verify", "trace", "ci-smoke", "up"} {
		for _, c := range bad {
			args := append([]string{name}, c.args...)
			code, _, errs := execLine(context.Background(), args...)
			if code != 2 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("%v: exit %d, %q; want 2 and one line with %q", args, code, errs, c.want)
			}
		}
		ok := append([]string{name}, image...)
		ok = append(ok, "--port", "3000", "--health", "/healthz", "--db-init", schema, "--env", "A=1")
		if _, err := run(t, ok...); !errors.Is(err, errNoEngineHere) {
			t.Errorf("%v: %v, want to reach the engine", ok, err)
		}
		// An image named like one of rttlab's apps gets a name of its
		// own, said in one line; --name gives another.
		for _, c := range []struct {
			args []string
			say  string
		}{
			{[]string{"--app-image", "rttlab/go:latest", "--routes", "/feed"}, "--app-image rttlab/go:latest: named go-image here, since go is one of rttlab's apps (--name sets another)\n"},
			{[]string{"--app-image", "myco/rails:prod", "--routes", "/feed", "--name", "shop"}, ""},
		} {
			args := append([]string{name}, c.args...)
			out, err := run(t, args...)
			if !errors.Is(err, errNoEngineHere) || !strings.HasPrefix(out, c.say) || (c.say == "" && strings.Contains(out, "named")) {
				t.Errorf("%v: %v, %q; want to reach the engine after %q", args, err, out, c.say)
			}
		}
	}
	// run refuses the same combinations.
	for _, c := range bad[:2] {
		args := append([]string{"run", "--plan", "smoke"}, c.args...)
		if code, _, errs := execLine(context.Background(), args...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", args, code, errs, c.want)
		}
	}
	for _, f := range []string{"--app-service", "--db-service"} {
		args := []string{"run", "--plan", "smoke", f, "web"}
		if code, _, errs := execLine(context.Background(), args...); code != 2 || !strings.Contains(errs, f+" describes an app given by --app-image or --compose") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
	// --routes belongs to the own app, except where the command drives
	// its apps' routes too (ci-smoke, run).
	for _, args := range [][]string{{"verify", "go", "--routes", "/feed"}, {"trace", "go", "--routes", "/feed"}, {"up", "go", "--routes", "/feed"}} {
		code, _, errs := execLine(context.Background(), args...)
		if code != 2 || !strings.Contains(errs, "--routes describes an app given by --app-image or --compose") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
	// Without them, APP stays as it was.
	for _, args := range [][]string{{"trace"}, {"ci-smoke"}, {"up"}} {
		code, _, errs := execLine(context.Background(), args...)
		if code != 2 || !strings.Contains(errs, "accepts 1 arg(s), received 0; usage: rttlab "+args[0]+" APP") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

// The budget gate of an own app: its request types are its routes; a
// budget for another route is refused with the line a tree app gets.
func TestOwnAppBudgets(t *testing.T) {
	dir := t.TempDir()
	image := []string{"--app-image", "example/shop:1.4", "--routes", "/api/items,/api/items/1?full=1"}
	for _, name := range []string{"trace", "ci-smoke"} {
		args := append([]string{name}, image...)
		args = append(args, "--budget", "/api/orders=2")
		code, _, errs := execLine(context.Background(), args...)
		want := "--budget: budget /api/orders: shop does not serve it (its request types: /api/items, /api/items/1?full=1)\n"
		if code != 2 || !strings.HasSuffix(errs, want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and %q", args, code, errs, want)
		}
		code, _, treeErrs := execLine(context.Background(), name, "go", "--budget", "/api/orders=2")
		if code != 2 || !strings.HasPrefix(treeErrs, strings.Replace(errs, "shop", "go", 1)[:len("rttlab: --budget: budget /api/orders: go does not serve it")]) {
			t.Errorf("tree app: %q, own app: %q", treeErrs, errs)
		}
		junit := filepath.Join(dir, name+".xml")
		args = append(append([]string{name}, image...), "--budget", "/api/items=2,/api/items/1?full=1=1", "--junit", junit)
		if _, err := run(t, args...); !errors.Is(err, errNoEngineHere) {
			t.Errorf("%v: %v, want to reach the engine", args, err)
		}
	}
}

// ci-smoke's plan entry is the own app's: the image and its settings
// travel to the run, the budgets and routes with them.
func TestCISmokeOwnPlan(t *testing.T) {
	o := &ciSmokeOptions{delays: "0,1", runs: 2, requests: 20, warmup: 5, traceRequests: 20, seed: 1, shaper: "auto",
		budget: budgetOptions{specs: []string{"/a=2"}}}
	o.own = ownAppOptions{appImage: "example/shop:1.4", routes: []string{"/a", "/b"}, port: 3000}
	changed := func(f string) bool { return f == "app-image" || f == "routes" || f == "port" }
	a, err := o.own.entry(changed)
	if err != nil {
		t.Fatal(err)
	}
	o.own.app = &a
	if o.target, err = ownTarget(a); err != nil {
		t.Fatal(err)
	}
	p, err := ciSmokePlan(o)
	if err != nil {
		t.Fatal(err)
	}
	pa := p.Apps[0]
	if pa.Name != "shop" || pa.Image != "example/shop:1.4" || pa.Port != 3000 || !slices.Equal(pa.Routes, []string{"/a", "/b"}) || pa.Budgets["/a"] != 2 {
		t.Fatalf("entry %+v", pa)
	}
	all, _, _, _ := appsTree()
	if err := rtt.AddOwnApps(p, all); err != nil {
		t.Fatal(err)
	}
	if err := rtt.ValidatePlanApps(p, all); err != nil {
		t.Error(err)
	}
}

// --compose makes an entry of the file (absolute) and its two services,
// named after the app service.
func TestComposeEntry(t *testing.T) {
	dir := t.TempDir()
	composeFile(t, dir)
	t.Chdir(dir)
	o := &ownAppOptions{compose: "compose.yaml", appService: "Web_API", dbService: "db", routes: []string{"/a"}}
	changed := func(f string) bool { return f == "compose" || f == "routes" }
	a, _, err := o.source(changed)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "web-api" || a.Compose != filepath.Join(dir, "compose.yaml") || a.AppService != "Web_API" || a.DBService != "db" || a.Image != "" || !a.Own() {
		t.Fatalf("entry %+v", a)
	}
	// Without --port the app service's own port is used (its expose:);
	// --port wins.
	o = &ownAppOptions{compose: "compose.yaml", appService: "web", dbService: "db", routes: []string{"/a"}, port: 8080, health: "/"}
	for _, c := range []struct {
		changed func(string) bool
		want    int
	}{{changed, 3000}, {func(f string) bool { return changed(f) || f == "port" }, 8080}} {
		a, err := o.entry(c.changed)
		if err != nil {
			t.Fatal(err)
		}
		m, err := rtt.OwnAppMeta(a)
		if err != nil || m.Port != c.want {
			t.Errorf("port %v (%v), want %d", m, err, c.want)
		}
	}
}

// A compose app reaches the engine from every command that takes one.
func TestComposeFlagsReachEngine(t *testing.T) {
	dir := t.TempDir()
	compose := composeFile(t, dir)
	a := rtt.PlanApp{Name: "web", Compose: compose, AppService: "web", DBService: "db", Routes: []string{"/a"}}
	if m, err := rtt.OwnAppMeta(a); err != nil || m.Compose == nil {
		t.Fatalf("compose entry: %v %v", m, err)
	}
	flags := []string{"--compose", compose, "--app-service", "web", "--db-service", "db", "--routes", "/a"}
	for _, args := range [][]string{{"verify"}, {"trace"}, {"ci-smoke"}, {"up"}, {"run", "--plan", "smoke", "--out", filepath.Join(dir, "out")}} {
		args = append(args, flags...)
		if _, err := run(t, args...); !errors.Is(err, errNoEngineHere) {
			t.Errorf("%v: %v, want to reach the engine", args, err)
		}
	}
}
