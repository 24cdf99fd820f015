package workers

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results"
)

// oldFolder is a workers folder as rttlab wrote them before every study
// named its folder <UTC time>Z-<plan>: <local time>-<plan>, its manifest
// written before the lock, interrupted in task-3 with a line of runs.jsonl
// cut by the interruption.
const oldFolder = "testdata/20261207T102820-workers-fake"

// A folder of the earlier layout is still read, reported and resumed:
// OpenFolder trims its cut line and the resume does every task once.
func TestWorkersOldLayoutFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), filepath.Base(oldFolder))
	if err := os.CopyFS(dir, os.DirFS(oldFolder)); err != nil {
		t.Fatal(err)
	}
	if done, total, err := results.Progress(Study{}, dir); err != nil || done != 3 || total < 4 {
		t.Fatalf("progress %d of %d, %v", done, total, err)
	}
	if _, err := (Study{}).Report(dir, io.Discard); err != nil {
		t.Fatalf("report: %v", err)
	}
	plan, err := FolderPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := OpenFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, runsFile)); !strings.HasSuffix(string(b), "}\n") {
		t.Fatal("OpenFolder left the cut line of runs.jsonl")
	}
	l := newWorkersLab(t)
	if _, err := runOn(t, l, plan, dir, context.Background()); err != nil {
		t.Fatalf("resume: %v", err)
	}
	j := checkOnce(t, plan, dir)
	checkStudyTasks(t, dir, j.Order)
}
