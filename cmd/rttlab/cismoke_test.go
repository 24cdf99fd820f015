package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/rtt"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
)

func TestCISmokeInput(t *testing.T) {
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"ci-smoke"}, "accepts 1 arg(s)"},
		{[]string{"ci-smoke", "cobol"}, `unknown app "cobol"`},
		{[]string{"ci-smoke", "go", "--budget", "/feed=x"}, "not a whole number"},
		{[]string{"ci-smoke", "go", "--budget", "/nope=1"}, "go does not serve it"},
		{[]string{"ci-smoke", "go", "--delays", "0,abc"}, "--delays"},
		{[]string{"ci-smoke", "go", "--delays", "0,2000"}, "exceeds 1 s"},
		{[]string{"ci-smoke", "go", "--runs", "0"}, "runs 0 must be positive"},
		{[]string{"ci-smoke", "go", "--routes", "/nope"}, "route /nope is unknown"},
		{[]string{"ci-smoke", "go", "--shaper", "tc"}, `shaper "tc"`},
		{[]string{"ci-smoke", "go", "--verify-requests", "0"}, "--verify-requests"},
		{[]string{"ci-smoke", "go", "--format", "json"}, "unknown flag: --format"},
	}
	for _, c := range bad {
		code, _, errs := execLine(context.Background(), c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", c.args, code, errs, c.want)
		}
	}
	// Good input reaches the engine, and the verdict says where it stopped.
	code, out, errs := execLine(context.Background(), "ci-smoke", "go", "--budget", "/feed=3,/feed-naive=12")
	if code != 1 || !strings.Contains(errs, errNoEngineHere.Error()) || !strings.HasPrefix(out, "ci-smoke go: FAIL\n") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

func TestCISmokePlan(t *testing.T) {
	goApp, err := loadTarget("go")
	if err != nil {
		t.Fatal(err)
	}
	o := &ciSmokeOptions{target: goApp, delays: "0,1", runs: 2, requests: 20, warmup: 5, traceRequests: 20, seed: 1, shaper: "auto",
		budget: budgetOptions{specs: []string{"/feed=3"}}}
	p, err := ciSmokePlan(o)
	if err != nil {
		t.Fatal(err)
	}
	a := p.Apps[0]
	if p.Name != "ci-smoke" || fmt.Sprint(p.DelaysMs) != "[0 1]" || p.Runs != 2 || p.Requests != 20 || p.Warmup != 5 || p.TraceRequests != 20 ||
		p.Calibrate != "off" || a.Name != "go" || fmt.Sprint(a.Routes) != "[/feed /feed-naive /serial?n=5]" || a.Budgets["/feed"] != 3 {
		t.Fatalf("%+v %+v", p, a)
	}
	if n := len(p.Tasks()); n != 3*(2*2+2) { // 3 routes: 2 runs at 2 settings, 2 unshaped
		t.Errorf("%d tasks", n)
	}
	all, _, _, _ := appsTree()
	if err := rtt.ValidatePlanApps(p, all); err != nil {
		t.Error(err)
	}
	o.own.routes, o.budget.specs = []string{"/feed"}, nil
	if p, _ := ciSmokePlan(o); fmt.Sprint(p.Apps[0].Routes) != "[/feed]" || p.Apps[0].Budgets != nil {
		t.Errorf("%+v", p.Apps[0])
	}
	rm, _ := loadTarget("redmine")
	o.target, o.own.routes = rm, nil
	if p, _ := ciSmokePlan(o); p.Apps[0].Mix != "redmine" || len(p.Apps[0].Routes) != 0 {
		t.Errorf("%+v", p.Apps[0])
	}
}

// smokeVerdict is a ci-smoke verdict on the results folder in testdata
// with the trace of traceRows, gated on budgets.
func smokeVerdict(t *testing.T, budgets map[string]int) *report.SmokeVerdict {
	t.Helper()
	dir := testFolder(t)
	if err := raw.WriteTrace(dir, traceRows()); err != nil {
		t.Fatal(err)
	}
	d, err := raw.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := rtt.FolderPlan(dir)
	gate := report.CheckBudgets("go", d.Trace, budgets)
	runs, requests, _ := p.AppRuns(p.Apps[0])
	return &report.SmokeVerdict{App: "go", DelaysMs: p.DelaysMs, Runs: runs, Requests: requests, VerifyRan: true, VerifyChecks: 14, RunRan: true, Dir: dir, Elapsed: 75 * time.Second,
		Summary: report.Analyze(d, report.Options{}), Gate: &gate, JUnit: "budgets.xml"}
}

