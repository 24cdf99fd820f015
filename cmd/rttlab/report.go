package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/orchestrator"
	"github.com/rttlab/rttlab/results"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate summaries, plots and report.html from a results folder's raw files",
		Long: `Reads manifest.json, samples.jsonl, tasks.jsonl and probes.csv and writes
runs.csv, summary.json, summary.md, plots/*.svg|png and report.html (a
single self-contained file to share). Nothing is written when a file is
missing or malformed: the error names the file and line. For a placement
study's folder (rttlab place) it recomputes summary.json and summary.md
from samples.jsonl; for a worker study's folder (rttlab workers),
summary.json, summary.md and plots/ from capacity.jsonl and runs.jsonl.

Examples:
  rttlab report rttlab-results/20261130T010203Z-study
  rttlab report rttlab-results/20261130T010203-workers`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := resultsFolder(dir); err != nil {
				return err
			}
			if m, err := readWorkersManifest(dir); err == nil {
				plan, err := workersFolderPlan(dir, m)
				if err != nil {
					return err
				}
				files, err := orchestrator.ReportWorkers(dir, plan)
				if err != nil {
					return err
				}
				for _, f := range files {
					fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", f)
				}
				return nil
			}
			if orchestrator.IsPlacementFolder(dir) {
				files, err := orchestrator.ReportPlacement(dir)
				if err != nil {
					return err
				}
				for _, f := range files {
					fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", f)
				}
				return nil
			}
			if d, err := results.Load(dir); err == nil {
				if len(d.Samples) == 0 {
					// Nothing is rewritten from nothing: the plots of an
					// earlier report stay.
					return fmt.Errorf("%s holds no sample of a done task (%d of %d tasks done): nothing to report, nothing written",
						filepath.Join(dir, results.SamplesFile), len(d.Done), len(d.Manifest.Tasks))
				}
				// What the reader tolerated (a line cut by a crash) is said
				// here as well as in the summary's warnings.
				for _, n := range d.Notes {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", n)
				}
			}
			files, err := results.RenderFiles(dir, results.Options{})
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", f)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", filepath.Join(dir, results.ReportFile))
			return nil
		},
	}
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
