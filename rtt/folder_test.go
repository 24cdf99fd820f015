package rtt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/report"
)

// The committed RTT folder (cmd/rttlab/testdata/results-go), with the
// cut lines of a crash mid-write in its raw files, opens for a resume:
// the cut lines trimmed, its state read, a second writer refused, and
// the next append starting on a clean line.
func TestOpenFolderCommitted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results-go")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "cmd", "rttlab", "testdata", "results-go"))); err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, n := range []string{report.SamplesFile, report.TasksFile, report.ProbesFile} {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		sizes[n] = fi.Size()
		h, err := os.OpenFile(filepath.Join(dir, n), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		h.WriteString(`{"task":999,"cut`)
		h.Close()
	}
	f, err := OpenFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.State() == nil || len(f.State().Samples) == 0 {
		t.Fatal("no state read")
	}
	for n, size := range sizes {
		if fi, _ := os.Stat(filepath.Join(dir, n)); fi.Size() != size {
			t.Errorf("%s: %d bytes after open, want %d", n, fi.Size(), size)
		}
	}
	if _, err := OpenFolder(dir); !errors.Is(err, results.ErrLocked) {
		t.Errorf("second writer: %v", err)
	}
	task := f.State().Manifest.Tasks[0]
	if err := f.MarkFailed(task.ID, f.State().NextAttempt(task.ID), "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := report.Load(dir); err != nil {
		t.Errorf("load after an append: %v", err)
	}
}
