package rtt

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

const ownPlanYAML = `delays_ms: [0, 1]
apps:
  - name: shop
    image: example/shop:1.4
    routes: [/api/items, /api/items/1]
    port: 3000
    health: /healthz
    db_init: [schema.sql]
    env: {LOG_LEVEL: warn}
    statements: {/api/items: 1}
`

func TestPlanOwnAppFields(t *testing.T) {
	dir := t.TempDir()
	fakelab.WriteFile(t, filepath.Join(dir, "schema.sql"), "CREATE TABLE items (id int);")
	file := filepath.Join(dir, "mine.yaml")
	p, err := ParsePlan(file, []byte(ownPlanYAML))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Apps[0]
	if a.Image != "example/shop:1.4" || a.Port != 3000 || a.Health != "/healthz" || a.Env["LOG_LEVEL"] != "warn" ||
		!slices.Equal(a.DBInit, []string{filepath.Join(dir, "schema.sql")}) {
		t.Fatalf("entry %+v", a)
	}
	all := map[string]*apps.Meta{}
	if err := AddOwnApps(p, all); err != nil {
		t.Fatal(err)
	}
	tg, err := apps.Resolve(all, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if tg.Image != "example/shop:1.4" || stack.TargetImage(tg, engine.Platform{}) != "example/shop:1.4" || tg.Meta.Port != 3000 || tg.Env["LOG_LEVEL"] != "warn" {
		t.Fatalf("target %+v", tg)
	}
	r0, _ := tg.Meta.Route("/api/items")
	r1, _ := tg.Meta.Route("/api/items/1")
	if r0.Undeclared || r0.Statements != 1 || !r1.Undeclared {
		t.Errorf("routes %+v %+v", r0, r1)
	}
	if tg.Meta.StatementsPerRequest("/api/items/1") != -1 || tg.Meta.StatementsPerRequest("/api/items") != 1 {
		t.Error("undeclared statements must read as unknown")
	}
	if err := ValidatePlanApps(p, all); err != nil {
		t.Error(err)
	}
	// An image entry may not take a name of the tree.
	tree, _ := apps.Load(apps.FS(""))
	p.Apps[0].Name = "go"
	if err := AddOwnApps(p, tree); err == nil || !strings.Contains(err.Error(), "rttlab's own app") {
		t.Errorf("err = %v", err)
	}
	if stack.TargetImage(apps.Target{Meta: &apps.Meta{Name: "go"}}, engine.Platform{}) != engine.ImageRef("go") {
		t.Error("a tree app runs the image rttlab builds")
	}
}

func TestPlanOwnAppErrors(t *testing.T) {
	dir := t.TempDir()
	fakelab.WriteFile(t, filepath.Join(dir, "schema.sql"), "")
	file := filepath.Join(dir, "mine.yaml")
	for name, c := range map[string]struct{ from, to, want string }{
		"port range":   {"port: 3000", "port: 70000", ":6: app shop: port 70000 is out of range 1-65535"},
		"health":       {"health: /healthz", "health: healthz", `:7: app shop: health "healthz" must be a path starting with /`},
		"db_init":      {"[schema.sql]", "[missing.sql]", ":8: app shop: db_init " + filepath.Join(dir, "missing.sql") + ": no such file or folder"},
		"env name":     {"LOG_LEVEL", "LOG-LEVEL", `:9: app shop: env "LOG-LEVEL" is not a variable name`},
		"statements":   {"/api/items: 1}", "/nope: 1}", ":10: app shop: statements for /nope: not one of its routes"},
		"no routes":    {"    routes: [/api/items, /api/items/1]\n", "", ":3: app shop: routes are missing"},
		"mix":          {"    routes: [/api/items, /api/items/1]\n", "    mix: redmine\n", ":5: app shop: a mix drives"},
		"no image":     {"    image: example/shop:1.4\n", "", ":5: app shop: port applies to an app given by image:"},
		"route slash":  {"/api/items/1]", "api/items/1]", `app shop: route "api/items/1" must start with /`},
		"unknown kind": {"port: 3000", "port: x", `:6: "x" is not a whole number`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePlan(file, []byte(strings.Replace(ownPlanYAML, c.from, c.to, 1)))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), file) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line with %q", err, c.want)
			}
		})
	}
}

