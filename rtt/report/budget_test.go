package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/workloads"
)

// budgetRows: /feed takes 3 round trips, /feed-naive 12 (one request 13),
// /serial?n=5 5; another app's rows are in the way.
func budgetRows() []workloads.TraceRow {
	return []workloads.TraceRow{
		{App: "go", Type: "/feed", N: 20, RoundTrips: workloads.TraceRange{Median: 3, Min: 3, Max: 3}, Statements: workloads.TraceRange{Median: 3, Min: 3, Max: 3}, PGSS: 3, Expected: 3},
		{App: "go", Type: "/feed-naive", N: 20, RoundTrips: workloads.TraceRange{Median: 12, Min: 12, Max: 13}, Statements: workloads.TraceRange{Median: 12, Min: 12, Max: 12}, PGSS: 12, Expected: 12},
		{App: "go", Type: "/serial?n=5", N: 20, RoundTrips: workloads.TraceRange{Median: 5, Min: 5, Max: 5}, Statements: workloads.TraceRange{Median: 5, Min: 5, Max: 5}, PGSS: 5, Expected: 5},
		{App: "node", Type: "/feed", N: 20, RoundTrips: workloads.TraceRange{Median: 30, Min: 30, Max: 30}},
	}
}

func TestBudgetFor(t *testing.T) {
	b := map[string]int{"/feed": 3, "/serial": 9, "/serial?n=5": 5}
	cases := []struct {
		typ, key string
		max      int
		ok       bool
	}{
		{"/feed", "/feed", 3, true},
		{"/serial?n=5", "/serial?n=5", 5, true}, // the exact key wins
		{"/serial?n=7", "/serial", 9, true},     // the path covers the per-N type
		{"/feed-naive", "", 0, false},
		{"/feed?x=1", "/feed", 3, true},
	}
	for _, c := range cases {
		k, m, ok := BudgetFor(b, c.typ)
		if k != c.key || m != c.max || ok != c.ok {
			t.Errorf("%s: %q %d %v", c.typ, k, m, ok)
		}
	}
	un := UnservedBudgets(map[string]int{"/feed": 1, "/nope": 2, "/serial": 3, "/a": 1}, []string{"/feed", "/serial?n=5"})
	if !reflect.DeepEqual(un, []string{"/a", "/nope"}) {
		t.Errorf("unserved %v", un)
	}
}

