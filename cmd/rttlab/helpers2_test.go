package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/rtt"
)

// Each error the library names gets the command line's fix, wrapped or
// not; others get none.
func TestAdvice(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("other"), ""},
		{fmt.Errorf("connect: %w", engine.ErrEngineDenied), "run as root"},
		{engine.ErrNoEngine, "start dockerd"},
		{fmt.Errorf("run: %w", engine.ErrImageMissing), "rttlab images build"},
		{engine.ErrNoDebootstrap, "apt-get install -y debootstrap"},
		{engine.ErrNeedRoot, "sudo rttlab images base"},
		{fmt.Errorf("shape: %w", shaping.ErrAgentStopped), "rttlab down, then rttlab up APP"},
	} {
		got := advice(c.err)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("advice(%v) = %q, want it to say %q", c.err, got, c.want)
		}
	}
	checks := []engine.DoctorCheck{{Name: "docker engine", Fix: "library fix"}, {Name: "privileges", Fix: "keep"}}
	adviseEngine(checks, engine.ErrNoEngine)
	if !strings.HasPrefix(checks[0].Fix, "start dockerd") || checks[1].Fix != "keep" {
		t.Errorf("adviseEngine: %+v", checks)
	}
}

// Progress without a terminal is a line per task; on a terminal, a bar
// that notes print above.
func TestProgressOnATerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	if p.tty {
		t.Fatal("a buffer taken for a terminal")
	}
	p.Start(3, 1)
	p.Task(2, 3, "go /feed 0 ms, run 1")
	p.Note("a note")
	p.Finish()
	got := b.String()
	for _, want := range []string{"3 tasks, 1 already done\n", "[2/3] go /feed 0 ms, run 1 (elapsed 0s)\n", "a note\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress printed %q, lacking %q", got, want)
		}
	}
	var tb bytes.Buffer
	tp := &progress{w: &tb, tty: true}
	tp.Start(3, 1)
	tp.Task(2, 3, "task")
	tp.Note("above the bar")
	tp.Finish()
	if out := tb.String(); !strings.Contains(out, "above the bar") || !strings.Contains(out, "tasks") || strings.Contains(out, "[2/3]") {
		t.Errorf("terminal progress printed %q", out)
	}
}

// A flag's value of the wrong kind is one line saying what kind it takes.
func TestFlagKinds(t *testing.T) {
	wantUsage(t, `--icmp "x" is not a whole number`, "shape", "verify", "go", "--icmp", "x")
	wantUsage(t, `--icmp "99999999999999999999" is too large`, "shape", "verify", "go", "--icmp", "99999999999999999999")
	wantUsage(t, `--tolerance "x" is not a number`, "shape", "verify", "go", "--tolerance", "x")
	wantUsage(t, `--json "maybe" is not true or false`, "shape", "verify", "go", "--json=maybe")
}

// place's and workers' settings are checked before anything connects.
func TestStudyFlagsBeforeConnect(t *testing.T) {
	wantUsage(t, "--repeat 0: use 1..100", "place", "--plan", "placement-smoke", "--repeat", "0")
	wantUsage(t, `--keep-alive "maybe": use on or off`, "place", "--plan", "placement-smoke", "--keep-alive", "maybe")
	wantUsage(t, "leave out --plan", "workers", "--resume", t.TempDir(), "--plan", "workers-smoke")
}

// trace checks --results before it connects: a folder that is not a
// results folder, or one that cannot be read, is a usage error.
func TestTraceResultsFolderFirst(t *testing.T) {
	wantUsage(t, "not a results folder", "trace", "go", "--results", t.TempDir())
	dir := t.TempDir()
	writeFile(t, dir, "manifest.json", "{not json")
	_, err := run(t, "trace", "go", "--results", dir)
	if err == nil || errors.Is(err, errNoEngineHere) {
		t.Errorf("trace into an unreadable folder: %v", err)
	}
	_, err = run(t, "trace", "go", "--results", testFolder(t))
	if !errors.Is(err, errNoEngineHere) {
		t.Errorf("trace into a results folder stops at the engine: %v", err)
	}
}

// compare refuses a folder whose manifest names no study rttlab knows, or
// a newer results format, in one line, whichever side it is on.
func TestCompareUnknownStudy(t *testing.T) {
	good := testFolder(t)
	for _, manifest := range []string{`{"kind": "other"}`, `{"kind": "rtt", "format": 999}`} {
		bad := t.TempDir()
		writeFile(t, bad, "manifest.json", manifest)
		for _, args := range [][]string{{"compare", bad, good}, {"compare", good, bad}} {
			_, err := run(t, args...)
			if err == nil || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v with %s: %v, want one line", args, manifest, err)
			}
		}
	}
}

// shape set checks its delay, floor and scope before it connects.
func TestShapeSetInputFirst(t *testing.T) {
	wantUsage(t, "--floor", "shape", "set", "--rtt", "1ms", "--floor", "fast")
	wantUsage(t, "scope", "shape", "set", "--rtt", "1ms", "--scope", "everywhere")
	if _, err := run(t, "shape", "set", "--rtt", "1ms", "--floor", "0.3ms", "--scope", "interface"); !errors.Is(err, errNoEngineHere) {
		t.Errorf("good input stops at the engine: %v", err)
	}
}

// --junit into a folder that does not exist fails naming the flag, and
// writes nothing; without --junit nothing is written.
func TestWriteJUnitFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "junit.xml")
	err := (&budgetOptions{junit: path}).writeJUnit(nil)
	if err == nil || !strings.HasPrefix(err.Error(), "--junit: ") {
		t.Errorf("unwritable --junit: %v", err)
	}
	if _, serr := os.Stat(path); serr == nil {
		t.Error("wrote the report anyway")
	}
	if err := (&budgetOptions{}).writeJUnit(nil); err != nil {
		t.Errorf("no --junit: %v", err)
	}
}

// apps new without --dir writes into the apps/ folder of the checkout the
// working folder is in, found by its go.mod; outside any checkout it is a
// usage error.
func TestCheckoutApps(t *testing.T) {
	t.Setenv("RTTLAB_SRC", "")
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module "+engine.ModulePath+"\n\ngo 1.26\n"), 0o644)
	sub := filepath.Join(root, "apps", "go")
	os.MkdirAll(sub, 0o755)
	t.Chdir(sub)
	if got, err := checkoutApps(); err != nil || got != filepath.Join(root, "apps") {
		t.Errorf("inside a checkout: %q, %v", got, err)
	}
	t.Chdir(t.TempDir())
	var ue usageError
	if _, err := checkoutApps(); !errors.As(err, &ue) || !strings.Contains(err.Error(), "apps new writes into a checkout's apps/ folder") {
		t.Errorf("outside a checkout: %v", err)
	}
}

// An own app's entry named like one of rttlab's apps is refused as bad
// input, naming the fix.
func TestOwnTargetRefusesATreeName(t *testing.T) {
	_, err := ownTarget(rtt.PlanApp{Name: "go", Image: "example/x:1", Routes: []string{"/a"}})
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "app go: the name is rttlab's own app: name the image's entry differently") {
		t.Errorf("own app named go: %v", err)
	}
}
