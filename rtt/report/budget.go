package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/workloads"
)

// Verdicts of a budgeted request type and of a budget report.
const (
	BudgetPass       = "pass"       // the most round trips of any request ≤ budget
	BudgetOver       = "over"       // some request took more round trips than the budget
	BudgetFailed     = "failed"     // requests failed: their round trips are no measure
	BudgetUntraced   = "untraced"   // a budget whose type has no traced request
	BudgetUnbudgeted = "unbudgeted" // a traced type without a budget (not gated)

	// Report verdicts; BudgetPass is the third.
	BudgetFail = "fail" // some budgeted type is over, failed or untraced
	BudgetNone = "none" // no budgets: nothing was gated
)

// BudgetReport is the round-trip gate of one app: every traced request
// type with its budget, if any, and the verdict. Its JSON form is what
// `rttlab trace --format json` prints.
type BudgetReport struct {
	App string `json:"app"`
	// Verdict: pass (every budgeted type within budget), fail, or none
	// (no budgets).
	Verdict string `json:"verdict"`
	// Budgets as given (request type or route → round trips per request).
	Budgets map[string]int `json:"budgets"`
	Types   []BudgetType   `json:"types"`
}

// BudgetType is one request type of the gate: its trace row (the round
// trips' median, min and max over the traced requests; the statements
// seen) with the budget that applies and the verdict.
type BudgetType struct {
	workloads.TraceRow
	// Budget is the most round trips a request may take; null when no
	// budget applies to the type. BudgetKey is the key it came from
	// (/serial covers /serial?n=5).
	Budget    *int   `json:"budget"`
	BudgetKey string `json:"budget_key,omitempty"`
	// Verdict: pass, over, failed, untraced or unbudgeted.
	Verdict string `json:"verdict"`
	// Reason says, on one line, why a budgeted type did not pass.
	Reason string `json:"reason,omitempty"`
}

// Gated reports whether the type has a budget.
func (t BudgetType) Gated() bool { return t.Budget != nil }

// Failing reports whether the type fails the gate.
func (t BudgetType) Failing() bool {
	return t.Verdict == BudgetOver || t.Verdict == BudgetFailed || t.Verdict == BudgetUntraced
}

// BudgetFor returns the budget that applies to a traced request type: the
// one keyed by the type itself, else the one keyed by its path without
// the query (/serial for /serial?n=5).
func BudgetFor(budgets map[string]int, typ string) (key string, max int, ok bool) {
	if v, ok := budgets[typ]; ok {
		return typ, v, true
	}
	if path, _, cut := strings.Cut(typ, "?"); cut {
		if v, ok := budgets[path]; ok {
			return path, v, true
		}
	}
	return "", 0, false
}

