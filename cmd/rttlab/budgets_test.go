package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/rtt"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
	"github.com/rttlab/rttlab/workloads"
)

// Every malformed budget, and a budget for a type the app does not serve,
// is one line and exit status 2 before any engine connection; good ones
// reach the engine (here: the test's stand-in that refuses).
func TestTraceBudgetInput(t *testing.T) {
	dir := t.TempDir()
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"trace", "go", "--budget", "/feed=x"}, `budget /feed: "x" is not a whole number of round trips (write /feed=3)`},
		{[]string{"trace", "go", "--budget", "=3"}, `budget "=3" has no route`},
		{[]string{"trace", "go", "--budget", "/feed=-1"}, "budget /feed: -1 is negative"},
		{[]string{"trace", "go", "--budget", "/feed=3,/feed=4"}, "the budget for /feed is given twice"},
		{[]string{"trace", "go", "--budget", "/feed=3", "--budget", "/feed=3"}, "the budget for /feed is given twice"},
		{[]string{"trace", "go", "--budget", "/nope=3"}, "--budget: budget /nope: go does not serve it (its request types: /feed, /feed-naive, /serial?n=5)"},
		{[]string{"trace", "redmine", "--budget", "/feed=3"}, "redmine does not serve it (its request types: issue-detail, issues-list, projects)"},
		{[]string{"trace", "go", "--format", "xml"}, `--format "xml": use table or json`},
		{[]string{"trace", "go", "--junit", filepath.Join(dir, "no", "b.xml")}, "does not exist"},
		{[]string{"trace", "go", "--junit", dir}, "is a folder"},
		{[]string{"trace", "cobol", "--budget", "/feed=3"}, `unknown app "cobol"`},
	}
	for _, c := range bad {
		code, _, errs := execLine(context.Background(), c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", c.args, code, errs, c.want)
		}
	}
	for _, args := range [][]string{
		{"trace", "go", "--budget", "/feed=3,/feed-naive=12"},
		{"trace", "go", "--budget", "/feed=3", "--budget", "/feed-naive=12", "--format", "json", "--junit", filepath.Join(dir, "b.xml")},
		{"trace", "go", "--budget", "/serial=5"},
		{"trace", "redmine", "--budget", "issues-list=40"},
	} {
		if _, err := run(t, args...); !errors.Is(err, errNoEngineHere) {
			t.Errorf("%v: %v, want to reach the engine", args, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "b.xml")); err == nil {
		t.Error("a JUnit file was written without a trace")
	}
}

// A gate that failed alone exits 3 with one line; joined with something
// left behind, the leftover is what is reported (exit 1).
func TestExitOverBudget(t *testing.T) {
	gate := report.CheckBudgets("go", traceRows(), map[string]int{"/feed-naive": 3})
	err := gateError([]report.BudgetReport{gate})
	var b bytes.Buffer
	if code := exitReport(&b, err); code != 3 || b.String() != "rttlab: round-trip budget not met: go /feed-naive (see the lines above)\n" {
		t.Errorf("exit %d, %q", code, b.String())
	}
	b.Reset()
	left := &stack.CleanupError{RunID: "r1", Err: errors.New("busy")}
	if code := exitReport(&b, errors.Join(err, left)); code != 1 || !strings.Contains(b.String(), "rttlab clean --run r1") {
		t.Errorf("exit %d, %q", code, b.String())
	}
	if gateError([]report.BudgetReport{report.CheckBudgets("go", traceRows(), map[string]int{"/feed": 3})}) != nil {
		t.Error("a passing gate is an error")
	}
}

// traceRows is a trace of the go app: /feed 3 round trips, /feed-naive 12.
func traceRows() []workloads.TraceRow {
	return []workloads.TraceRow{
		{App: "go", Type: "/feed", N: 20, RoundTrips: workloads.TraceRange{Median: 3, Min: 3, Max: 3}, Statements: workloads.TraceRange{Median: 3, Min: 3, Max: 3}, PGSS: 3, Expected: 3},
		{App: "go", Type: "/feed-naive", N: 20, RoundTrips: workloads.TraceRange{Median: 12, Min: 12, Max: 12}, Statements: workloads.TraceRange{Median: 12, Min: 12, Max: 12}, PGSS: 12, Expected: 12},
		{App: "go", Type: "/serial?n=5", N: 20, RoundTrips: workloads.TraceRange{Median: 5, Min: 5, Max: 5}, Statements: workloads.TraceRange{Median: 5, Min: 5, Max: 5}, PGSS: 5, Expected: 5},
	}
}