func TestCISmokeVerdict(t *testing.T) {
	v := smokeVerdict(t, map[string]int{"/feed": 3, "/feed-naive": 12})
	var b bytes.Buffer
	v.Write(&b)
	want := []string{
		"ci-smoke go: PASS",
		"  verify   PASS  14 checks",
		"  trace          /feed 3 [3-3], /feed-naive 12 [12-12], /serial?n=5 5 [5-5] round trips per request, median [min-max]",
		"  budgets  PASS  2 of 2 budgeted request types within budget (/feed=3,/feed-naive=12)",
		"  run      PASS  12 of 12 tasks at 0, 0.5 ms (6 runs × 10 requests per route and setting; 1m15s)",
		"           /feed at 0.5 ms: p50 +",
		"  results        " + v.Dir,
		"  junit          budgets.xml",
	}
	checkLines(t, b.String(), want)
	if err := smokeResult(v); err != nil {
		t.Errorf("PASS gave %v", err)
	}
	if n := strings.Count(b.String(), "\n"); n > 24 {
		t.Errorf("%d lines: not one screen", n)
	}

	// Budgets not met, all else well: exit status 3.
	v = smokeVerdict(t, map[string]int{"/feed": 3, "/feed-naive": 3})
	b.Reset()
	v.Write(&b)
	checkLines(t, b.String(), []string{
		"ci-smoke go: FAIL",
		"  budgets  FAIL  1 of 2 budgeted request types",
		"           over budget: go /feed-naive: 12 round trips per request (max of 20 requests; median 12) > budget 3;",
	})
	var eb bytes.Buffer
	if code := exitReport(&eb, smokeResult(v)); code != 3 {
		t.Errorf("exit %d: %s", code, eb.String())
	}

	// Verify failed: nothing else ran, exit status 1.
	v = &report.SmokeVerdict{App: "go", VerifyRan: true, VerifyChecks: 14, VerifyFailed: 2}
	b.Reset()
	v.Write(&b)
	if b.String() != "ci-smoke go: FAIL\n  verify   FAIL  2 of 14 checks failed (the FAIL lines above); nothing else ran\n" {
		t.Errorf("%q", b.String())
	}
	eb.Reset()
	if code := exitReport(&eb, smokeResult(v)); code != 1 || eb.String() != "rttlab: ci-smoke go: verify failed (2 of 14 checks)\n" {
		t.Errorf("exit %d: %q", code, eb.String())
	}

	// The run stopped (budgets over too): exit status 1, and the resume hint.
	v = smokeVerdict(t, map[string]int{"/feed-naive": 3})
	v.Err = errors.New("go: task 7 (go /feed at 0.5 ms, run 3) failed twice: agent stopped")
	v.Summary.TasksDone = 7
	b.Reset()
	v.Write(&b)
	checkLines(t, b.String(), []string{"ci-smoke go: FAIL", "  run      FAIL  7 of 12 tasks at 0, 0.5 ms (6 runs × 10 requests per route and setting; 1m15s); go: task 7"})
	eb.Reset()
	if code := exitReport(&eb, smokeResult(v)); code != 1 || !strings.Contains(eb.String(), "rttlab run --resume "+v.Dir) {
		t.Errorf("exit %d: %q", code, eb.String())
	}

	// Nothing started (no engine): the verdict says so.
	v = &report.SmokeVerdict{App: "go", Err: errors.New("no Docker engine answers")}
	b.Reset()
	v.Write(&b)
	if b.String() != "ci-smoke go: FAIL\n  verify   -     not run\n  error          no Docker engine answers\n" {
		t.Errorf("%q", b.String())
	}
}

// checkLines checks that each of want starts a line of got, in order.
func checkLines(t *testing.T, got string, want []string) {
	t.Helper()
	lines := strings.Split(got, "\n")
	i := 0
	for _, w := range want {
		for i < len(lines) && !strings.HasPrefix(lines[i], w) {
			i++
		}
		if i == len(lines) {
			t.Errorf("no line %q (in order) in:\n%s", w, got)
			return
		}
	}
}
