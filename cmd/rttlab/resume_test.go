package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/placement"
	"github.com/rttlab/rttlab/results"
)

// studyFolders writes one results folder of each study (its manifest
// only) and returns them by kind.
func studyFolders(t *testing.T) map[string]string {
	t.Helper()
	p, _ := placement.BuiltinPlan("placement-smoke")
	plan, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{results.KindRTT: testFolder(t)}
	for kind, manifest := range map[string]string{
		results.KindPlacement: fmt.Sprintf(`{"kind":"placement","format":1,"plan":%s}`, plan),
		results.KindWorkers:   `{"kind":"workers","format":1,"plan_file":"workers-smoke"}`,
	} {
		dir := filepath.Join(t.TempDir(), kind)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, results.ManifestFile, manifest)
		dirs[kind] = dir
	}
	return dirs
}

// --resume of a folder another study wrote, or a newer rttlab: one line,
// exit 2, naming the command that continues it; before the engine is
// asked (this DOCKER_HOST answers nothing).
func TestResumeOfAnotherStudysFolder(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	dirs := studyFolders(t)
	cmds := map[string]string{results.KindRTT: "run", results.KindPlacement: "place", results.KindWorkers: "workers"}
	for kind, cmd := range cmds {
		for other, dir := range dirs {
			if other == kind {
				continue
			}
			code, _, errs := execLine(context.Background(), cmd, "--resume", dir)
			want := results.Writer(other) + " --resume " + dir
			if code != 2 || !strings.Contains(errs, want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("%s --resume of a %s folder: exit %d, %q; want 2 and one line naming %q", cmd, other, code, errs, want)
			}
		}
	}
	newer := dirs[results.KindPlacement]
	os.WriteFile(filepath.Join(newer, results.ManifestFile), []byte(`{"kind":"placement","format":9}`), 0o644)
	if code, _, errs := execLine(context.Background(), "place", "--resume", newer); code != 2 || !strings.Contains(errs, "written by a newer rttlab") {
		t.Errorf("a newer folder: exit %d, %q", code, errs)
	}
}

// place --resume continues the folder's own plan and settings.
func TestPlaceResumeKeepsTheFolderPlan(t *testing.T) {
	dir := studyFolders(t)[results.KindPlacement]
	for _, flag := range []string{"--plan=placement", "--seed=3", "--repeat=2", "--keep-alive=off", "--out=x"} {
		name := strings.TrimPrefix(strings.SplitN(flag, "=", 2)[0], "--")
		wantUsage(t, "leave out --"+name, "place", "--resume", dir, flag)
	}
}

// A second writer of a placement or workers folder is refused at once,
// naming the pid that writes it, before the engine is asked.
func TestResumeOfAFolderBeingWritten(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	dirs := studyFolders(t)
	for cmd, kind := range map[string]string{"place": results.KindPlacement, "workers": results.KindWorkers} {
		unlock, err := results.LockDir(dirs[kind])
		if err != nil {
			t.Fatal(err)
		}
		code, _, errs := execLine(context.Background(), cmd, "--resume", dirs[kind])
		unlock()
		// (Held by this test's own process, the lock says so; another
		// process is "another rttlab process (pid N)".)
		want := fmt.Sprintf("(pid %d) already has it open for writing", os.Getpid())
		if code != 1 || !strings.Contains(errs, want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s --resume of a held folder: exit %d, %q; want 1, %q", cmd, code, errs, want)
		}
	}
}

// Every kind of results folder has its study in the registry, under its
// own kind, with the command that writes it; place and workers resume
// through the study's Open.
func TestEveryKindHasAStudy(t *testing.T) {
	if n := len(results.Registered()); n != len(results.Kinds) {
		t.Errorf("%d studies registered for %d kinds", n, len(results.Kinds))
	}
	writers := map[string]string{results.KindRTT: "rttlab run", results.KindPlacement: "rttlab place", results.KindWorkers: "rttlab workers"}
	for _, k := range results.Kinds {
		sk, ok := results.Lookup(k)
		if !ok || sk.Study.Kind() != k || sk.Writer != writers[k] {
			t.Errorf("kind %s: %+v", k, sk)
		}
		if (sk.Open == nil) != (k == results.KindRTT) {
			t.Errorf("kind %s: resume open %v", k, sk.Open != nil)
		}
	}
}

// report of a placement folder none of whose tasks is done writes
// nothing and says so.
func TestReportOfAnUnstartedPlacementFolder(t *testing.T) {
	dir := studyFolders(t)[results.KindPlacement]
	code, out, errs := execLine(context.Background(), "report", dir)
	if code != 1 || out != "" || !strings.Contains(errs, "none of its 4 tasks is done: nothing to report, nothing written") {
		t.Errorf("exit %d, %q, %q", code, out, errs)
	}
}