func TestCheckBudgets(t *testing.T) {
	rows := budgetRows()
	// Within budget: the maximum over the requests is gated.
	r := CheckBudgets("go", rows, map[string]int{"/feed": 3, "/feed-naive": 13})
	if r.Verdict != BudgetPass || len(r.Types) != 3 || r.Gated() != 2 || len(r.FailLines()) != 0 {
		t.Fatalf("%+v", r)
	}
	if v := verdicts(r); !reflect.DeepEqual(v, map[string]string{"/feed": "pass", "/feed-naive": "pass", "/serial?n=5": "unbudgeted"}) {
		t.Errorf("verdicts %v", v)
	}
	// One request of /feed-naive took 13 round trips: over a budget of 12
	// although the median is 12.
	r = CheckBudgets("go", rows, map[string]int{"/feed": 3, "/feed-naive": 12, "/serial": 4})
	if r.Verdict != BudgetFail {
		t.Fatalf("verdict %s", r.Verdict)
	}
	if v := verdicts(r); !reflect.DeepEqual(v, map[string]string{"/feed": "pass", "/feed-naive": "over", "/serial?n=5": "over"}) {
		t.Errorf("verdicts %v", v)
	}
	lines := r.FailLines()
	want := []string{
		"over budget: go /feed-naive: 13 round trips per request (max of 20 requests; median 12) > budget 12; statements seen per request: 12 [12-12] on the wire, 12.00 in pg_stat_statements",
		"over budget: go /serial?n=5: 5 round trips per request (max of 20 requests; median 5) > budget 4; statements seen per request: 5 [5-5] on the wire, 5.00 in pg_stat_statements",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("fail lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if s := r.SummaryLine(); s != "round-trip budgets go: FAIL (2 of 3 budgeted request types: /feed-naive, /serial?n=5)" {
		t.Errorf("summary %q", s)
	}
	if r.Types[2].BudgetKey != "/serial" || *r.Types[2].Budget != 4 {
		t.Errorf("per-N type: %+v", r.Types[2])
	}
	// Failed requests are no measure; a budget without a traced type fails.
	rows[0].Failures = 2
	r = CheckBudgets("go", rows, map[string]int{"/feed": 3, "/gone": 1})
	if v := verdicts(r); r.Verdict != BudgetFail || v["/feed"] != BudgetFailed || v["/gone"] != BudgetUntraced {
		t.Errorf("%s %v", r.Verdict, v)
	}
	for _, l := range r.FailLines() {
		if !strings.HasPrefix(l, "budget not met: go ") || strings.Contains(l, "\n") {
			t.Errorf("line %q", l)
		}
	}
	// No budgets: nothing gated.
	r = CheckBudgets("go", budgetRows(), nil)
	if r.Verdict != BudgetNone || r.Gated() != 0 || !strings.Contains(r.SummaryLine(), "none given") {
		t.Errorf("%+v", r)
	}
	// The other app's rows are its own.
	if r := CheckBudgets("node", budgetRows(), map[string]int{"/feed": 3}); r.Verdict != BudgetFail || len(r.Types) != 1 {
		t.Errorf("node: %+v", r)
	}
}

func verdicts(r BudgetReport) map[string]string {
	out := map[string]string{}
	for _, t := range r.Types {
		out[t.Type] = t.Verdict
	}
	return out
}

// The JSON document of `rttlab trace --format json`: app, verdict,
// budgets, and per type the trace row with budget and verdict.
func TestBudgetReportJSON(t *testing.T) {
	r := CheckBudgets("go", budgetRows(), map[string]int{"/feed": 3, "/feed-naive": 3})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		App     string           `json:"app"`
		Verdict string           `json:"verdict"`
		Budgets map[string]int   `json:"budgets"`
		Types   []map[string]any `json:"types"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.App != "go" || doc.Verdict != "fail" || !reflect.DeepEqual(doc.Budgets, map[string]int{"/feed": 3, "/feed-naive": 3}) || len(doc.Types) != 3 {
		t.Fatalf("%s", b)
	}
	naive := doc.Types[1]
	for _, k := range []string{"app", "type", "n", "failures", "round_trips", "statements", "parses", "pg_stat_statements_per_request", "budget", "budget_key", "verdict", "reason"} {
		if _, ok := naive[k]; !ok {
			t.Errorf("type object lacks %q: %v", k, naive)
		}
	}
	if naive["verdict"] != "over" || naive["budget"] != 3.0 || naive["round_trips"].(map[string]any)["max"] != 13.0 {
		t.Errorf("%v", naive)
	}
	// A type without a budget has budget null.
	if v, ok := doc.Types[2]["budget"]; !ok || v != nil || doc.Types[2]["verdict"] != "unbudgeted" {
		t.Errorf("%v", doc.Types[2])
	}
	// No budgets: an empty object and list, never null.
	b, _ = json.Marshal(CheckBudgets("go", nil, nil))
	if string(b) != `{"app":"go","verdict":"none","budgets":{},"types":[]}` {
		t.Errorf("%s", b)
	}
}

func TestJUnit(t *testing.T) {
	over := CheckBudgets("go", budgetRows(), map[string]int{"/feed": 3, "/feed-naive": 3})
	node := CheckBudgets("node", budgetRows(), map[string]int{"/feed": 30})
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, []BudgetReport{over, node}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Errorf("no XML header: %s", buf.String())
	}
	// Read back with a reader of its own, as a CI system would.
	var doc struct {
		XMLName xml.Name `xml:"testsuites"`
		Tests   int      `xml:"tests,attr"`
		Suites  []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Skipped  int    `xml:"skipped,attr"`
			Cases    []struct {
				ClassName string `xml:"classname,attr"`
				Name      string `xml:"name,attr"`
				Failure   *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Name != "rttlab-trace-budgets" || s.Tests != 4 || doc.Tests != 4 || s.Failures != 1 || s.Skipped != 1 || len(s.Cases) != 4 {
		t.Fatalf("suite %+v", s)
	}
	c := s.Cases[1]
	if c.ClassName != "rttlab.go" || c.Name != "/feed-naive" || c.Failure == nil || c.Failure.Type != "over-budget" ||
		c.Failure.Message != "13 round trips per request (max of 20 requests; median 12) > budget 3" ||
		!strings.HasPrefix(c.Failure.Text, "over budget: go /feed-naive: ") {
		t.Errorf("over-budget case %+v %+v", c, c.Failure)
	}
	if c := s.Cases[0]; c.Failure != nil || c.Skipped != nil || !strings.Contains(c.SystemOut, "round trips per request: 3 [3-3] over 20 requests") || !strings.Contains(c.SystemOut, "budget 3") {
		t.Errorf("passing case %+v", c)
	}
	if c := s.Cases[2]; c.Name != "/serial?n=5" || c.Skipped == nil || c.Failure != nil {
		t.Errorf("unbudgeted case %+v", c)
	}
	if c := s.Cases[3]; c.ClassName != "rttlab.node" || c.Failure != nil {
		t.Errorf("node case %+v", c)
	}
	// Nothing to report is still a valid document with the suite.
	buf.Reset()
	if err := WriteJUnit(&buf, nil); err != nil {
		t.Fatal(err)
	}
	var empty JUnitSuites
	if err := xml.Unmarshal(buf.Bytes(), &empty); err != nil || len(empty.Suites) != 1 || empty.Suites[0].Name != JUnitSuiteName || empty.Tests != 0 {
		t.Errorf("%v %+v", err, empty)
	}
}
