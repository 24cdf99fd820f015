package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SmokeVerdict is what a CI smoke run (rttlab ci-smoke) found, step by
// step: verify on a stack of its own, the run of a smoke plan, and the
// round-trip budget gate on the run's trace. Write prints it on one
// screen; Verdict is PASS only when every step ran and passed.
type SmokeVerdict struct {
	App string
	// DelaysMs, Runs and Requests are the smoke plan's settings and its
	// runs and requests per route and setting.
	DelaysMs       []float64
	Runs, Requests int

	VerifyRan    bool
	VerifyChecks int
	VerifyFailed int

	RunRan  bool
	Dir     string
	Elapsed time.Duration
	Summary *Summary
	// Gate is the budget gate on the run's trace; nil when the run
	// produced no trace and no budget was given.
	Gate  *BudgetReport
	JUnit string

	// Err stopped a step from completing (not a failed check).
	Err error
}

// Verdict is PASS only when every step ran and passed.
func (v *SmokeVerdict) Verdict() string {
	if v.Err != nil || !v.VerifyRan || v.VerifyFailed > 0 || !v.RunRan || !v.RunComplete() ||
		(v.Gate != nil && v.Gate.Verdict == BudgetFail) {
		return "FAIL"
	}
	return "PASS"
}

// RunComplete tells whether the run did every task it planned.
func (v *SmokeVerdict) RunComplete() bool {
	return v.Summary != nil && v.Summary.TasksPlanned > 0 && v.Summary.TasksDone == v.Summary.TasksPlanned
}

// Write prints the one-screen verdict.
func (v *SmokeVerdict) Write(w io.Writer) {
	fmt.Fprintf(w, "ci-smoke %s: %s\n", v.App, v.Verdict())
	v.writeVerify(w)
	if v.Gate != nil {
		v.writeGate(w)
	} else if v.RunRan {
		smokeRow(w, "budgets", "-", "not checked: the run traced nothing")
	}
	if v.RunRan {
		v.writeRun(w)
	}
	if v.Err != nil && !v.RunRan && v.VerifyFailed == 0 {
		smokeRow(w, "error", "", firstLineOf(v.Err))
	}
	if v.Dir != "" {
		smokeRow(w, "results", "", v.Dir)
	}
	if v.JUnit != "" && v.Gate != nil {
		smokeRow(w, "junit", "", v.JUnit)
	}
}

// smokeRow prints a row of the verdict: the step, its state and what it found.
func smokeRow(w io.Writer, step, state, detail string) {
	line := fmt.Sprintf("  %-8s %-5s %s", step, state, detail)
	fmt.Fprintln(w, strings.TrimRight(line, " "))
}

// writeVerify prints the verify step's row.
func (v *SmokeVerdict) writeVerify(w io.Writer) {
	switch {
	case !v.VerifyRan:
		smokeRow(w, "verify", "-", "not run")
	case v.VerifyFailed > 0:
		smokeRow(w, "verify", "FAIL", fmt.Sprintf("%d of %d checks failed (the FAIL lines above); nothing else ran", v.VerifyFailed, v.VerifyChecks))
	case v.Err != nil && !v.RunRan:
		smokeRow(w, "verify", "-", "did not complete")
	default:
		smokeRow(w, "verify", "PASS", fmt.Sprintf("%d checks", v.VerifyChecks))
	}
}

