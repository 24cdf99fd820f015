package apps

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// archWord is a name of an architecture.
var archWord = regexp.MustCompile(`(?i)\b(amd64|x86[_-]64|i[3-6]86|aarch64|arm64)\b`)

// archAllowed are the places whose job is to name an architecture: the
// set-up scripts that map uname's answer to Go's (.ci), the Makefile's
// arm64 cross-build, the VM test's table of the architectures it boots,
// and the table of the platforms rttlab builds and runs.
var archAllowed = []string{".ci/", "Makefile", "netem/vmtest/", "README.md", "go.sum", "orchestrator/engine/platform.go"}

// sourceFiles lists the files git tracks in the checkout at root,
// relative to it: what a run wrote into the checkout (rttlab-results/,
// bin/) is never read as source.
func sourceFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s (the check reads a git checkout): %w", root, err)
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files, nil
}

// archMentions lists, as "file:line: word", where the source files under
// root name an architecture outside the allowed places, tests, test data
// and notes; scanned counts the files read.
func archMentions(root string) (found []string, scanned int, err error) {
	files, err := sourceFiles(root)
	if err != nil {
		return nil, 0, err
	}
files:
	for _, rel := range files {
		if strings.HasSuffix(rel, "_test.go") || strings.HasSuffix(rel, ".md") || strings.Contains("/"+rel, "/testdata/") {
			continue
		}
		for _, a := range archAllowed {
			if rel == a || strings.HasPrefix(rel, a) {
				continue files
			}
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet in git's index
		}
		if err != nil {
			return nil, scanned, err
		}
		scanned++
		for i, line := range strings.Split(string(b), "\n") {
			if m := archWord.FindString(line); m != "" {
				found = append(found, fmt.Sprintf("%s:%d: %s", rel, i+1, m))
			}
		}
	}
	return found, scanned, nil
}

// Nothing rttlab builds or runs assumes amd64: image builds take the
// engine's architecture, so an app's Dockerfile or scripts and rttlab's
// own Go code name no architecture, except where archAllowed says.
func TestNothingAssumesAnArchitecture(t *testing.T) {
	found, scanned, err := archMentions("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s names an architecture: take the engine's (or the host's) instead", f)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files: the walk missed the tree", scanned)
	}
}

// What a run writes into a checkout (a results folder, whose manifest
// and report name the engine's architecture) is not source: the check
// reads what git tracks, and a tracked file that names one is found.
func TestArchCheckReadsOnlyTrackedFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed to make a checkout: %v", err)
	}
	root := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write(".gitignore", "rttlab-results/\n")
	write("main.go", "package main\n")
	git("add", ".")
	git("commit", "-q", "-m", "tree")
	write("rttlab-results/20261207T084850Z-smoke/report.html", `<td>linux/amd64</td>`)
	write("rttlab-results/20261207T084850Z-smoke/manifest.json", `{"arch": "amd64"}`)
	found, scanned, err := archMentions(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 || scanned != 2 {
		t.Errorf("a results folder in the checkout was read: %d files scanned, found %q", scanned, found)
	}
	write("build.sh", "GOARCH=amd64 go build\n")
	git("add", "build.sh")
	found, _, err = archMentions(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0] != "build.sh:1: amd64" {
		t.Errorf("a tracked file naming an architecture: found %q, want build.sh:1: amd64", found)
	}
}