// UnservedBudgets returns, sorted, the budget keys that apply to none of
// the request types.
func UnservedBudgets(budgets map[string]int, types []string) []string {
	used := map[string]bool{}
	for _, t := range types {
		if k, _, ok := BudgetFor(budgets, t); ok {
			used[k] = true
		}
	}
	var out []string
	for k := range budgets {
		if !used[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// CheckBudgets gates the traced request types of app (rows of other apps
// are ignored) on round-trip budgets. A type passes when no traced
// request took more round trips than its budget (the maximum over the
// requests is gated, the median reported); it fails when one did, when
// any of its requests failed (a failed request's round trips are no
// measure), or when a budget applies to no traced request. Types without
// a budget are listed, not gated. It is a pure function of its input.
func CheckBudgets(app string, rows []workloads.TraceRow, budgets map[string]int) BudgetReport {
	r := BudgetReport{App: app, Budgets: map[string]int{}, Types: []BudgetType{}}
	for k, v := range budgets {
		r.Budgets[k] = v
	}
	used := map[string]bool{}
	for _, row := range rows {
		if row.App != app {
			continue
		}
		t := BudgetType{TraceRow: row, Verdict: BudgetUnbudgeted}
		if key, max, ok := BudgetFor(budgets, row.Type); ok {
			used[key] = true
			t.Budget, t.BudgetKey = &max, key
			switch {
			case row.N == 0:
				t.Verdict, t.Reason = BudgetUntraced, "no request of this type was traced"
			case row.Failures > 0:
				t.Verdict = BudgetFailed
				t.Reason = fmt.Sprintf("%d of %d traced requests failed, so their round trips are no measure: fix the route first", row.Failures, row.N)
			case row.RoundTrips.Max > max:
				t.Verdict = BudgetOver
				t.Reason = fmt.Sprintf("%d round trips per request (max of %d requests; median %g) > budget %d",
					row.RoundTrips.Max, row.N, row.RoundTrips.Median, max)
			default:
				t.Verdict = BudgetPass
			}
		}
		r.Types = append(r.Types, t)
	}
	for k, max := range budgets {
		if used[k] {
			continue
		}
		r.Types = append(r.Types, BudgetType{TraceRow: workloads.TraceRow{App: app, Type: k, Expected: -1}, Budget: &max, BudgetKey: k,
			Verdict: BudgetUntraced, Reason: "no request of this type was traced"})
	}
	slices.SortFunc(r.Types, func(a, b BudgetType) int { return strings.Compare(a.Type, b.Type) })
	r.Verdict = BudgetNone
	for _, t := range r.Types {
		if t.Failing() {
			r.Verdict = BudgetFail
			break
		}
		if t.Gated() {
			r.Verdict = BudgetPass
		}
	}
	return r
}

// Failing returns the types that fail the gate, in type order.
func (r BudgetReport) Failing() []BudgetType {
	var out []BudgetType
	for _, t := range r.Types {
		if t.Failing() {
			out = append(out, t)
		}
	}
	return out
}

// Gated counts the types with a budget.
func (r BudgetReport) Gated() int {
	n := 0
	for _, t := range r.Types {
		if t.Gated() {
			n++
		}
	}
	return n
}

// FailLines returns one line per failing type: the measured round trips,
// the budget and the statements seen (wire Query/Execute messages and
// pg_stat_statements executions per request).
func (r BudgetReport) FailLines() []string {
	var out []string
	for _, t := range r.Failing() {
		out = append(out, t.FailLine(r.App))
	}
	return out
}

// FailLine is the line of a failing type (see FailLines).
func (t BudgetType) FailLine(app string) string {
	switch t.Verdict {
	case BudgetOver:
		return fmt.Sprintf("over budget: %s %s: %s; statements seen per request: %s on the wire, %s in pg_stat_statements",
			app, t.Type, t.Reason, rangeG(t.Statements), PGSSText(t.PGSS))
	default:
		return fmt.Sprintf("budget not met: %s %s (budget %d): %s", app, t.Type, *t.Budget, t.Reason)
	}
}

// SummaryLine says in one line how the gate went.
func (r BudgetReport) SummaryLine() string {
	switch r.Verdict {
	case BudgetNone:
		return fmt.Sprintf("round-trip budgets %s: none given (set --budget ROUTE=N or budgets: in app.yaml)", r.App)
	case BudgetPass:
		return fmt.Sprintf("round-trip budgets %s: PASS (%s within budget)", r.App, typesCount(r.Gated()))
	}
	var names []string
	for _, t := range r.Failing() {
		names = append(names, t.Type)
	}
	return fmt.Sprintf("round-trip budgets %s: FAIL (%d of %d budgeted request types: %s)", r.App, len(names), r.Gated(), strings.Join(names, ", "))
}

// rangeG is a median [min-max] as the trace table prints it.
func rangeG(r workloads.TraceRange) string { return fmt.Sprintf("%g [%d-%d]", r.Median, r.Min, r.Max) }

// typesCount is "1 request type" or "N request types".
func typesCount(n int) string {
	if n == 1 {
		return "1 request type"
	}
	return fmt.Sprintf("%d request types", n)
}

// JUnit XML, the form CI systems read test results in.

// JUnitSuiteName names the one test suite of the budget gate.
const JUnitSuiteName = "rttlab-trace-budgets"

// JUnitSuites is the document: one suite.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is the budget gate's suite.
type JUnitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []JUnitCase `xml:"testcase"`
}

// JUnitCase is one request type of one app: classname rttlab.APP, name
// the request type.
type JUnitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	Skipped   *JUnitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitFailure carries the failing type's line.
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnitSkipped marks a type without a budget.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

// JUnit returns the gate of one or more apps as one JUnit test suite,
// rttlab-trace-budgets: a test case per request type; a budgeted type
// passes or fails (failure type over-budget, failed-requests or
// untraced, message its line), a type without a budget is a skipped
// case, so the CI's test view lists every traced type.
func JUnit(reports []BudgetReport) JUnitSuites {
	s := JUnitSuite{Name: JUnitSuiteName, Cases: []JUnitCase{}}
	for _, r := range reports {
		for _, t := range r.Types {
			c := JUnitCase{ClassName: "rttlab." + r.App, Name: t.Type, Time: "0"}
			switch {
			case t.Failing():
				kind := map[string]string{BudgetOver: "over-budget", BudgetFailed: "failed-requests", BudgetUntraced: "untraced"}[t.Verdict]
				c.Failure = &JUnitFailure{Message: t.Reason, Type: kind, Text: t.FailLine(r.App)}
				s.Failures++
			case !t.Gated():
				c.Skipped = &JUnitSkipped{Message: "no round-trip budget for this request type"}
				s.Skipped++
			}
			if t.N > 0 {
				c.SystemOut = fmt.Sprintf("round trips per request: %s over %d requests; statements %s; parses %s; pg_stat_statements %s per request",
					rangeG(t.RoundTrips), t.N, rangeG(t.Statements), rangeG(t.Parses), PGSSText(t.PGSS))
				if t.Gated() {
					c.SystemOut += fmt.Sprintf("; budget %d", *t.Budget)
				}
			}
			s.Cases = append(s.Cases, c)
		}
	}
	s.Tests = len(s.Cases)
	return JUnitSuites{Name: "rttlab", Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Suites: []JUnitSuite{s}}
}

// WriteJUnit writes the gate of the reports as JUnit XML.
func WriteJUnit(w io.Writer, reports []BudgetReport) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(JUnit(reports)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
