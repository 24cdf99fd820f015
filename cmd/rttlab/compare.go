package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/results"
)

func newCompareCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compare DIR_A DIR_B",
		Short: "Compare two results folders cell by cell, with a bootstrap CI of the difference of changes",
		Example: `  rttlab compare rttlab-results/20261201T090000Z-study rttlab-results/20261202T090000Z-study
  rttlab compare before/ after/ > change.md`,
		Long: `Puts the same cells (app, route, setting) of two results folders side by
side: p50 and change against 0 ms in each, and the difference of the
changes (B - A) with a 95% percentile-bootstrap CI (A's and B's baseline
and target runs resampled independently, 10,000 resamples). Use it for the
same study on two machines, two shaper backends or two versions of an app.
Folders with different RTT settings are refused with the reason.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, dir := range args {
				if err := resultsFolder(dir); err != nil {
					return err
				}
			}
			if sameFolder(args[0], args[1]) {
				return usagef("%s and %s are the same folder: compare two runs", args[0], args[1])
			}
			sa, err := studyOfFolder(args[0])
			if err != nil {
				return err
			}
			sb, err := studyOfFolder(args[1])
			if err != nil {
				return err
			}
			if sa.Kind() != sb.Kind() {
				return usagef("%s was written by %s and %s by %s: compare two of a kind", args[0], results.Writer(sa.Kind()), args[1], results.Writer(sb.Kind()))
			}
			md, err := sa.Compare(args[0], args[1])
			if errors.Is(err, results.ErrNoCompare) {
				return usageError{Err: err}
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), md)
			return err
		},
	}
}

// sameFolder reports whether a and b name one folder (by path or link).
func sameFolder(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
