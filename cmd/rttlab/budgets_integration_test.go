package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
)

// runBinary runs the built rttlab from the module root and returns its
// exit status, stdout and stderr.
func runBinary(t *testing.T, bin, root string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("rttlab %v: %v", args, err)
	return 0, "", ""
}

// readJUnit reads a JUnit file the way a CI system would and returns the
// suite's cases by name.
func readJUnit(t *testing.T, file string) (report.JUnitSuite, map[string]report.JUnitCase) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc report.JUnitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", file, err, b)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Name != "rttlab-trace-budgets" {
		t.Fatalf("%s: suites %+v", file, doc.Suites)
	}
	cases := map[string]report.JUnitCase{}
	for _, c := range doc.Suites[0].Cases {
		cases[c.Name] = c
	}
	return doc.Suites[0], cases
}

// The budget gate on the go app's /feed-naive (12 statements, one round
// trip each): a budget of 3 fails with exit status 3, the line naming the
// measured round trips, and a JUnit failure; 12 passes. Nothing of either
// trace is left behind.
func TestIntegrationBudgetGate(t *testing.T) {
	bin, root := drillBinary(t)
	rt := drillEngine(t)
	before := labelled(t, rt)
	dir := t.TempDir()

	failXML := filepath.Join(dir, "fail.xml")
	code, out, errs := runBinary(t, bin, root, "trace", "go", "--requests", "10", "--budget", "/feed=3,/feed-naive=3",
		"--format", "json", "--junit", failXML)
	if code != 3 {
		t.Fatalf("budget 3: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var rep report.BudgetReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, out)
	}
	verdict := map[string]report.BudgetType{}
	for _, ty := range rep.Types {
		verdict[ty.Type] = ty
	}
	naive := verdict["/feed-naive"]
	if rep.Verdict != "fail" || naive.Verdict != "over" || naive.RoundTrips.Max < 12 || verdict["/feed"].Verdict != "pass" ||
		verdict["/serial?n=5"].Verdict != "unbudgeted" || naive.N != 10 || naive.Failures != 0 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(errs, "over budget: go /feed-naive: ") || !strings.Contains(errs, "> budget 3; statements seen per request: 12 [12-12] on the wire") ||
		!strings.HasSuffix(errs, "rttlab: round-trip budget not met: go /feed-naive (see the lines above)\n") {
		t.Errorf("stderr:\n%s", errs)
	}
	suite, cases := readJUnit(t, failXML)
	if suite.Tests != 3 || suite.Failures != 1 || suite.Skipped != 1 {
		t.Errorf("suite %+v", suite)
	}
	if c := cases["/feed-naive"]; c.Failure == nil || c.Failure.Type != "over-budget" || !strings.Contains(c.Failure.Message, "> budget 3") {
		t.Errorf("/feed-naive case %+v", c)
	}
	if c := cases["/feed"]; c.Failure != nil || c.Skipped != nil {
		t.Errorf("/feed case %+v", c)
	}

	passXML := filepath.Join(dir, "pass.xml")
	code, out, errs = runBinary(t, bin, root, "trace", "go", "--requests", "10", "--budget", "/feed=3", "--budget", "/feed-naive=12",
		"--junit", passXML)
	if code != 0 {
		t.Fatalf("budget 12: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.HasPrefix(out, "TYPE") || !strings.Contains(out, "round-trip budgets go: PASS (2 request types within budget)") {
		t.Errorf("stdout:\n%s", out)
	}
	suite, cases = readJUnit(t, passXML)
	if suite.Tests != 3 || suite.Failures != 0 || suite.Skipped != 1 || cases["/feed-naive"].Failure != nil {
		t.Errorf("suite %+v", suite)
	}
	if left := labelledSince(t, rt, before); len(left) > 0 {
		t.Errorf("left by the traces: %v", left)
	}
}

// ci-smoke on the go app: verify, a 2-setting run, the gate; exit 0 with
// budgets it meets, the results folder and the JUnit file written, the
// verdict on stdout.
func TestIntegrationCISmoke(t *testing.T) {
	bin, root := drillBinary(t)
	rt, err := engine.NewRuntime(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	before := labelled(t, rt)
	dir := t.TempDir()
	junit := filepath.Join(dir, "smoke.xml")
	code, out, errs := runBinary(t, bin, root, "ci-smoke", "go", "--routes", "/feed,/feed-naive", "--budget", "/feed=3,/feed-naive=12",
		"--out", dir, "--junit", junit)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"ci-smoke go: PASS\n", "  verify   PASS", "  budgets  PASS  2 of 2", "  run      PASS  12 of 12 tasks at 0, 1 ms and unshaped", "/feed-naive at 1 ms: p50 +"} {
		if !strings.Contains(out, want) {
			t.Errorf("verdict lacks %q:\n%s", want, out)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(dir, "*-ci-smoke"))
	if len(dirs) != 1 {
		t.Fatalf("results folders %v", dirs)
	}
	if rows, err := raw.ReadTrace(dirs[0]); err != nil || len(rows) != 3 {
		t.Errorf("trace %v %v", rows, err)
	}
	if suite, _ := readJUnit(t, junit); suite.Failures != 0 || suite.Tests != 3 {
		t.Errorf("suite %+v", suite)
	}
	if left := labelledSince(t, rt, before); len(left) > 0 {
		t.Errorf("left after ci-smoke: %v\nstdout:\n%s\nstderr:\n%s", left, out, errs)
	}
}
