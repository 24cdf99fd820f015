package raw

import (
	"os"
	"path/filepath"
	"testing"
)

func TestShaperFileBadHeader(t *testing.T) {
	dir := t.TempDir()
	mustNoErr(t, os.WriteFile(filepath.Join(dir, ShaperFile), []byte("a,b\n"), 0o644))
	if _, err := LoadShaper(dir); err == nil {
		t.Fatal("a shaper.csv with a foreign header was accepted")
	}
}
