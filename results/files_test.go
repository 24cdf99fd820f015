package results

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// WriteAtomic replaces the file whole and leaves no temporary file;
// CreateSynced refuses an existing file; TrimTo cuts only what is longer.
func TestFileHelpers(t *testing.T) {
	dir := t.TempDir()
	if err := WriteAtomic(dir, "summary.json", []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(dir, "summary.json", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "summary.json")); string(b) != "new\n" {
		t.Errorf("summary.json = %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".summary.json.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := WriteAtomic(filepath.Join(dir, "absent"), "x", nil); err == nil {
		t.Error("WriteAtomic into a missing folder succeeded")
	}
	m := filepath.Join(dir, "manifest.json")
	if err := CreateSynced(m, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := CreateSynced(m, []byte("{}\n")); !errors.Is(err, os.ErrExist) {
		t.Errorf("second CreateSynced = %v, want it refused", err)
	}
	lines := filepath.Join(dir, "samples.jsonl")
	os.WriteFile(lines, []byte("{\"a\":1}\n{\"a\":"), 0o644)
	if err := TrimTo(lines, 100); err != nil {
		t.Fatal(err)
	}
	if err := TrimCutLine(lines); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(lines); string(b) != "{\"a\":1}\n" {
		t.Errorf("after TrimCutLine: %q", b)
	}
	if err := TrimTo(filepath.Join(dir, "absent.jsonl"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("TrimTo of a missing file = %v", err)
	}
	if err := SyncDir(filepath.Join(dir, "absent")); err == nil {
		t.Error("SyncDir of a missing folder succeeded")
	}
	if err := CreateSynced(filepath.Join(dir, "absent", "f"), nil); err == nil {
		t.Error("CreateSynced into a missing folder succeeded")
	}
	if err := AppendSynced(filepath.Join(dir, "absent", "f"), []byte("x\n")); err == nil {
		t.Error("AppendSynced into a missing folder succeeded")
	}
}

// A study without a comparison says so as ErrNoCompare, in its words.
func TestNoCompareError(t *testing.T) {
	err := error(&NoCompareError{Msg: "read summary.md instead"})
	if !errors.Is(err, ErrNoCompare) || err.Error() != "read summary.md instead" {
		t.Errorf("%v", err)
	}
}
