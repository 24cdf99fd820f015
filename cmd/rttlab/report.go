package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/report"
)

type reportOptions struct {
	targets []string // --p50-target ROUTE=MS, as given
}

func newReportCmd() *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate summaries, plots and report.html from a results folder's raw files",
		Long: `Reads manifest.json, samples.jsonl, tasks.jsonl and probes.csv and writes
runs.csv, summary.json, summary.md, plots/*.svg|png and report.html (a
single self-contained file to share), then prints the digest a run prints
at its end. Nothing is written when a file is
missing or malformed: the error names the file and line. For a placement
study's folder (rttlab place) it recomputes summary.json and summary.md
from samples.jsonl; for a worker study's folder (rttlab workers),
summary.json, summary.md and plots/ from capacity.jsonl and runs.jsonl.

--p50-target ROUTE=MS answers "how far may my database be for this route
to stay under MS": from the fit of the route's p50 against the RTT over
every setting (summary.md's "Sensitivity to the RTT"), the RTT at which
the fitted p50 reaches MS, with its bootstrap interval, and whether that
lies within the measured settings.`,
		Example: `  rttlab report rttlab-results/20261130T010203Z-study
  rttlab report rttlab-results/20261130T010203Z-study --p50-target /feed=5
  rttlab report rttlab-results/20261130T010203Z-workers`,
		Args:    cobra.ExactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare() },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	cmd.Flags().StringArrayVar(&o.targets, "p50-target", nil, "ROUTE=MS: the RTT up to which ROUTE's fitted p50 stays under MS (repeatable)")
	return cmd
}

// prepare checks every --p50-target before the folder is read.
func (o *reportOptions) prepare() error {
	for _, t := range o.targets {
		if _, _, err := parseTarget(t); err != nil {
			return err
		}
	}
	return nil
}

// run regenerates the folder's report through its study, and answers
// the RTT study's --p50-target.
func (o *reportOptions) run(cmd *cobra.Command, dir string) error {
	if err := resultsFolder(dir); err != nil {
		return err
	}
	st, err := studyOfFolder(dir)
	if err != nil {
		return err
	}
	fitter, fits := st.(routeFitter)
	if len(o.targets) > 0 && !fits {
		return usagef("--p50-target fits the RTT study's routes: %s was written by %s", dir, results.Writer(st.Kind()))
	}
	var sens []report.Sensitivity
	if len(o.targets) > 0 {
		// A folder that does not load is the report's to refuse.
		if sens, err = fitter.Sensitivity(dir); err == nil && len(sens) > 0 {
			if err := printTargets(io.Discard, sens, o.targets); err != nil {
				return err
			}
		}
	}
	files, err := st.Report(dir, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	printWrote(cmd.OutOrStdout(), files)
	// Then the digest a run of the study prints at its end, from the
	// summary just written (the figures a reader quotes come from a
	// command); else a study that renders a report page gets it named
	// last, to open.
	if d, err := st.Digest(dir); err == nil {
		fmt.Fprintf(cmd.OutOrStdout(), "\n%s", d)
	} else {
		for _, f := range files {
			if filepath.Base(f) == results.ReportPageFile {
				fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", f)
			}
		}
	}
	return printTargets(cmd.OutOrStdout(), sens, o.targets)
}

// routeFitter is a study whose folders fit each route's p50 against the
// RTT, which --p50-target reads (the RTT study's, report.Study).
type routeFitter interface {
	Sensitivity(dir string) ([]report.Sensitivity, error)
}

// printWrote prints a "wrote FILE" line per file.
func printWrote(w io.Writer, files []string) {
	for _, f := range files {
		fmt.Fprintf(w, "wrote %s\n", f)
	}
}

// parseTarget reads ROUTE=MS.
func parseTarget(s string) (string, float64, error) {
	// The last '=': a route may hold one in its query (/items?page=2=5).
	i := strings.LastIndexByte(s, '=')
	ok := i >= 0
	route, v := s, ""
	if ok {
		route, v = s[:i], s[i+1:]
	}
	ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if !ok || route == "" || err != nil || !(ms > 0) || math.IsInf(ms, 0) {
		return "", 0, usagef("--p50-target %q: write ROUTE=MS, e.g. /feed=5 (a p50 in milliseconds)", s)
	}
	return strings.TrimSpace(route), ms, nil
}

// printTargets prints a line per fit of each target's route.
func printTargets(w io.Writer, fits []report.Sensitivity, targets []string) error {
	for _, t := range targets {
		route, ms, _ := parseTarget(t)
		found := false
		var routes []string
		for i := range fits {
			if !slices.Contains(routes, fits[i].Route) {
				routes = append(routes, fits[i].Route)
			}
			if fits[i].Route == route {
				fmt.Fprintln(w, fits[i].TargetLine(ms))
				found = true
			}
		}
		if !found {
			return usagef("--p50-target %s: no fit for route %s (routes fitted: %s)", t, route, strings.Join(routes, ", "))
		}
	}
	return nil
}

// resultsFolder checks that dir is a results folder (one with a
// manifest.json) before any of it is read: a usage error otherwise.
func resultsFolder(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return usagef("%s: no such folder: give a results folder that rttlab run, place or workers wrote", dir)
	case !st.IsDir():
		return usagef("%s is not a folder: give a results folder that rttlab run, place or workers wrote", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, results.ManifestFile)); err != nil {
		return usagef("%s is not a results folder (it has no %s): give a folder that rttlab run, place or workers wrote", dir, results.ManifestFile)
	}
	return nil
}
