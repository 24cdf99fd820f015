package workers

import (
	"context"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/results/resultstest"
)

// oldFolder is a workers folder as rttlab wrote them before every study
// named its folder <UTC time>Z-<plan>: <local time>-<plan>, its manifest
// written before the lock, interrupted in task-3 with a line of runs.jsonl
// cut by the interruption.
const oldFolder = "testdata/20261207T102820-workers-fake"

// A folder of the earlier layout is still read, reported and resumed:
// OpenFolder trims its cut line and the resume does every task once.
func TestWorkersOldLayoutFolder(t *testing.T) {
	for _, d := range fakelab.Doubles {
		t.Run(string(d), func(t *testing.T) {
			dir, _ := resultstest.OldFolder(t, Study{}, oldFolder, 3, 4)
			plan, err := FolderPlan(dir)
			if err != nil {
				t.Fatal(err)
			}
			resultstest.OpenTrimmed(t, OpenFolder, dir, runsFile, "OpenFolder left the cut line of runs.jsonl")
			l := newWorkersLab(t, d)
			if _, err := runOn(t, l, plan, dir, context.Background()); err != nil {
				t.Fatalf("resume: %v", err)
			}
			j := checkOnce(t, plan, dir)
			checkStudyTasks(t, dir, j.Order)
		})
	}
}
