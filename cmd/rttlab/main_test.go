package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/internal/cli/clitest"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// wantUsage runs one command line and wants a usage error of one line
// containing want.
func wantUsage(t *testing.T, want string, args ...string) {
	t.Helper()
	_, err := run(t, args...)
	var ue usageError
	if err == nil || !errors.As(err, &ue) {
		t.Errorf("%v: err = %v, want a usage error", args, err)
		return
	}
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("%v: %q, want one line containing %q", args, err, want)
	}
}

// run executes one rttlab command line and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return clitest.Run(newRootCmd(), args...)
}

func TestEveryCommandHasHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" {
			t.Errorf("%q has no short help", c.CommandPath())
		}
		// Every command a user types shows an example; the agent's run
		// inside the containers.
		if c.Example == "" {
			t.Errorf("%q has no example in its help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" || sub.Name() == "agent" {
				continue
			}
			walk(sub)
		}
	}
	walk(newRootCmd())
	out, err := run(t, "run", "--help")
	if err != nil || !strings.Contains(out, "--plan") || !strings.Contains(out, "study") {
		t.Fatalf("run --help: %v\n%s", err, out)
	}
}

// Bad input is refused with one line before anything starts, and is a
// usage error (exit status 2).
func TestBadInputOneLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("delays_ms: [0, 1\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--plan", "smoke", "--delays", "0,-1"}, "negative"},
		{[]string{"run", "--plan", "smoke", "--delays", "0,0.5,0.5"}, "listed twice"},
		{[]string{"run", "--plan", "smoke", "--delays", ","}, "empty"},
		{[]string{"run", "--plan", "smoke", "--runs", "-2"}, "must be positive"},
		{[]string{"run", "--plan", "smoke", "--apps", "cobol"}, "unknown app \"cobol\" (known apps:"},
		{[]string{"run", "--plan", "smoke", "--routes", "/nope"}, "route /nope is unknown"},
		{[]string{"run", "--plan", bad}, "bad.yaml:1: "},
		{[]string{"run", "--plan", "nosuch"}, "neither a built-in plan"},
		{[]string{"run", "--resume", dir, "--seed", "3"}, "drop --seed"},
		{[]string{"shape", "set", "--rtt", "-1ms"}, "negative"},
		{[]string{"shape", "set", "--rtt", "NaN"}, "rtt"},
		{[]string{"shape", "set", "--rtt", "1500"}, "1s"},
		{[]string{"shape", "set", "--rtt", "2s"}, "1s"},
		{[]string{"shape", "verify", "go", "--delays", "0,abc"}, "not a number"},
		{[]string{"agent", "ctl", "set"}, "--delay"},
		{[]string{"apps", "new", "Bad_Name", "--from", "go", "--dir", dir}, "invalid"},
		{[]string{"apps", "new", "x", "--from", "cobol", "--dir", dir}, "--from"},
		{[]string{"verify", "--requests", "0", "go"}, "--requests"},
	}
	for _, c := range cases {
		wantUsage(t, c.want, c.args...)
	}
}

// An interrupted command that could not remove everything says what is
// left and how to remove it, never that everything was removed.
func TestExitReportCleanup(t *testing.T) {
	left := &stack.CleanupError{RunID: "r1", Err: errors.New("container rttlab-r1-db: busy")}
	var b bytes.Buffer
	if code := exitReport(&b, errors.Join(context.Canceled, left)); code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	if out := b.String(); strings.Contains(out, "was removed") || !strings.Contains(out, "rttlab-r1-db") || !strings.Contains(out, "rttlab clean --run r1") {
		t.Errorf("interrupted with leftovers:\n%s", out)
	}
	b.Reset()
	if code := exitReport(&b, fmt.Errorf("go: %w", errors.Join(errors.New("task failed"), left))); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if out := b.String(); !strings.Contains(out, "task failed") || !strings.Contains(out, "rttlab clean --run r1") {
		t.Errorf("failed with leftovers:\n%s", out)
	}
	b.Reset()
	if code := exitReport(&b, context.Canceled); code != 130 || !strings.Contains(b.String(), "everything this command started was removed") {
		t.Errorf("clean interrupt: exit %d\n%s", code, b.String())
	}
	if code := exitReport(&b, nil); code != 0 {
		t.Errorf("success: exit %d", code)
	}
}

// The way to continue an interrupted run is shown on Ctrl-C too, not only
// after a failure.
func TestExitReportKeepsResumeHint(t *testing.T) {
	hint := "continue with: rttlab run --resume rttlab-results/x"
	for _, c := range []struct {
		err  error
		code int
	}{
		{hintError{fmt.Errorf("go: %w", context.Canceled), hint}, 130},
		{hintError{errors.New("go: task 3 failed twice"), hint}, 1},
	} {
		var b bytes.Buffer
		if code := exitReport(&b, c.err); code != c.code || !strings.Contains(b.String(), hint) {
			t.Errorf("%v: exit %d (want %d), output:\n%s", c.err, code, c.code, b.String())
		}
		if n := strings.Count(b.String(), hint); n != 1 {
			t.Errorf("hint shown %d times:\n%s", n, b.String())
		}
	}
}

