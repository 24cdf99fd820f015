package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/results"
)

// digestStudy is a results.Study whose digest is given.
type digestStudy struct {
	results.Study
	digest string
	err    error
}

func (s digestStudy) Digest(string) (string, error) { return s.digest, s.err }

// The end of every study is its digest, reached through its Study, then
// the folder; a run that failed, or a digest that cannot be read, names
// the folder and the report instead.
func TestPrintStudyEnd(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-3 * time.Second)
	var out, warn bytes.Buffer
	printStudyEnd(&out, &warn, digestStudy{digest: "plan x: 1 of 1 tasks done\n"}, dir, start, true)
	if got := out.String(); got != "\nplan x: 1 of 1 tasks done\nresults: "+dir+" (3s)\n" || warn.Len() != 0 {
		t.Errorf("ok run: %q (warn %q)", got, warn.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	printStudyEnd(&out, &warn, digestStudy{digest: "never"}, dir, start, false)
	if got := out.String(); strings.Contains(got, "never") || !strings.HasSuffix(got, "report:  "+filepath.Join(dir, "report.html")+"\n") {
		t.Errorf("failed run: %q", got)
	}
	out.Reset()
	printStudyEnd(&out, &warn, digestStudy{err: errors.New("gone")}, dir, start, true)
	if !strings.Contains(warn.String(), "no digest: gone") || !strings.Contains(out.String(), "report:  ") {
		t.Errorf("unreadable digest: out %q warn %q", out.String(), warn.String())
	}
}

// The placement and worker studies' digest is their summary.md, whole;
// the RTT study's is its summary's digest, from the folder when the run's
// rendered summary is not given.
func TestStudiesDigest(t *testing.T) {
	dir := t.TempDir()
	md := "# Placement: p\n\nbody\n"
	writeFile(t, dir, results.SummaryMDFile, md)
	for _, kind := range []string{results.KindPlacement, results.KindWorkers} {
		got, err := studyOf(kind).Digest(dir)
		if err != nil || got != md {
			t.Errorf("%s digest: %q, %v", kind, got, err)
		}
	}
	if _, err := studyOf(results.KindPlacement).Digest(t.TempDir()); err == nil {
		t.Error("a folder without summary.md gave a digest")
	}
	if _, err := studyOf(results.KindRTT).Digest(t.TempDir()); err == nil {
		t.Error("an empty folder gave an RTT digest")
	}
}

// progressStudy is a results.Study whose progress is given.
type progressStudy struct {
	results.Study
	kind        string
	done, total int
	err         error
}

func (s progressStudy) Kind() string { return s.kind }
func (s progressStudy) Tasks(string) ([]results.TaskState, error) {
	out := make([]results.TaskState, s.total)
	for i := range s.done {
		out[i].Done = true
	}
	return out, s.err
}

// A study stopped before its end names, through its Study, the tasks
// done and its own command's --resume; a folder whose progress cannot be
// read still gets the command.
func TestResumeHint(t *testing.T) {
	for _, c := range []struct {
		st   progressStudy
		want string
	}{
		{progressStudy{kind: results.KindRTT, done: 3, total: 10}, "3 of 10 tasks done, the results folder consistent; continue with: rttlab run --resume d"},
		{progressStudy{kind: results.KindPlacement, done: 0, total: 9}, "0 of 9 tasks done, the results folder consistent; continue with: rttlab place --resume d"},
		{progressStudy{kind: results.KindWorkers, err: errors.New("no plan")}, "the results folder is consistent; continue with: rttlab workers --resume d"},
	} {
		if got := resumeHint(c.st, "d"); got != c.want {
			t.Errorf("%s: %q, want %q", c.st.kind, got, c.want)
		}
	}
	// The RTT study counts the folder's done tasks against its manifest's.
	dir := testFolder(t)
	if got := resumeHint(studyOf(results.KindRTT), dir); !strings.HasPrefix(got, "12 of 12 tasks done") {
		t.Errorf("RTT folder: %q", got)
	}
}
