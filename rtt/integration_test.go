package rtt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/enginetest"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

func TestIntegrationBaseImageEnsured(t *testing.T) {
	rt := enginetest.Engine(t)
	ctx := context.Background()
	path, id, err := engine.EnsureBase(ctx, rt, engine.BaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id == "" {
		t.Fatal("no image id")
	}
	t.Logf("base image path: %s", path)
	// A second call finds it present.
	path, _, err = engine.EnsureBase(ctx, rt, engine.BaseOptions{})
	if err != nil || path != engine.BasePresent {
		t.Fatalf("second EnsureBase: path %s err %v, want present", path, err)
	}
}

// TestIntegrationDebootstrapImport builds a base image under a throwaway
// tag with debootstrap and imports it, proving the path a machine without
// a registry takes.
func TestIntegrationDebootstrapImport(t *testing.T) {
	rt := enginetest.Engine(t)
	if os.Geteuid() != 0 {
		t.Skip("debootstrap needs root")
	}
	ctx := context.Background()
	ref := "rttlab-test/debootstrap:" + stack.NewRunID()
	t.Cleanup(func() {
		if id, err := rt.ImageID(ctx, ref); err == nil {
			_ = rt.RemoveImage(ctx, id)
		}
	})
	path, id, err := engine.EnsureBase(ctx, rt, engine.BaseOptions{Ref: ref, SkipPull: true})
	if err != nil {
		t.Fatal(err)
	}
	if path != engine.BaseDebootstrapd || id == "" {
		t.Fatalf("path %s id %q, want debootstrap", path, id)
	}
	// The imported tree runs and is Debian trixie.
	runID := stack.NewRunID()
	t.Cleanup(func() { stack.CleanRun(ctx, engine.NewLab(rt, ""), runID) })
	cid, err := rt.CreateContainer(ctx, engine.ContainerSpec{Name: "rttlab-" + runID + "-base", Image: ref, Cmd: []string{"sleep", "60"}, Labels: stack.RunLabels(runID, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, cid); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err := rt.Exec(ctx, cid, engine.ExecSpec{Cmd: []string{"cat", "/etc/os-release"}, Stdout: &out})
	if err != nil || code != 0 {
		t.Fatalf("exec: code %d err %v", code, err)
	}
	if !strings.Contains(out.String(), "trixie") {
		t.Fatalf("os-release does not name trixie:\n%s", out.String())
	}
}

func TestIntegrationVerifyGo(t *testing.T) {
	rt := enginetest.Engine(t)
	all := enginetest.BuiltApps(t, rt, "postgres", "go")
	ctx := context.Background()
	st := startStack(t, rt, all, "go")
	target := st.Target

	checks, err := shaping.VerifyStack(ctx, rt, st, shaping.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		t.Log(c)
	}
	if bad := shaping.Failed(checks); len(bad) > 0 {
		t.Fatalf("verify go failed: %v", bad)
	}

	// The count check can fail: claim /feed does 4 statements and
	// /serial does none per n; verify must catch both and name them.
	wrong := *target.Meta
	wrong.Routes = []apps.Route{{Path: "/feed", Statements: 4}, {Path: "/feed-naive", Statements: 12}}
	wt := target
	wt.Meta = &wrong
	st.Target = wt
	checks, err = shaping.VerifyStack(ctx, rt, st, shaping.VerifyOptions{Requests: 5})
	if err != nil {
		t.Fatal(err)
	}
	bad := shaping.Failed(checks)
	if len(bad) != 1 {
		t.Fatalf("want exactly one failed check, got %v", bad)
	}
	b := bad[0]
	if b.Route != "/feed" || b.Expected != "4" || b.Observed != "3" {
		t.Fatalf("failed check = %+v, want /feed expected 4 observed 3", b)
	}
	if !strings.Contains(b.String(), "go /feed") || !strings.Contains(b.Detail, "feedback") {
		t.Fatalf("failure does not name the app, route and statements: %s", b)
	}
	t.Log(b)
}

func TestIntegrationCleanLeavesForeignContainers(t *testing.T) {
	rt := enginetest.Engine(t)
	ctx := context.Background()
	runID := stack.NewRunID()
	foreignName := "foreign-" + runID
	foreign, err := rt.CreateContainer(ctx, engine.ContainerSpec{Name: foreignName, Image: engine.BaseImage, Cmd: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.RemoveContainer(context.Background(), foreign) })
	netID, err := rt.CreateNetwork(ctx, "rttlab-"+runID, stack.RunLabels(runID, nil))
	if err != nil {
		t.Fatal(err)
	}
	labelled, err := rt.CreateContainer(ctx, engine.ContainerSpec{Name: "rttlab-" + runID + "-x", Image: engine.BaseImage, Cmd: []string{"sleep", "300"},
		Labels: stack.RunLabels(runID, map[string]string{engine.LabelRole: "app"}), Network: "rttlab-" + runID})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, labelled); err != nil {
		t.Fatal(err)
	}
	c, err := stack.CleanRun(ctx, engine.NewLab(rt, ""), runID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Containers != 1 || c.Networks != 1 {
		t.Fatalf("clean removed %s, want 1 container and 1 network", c)
	}
	if _, err := rt.InspectContainer(ctx, labelled); err == nil {
		t.Fatal("labelled container still exists")
	}
	if nets, _ := rt.ListNetworks(ctx, map[string]string{engine.LabelRun: runID}); len(nets) != 0 {
		t.Fatalf("network %s still exists", netID)
	}
	if _, err := rt.InspectContainer(ctx, foreign); err != nil {
		t.Fatalf("foreign container was touched: %v", err)
	}
}

// TestIntegrationScaffoldedAppVerifies exercises `rttlab apps new`: the
// scaffolded folder builds and passes verify as it stands.
func TestIntegrationScaffoldedAppVerifies(t *testing.T) {
	rt := enginetest.Engine(t)
	src, err := engine.FindSource()
	if err != nil {
		t.Fatal(err)
	}
	// The app is scaffolded into a throwaway copy of the module, never
	// into the checkout's apps/ folder.
	mod := scaffoldModule(t, src, "postgres", "go")
	name := "scaffold-" + stack.NewRunID()[:6]
	if _, err := apps.Scaffold(filepath.Join(mod, "apps"), name, "go"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if id, err := rt.ImageID(context.Background(), engine.ImageRef(name)); err == nil {
			_ = rt.RemoveImage(context.Background(), id)
		}
	})
	all := enginetest.Build(t, enginetest.Builder(t, rt, mod), "postgres", name)
	ctx := context.Background()
	st := startStack(t, rt, all, name)
	checks, err := shaping.VerifyStack(ctx, rt, st, shaping.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bad := shaping.Failed(checks); len(bad) > 0 {
		t.Fatalf("scaffolded app fails verify: %v", bad)
	}
}

// TestIntegrationVerifyEveryFramework builds every framework app's image
// and runs the full verify (contract, statement counts, wire checks).
func TestIntegrationVerifyEveryFramework(t *testing.T) {
	rt := enginetest.Engine(t)
	src, _ := engine.FindSource()
	all0, err := apps.Load(apps.FS(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range apps.Targets(all0) {
		if tg.Meta.Mix != "" || tg.Name == "go" {
			continue // mix apps have their own tests; go is verified above
		}
		t.Run(tg.Name, func(t *testing.T) {
			all := enginetest.BuiltApps(t, rt, "postgres", "agent", tg.Meta.Name)
			ctx := context.Background()
			st := startStack(t, rt, all, tg.Name)
			sh, err := shaping.StartAgents(ctx, engine.NewLab(rt, ""), st, "auto", "path", "")
			if err != nil {
				t.Fatal(err)
			}
			checks, err := shaping.VerifyStack(ctx, rt, st, shaping.VerifyOptions{Shaping: sh})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				t.Log(c)
			}
			if bad := shaping.Failed(checks); len(bad) > 0 {
				t.Fatalf("%s fails verify: %v", tg.Name, bad)
			}
		})
	}
}

// scaffoldModule makes a temporary module with the checkout's go.mod and
// go.sum and copies of the named app folders, so a scaffolded Go app
// builds as ./apps/NAME there without touching the checkout.
func scaffoldModule(t *testing.T, src string, folders ...string) string {
	t.Helper()
	mod := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range folders {
		if err := os.CopyFS(filepath.Join(mod, "apps", f), os.DirFS(filepath.Join(src, "apps", f))); err != nil {
			t.Fatal(err)
		}
	}
	return mod
}

// startStack starts the published stack of the app name of all (built),
// removed when the test ends.
func startStack(t *testing.T, rt *engine.Runtime, all map[string]*apps.Meta, name string) *stack.Stack {
	t.Helper()
	target, err := apps.Resolve(all, name)
	if err != nil {
		t.Fatal(err)
	}
	st, err := stack.StartStack(context.Background(), engine.NewLab(rt, ""), stack.StackOptions{Target: target, Publish: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Remove(context.Background(), engine.NewLab(rt, "")) })
	return st
}
