package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/results"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate runs.csv, summary.json, summary.md (and plots, report.html) from a results folder's raw files",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := results.Render(dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "regenerated %s\n", filepath.Join(dir, "summary.md"))
			return nil
		},
	}
}
