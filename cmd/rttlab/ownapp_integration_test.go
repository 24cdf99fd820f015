package main

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

// A user's own image, built here from a Dockerfile in a temp folder (not
// from apps/), with its own schema file, is verified and run at two
// settings from a folder outside the checkout; a schema that fails in
// PostgreSQL is one line naming the file and line, with nothing left.
func TestIntegrationOwnAppImage(t *testing.T) {
	bin, rt, image := buildOwnImage(t)
	defer rt.Close()

	dir := t.TempDir() // outside the checkout
	os.WriteFile(filepath.Join(dir, "schema.sql"), []byte("CREATE TABLE shop_marker (id int PRIMARY KEY);\nINSERT INTO shop_marker VALUES (1);\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(`name: own
seed: 5
delays_ms: [0, 1]
runs: 2
requests: 20
`+drillProbes+`trace_requests: 10
apps:
  - name: shop
    image: `+image+`
    routes: [/feed]
    port: 8080
    health: /health
    db_init: [schema.sql]
    env: {SHOP_MODE: test}
`), 0o644)
	code, out, errOut := runBinary(t, bin, dir, "run", "--plan", "plan.yaml", "--out", filepath.Join(dir, "out"))
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "results: ") || strings.Contains(errOut, "image shop:") {
		t.Errorf("run output:\n%s\n%s", out, errOut)
	}
	// verify and trace take the same flags; the budget gate is exact.
	own := []string{"--app-image", image, "--routes", "/feed", "--health", "/health", "--db-init", "schema.sql"}
	checkVerifyTrace(t, bin, dir, own)

	// The same from flags, with a schema that fails: one line, exit 1,
	// nothing left behind.
	os.WriteFile(filepath.Join(dir, "bad.sql"), []byte("SELECT 1;\nCREAT TABLE x (id int);\n"), 0o644)
	code, _, errOut = runBinary(t, bin, dir, "run", "--plan", "smoke", "--app-image", image, "--routes", "/feed",
		"--health", "/health", "--db-init", "bad.sql", "--delays", "0,1", "--runs", "1", "--requests", "5", "--out", filepath.Join(dir, "out"))
	if code == 0 || !strings.Contains(errOut, filepath.Join(dir, "bad.sql")+`:2: ERROR: syntax error at or near "CREAT"`) {
		t.Errorf("bad schema: exit %d\n%s", code, errOut)
	}
	checkNothingLeft(t, rt, image)
}

// buildOwnImage builds the rttlab binary and its postgres, agent and go
// images, then the user's image as a user would, never through rttlab:
// rttlab's go app as a base (no network needed), from a Dockerfile in a
// temp folder.
func buildOwnImage(t *testing.T) (bin string, rt *engine.Runtime, image string) {
	t.Helper()
	bin, root := drillBinary(t)
	if code, _, errOut := runBinary(t, bin, root, "images", "build", "postgres", "agent", "go"); code != 0 {
		t.Fatalf("images build: exit %d\n%s", code, errOut)
	}
	ctx := context.Background()
	rt, err := engine.NewRuntime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	image = "rttlab-it-own/shop:test"
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	df := []byte("FROM " + engine.ImageRef("go") + "\nENV SHOP_FLAVOUR=integration\n")
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
	tw.Write(df)
	tw.Close()
	if _, err := rt.BuildImage(ctx, &tb, engine.BuildOptions{Tag: image}); err != nil {
		t.Fatal(err)
	}
	return bin, rt, image
}

// checkNothingLeft checks that no container of a run is left and that
// rttlab never removed, rebuilt or retagged the user's image.
func checkNothingLeft(t *testing.T, rt *engine.Runtime, image string) {
	t.Helper()
	ctx := context.Background()
	cs, _ := rt.ListContainers(ctx, map[string]string{engine.LabelRun: ""})
	if len(cs) != 0 {
		t.Errorf("%d containers left", len(cs))
	}
	if _, err := rt.ImageID(ctx, image); err != nil {
		t.Errorf("the user's image is gone: %v", err)
	}
}

// checkVerifyTrace runs verify and trace on a user's app (the flags in
// app) from dir: verify passes; trace counts /feed's 3 round trips, so a
// budget of 3 passes (JUnit file without failures) and 2 fails with exit 3.
func checkVerifyTrace(t *testing.T, bin, dir string, app []string) {
	t.Helper()
	code, out, errOut := runBinary(t, bin, dir, append([]string{"verify"}, app...)...)
	if code != 0 || !strings.Contains(out, "/feed") {
		t.Errorf("verify: exit %d\n%s\n%s", code, out, errOut)
	}
	junit := filepath.Join(dir, "budgets.xml")
	code, out, errOut = runBinary(t, bin, dir, append([]string{"trace", "--requests", "10", "--budget", "/feed=3", "--junit", junit}, app...)...)
	if code != 0 {
		t.Errorf("trace --budget /feed=3: exit %d\n%s\n%s", code, out, errOut)
	}
	if x, err := os.ReadFile(junit); err != nil || !strings.Contains(string(x), `failures="0"`) {
		t.Errorf("junit: %v\n%s", err, x)
	}
	code, out, errOut = runBinary(t, bin, dir, append([]string{"trace", "--requests", "10", "--budget", "/feed=2"}, app...)...)
	if code != 3 || !strings.Contains(out+errOut, "/feed") {
		t.Errorf("trace --budget /feed=2: exit %d, want 3\n%s\n%s", code, out, errOut)
	}
}

// A user's compose file with two services (their app and their
// PostgreSQL, wired by the file's own environment) is verified, traced and
// run at two settings from a folder outside the checkout; everything is
// gone afterwards and the user's images stay.
func TestIntegrationOwnCompose(t *testing.T) {
	bin, rt, image := buildOwnImage(t)
	defer rt.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(`services:
  web:
    image: `+image+`
    environment:
      PGHOST: database
      PGPORT: "5432"
      PGUSER: rttlab
      PGDATABASE: rttlab
      PGPASSWORD: ${SHOP_DB_PASSWORD:-from-the-compose-file}
      PORT: "8080"
    ports: ["8080"]
    depends_on: [database]
  database:
    image: `+engine.ImageRef("postgres")+`
    environment:
      RTTLAB_DB_PASSWORD: ${SHOP_DB_PASSWORD:-from-the-compose-file}
`), 0o644)
	app := []string{"--compose", "compose.yaml", "--app-service", "web", "--db-service", "database", "--routes", "/feed", "--health", "/health"}
	checkVerifyTrace(t, bin, dir, app)
	code, out, errOut := runBinary(t, bin, dir, append([]string{"run", "--plan", "smoke", "--delays", "0,1", "--runs", "2", "--requests", "10",
		"--out", filepath.Join(dir, "out")}, app...)...)
	if code != 0 || !strings.Contains(out, "results: ") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	// A service the file does not define: one line, exit 2.
	code, _, errOut = runBinary(t, bin, dir, "verify", "--compose", "compose.yaml", "--app-service", "api", "--db-service", "database", "--routes", "/feed")
	if code != 2 || !strings.Contains(errOut, `has no service "api"`) {
		t.Errorf("unknown service: exit %d\n%s", code, errOut)
	}
	checkNothingLeft(t, rt, image)
}
