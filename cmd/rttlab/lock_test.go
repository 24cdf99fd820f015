package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/raw"
)

// A resume refused because another process writes the folder is a
// failure (exit status 1), told in one line, not a usage error.
func TestExitReportFolderLocked(t *testing.T) {
	var w bytes.Buffer
	code := exitReport(&w, &results.LockedError{Dir: "/r/20261129T235900Z-study", PID: 4242})
	want := "rttlab: results folder /r/20261129T235900Z-study: another rttlab process (pid 4242) is writing it\n"
	if code != 1 || w.String() != want {
		t.Errorf("exit %d, %q; want 1, %q", code, w.String(), want)
	}
}

// report only reads the raw files: it works while a run holds the folder.
func TestReportWhileFolderHeld(t *testing.T) {
	dir := testFolder(t)
	held, err := raw.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if code, _, errs := execLine(context.Background(), "report", dir); code != 0 {
		t.Errorf("report of a held folder: exit %d, %q", code, errs)
	}
}
