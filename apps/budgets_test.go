package apps

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseBudgets(t *testing.T) {
	good := []struct {
		specs []string
		want  Budgets
	}{
		{nil, Budgets{}},
		{[]string{"/feed=3,/feed-naive=12"}, Budgets{"/feed": 3, "/feed-naive": 12}},
		{[]string{"/feed=3", "/feed-naive=12"}, Budgets{"/feed": 3, "/feed-naive": 12}},
		{[]string{" /feed = 0 "}, Budgets{"/feed": 0}},
		// The last '=' separates: a per-N route keeps its query.
		{[]string{"/serial?n=5=5"}, Budgets{"/serial?n=5": 5}},
		{[]string{"issues-list=40"}, Budgets{"issues-list": 40}},
	}
	for _, c := range good {
		got, err := ParseBudgets(c.specs)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.specs, got, err, c.want)
		}
	}
	bad := []struct {
		specs []string
		want  string
	}{
		{[]string{"/feed=x"}, `budget /feed: "x" is not a whole number of round trips (write /feed=3)`},
		{[]string{"/feed=1.5"}, "not a whole number"},
		{[]string{"=3"}, `budget "=3" has no route: write ROUTE=N, e.g. /feed=3`},
		{[]string{"/feed=-1"}, "budget /feed: -1 is negative"},
		{[]string{"/feed=3,/feed=4"}, "the budget for /feed is given twice (3 and 4): keep one"},
		{[]string{"/feed=3", "/feed=3"}, "given twice"},
		{[]string{"/feed"}, `budget "/feed" has no =N`},
		{[]string{""}, "--budget is empty"},
		{[]string{"/feed=3,,/x=1"}, "has an empty item"},
		{[]string{"/feed=99999999999"}, "not a whole number"},
	}
	for _, c := range bad {
		_, err := ParseBudgets(c.specs)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", c.specs, err, c.want)
		}
	}
}

func TestBudgetsMergeAndString(t *testing.T) {
	a := Budgets{"/feed": 3, "/feed-naive": 12}
	m := a.Merge(Budgets{"/feed": 4})
	if !reflect.DeepEqual(m, Budgets{"/feed": 4, "/feed-naive": 12}) || a["/feed"] != 3 {
		t.Errorf("merge %v (original %v)", m, a)
	}
	if got := Budgets(nil).Merge(nil); len(got) != 0 {
		t.Errorf("nil merge %v", got)
	}
	if s := m.String(); s != "/feed=4,/feed-naive=12" {
		t.Errorf("String %q", s)
	}
}

const budgetMeta = `name: go
port: 8080
health: /health
routes:
  - path: /feed
    statements: 3
  - path: /serial
    statements_per_n: true
`

func TestMetaBudgets(t *testing.T) {
	m, err := ParseMeta("go", []byte(budgetMeta+"budgets:\n  /feed: 3\n  /serial?n=5: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Budgets, Budgets{"/feed": 3, "/serial?n=5": 5}) {
		t.Errorf("budgets %v", m.Budgets)
	}
	if m, err := ParseMeta("go", []byte(budgetMeta)); err != nil || m.Budgets != nil {
		t.Errorf("no budgets: %v %v", m.Budgets, err)
	}
	// Line 10 is the first budget line (the metadata is 8 lines, then "budgets:").
	bad := []struct {
		yaml, want string
	}{
		{"budgets:\n  /feed: x\n", `apps/go/app.yaml:10: budget /feed: "x" is not a whole number of round trips (write /feed: 3)`},
		{"budgets:\n  /feed: -2\n", "apps/go/app.yaml:10: budget /feed: -2 is negative"},
		{"budgets:\n  /feed: 1.5\n", "apps/go/app.yaml:10: budget /feed: \"1.5\" is not a whole number"},
		{"budgets:\n  /feed: 3\n  /feed: 4\n", "apps/go/app.yaml:11: the budget for /feed is given twice (lines 10 and 11): keep one"},
		{"budgets:\n  /feed: [3]\n", "apps/go/app.yaml:10: budget /feed: give a whole number"},
		{"budgets: [3]\n", "apps/go/app.yaml:9: budgets must be a mapping"},
		{"budgets:\n  \"\": 3\n", "apps/go/app.yaml:10: a budget has no route"},
		{"budgets:\n  /nope: 3\n", "apps/go/app.yaml: budget /nope: go does not serve it (routes: /feed, /serial)"},
	}
	for _, c := range bad {
		_, err := ParseMeta("go", []byte(budgetMeta+c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", c.yaml, err, c.want)
		}
	}
	// A mix's request types are named in Go: checked where the mix is known.
	mix := "name: rm\nport: 3000\nhealth: /h\nroutes: [{path: /x}]\nmix: redmine\nbudgets: {issues-list: 40}\n"
	if _, err := ParseMeta("rm", []byte(mix)); err != nil {
		t.Errorf("mix budgets: %v", err)
	}
}
