// Package resultstest holds what the studies' tests of results folders
// share: a copy of a folder kept in testdata, and the checks every study
// makes of a folder written by an earlier rttlab.
package resultstest

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results"
)

// CopyFolder copies the results folder src (kept in a test's testdata) to
// a temporary folder of the same base name and returns its path, so that a
// test may write to it.
func CopyFolder(t testing.TB, src string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// OldFolder copies the folder src, written by an earlier rttlab and
// interrupted, checks that st finds done of its tasks done, of at least
// minTotal, and that st reports it; it returns the copy and the files the
// report wrote.
func OldFolder(t testing.TB, st results.Study, src string, done, minTotal int) (dir string, files []string) {
	t.Helper()
	dir = CopyFolder(t, src)
	if d, total, err := results.Progress(st, dir); err != nil || d != done || total < minTotal {
		t.Fatalf("progress %d of %d, %v", d, total, err)
	}
	files, err := st.Report(dir, io.Discard)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	return dir, files
}

// OpenTrimmed opens the folder dir with open, which trims a line cut by a
// crash, keeps it open until t ends, and fails t with msg when the file
// name in dir still ends in a cut line.
func OpenTrimmed[F io.Closer](t testing.TB, open func(dir string) (F, error), dir, name, msg string) {
	t.Helper()
	f, err := open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if b, _ := os.ReadFile(filepath.Join(dir, name)); !strings.HasSuffix(string(b), "}\n") {
		t.Fatal(msg)
	}
}
