// Package enginetest gives every integration test (the stack, shaping and
// RTT study packages' and those of the other studies) a connection to the
// engine and the checkout's images, built, and the check that a test's
// stack left nothing behind.
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
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// Engine connects to the engine. Under `make test` (RTTLAB_INTEGRATION=1)
// a missing engine fails the test; in a plain `go test` without an engine
// the test skips, and with -short it always skips.
func Engine(t testing.TB) *engine.Runtime {
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

// Builder returns a Builder over src/apps (src: a module holding rttlab's
// apps, the checkout when empty) that cross-builds Go programs in that
// module, the base image ensured first. Its version holds spaces, as a
// user's may.
func Builder(t testing.TB, rt *engine.Runtime, src string) *engine.Builder {
	t.Helper()
	if src == "" {
		var err error
		if src, err = engine.FindSource(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := engine.EnsureBase(context.Background(), rt, engine.BaseOptions{}); err != nil {
		t.Fatalf("base image: %v", err)
	}
	fsys := apps.FS(src)
	all, err := apps.Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Builder{Images: rt, Apps: all, FS: fsys, GOOS: "linux", GOARCH: runtime.GOARCH, SrcDir: src,
		Version: "test (with spaces)", Commit: "abc", Log: &bytes.Buffer{}}
}

// Build builds the named images with b and returns every app's metadata.
func Build(t testing.TB, b *engine.Builder, names ...string) map[string]*apps.Meta {
	t.Helper()
	built, err := b.Build(context.Background(), names)
	if err != nil {
		t.Fatalf("build %v: %v", names, err)
	}
	for _, r := range built {
		t.Logf("built %s %s in %s", r.Tag, r.ID[:19], r.Duration.Round(time.Millisecond))
	}
	return b.Apps
}

// BuiltApps builds the named images from the checkout and returns every
// app's metadata.
func BuiltApps(t testing.TB, rt *engine.Runtime, names ...string) map[string]*apps.Meta {
	t.Helper()
	return Build(t, Builder(t, rt, ""), names...)
}

// BuiltTarget builds the named images from the checkout, as BuiltApps
// does, and returns the target of app among their metadata.
func BuiltTarget(t testing.TB, rt *engine.Runtime, app string, images ...string) apps.Target {
	t.Helper()
	target, err := apps.Resolve(BuiltApps(t, rt, images...), app)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// RemoveAtEnd removes st from the engine when the test ends; the test
// fails where that fails or leaves a container of st's run.
func RemoveAtEnd(t testing.TB, rt *engine.Runtime, st *stack.Stack) {
	t.Cleanup(func() {
		if err := st.Remove(context.Background(), engine.NewLab(rt, "")); err != nil {
			t.Error(err)
		}
		NoneLeft(t, rt, st.RunID)
	})
}

// NoneLeft fails the test where a container of the run runID remains.
func NoneLeft(t testing.TB, rt *engine.Runtime, runID string) {
	t.Helper()
	if cs, _ := rt.ListContainers(context.Background(), map[string]string{engine.LabelRun: runID}); len(cs) != 0 {
		t.Errorf("%d containers of run %s remain after cleanup", len(cs), runID)
	}
}
