package rtt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/apps"
)

// A plan's app entry carries budgets: parsed, kept through the manifest's
// JSON, and malformed ones refused at their line.
func TestPlanBudgets(t *testing.T) {
	yml := strings.Replace(planYAML, "    routes: [/feed, /feed-naive]\n", "    routes: [/feed, /feed-naive]\n    budgets:\n      /feed: 3\n      /feed-naive: 12\n", 1)
	p, err := ParsePlan("mine.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Apps[0].Budgets, apps.Budgets{"/feed": 3, "/feed-naive": 12}) || p.Apps[1].Budgets != nil {
		t.Fatalf("budgets %v %v", p.Apps[0].Budgets, p.Apps[1].Budgets)
	}
	b, _ := json.Marshal(p)
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Apps[0].Budgets, p.Apps[0].Budgets) {
		t.Fatalf("manifest round trip: %v %v", err, back.Apps[0].Budgets)
	}
	if strings.Contains(string(b), `"budgets":null`) {
		t.Errorf("an app without budgets writes none: %s", b)
	}
	// The budgets start at line 11 of the plan.
	bad := map[string]string{
		"/feed: x":                 `mine.yaml:11: budget /feed: "x" is not a whole number of round trips (write /feed: 3)`,
		"/feed: -1":                "mine.yaml:11: budget /feed: -1 is negative",
		"/feed: 3.5":               `mine.yaml:11: budget /feed: "3.5" is not a whole number`,
		"/feed: [1]":               "mine.yaml:11: budget /feed: give a whole number",
		"/feed: 3\n      /feed: 4": "mine.yaml:12: the budget for /feed is given twice (lines 11 and 12): keep one",
	}
	for entry, want := range bad {
		yml := strings.Replace(planYAML, "    routes: [/feed, /feed-naive]\n", "    routes: [/feed, /feed-naive]\n    budgets:\n      "+entry+"\n", 1)
		_, err := ParsePlan("mine.yaml", []byte(yml))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", entry, err, want)
		}
	}
	if err := (&Plan{DelaysMs: []float64{0}, Runs: 1, Requests: 1, Shaper: "auto", Scope: "path", ICMPCount: 1, SelectRuns: 1, SelectCalls: 1,
		TaskICMPCount: 1, TraceRequests: 1, Apps: []PlanApp{{Name: "go", Budgets: apps.Budgets{"/feed": -1}}}}).Validate(); err == nil {
		t.Error("a negative budget from JSON passed Validate")
	}
}

func TestTraceTypesAndCheckBudgets(t *testing.T) {
	all, err := apps.Load(apps.FS(""))
	if err != nil {
		t.Fatal(err)
	}
	goApp, _ := apps.Resolve(all, "go")
	types, err := TraceTypes(goApp)
	if err != nil || !reflect.DeepEqual(types, []string{"/feed", "/feed-naive", "/serial?n=5"}) {
		t.Fatalf("go types %v %v", types, err)
	}
	rm, _ := apps.Resolve(all, "redmine")
	if types, _ := TraceTypes(rm); !reflect.DeepEqual(types, []string{"issue-detail", "issues-list", "projects"}) {
		t.Errorf("redmine types %v", types)
	}
	for _, ok := range []apps.Budgets{nil, {"/feed": 3}, {"/serial": 5}, {"/serial?n=5": 5}} {
		if err := CheckBudgets(goApp, ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	err = CheckBudgets(goApp, apps.Budgets{"/feed": 3, "/nope": 1})
	if err == nil || err.Error() != "budget /nope: go does not serve it (its request types: /feed, /feed-naive, /serial?n=5)" {
		t.Errorf("%v", err)
	}
	if err := CheckBudgets(rm, apps.Budgets{"issues-list": 40}); err != nil {
		t.Error(err)
	}
}

// A plan's budget for a type the app does not serve is refused before
// anything starts, at its line of the plan file.
func TestValidatePlanBudgets(t *testing.T) {
	all, err := apps.Load(apps.FS(""))
	if err != nil {
		t.Fatal(err)
	}
	yml := strings.Replace(planYAML, "    routes: [/feed]\n", "    routes: [/feed]\n    budgets:\n      /feed: 3\n      /nope: 1\n", 1)
	file := filepath.Join(t.TempDir(), "mine.yaml")
	os.WriteFile(file, []byte(yml), 0o644)
	p, err := ParsePlan(file, []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	err = ValidatePlanBudgets(p, all)
	want := file + ":14: app node: budget /nope: node does not serve it (its request types: /feed, /feed-naive, /serial?n=5)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	// Without the file (a built-in plan) the plan is named.
	p.Overridden()
	if err := ValidatePlanBudgets(p, all); err == nil || !strings.HasPrefix(err.Error(), "plan mine: app node: budget /nope") {
		t.Errorf("%v", err)
	}
	// Served budgets pass; app.yaml's are checked too (a mix's types).
	p.Apps[1].Budgets = apps.Budgets{"/serial": 5}
	if err := ValidatePlanBudgets(p, all); err != nil {
		t.Error(err)
	}
	rm := *all["redmine"]
	rm.Budgets = apps.Budgets{"issue-list": 3}
	all2 := map[string]*apps.Meta{}
	for k, v := range all {
		all2[k] = v
	}
	all2["redmine"] = &rm
	p.Apps = append(p.Apps, PlanApp{Name: "redmine", Mix: "redmine"})
	if err := ValidatePlanBudgets(p, all2); err == nil || !strings.HasPrefix(err.Error(), "apps/redmine/app.yaml: budget issue-list: redmine does not serve it") {
		t.Errorf("%v", err)
	}
	// A plan entry's budget wins over app.yaml's.
	goApp, _ := apps.Resolve(all, "go")
	goApp.Meta = &apps.Meta{Name: "go", Budgets: apps.Budgets{"/feed": 3, "/feed-naive": 12}}
	if b := AppBudgets(goApp, PlanApp{Budgets: apps.Budgets{"/feed": 4}}); !reflect.DeepEqual(b, apps.Budgets{"/feed": 4, "/feed-naive": 12}) {
		t.Errorf("%v", b)
	}
}
