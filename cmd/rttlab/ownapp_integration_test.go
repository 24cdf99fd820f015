package main

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator"
)

// A user's own image, built here from a Dockerfile in a temp folder (not
// from apps/), with its own schema file, is verified and run at two
// settings from a folder outside the checkout; a schema that fails in
// PostgreSQL is one line naming the file and line, with nothing left.
func TestIntegrationOwnAppImage(t *testing.T) {
	bin, root := drillBinary(t)
	ctx := context.Background()
	if code, _, errOut := runBinary(t, bin, root, "images", "build", "postgres", "agent", "go"); code != 0 {
		t.Fatalf("images build: exit %d\n%s", code, errOut)
	}
	// The user's image: rttlab's go app as a base (no network needed),
	// built and tagged as a user would, never through rttlab.
	rt, err := orchestrator.NewRuntime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	const image = "rttlab-it-own/shop:test"
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	df := []byte("FROM " + orchestrator.ImageRef("go") + "\nENV SHOP_FLAVOUR=integration\n")
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
	tw.Write(df)
	tw.Close()
	if _, err := rt.BuildImage(ctx, &tb, orchestrator.BuildOptions{Tag: image}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir() // outside the checkout
	os.WriteFile(filepath.Join(dir, "schema.sql"), []byte("CREATE TABLE shop_marker (id int PRIMARY KEY);\nINSERT INTO shop_marker VALUES (1);\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(`name: own
seed: 5
delays_ms: [0, 1]
runs: 2
requests: 20
warmup: 2
calibrate: "off"
icmp_count: 5
select1_runs: 1
select1_calls: 10
task_icmp_count: 2
trace_requests: 10
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
	// The same from flags, with a schema that fails: one line, exit 1,
	// nothing left behind.
	os.WriteFile(filepath.Join(dir, "bad.sql"), []byte("SELECT 1;\nCREAT TABLE x (id int);\n"), 0o644)
	code, _, errOut = runBinary(t, bin, dir, "run", "--plan", "smoke", "--app-image", image, "--routes", "/feed",
		"--health", "/health", "--db-init", "bad.sql", "--delays", "0,1", "--runs", "1", "--requests", "5", "--out", filepath.Join(dir, "out"))
	if code == 0 || !strings.Contains(errOut, filepath.Join(dir, "bad.sql")+`:2: ERROR: syntax error at or near "CREAT"`) {
		t.Errorf("bad schema: exit %d\n%s", code, errOut)
	}
	cs, _ := rt.ListContainers(ctx, map[string]string{orchestrator.LabelRun: ""})
	if len(cs) != 0 {
		t.Errorf("%d containers left", len(cs))
	}
	// rttlab never removed, rebuilt or retagged the user's image.
	if _, err := rt.ImageID(ctx, image); err != nil {
		t.Errorf("the user's image is gone: %v", err)
	}
}
