package rtt

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/results/resultstest"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
)

// oldFolder is an RTT folder as rttlab wrote them before every study
// shared one results folder (the runner wrote it through rtt/report):
// fakePlan interrupted while task 4 ran, three tasks done, with the last
// line of samples.jsonl cut by the interruption. Only its raw files are
// kept; the report renders the rest.
const oldFolder = "testdata/20261201T100000Z-unit"

// A folder of the earlier layout is still read, reported and resumed:
// Open trims its cut line, and the resume runs the tasks left, each once.
func TestRunOldLayoutFolder(t *testing.T) {
	// The report reads only the folder: once, not once per double.
	_, files := resultstest.OldFolder(t, report.Study{}, oldFolder, 3, fakeTasks)
	if len(files) == 0 || filepath.Base(files[len(files)-1]) != report.ReportFile {
		t.Errorf("report wrote %v", files)
	}
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		dir := resultstest.CopyFolder(t, oldFolder)
		// The folder is held while it is open; the subtest closes it.
		t.Run("open", func(t *testing.T) {
			resultstest.OpenTrimmed(t, raw.Open, dir, raw.SamplesFile, "raw.Open left the cut line of samples.jsonl")
		})
		tasks := loadFolder(t, dir).Manifest.Tasks
		if _, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Resume: dir, Now: fakeNow, NoPlots: fakelab.UnderRace}); err != nil {
			t.Fatalf("resume: %v", err)
		}
		checkLoadsFollow(t, lab.Loads(), tasks[3:])
		d := loadFolder(t, dir)
		if len(d.Done) != len(tasks) || len(d.Records) != len(tasks) {
			t.Fatalf("done %d, records %d, want %d each", len(d.Done), len(d.Records), len(tasks))
		}
		seen := map[int]bool{}
		for _, s := range d.Samples {
			seen[s.Task] = true
		}
		for _, tk := range tasks {
			if !seen[int(tk.ID)] {
				t.Errorf("task %d has no samples", tk.ID)
			}
		}
		lab.RequireEmpty(t)
	})
}