// What trace prints and writes once it has traced: the table and the
// gate's lines, or the JSON document on stdout (the rest on stderr), the
// JUnit file, and the gate's error.
func TestTraceReport(t *testing.T) {
	dir := t.TempDir()
	o := &traceOptions{budget: budgetOptions{format: "table", junit: filepath.Join(dir, "budgets.xml"),
		budgets: apps.Budgets{"/feed": 3, "/feed-naive": 3}}}
	var out, errb bytes.Buffer
	err := o.report(&out, &errb, "go", traceRows())
	if _, ok := err.(overBudgetError); !ok {
		t.Fatalf("err = %v, want the gate's", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[0], "TYPE") || len(lines) != 7 || errb.Len() != 0 {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	if lines[4] != "wrote "+o.budget.junit || lines[5] != "round-trip budgets go: FAIL (1 of 2 budgeted request types: /feed-naive)" ||
		lines[6] != "  over budget: go /feed-naive: 12 round trips per request (max of 20 requests; median 12) > budget 3; statements seen per request: 12 [12-12] on the wire, 12.00 in pg_stat_statements" {
		t.Errorf("gate lines:\n%s", strings.Join(lines[4:], "\n"))
	}
	x, _ := os.ReadFile(o.budget.junit)
	var doc report.JUnitSuites
	if err := xml.Unmarshal(x, &doc); err != nil || doc.Suites[0].Name != "rttlab-trace-budgets" || doc.Failures != 1 || doc.Skipped != 1 || doc.Tests != 3 {
		t.Errorf("junit %v %+v", err, doc)
	}

	// --format json: stdout is the document alone.
	out.Reset()
	errb.Reset()
	o.budget.format, o.budget.junit = "json", ""
	o.budget.budgets = apps.Budgets{"/feed": 3, "/feed-naive": 12}
	if err := o.report(&out, &errb, "go", traceRows()); err != nil {
		t.Fatal(err)
	}
	var rep report.BudgetReport
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON document: %v", err)
	}
	if rep.App != "go" || rep.Verdict != "pass" || len(rep.Types) != 3 || *rep.Types[1].Budget != 12 || rep.Types[2].Budget != nil {
		t.Errorf("%+v", rep)
	}
	if errb.String() != "round-trip budgets go: PASS (2 request types within budget)\n" {
		t.Errorf("stderr %q", errb.String())
	}

	// No budgets: the table alone, as before budgets existed.
	out.Reset()
	o.budget = budgetOptions{format: "table"}
	if err := o.report(&out, &errb, "go", traceRows()); err != nil || strings.Count(out.String(), "\n") != 4 {
		t.Errorf("%v\n%s", err, out.String())
	}
}

// A run gates its apps' budgets (the plan entry's with app.yaml's) on
// the trace in its results folder; a skipped app is named, not gated.
func TestGateRun(t *testing.T) {
	dir := testFolder(t)
	if err := raw.WriteTrace(dir, traceRows()); err != nil {
		t.Fatal(err)
	}
	all, _, _, err := appsTree()
	if err != nil {
		t.Fatal(err)
	}
	p := &rtt.Plan{Name: "x", Apps: []rtt.PlanApp{
		{Name: "go", Routes: []string{"/feed"}, Budgets: apps.Budgets{"/feed": 3, "/feed-naive": 12}},
		{Name: "node", Routes: []string{"/feed"}, Budgets: apps.Budgets{"/feed": 1}},
		{Name: "rails", Routes: []string{"/feed"}},
	}}
	var out bytes.Buffer
	if err := gateRun(&out, dir, p, all, map[string]string{"node": "no network"}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := "round-trip budgets go: PASS (2 request types within budget)\nround-trip budgets node: not checked: the run skipped it (no network)\n"
	if out.String() != want {
		t.Errorf("%q\nwant %q", out.String(), want)
	}
	out.Reset()
	p.Apps[0].Budgets["/feed-naive"] = 3
	err = gateRun(&out, dir, p, all, nil)
	if _, ok := err.(overBudgetError); !ok || !strings.Contains(out.String(), "over budget: go /feed-naive: 12 round trips") ||
		!strings.Contains(out.String(), "budget not met: node /feed (budget 1): no request of this type was traced") {
		t.Errorf("%v\n%s", err, out.String())
	}
	// No budgets anywhere: nothing printed, no error.
	out.Reset()
	if err := gateRun(&out, dir, &rtt.Plan{Apps: []rtt.PlanApp{{Name: "go"}}}, all, nil); err != nil || out.Len() != 0 {
		t.Errorf("%v %q", err, out.String())
	}
}

// A plan file's budget for a type its app does not serve: one line with
// file:line, exit status 2, before the engine.
func TestRunPlanBudgetsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte("delays_ms: [0, 1]\napps:\n  - name: go\n    routes: [/feed]\n    budgets:\n      /feed: 3\n      /fed: 12\n"), 0o644)
	code, _, errs := execLine(context.Background(), "run", "--plan", plan, "--out", dir)
	want := fmt.Sprintf("rttlab: %s:7: app go: budget /fed: go does not serve it (its request types: /feed, /feed-naive, /serial?n=5)\n", plan)
	if code != 2 || errs != want {
		t.Errorf("exit %d, %q\nwant %q", code, errs, want)
	}
	os.WriteFile(plan, []byte("delays_ms: [0, 1]\napps:\n  - name: go\n    routes: [/feed]\n    budgets:\n      /feed: many\n"), 0o644)
	code, _, errs = execLine(context.Background(), "run", "--plan", plan, "--out", dir)
	if code != 2 || !strings.Contains(errs, plan+`:6: budget /feed: "many" is not a whole number`) || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, %q", code, errs)
	}
	os.WriteFile(plan, []byte("delays_ms: [0, 1]\napps:\n  - name: go\n    routes: [/feed]\n    budgets: {/feed: 3, /serial: 5}\n"), 0o644)
	if _, err := run(t, "run", "--plan", plan, "--out", dir); !errors.Is(err, errNoEngineHere) {
		t.Errorf("%v, want to reach the engine", err)
	}
}