// An own app's stack: its image, port, environment (PG*, DATABASE_URL,
// its own), its init files applied as the app's role, and verify that
// reports undeclared statement counts without asserting them.
func TestFakeOwnAppStackAndVerify(t *testing.T) {
	ctx := context.Background()
	fakelab.OnEach(t, func(t *testing.T, l *fakelab.Lab) {
		dir := t.TempDir()
		schema := fakelab.WriteFile(t, filepath.Join(dir, "schema.sql"), "CREATE TABLE items (id int);")
		custom := fakelab.WriteFile(t, filepath.Join(dir, "data.dump"), "PGDMP-archive")
		port := l.Apps["go"].Port
		m, err := OwnAppMeta(PlanApp{Name: "shop", Image: "example/shop:1.4", Routes: []string{"/feed", "/serial?n=3"},
			Port: port, Health: "/health", DBInit: []string{schema, custom}, Env: map[string]string{"LOG_LEVEL": "warn", "PGPORT": "5432"},
			Statements: map[string]int{"/feed": 3}})
		if err != nil {
			t.Fatal(err)
		}
		l.AddImage("example/shop:1.4", nil)
		var applied []string
		l.Handle("psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -U rttlab", func(ctx context.Context, x *enginefake.Call) (int, error) {
			applied = append(applied, x.Flag("-f"))
			if len(x.Env) != 1 || x.Env[0] == "PGPASSWORD=" || !strings.HasPrefix(x.Env[0], "PGPASSWORD=") || x.User != "postgres" {
				t.Errorf("env %v", x.Env)
			}
			return 0, nil
		})
		l.Handle("pg_restore", func(ctx context.Context, x *enginefake.Call) (int, error) {
			applied = append(applied, x.Cmd[len(x.Cmd)-1])
			return 0, nil
		})
		tg := apps.Target{Name: "shop", Meta: m, Env: m.Env, Image: m.Image}
		st, _ := startFake(t, l, stack.StackOptions{Target: tg}, "path")
		if !slices.Equal(applied, []string{"/tmp/rttlab-init/001-schema.sql", "/tmp/rttlab-init/002-data.dump"}) {
			t.Errorf("applied %v", applied)
		}
		if got := l.Copied[st.Role("db").Name]["/tmp/rttlab-init/001-schema.sql"]; string(got) != "CREATE TABLE items (id int);" {
			t.Errorf("copied %q", got)
		}
		for _, c := range l.Started() {
			if c.Labels[engine.LabelRole] != "app" {
				continue
			}
			if c.Image != "example/shop:1.4" {
				t.Errorf("image %s", c.Image)
			}
			for _, kv := range []string{"DATABASE_URL=postgres://rttlab:" + st.DB.Password + "@db:5432/rttlab?sslmode=disable",
				"PGHOST=db", "PGPASSWORD=" + st.DB.Password, "LOG_LEVEL=warn", fmt.Sprintf("PORT=%d", port)} {
				if !slices.Contains(c.Env, kv) {
					t.Errorf("app env %v lacks %s", c.Env, kv)
				}
			}
		}
		var counts []string
		for _, c := range verifyFake(ctx, t, l, st, shaping.VerifyOptions{Requests: 4, SerialN: 3}) {
			if c.What == "statements per request" {
				counts = append(counts, c.Route+" "+c.Expected+" "+c.Observed)
			}
		}
		if !slices.Equal(counts, []string{"/feed 3 3", "/serial?n=3 (not declared) 3"}) {
			t.Errorf("counts %q", counts)
		}
	})
}

