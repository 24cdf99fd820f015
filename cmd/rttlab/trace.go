package main

import (
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator"
	"github.com/rttlab/rttlab/results"
)

type traceOptions struct {
	requests int
	warmup   int
	seed     uint64
	out      string
}

func newTraceCmd() *cobra.Command {
	o := &traceOptions{}
	cmd := &cobra.Command{
		Use:   "trace APP",
		Short: "Count SQL statements and database round trips per request, per request type",
		Long: `Starts PostgreSQL + APP with its agents and, for each request type (the
app's routes, or its mix's types), sends --requests requests one at a time
from inside the app's network namespace while the agent watches the
app<->database TCP traffic. Per request it counts:

  round trips  client->database bursts answered by the database
  statements   Query and Execute messages in the protocol stream
  parses       Parse messages (statement preparation)

and per type the pg_stat_statements executions per request. It prints the
median and range per type. With --out DIR (a results folder) it also
writes DIR/trace.json, which the report places next to the amplification
ratio.`,
		Args: cobra.ExactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if o.requests < 1 || o.requests > 100000 || o.warmup < 0 {
				return usagef("--requests must be 1..100000 and --warmup not negative")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			t, err := loadTarget(args[0])
			if err != nil {
				return err
			}
			mix, err := orchestrator.MixFor(t.Meta)
			if err != nil {
				return err
			}
			rt, err := connect(ctx)
			if err != nil {
				return err
			}
			defer rt.Close()
			if err := ensureImages(ctx, rt, []apps.Target{t}, true, cmd.ErrOrStderr()); err != nil {
				return err
			}
			st, sh, err := startShaped(ctx, rt, orchestrator.StackOptions{Target: t}, "auto", "path", "")
			if err != nil {
				return err
			}
			defer removeStack(ctx, rt, st, &err)
			hdr, err := orchestrator.AuthHeaders(ctx, rt, st)
			if err != nil {
				return err
			}
			types, err := orchestrator.TraceApp(ctx, rt, sh, orchestrator.TraceOptions{
				Requests: orchestrator.TraceRequests(t, mix, o.requests, 5, o.seed), Warmup: o.warmup, Header: hdr, Weights: orchestrator.MixWeights(mix)})
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TYPE\tN\tFAILED\tROUND TRIPS median [min-max]\tSTATEMENTS (wire)\tPARSES\tpg_stat_statements/req\tEXPECTED")
			for _, tt := range types {
				exp := "-"
				if tt.Expected >= 0 {
					exp = fmt.Sprint(tt.Expected)
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%g [%d-%d]\t%g [%d-%d]\t%g [%d-%d]\t%.2f\t%s\n", tt.Type, tt.N, tt.Failures,
					tt.RoundTrips.Median, tt.RoundTrips.Min, tt.RoundTrips.Max, tt.Statements.Median, tt.Statements.Min, tt.Statements.Max,
					tt.Parses.Median, tt.Parses.Min, tt.Parses.Max, tt.PGSS, exp)
			}
			w.Flush()
			if o.out != "" {
				if _, err := results.Load(o.out); err != nil {
					return fmt.Errorf("--out %s is not a readable results folder: %w", o.out, err)
				}
				if err := results.WriteTrace(o.out, types); err != nil {
					return err
				}
				files, err := results.RenderFiles(o.out, results.Options{})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and regenerated %d files\n", filepath.Join(o.out, results.TraceFile), len(files))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&o.requests, "requests", 100, "requests per request type")
	cmd.Flags().IntVar(&o.warmup, "warmup", 5, "warmup requests per type (not counted)")
	cmd.Flags().Uint64Var(&o.seed, "seed", 1, "seed of the mix's request paths")
	cmd.Flags().StringVar(&o.out, "out", "", "results folder to write trace.json into")
	return cmd
}
