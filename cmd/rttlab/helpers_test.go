package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/workloads"
)

// shape verify's rows: the reference row, a row without its baseline, a
// row in tolerance and one out of it on both checks, each with the hold
// of every side, and the one-way line under a row that has captures.
func TestVerifyRowLines(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * 1e6) }
	side := func(us float64) shaping.ShaperDelta {
		return shaping.ShaperDelta{Role: "app", Summary: netem.Summary{HoldP50Us: us}}
	}
	rows := []shaping.ShapeRow{
		{NoShaper: true, ICMP: workloads.PingResult{Mean: ms(0.1), Median: ms(0.09)}, Select1Ms: 0.2},
		{RTTms: 0, ICMP: workloads.PingResult{Mean: ms(0.7), Median: ms(0.7)}, Select1Ms: 0.8},
		{RTTms: 0.5, HaveBaseline: true, ICMP: workloads.PingResult{Mean: ms(1.2), Median: ms(1.2)}, AddedMs: 0.5, Select1Ms: 1.3,
			Select1Diff: 0.5, Select1CI: stats.Interval{Low: 0.49, High: 0.51}, Sides: []shaping.ShaperDelta{side(250.04), side(249.96)}},
		{RTTms: 1, HaveBaseline: true, ICMPFlag: true, Select1Flag: true, Flag: true, ICMP: workloads.PingResult{Mean: ms(2), Median: ms(2)},
			AddedMs: 1.3, Select1Diff: 1.4, OneWay: []shaping.OneWayDirection{{Direction: shaping.DirAppToDB, OneWay: workloads.OneWay{Sent: 10, Matched: 10, Share: 1, P50Ms: 0.5, P99Ms: 0.6}}}},
	}
	var b bytes.Buffer
	flagged := 0
	row := printVerifyRow(&b, &flagged)
	for _, r := range rows {
		row(r)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if flagged != 1 || len(lines) != 5 {
		t.Fatalf("flagged %d, lines:\n%s", flagged, b.String())
	}
	for i, want := range []string{"no shaper", "vs no shaper", "ok", "ICMP OUT, SELECT 1 OUT", "p50 0.500"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q lacks %q", i, lines[i], want)
		}
	}
	if !strings.Contains(lines[2], "250.0/250.0") || !strings.Contains(lines[2], "[0.490, 0.510]") {
		t.Errorf("row in tolerance: %q", lines[2])
	}
	if got := verifyLine("a", "b"); got != "        a           b" {
		t.Errorf("verifyLine: %q", got)
	}
	if got := verifyLine("1", "2", "3", "4", "5", "6", "7", "8", "rest"); !strings.HasSuffix(got, "  rest") {
		t.Errorf("verifyLine past the widths: %q", got)
	}
}

// The bases an image list needs: the platform's own, and the engine's
// for the agent when the platform is foreign.
func TestBasesFor(t *testing.T) {
	native := engine.Platform{OS: "linux", Arch: "a", EngineArch: "a"}
	foreign := engine.Platform{OS: "linux", Arch: "b", EngineArch: "a"}
	for _, c := range []struct {
		p     engine.Platform
		names []string
		want  []engine.Platform
	}{
		{native, []string{"go", "agent"}, []engine.Platform{native}},
		{foreign, []string{"go"}, []engine.Platform{foreign}},
		{foreign, []string{"agent"}, []engine.Platform{foreign.Native()}},
		{foreign, []string{"postgres", "agent"}, []engine.Platform{foreign, foreign.Native()}},
	} {
		got := basesFor(c.p, c.names)
		if len(got) != len(c.want) {
			t.Errorf("basesFor(%v, %v) = %v, want %v", c.p, c.names, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("basesFor(%v, %v) = %v, want %v", c.p, c.names, got, c.want)
			}
		}
	}
}