// verifyFake verifies the stack on the fake lab, failing the test on an
// error or a failed check; it returns every check.
func verifyFake(ctx context.Context, t *testing.T, l *fakelab.Lab, st *stack.Stack, o shaping.VerifyOptions) []shaping.Check {
	t.Helper()
	checks, err := shaping.VerifyStack(ctx, l.Runtime(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !c.OK {
			t.Errorf("check failed: %+v", c)
		}
	}
	return checks
}

// psql's error line becomes one line naming the user's file and line.
func TestFakeDBInitFailure(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, l *fakelab.Lab) {
		dir := t.TempDir()
		schema := fakelab.WriteFile(t, filepath.Join(dir, "schema.sql"), "CREAT TABLE items (id int);")
		l.Handle("psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -U rttlab", func(ctx context.Context, x *enginefake.Call) (int, error) {
			fmt.Fprintf(x.Stderr, "psql:%s:1: ERROR:  syntax error at or near \"CREAT\"\nLINE 1: CREAT TABLE items (id int);\n", x.Flag("-f"))
			return 3, nil
		})
		m, _ := OwnAppMeta(PlanApp{Name: "shop", Image: "example/shop:1.4", Routes: []string{"/feed"}, DBInit: []string{schema}})
		l.AddImage("example/shop:1.4", nil)
		_, err := stack.StartStack(context.Background(), l.Runtime(), stack.StackOptions{Target: apps.Target{Name: "shop", Meta: m, Image: m.Image}})
		want := "--db-init " + schema + `:1: ERROR: syntax error at or near "CREAT"`
		if err == nil || strings.Split(err.Error(), "\n")[0] != want {
			t.Fatalf("err = %v, want %q", err, want)
		}
		if cs, ns := l.Left(); len(cs)+len(ns) != 0 {
			t.Errorf("left behind: %v %v", cs, ns)
		}
	})
}

// A user's app that never becomes ready: the line says how long rttlab
// waited, on which path and port, what the app last answered, and ends
// with its last log lines; nothing is left behind.
func TestFakeOwnAppNeverReady(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, l *fakelab.Lab) {
		l.Healthy.Store(false)
		m, err := OwnAppMeta(PlanApp{Name: "shop", Image: "example/shop:1.4", Routes: []string{"/feed"}, Health: "/health", Port: l.Apps["go"].Port})
		if err != nil {
			t.Fatal(err)
		}
		l.AddImage("example/shop:1.4", nil)
		_, err = stack.StartStack(context.Background(), l.Runtime(), stack.StackOptions{Target: apps.Target{Name: "shop", Meta: m, Image: m.Image}, ReadyTimeout: 700 * time.Millisecond})
		want := fmt.Sprintf("app shop (rttlab-%s-app) did not answer /health on port %d with 200 within 700ms (last: 503 Service Unavailable); last log lines:", "", m.Port)
		if err == nil {
			t.Fatal("no error")
		}
		line := strings.Split(err.Error(), "\n")[0]
		if pre, post, ok := strings.Cut(want, "rttlab-"); !ok || !strings.HasPrefix(line, pre) || !strings.HasSuffix(line, post[strings.Index(post, " did"):]) {
			t.Errorf("err = %q, want like %q", line, want)
		}
		if cs, ns := l.Left(); len(cs)+len(ns) != 0 {
			t.Errorf("left behind: %v %v", cs, ns)
		}
	})
}

// startFake starts a shaped stack on the lab, as a study does, and removes
// it when the test ends.
func startFake(t *testing.T, l *fakelab.Lab, o stack.StackOptions, scope string) (*stack.Stack, *shaping.Shaping) {
	t.Helper()
	st, sh, err := shaping.StartShaped(context.Background(), l.Runtime(), o, "auto", scope, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Remove(context.Background(), l.Runtime()) })
	return st, sh
}
