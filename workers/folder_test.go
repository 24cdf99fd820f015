package workers

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// createFolder loads the plan (a built-in name or a file) and creates its
// results folder, unlocked when the test ends.
func createFolder(t *testing.T, planName string) (*Plan, string) {
	t.Helper()
	plan, err := LoadPlan(planName, DefaultLimits(runtime.NumCPU()))
	if err != nil {
		t.Fatal(err)
	}
	return plan, folderOf(t, plan, "v1")
}

// folderOf creates plan's results folder in a temporary folder, written
// by version, and unlocks it when the test ends.
func folderOf(t *testing.T, plan *Plan, version string) string {
	t.Helper()
	f, err := CreateFolder(t.TempDir(), plan, "rails", version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f.Dir()
}

func TestCreateFolderBuiltinPlan(t *testing.T) {
	plan, dir := createFolder(t, PlanWorkersSmoke)
	if !strings.HasSuffix(dir, "-"+PlanWorkersSmoke) {
		t.Errorf("folder %s", dir)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != "workers" || m.PlanFile != PlanWorkersSmoke || m.App != "rails" || m.Version != "v1" || m.Seed != plan.Seed {
		t.Errorf("manifest %+v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "plan.yaml")); err == nil {
		t.Error("a built-in plan is named, not copied")
	}
	back, err := FolderPlan(dir)
	if err != nil || back.Name != plan.Name || len(back.Tasks()) != len(plan.Tasks()) {
		t.Errorf("folder plan %v, %v", back, err)
	}
}

func TestCreateFolderOwnPlan(t *testing.T) {
	src := filepath.Join(t.TempDir(), "mine.yaml")
	yaml := "name: mine\nseed: 7\nconfigs: [2x1]\nmixes:\n  - {name: cpu-heavy, cpu_ms: 5, queries: 1}\nload_fractions: [0.5]\nruns: 1\nrequests: 20\nwarmup: 2\n"
	if err := os.WriteFile(src, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, dir := createFolder(t, src)
	if b, err := os.ReadFile(filepath.Join(dir, "plan.yaml")); err != nil || string(b) != yaml {
		t.Fatalf("plan copy %q, %v", b, err)
	}
	// The folder reads its own copy, wherever the original went.
	if err := os.Remove(src); err != nil {
		t.Fatal(err)
	}
	back, err := FolderPlan(dir)
	if err != nil || back.Name != "mine" || back.Seed != 7 {
		t.Errorf("folder plan %+v, %v", back, err)
	}
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateFolder(file, plan, "rails", "v1"); err == nil {
		t.Error("a results folder was created under a file")
	}
}

func TestReadManifestRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadManifest(dir); err == nil || !strings.Contains(err.Error(), "is not a workers results folder") {
		t.Errorf("no manifest: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"kind":"place"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FolderPlan(dir); err == nil || !strings.Contains(err.Error(), "is not a workers study's manifest") {
		t.Errorf("other kind: %v", err)
	}
}