// A missing or extra positional argument, or an unknown command, is a
// usage error (exit status 2) of one line that shows the usage.
func TestArgCountIsUsageError(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"up"}, "usage: rttlab up APP"},
		{[]string{"up", "go", "node"}, "usage: rttlab up APP"},
		{[]string{"report"}, "usage: rttlab report DIR"},
		{[]string{"compare", "a"}, "usage: rttlab compare DIR_A DIR_B"},
		{[]string{"trace"}, "usage: rttlab trace APP"},
		{[]string{"shape", "verify"}, "usage: rttlab shape verify APP"},
		{[]string{"apps", "new"}, "usage: rttlab apps new NAME"},
		{[]string{"run", "smoke"}, `takes no arguments, got "smoke"`},
		{[]string{"doctor", "now"}, `takes no arguments, got "now"`},
		{[]string{"agent", "ctl"}, "usage: rttlab agent ctl"},
		{[]string{"nosuch"}, `unknown command "nosuch" for "rttlab"`},
		{[]string{"apps", "lst"}, `(did you mean list?)`},
		{[]string{"shape", "nosuch"}, `unknown command "nosuch" for "rttlab shape"`},
	}
	for _, c := range cases {
		wantUsage(t, c.want, c.args...)
	}
	// A command group without a sub-command still shows its help.
	if out, err := run(t, "apps"); err != nil || !strings.Contains(out, "Available Commands") {
		t.Errorf("apps: %v\n%s", err, out)
	}
}

// --resume checks that DIR is a results folder before it connects to the
// engine or builds anything.
func TestResumeChecksFolderFirst(t *testing.T) {
	// Were the engine asked, this address would fail differently (exit 1,
	// "no Docker engine answers").
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	dir := t.TempDir()
	_, err := run(t, "run", "--resume", dir)
	var ue usageError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "not a results folder") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want a one-line usage error saying %s is not a results folder", err, dir)
	}
}

// --apps names an app of the plan; one the plan does not list has no
// routes to take and is refused unless --routes names them.
func TestRunAppNotInPlan(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	plan := writeFile(t, t.TempDir(), "mine.yaml", "delays_ms: [0, 1]\napps: [{name: go, routes: [/feed]}]\n")
	_, err := run(t, "run", "--plan", plan, "--apps", "go,node")
	var ue usageError
	if err == nil || !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "app node is not in plan mine (its apps: go)") || !strings.Contains(err.Error(), "--routes") {
		t.Fatalf("err = %v, want a one-line usage error: app node is not in plan mine", err)
	}
	// With its routes named, the input is fine (what fails then is the
	// missing engine).
	if _, err := run(t, "run", "--plan", plan, "--apps", "go,node", "--routes", "/feed"); err == nil || errors.As(err, &ue) {
		t.Fatalf("--routes given: err = %v, want past the input checks", err)
	}
}

// The command line adds its own advice to the library's factual errors,
// once.
func TestExitReportAdvice(t *testing.T) {
	noEngine := fmt.Errorf("%w (unix:///var/run/docker.sock: connection refused)", engine.ErrNoEngine)
	var b bytes.Buffer
	exitReport(&b, noEngine)
	if out := b.String(); strings.Count(out, "DOCKER_HOST") != 1 || strings.Count(out, "make run") != 1 || strings.Contains(out, "make test") {
		t.Errorf("no engine:\n%s", out)
	}
	b.Reset()
	exitReport(&b, fmt.Errorf("%w: %w on unix:///var/run/docker.sock", engine.ErrNoEngine, engine.ErrEngineDenied))
	if out := b.String(); !strings.Contains(out, "run as root") || strings.Contains(out, "make run") {
		t.Errorf("permission denied:\n%s", out)
	}
	checks := []engine.DoctorCheck{{Name: "docker engine", Required: true, Detail: noEngine.Error(), Fix: "library fix"}}
	adviseEngine(checks, noEngine)
	if line := checks[0].String(); strings.Count(line, "DOCKER_HOST") != 1 || !strings.Contains(line, "make run") {
		t.Errorf("doctor engine line: %s", line)
	}
	// Flags are named by the command line, once.
	for _, args := range [][]string{{"run", "--plan", "smoke", "--delays", "0,abc"}, {"shape", "verify", "go", "--delays", ","}} {
		_, err := run(t, args...)
		if err == nil || strings.Count(err.Error(), "--delays") != 1 {
			t.Errorf("%v: %v, want --delays named once", args, err)
		}
	}
}