// writeGate prints the trace's round trips and the budget gate's rows.
func (v *SmokeVerdict) writeGate(w io.Writer) {
	var types []string
	for _, t := range v.Gate.Types {
		if t.N > 0 {
			types = append(types, fmt.Sprintf("%s %g [%d-%d]", t.Type, t.RoundTrips.Median, t.RoundTrips.Min, t.RoundTrips.Max))
		}
	}
	if len(types) > 0 {
		smokeRow(w, "trace", "", strings.Join(types, ", ")+" round trips per request, median [min-max]")
	}
	switch v.Gate.Verdict {
	case BudgetNone:
		smokeRow(w, "budgets", "-", "none given (--budget ROUTE=N, or budgets: in app.yaml)")
	case BudgetPass:
		smokeRow(w, "budgets", "PASS", fmt.Sprintf("%d of %d budgeted request types within budget (%s)", v.Gate.Gated(), v.Gate.Gated(), budgetList(v.Gate.Budgets)))
	default:
		smokeRow(w, "budgets", "FAIL", fmt.Sprintf("%d of %d budgeted request types", len(v.Gate.Failing()), v.Gate.Gated()))
		for _, l := range v.Gate.FailLines() {
			fmt.Fprintf(w, "           %s\n", l)
		}
	}
}

// writeRun prints the run step's row, its changes against 0 ms and the
// count of the summary's warnings.
func (v *SmokeVerdict) writeRun(w io.Writer) {
	state, detail := "PASS", ""
	if s := v.Summary; s != nil {
		at := msList(v.DelaysMs) + " ms"
		for _, t := range s.Manifest.Tasks {
			if t.Unshaped {
				at += " and unshaped"
				break
			}
		}
		detail = fmt.Sprintf("%d of %d tasks at %s (%s)", s.TasksDone, s.TasksPlanned, at, v.counts())
	}
	if !v.RunComplete() || v.Err != nil {
		state = "FAIL"
	}
	if v.Err != nil {
		if detail != "" {
			detail += "; "
		}
		detail += firstLineOf(v.Err)
	}
	smokeRow(w, "run", state, detail)
	for _, c := range v.cells() {
		fmt.Fprintf(w, "           %s\n", c)
	}
	if s := v.Summary; s != nil && len(s.Warnings) > 0 {
		smokeRow(w, "notes", "", fmt.Sprintf("%d warnings in summary.md (a smoke run has too few runs for a claim)", len(s.Warnings)))
	}
}

func (v *SmokeVerdict) counts() string {
	if v.Runs == 0 {
		return ""
	}
	return fmt.Sprintf("%d runs × %d requests per route and setting; %s", v.Runs, v.Requests, v.Elapsed.Round(time.Second))
}

// cells are the run's changes against 0 ms, one line per route and
// non-zero setting.
func (v *SmokeVerdict) cells() []string {
	if v.Summary == nil {
		return nil
	}
	var cs []Cell
	for _, c := range v.Summary.Cells {
		if c.App == v.App && c.HasBaseline {
			cs = append(cs, c)
		}
	}
	slices.SortFunc(cs, func(a, b Cell) int {
		if c := strings.Compare(a.Route, b.Route); c != 0 {
			return c
		}
		return int(a.RTTms*1000) - int(b.RTTms*1000)
	})
	var out []string
	for _, c := range cs {
		l := fmt.Sprintf("%s at %s ms: p50 %+.2f ms", c.Route, strconv.FormatFloat(c.RTTms, 'g', -1, 64), c.Change)
		if c.ChangeCI.Valid() {
			l += fmt.Sprintf(" [%+.2f, %+.2f]", c.ChangeCI.Low, c.ChangeCI.High)
		}
		l += fmt.Sprintf(", ratio %.1f", c.Ratio)
		if c.HasStatements {
			l += fmt.Sprintf(" (%g statements: %+.2f ms predicted)", c.Statements, c.Predicted)
		}
		out = append(out, l)
	}
	return out
}

func msList(ds []float64) string {
	var s []string
	for _, d := range ds {
		s = append(s, strconv.FormatFloat(d, 'g', -1, 64))
	}
	return strings.Join(s, ", ")
}

func firstLineOf(err error) string {
	l, _, _ := strings.Cut(err.Error(), "\n")
	return l
}

// budgetList is budgets as key=N,... sorted by key, as app.yaml and
// --budget give them.
func budgetList(budgets map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(budgets)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, budgets[k]))
	}
	return strings.Join(parts, ",")
}
