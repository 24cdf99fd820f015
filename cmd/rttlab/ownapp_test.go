package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/rtt"
)

func TestRunAppImageFlags(t *testing.T) {
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.sql")
	os.WriteFile(schema, []byte("CREATE TABLE items (id int);\n"), 0o644)
	envFile := filepath.Join(dir, "app.env")
	os.WriteFile(envFile, []byte("A=1\n"), 0o644)
	badEnv := filepath.Join(dir, "bad.env")
	os.WriteFile(badEnv, []byte("not a pair\n"), 0o644)
	longEnv := filepath.Join(dir, "long.env")
	os.WriteFile(longEnv, []byte("A=1\nB="+strings.Repeat("x", 200<<10)+"\n"), 0o644)
	binEnv := filepath.Join(dir, "bin.env")
	os.WriteFile(binEnv, append([]byte("\x7fELF\x02\x01\x01\x00\x00"), make([]byte, 4000)...), 0o644)
	hugeEnv := filepath.Join(dir, "huge.env")
	os.WriteFile(hugeEnv, make([]byte, 2<<20), 0o644)
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte("delays_ms: [0, 1]\nruns: 2\nrequests: 5\napps:\n  - name: shop\n    image: example/shop:1\n    routes: [/api/items]\n    db_init: [schema.sql]\n"), 0o644)
	outDir := filepath.Join(dir, "out")
	base := []string{"run", "--plan", "smoke", "--out", outDir, "--app-image", "example/shop:1.4", "--routes", "/api/items,/api/items/1"}
	ok := [][]string{
		base,
		append(slices.Clone(base), "--port", "3000", "--health", "/healthz", "--db-init", schema, "--db-init", dir,
			"--env", "A=1", "--env", "B=x=y", "--env-file", envFile),
		{"run", "--plan", plan, "--out", outDir},
		{"run", "--plan", plan, "--out", outDir, "--routes", "/api/items/7"},
		append(slices.Clone(base), "--env-file", longEnv), // a 200 KiB value
	}
	for _, args := range ok {
		if _, err := run(t, args...); !errors.Is(err, errNoEngineHere) {
			t.Errorf("%v: %v, want to reach the engine", args, err)
		}
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--env", "A"}, `--env "A": use NAME=VALUE`},
		{[]string{"--env", "1A=x"}, `--env "1A=x"`},
		{[]string{"--db-init", filepath.Join(dir, "nope.sql")}, "--db-init " + filepath.Join(dir, "nope.sql") + ": no such file or folder"},
		{[]string{"--port", "0"}, "--port 0 is out of range 1-65535"},
		{[]string{"--port", "70000"}, "--port 70000 is out of range"},
		{[]string{"--health", "healthz"}, `--health "healthz" must be a path starting with /`},
		{[]string{"--routes", "api/items"}, `--routes: route "api/items" must start with /`},
		{[]string{"--env-file", badEnv}, `--env-file: ` + badEnv + `:1: "not a pair" is not NAME=VALUE`},
		{[]string{"--env-file", filepath.Join(dir, "none.env")}, "no such file"},
		{[]string{"--env-file", binEnv}, `--env-file: ` + binEnv + `:1: not a text file (a NUL byte or invalid UTF-8): give NAME=VALUE lines`},
		{[]string{"--env-file", hugeEnv}, `--env-file: env file ` + hugeEnv + ` is 2 MiB, over the limit of 1 MiB`},
		{[]string{"--env-file", "/dev/zero"}, `--env-file: env file /dev/zero is a device: give a regular file of at most 1 MiB`},
		{[]string{"--apps", "go"}, "drop --apps"},
	}
	for _, c := range bad {
		args := append(slices.Clone(base), c.args...)
		code, _, stderr := execLine(context.Background(), args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	for _, args := range [][]string{
		{"run", "--plan", "smoke", "--app-image", "example/shop:1"},
		{"run", "--plan", "smoke", "--port", "3000"},
		{"run", "--plan", "smoke", "--env", "A=1"},
		{"run", "--resume", "x", "--app-image", "example/shop:1"},
	} {
		code, _, stderr := execLine(context.Background(), args...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	if _, err := os.Stat(outDir); err == nil {
		t.Error("a results folder was created without an engine")
	}
}

func TestOwnAppTarget(t *testing.T) {
	dir := t.TempDir()
	o := &ownAppOptions{appImage: "registry.example/team/shop:2", routes: []string{"/a", "/b?x=1"}, port: 3000, health: "/up",
		env: []string{"K=V"}, dbInit: []string{dir}}
	os.WriteFile(filepath.Join(dir, "1.sql"), []byte("SELECT 1;"), 0o644)
	changed := func(f string) bool { return f == "routes" || f == "port" || f == "health" }
	a, err := o.entry(changed)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "shop" || a.Image != "registry.example/team/shop:2" || a.Port != 3000 || a.Env["K"] != "V" || !filepath.IsAbs(a.DBInit[0]) {
		t.Fatalf("entry %+v", a)
	}
	all := map[string]*apps.Meta{}
	if err := rtt.AddOwnApps(&rtt.Plan{Apps: []rtt.PlanApp{a}}, all); err != nil {
		t.Fatal(err)
	}
	tg, err := apps.Resolve(all, "shop")
	if err != nil || tg.Image != a.Image || tg.Meta.Health != "/up" || !slices.Equal(tg.Meta.RoutePaths(), []string{"/a", "/b?x=1"}) {
		t.Fatalf("target %+v, %v", tg, err)
	}
	// The builder never sees a user's image.
	goApp, _ := loadTarget("go")
	if got := imagesFor([]apps.Target{tg, goApp}, true); !slices.Equal(got, []string{"postgres", "agent", "go"}) {
		t.Errorf("imagesFor = %v", got)
	}
	// It is checked on the engine instead.
	st := &stubImages{have: map[string]string{}}
	if _, err := ownImages(context.Background(), st, []apps.Target{tg, goApp}); err == nil ||
		err.Error() != "image registry.example/team/shop:2 is not present locally: build or pull it first" {
		t.Errorf("err = %v", err)
	}
	st.have["registry.example/team/shop:2"] = "sha256:abc"
	if ids, err := ownImages(context.Background(), st, []apps.Target{tg, goApp}); err != nil || len(ids) != 1 || ids["shop"] != "sha256:abc" {
		t.Errorf("ids %v, err %v", ids, err)
	}
	if !slices.Equal(st.asked, []string{"registry.example/team/shop:2", "registry.example/team/shop:2"}) {
		t.Errorf("asked %v", st.asked)
	}
}

// stubImages answers ImageID from a map; anything else is a test failure.
type stubImages struct {
	engine.ImageStore
	have  map[string]string
	asked []string
}

func (s *stubImages) ImageID(_ context.Context, ref string) (string, error) {
	s.asked = append(s.asked, ref)
	if id, ok := s.have[ref]; ok {
		return id, nil
	}
	return "", fmt.Errorf("image %s: %w", ref, engine.ErrNotFound)
}
