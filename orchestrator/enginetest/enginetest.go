// Package enginetest gives the integration tests of the studies built on
// the orchestrator (placement, workers) what the orchestrator's own
// integration tests use: a connection to the engine and the checkout's
// images, built.
package enginetest

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
)

// Engine connects to the engine. Under `make test` (RTTLAB_INTEGRATION=1)
// a missing engine fails the test; in a plain `go test` without an engine
// the test skips, and with -short it always skips.
func Engine(t *testing.T) *engine.Runtime {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt, err := engine.NewRuntime(ctx)
	if err != nil {
		if os.Getenv("RTTLAB_INTEGRATION") != "" {
			t.Fatalf("integration test needs an engine: %v", err)
		}
		t.Skipf("no engine (run `make test` for integration tests): %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// BuiltApps builds the named images from the checkout (the base image
// first, when missing) and returns every app's metadata.
func BuiltApps(t *testing.T, rt *engine.Runtime, names ...string) map[string]*apps.Meta {
	t.Helper()
	src, err := engine.FindSource()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := engine.EnsureBase(context.Background(), rt, engine.BaseOptions{}); err != nil {
		t.Fatalf("base image: %v", err)
	}
	fsys := apps.FS(src)
	all, err := apps.Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	b := &engine.Builder{Images: rt, Apps: all, FS: fsys, GOOS: "linux", GOARCH: runtime.GOARCH, SrcDir: src,
		Version: "test", Log: &bytes.Buffer{}}
	built, err := b.Build(context.Background(), names)
	if err != nil {
		t.Fatalf("build %v: %v", names, err)
	}
	for _, r := range built {
		t.Logf("built %s %s in %s", r.Tag, r.ID[:19], r.Duration.Round(time.Millisecond))
	}
	return b.Apps
}