// An app's variant stands for its app's image; no name stands for every
// image; an unknown name is refused.
func TestImageNames(t *testing.T) {
	all, _, _, err := appsTree()
	if err != nil {
		t.Fatal(err)
	}
	got, err := imageNames(&engine.Builder{Apps: all}, []string{"go", "axum-raw"})
	if err != nil || strings.Join(got, " ") != "go axum" {
		t.Errorf("imageNames(go, axum-raw) = %v, %v", got, err)
	}
	every, err := imageNames(&engine.Builder{Apps: all}, nil)
	if err != nil || len(every) < 4 {
		t.Errorf("imageNames() = %v, %v", every, err)
	}
	if _, err := imageNames(&engine.Builder{Apps: all}, []string{"no-such-app"}); err == nil {
		t.Error("an unknown name was taken")
	}
}

// verify's output passes through the counter, which counts its indented
// check lines.
func TestLineCounter(t *testing.T) {
	var b bytes.Buffer
	c := &lineCounter{w: &b}
	_, _ = c.Write([]byte("go /feed\n  ok one\n  FAIL two\n"))
	_, _ = c.Write([]byte("  ok three\nsummary\n"))
	if c.checks != 3 || !strings.HasPrefix(b.String(), "go /feed\n") {
		t.Errorf("checks %d, passed %q", c.checks, b.String())
	}
}

// A write whose reader went away cancels the command; other errors and
// writes that succeed do not.
func TestCancelOnEPIPE(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var b bytes.Buffer
	if _, err := (cancelOnEPIPE{&b, cancel}).Write([]byte("x")); err != nil || ctx.Err() != nil {
		t.Fatalf("a good write: %v, ctx %v", err, ctx.Err())
	}
	if _, err := (cancelOnEPIPE{failWriter{errors.New("full")}, cancel}).Write([]byte("x")); err == nil || ctx.Err() != nil {
		t.Fatalf("another error: %v, ctx %v", err, ctx.Err())
	}
	if _, err := (cancelOnEPIPE{failWriter{syscall.EPIPE}, cancel}).Write([]byte("x")); !errors.Is(err, syscall.EPIPE) || ctx.Err() == nil {
		t.Fatalf("EPIPE: %v, ctx %v", err, ctx.Err())
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// doctor prints a line per check and fails when a required one failed;
// the engine's fix is the advice for how it failed.
func TestDoctorCommand(t *testing.T) {
	ok := func() error { return nil }
	defer func(f func(engine.Docker, error) engine.DoctorEnv) { doctorEnv = f }(doctorEnv)
	doctorEnv = func(d engine.Docker, err error) engine.DoctorEnv {
		env := engine.HostDoctorEnv(d, err)
		env.Euid = func() int { return 0 }
		env.CapEff = func() (uint64, error) { return 1 << 12, nil }
		env.KernelNetem, env.NFQueue, env.BridgeNF = ok, ok, ok
		env.LookPath = func(s string) (string, error) { return "/usr/sbin/" + s, nil }
		env.FreeBytes = func(string) (uint64, error) { return 100 << 30, nil }
		return env
	}
	out, err := run(t, "doctor")
	if err == nil || !strings.Contains(err.Error(), "a required check failed") {
		t.Fatalf("doctor without an engine: %v", err)
	}
	if !strings.Contains(out, "FAIL docker engine") || !strings.Contains(out, "OK   privileges") {
		t.Errorf("doctor printed:\n%s", out)
	}
}

// Every command that needs the engine stops at its connection when none
// answers (the fix comes with the exit report), having written nothing.
func TestCommandsWithoutAnEngine(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"up", "go"}, {"down"}, {"clean"}, {"images", "build", "go"}, {"images", "base"},
		{"place", "--plan", "placement-smoke", "--out", out}, {"workers", "--plan", "workers-smoke", "--out", out},
		{"shape", "show"}, {"shape", "set", "--rtt", "1ms"}, {"shape", "verify", "go"},
		{"run", "--plan", "smoke", "--yes", "--out", out}, {"verify", "go"}, {"ci-smoke", "go", "--out", out},
	} {
		_, err := run(t, args...)
		if !errors.Is(err, errNoEngineHere) {
			t.Errorf("%v without an engine: %v", args, err)
		}
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Errorf("left in the output folder: %v", left)
	}
}

// writeFile writes text to the file name in dir and returns its path; a
// file that cannot be written ends the test.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
