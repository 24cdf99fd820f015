package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/rtt"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
	"github.com/rttlab/rttlab/workloads"
)

// exitOverBudget is the exit status of a command that did everything it
// was asked and found a request type over its round-trip budget: CI tells
// a regression (3) from bad input (2) and a failure to measure (1).
const exitOverBudget = 3

// overBudgetError is a round-trip gate that failed (exit status 3); the
// lines naming each type over budget were printed before it.
type overBudgetError struct{ msg string }

func (e overBudgetError) Error() string { return e.msg }

// gateError returns the error of failed gates, or nil when all passed.
func gateError(reports []report.BudgetReport) error {
	var names []string
	for _, r := range reports {
		for _, t := range r.Failing() {
			names = append(names, r.App+" "+t.Type)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return overBudgetError{fmt.Sprintf("round-trip budget not met: %s (see the lines above)", strings.Join(names, ", "))}
}

// budgetOptions are the round-trip gate's flags of trace and ci-smoke.
type budgetOptions struct {
	specs  []string
	junit  string
	format string // "" where the command has no --format

	budgets apps.Budgets // app.yaml's with the flags' winning; set by resolve
}

func (b *budgetOptions) addFlags(cmd *cobra.Command, format bool) {
	f := cmd.Flags()
	f.StringArrayVar(&b.specs, "budget", nil, "round-trip budget per request type: ROUTE=N[,ROUTE=N...] (repeatable); exit status 3 when a request takes more")
	f.StringVar(&b.junit, "junit", "", "write the budget gate as JUnit XML to this file (one test case per request type)")
	if format {
		f.StringVar(&b.format, "format", "table", "output: table, or json (the trace and the budget gate as one JSON document)")
	}
}

// resolve parses the flags, adds them to the app's app.yaml budgets and
// checks every budget against the request types the app serves. It needs
// no engine; every mistake is a usage error of one line.
func (b *budgetOptions) resolve(t apps.Target) error {
	switch b.format {
	case "", "table", "json":
	default:
		return usagef("--format %q: use table or json", b.format)
	}
	flags, err := apps.ParseBudgets(b.specs)
	if err != nil {
		return usageError{Err: err}
	}
	if err := rtt.CheckBudgets(t, t.Meta.Budgets); err != nil {
		return usagef("apps/%s/app.yaml: %v", t.Meta.Name, err)
	}
	if err := rtt.CheckBudgets(t, flags); err != nil {
		return usagef("--budget: %v", err)
	}
	b.budgets = t.Meta.Budgets.Merge(flags)
	if b.junit != "" {
		if st, err := os.Stat(b.junit); err == nil && st.IsDir() {
			return usagef("--junit %s is a folder: name the XML file to write, e.g. %s", b.junit, filepath.Join(b.junit, "rttlab-budgets.xml"))
		}
		if st, err := os.Stat(filepath.Dir(b.junit)); err != nil || !st.IsDir() {
			return usagef("--junit %s: folder %s does not exist: create it first", b.junit, filepath.Dir(b.junit))
		}
	}
	return nil
}

// writeJUnit writes the reports to the --junit file, if any.
func (b *budgetOptions) writeJUnit(reports []report.BudgetReport) error {
	if b.junit == "" {
		return nil
	}
	var buf bytes.Buffer
	if err := report.WriteJUnit(&buf, reports); err != nil {
		return err
	}
	if err := os.WriteFile(b.junit, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	return nil
}

// printGate prints a gate's verdict line and a line per failing type.
func printGate(w io.Writer, r report.BudgetReport) {
	fmt.Fprintln(w, r.SummaryLine())
	for _, l := range r.FailLines() {
		fmt.Fprintln(w, "  "+l)
	}
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// gateRun checks the budgets of a finished run's apps on the trace in its
// results folder: each app's app.yaml budgets with its plan entry's. An
// app the run skipped is named, not gated. It prints a verdict per app
// with budgets and returns overBudgetError when one failed.
func gateRun(w io.Writer, dir string, p *rtt.Plan, all map[string]*apps.Meta, skipped map[string]string) error {
	var reports []report.BudgetReport
	var rows []workloads.TraceRow
	read := false
	for _, a := range p.Apps {
		t, err := apps.Resolve(all, a.Name)
		if err != nil {
			return err
		}
		b := rtt.AppBudgets(t, a)
		if len(b) == 0 {
			continue
		}
		if why, ok := skipped[a.Name]; ok {
			fmt.Fprintf(w, "round-trip budgets %s: not checked: the run skipped it (%s)\n", a.Name, why)
			continue
		}
		if !read {
			if rows, err = raw.ReadTrace(dir); err != nil {
				return err
			}
			read = true
		}
		r := report.CheckBudgets(a.Name, rows, b)
		printGate(w, r)
		reports = append(reports, r)
	}
	return gateError(reports)
}
