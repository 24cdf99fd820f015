package apps

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Nothing rttlab builds or runs assumes amd64: image builds take the
// engine's architecture, so an app's Dockerfile or scripts and rttlab's
// own Go code name no architecture. The exceptions are the places whose
// job is to name one: the set-up scripts that map uname's answer to Go's
// (.ci), the Makefile's arm64 cross-build, the VM test's table of the
// architectures it boots, and the table of the platforms rttlab builds
// and runs (orchestrator/engine/platform.go).
func TestNothingAssumesAnArchitecture(t *testing.T) {
	arch := regexp.MustCompile(`(?i)\b(amd64|x86[_-]64|i[3-6]86|aarch64|arm64)\b`)
	allowed := []string{".ci/", "Makefile", "netem/vmtest/", "README.md", "go.sum", "orchestrator/engine/platform.go"}
	root := filepath.Join("..")
	var scanned int
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." && rel != ".ci" || d.Name() == "bin" || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, ".md") {
			return nil
		}
		for _, a := range allowed {
			if rel == a || strings.HasPrefix(rel, a) {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		scanned++
		for i, line := range strings.Split(string(b), "\n") {
			if m := arch.FindString(line); m != "" {
				t.Errorf("%s:%d names the architecture %q: take the engine's (or the host's) instead", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files: the walk missed the tree", scanned)
	}
}
