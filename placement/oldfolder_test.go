package placement

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/results/resultstest"
)

// oldFolder is a placement folder as rttlab wrote them before every study
// named its folder <UTC time>Z-<plan>: 20261207-102800-<plan>-<run id>,
// its manifest written by the runner without the lock, interrupted in
// rep-1 after baseline was done, with a sample line cut by the
// interruption.
const oldFolder = "testdata/20261207-102800-placement-fake-1a2b3c4d"

// A folder of the earlier layout is still read, reported and resumed:
// OpenFolder trims its cut line, the resume runs rep-1 again as attempt 2
// and every task is done once.
func TestPlacementOldLayoutFolder(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		dir, files := resultstest.OldFolder(t, Study{}, oldFolder, 1, 3)
		if len(files) < 2 || filepath.Base(files[1]) != results.SummaryMDFile {
			t.Errorf("report wrote %v", files)
		}
		p, err := FolderPlan(dir)
		if err != nil {
			t.Fatal(err)
		}
		resultstest.OpenTrimmed(t, OpenFolder, dir, SamplesFile, "OpenFolder left the cut sample line")
		l, ps := startLab(t, p, d)
		if _, err := (&Runner{Runtime: l.Runtime(), Engine: l, Session: ps, Dir: dir, Version: "test", NoPlots: fakelab.UnderRace}).Run(context.Background()); err != nil {
			t.Fatalf("resume: %v", err)
		}
		j := checkEveryTaskOnce(t, dir, p)
		if j.DoneAttempt("rep-1") != 2 {
			t.Errorf("rep-1 done by attempt %d, want 2 (attempt 1 was interrupted)", j.DoneAttempt("rep-1"))
		}
	})
}
