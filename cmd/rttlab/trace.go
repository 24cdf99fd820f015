package main

import (
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
	"github.com/rttlab/rttlab/workloads"
)

type traceOptions struct {
	platform platformFlag
	requests int
	warmup   int
	seed     uint64
	out      string
	budget   budgetOptions
	own      ownAppOptions

	target apps.Target
}

// traceLong is the help text of rttlab trace.
const traceLong = `Starts PostgreSQL + APP with its agents and, for each request type (the
app's routes, or its mix's types), sends --requests requests one at a time
from inside the app's network namespace while the agent watches the
app<->database TCP traffic. Per request it counts:

  round trips  client->database bursts answered by the database
  statements   Query and Execute messages in the protocol stream
  parses       Parse messages (statement preparation)

and per type the pg_stat_statements executions per request. It prints the
median and range per type. With --results DIR (an existing results folder) it also
writes DIR/trace.json, which the report places next to the amplification
ratio.

Round-trip budgets make it a CI gate: --budget /feed=3,/feed-naive=12 (and
budgets: in apps/APP/app.yaml; the flag wins for the same type) gives
each request type the most round trips one request may take. A key is a
type as the table names it, or a route path that covers its per-N type
(/serial covers /serial?n=5). After the table, one line per type over
budget (the most round trips of any request, the median, the budget, the
statements seen) and exit status 3. A budget for a type the app does not
serve, or a malformed one, is refused before anything starts (exit 2).
A budgeted type whose requests failed fails the gate too.

Your own app instead of APP: --app-image IMAGE (or --compose FILE with
--app-service and --db-service) with --routes, and --port, --health,
--db-init, --env, --env-file as for 'rttlab run'. Its request types are
its routes: budgets name them (--budget /api/items=2).

  --format json   the trace and the gate as one JSON document on stdout:
                  {"app", "verdict": pass|fail|none, "budgets": {type: N},
                   "types": [{trace row..., "budget": N|null,
                   "verdict": pass|over|failed|untraced|unbudgeted}]}
  --junit FILE    JUnit XML: suite rttlab-trace-budgets, a test case per
                  type (failure when over budget, skipped without one)`

// traceExample is trace's help examples.
const traceExample = `  rttlab trace go --budget /feed=3,/feed-naive=12 --junit budgets.xml
  rttlab trace --app-image my-app:ci --routes /api/items,/api/items/1 \
    --db-init db/schema.sql --budget /api/items=2,/api/items/1=1 --junit budgets.xml`

func newTraceCmd() *cobra.Command {
	o := &traceOptions{}
	cmd := &cobra.Command{
		Use:     "trace APP|--app-image IMAGE|--compose FILE",
		Short:   "Count SQL statements and database round trips per request, per request type",
		Long:    traceLong,
		Example: traceExample,
		Args:    o.own.args(false),
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(cmd, args) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd) },
	}
	cmd.Flags().IntVar(&o.requests, "requests", 100, "requests per request type")
	cmd.Flags().IntVar(&o.warmup, "warmup", 5, "warmup requests per type (not counted)")
	cmd.Flags().Uint64Var(&o.seed, "seed", 1, "seed of the mix's request paths")
	cmd.Flags().StringVar(&o.out, "results", "", "an existing results folder to add trace.json to (its report is regenerated)")
	// --out names the parent folder of a new results folder everywhere
	// else; here it was the folder itself. The old spelling still works.
	cmd.Flags().StringVar(&o.out, "out", "", "")
	_ = cmd.Flags().MarkDeprecated("out", "use --results DIR (--out names a parent folder in run, place and workers)")
	o.budget.addFlags(cmd, true)
	o.own.addFlags(cmd.Flags(), "")
	o.platform.add(cmd.Flags())
	return cmd
}

// prepare checks the counts, resolves the app (built-in or the user's),
// its mix, the --results folder and the budgets, before anything connects.
func (o *traceOptions) prepare(cmd *cobra.Command, args []string) (err error) {
	if err := o.platform.parse(); err != nil {
		return err
	}
	if o.requests < 1 || o.requests > 100000 || o.warmup < 0 {
		return usagef("--requests must be 1..100000 and --warmup not negative")
	}
	// The app and its budgets are checked before anything connects.
	if o.target, err = o.own.resolveApp(cmd.ErrOrStderr(), cmd.Flags(), args); err != nil {
		return err
	}
	if _, err := shaping.MixFor(o.target.Meta); err != nil {
		return err
	}
	if o.out != "" {
		// --results names a results folder the trace is added to:
		// checked before the trace runs, not after.
		if err := resultsFolder(o.out); err != nil {
			return err
		}
		if _, err := raw.Load(o.out); err != nil {
			return usagef("--results %s is not a readable results folder: %v", o.out, err)
		}
	}
	return o.budget.resolve(o.target)
}

// run starts the app's stack, traces every request type on the wire and
// reports (and gates) the round trips.
func (o *traceOptions) run(cmd *cobra.Command) (err error) {
	ctx := cmd.Context()
	t := o.target
	mix, err := shaping.MixFor(t.Meta)
	if err != nil {
		return err
	}
	one, err := startShapedOne(ctx, cmd.ErrOrStderr(), t, &o.platform, "auto", "path", "")
	if err != nil {
		return err
	}
	defer one.stop(ctx, &err)
	rt, st, sh := one.lab.rt, one.st, one.sh
	hdr, err := shaping.AuthHeaders(ctx, rt, st)
	if err != nil {
		return err
	}
	types, err := shaping.TraceApp(ctx, rt, sh, shaping.TraceOptions{
		Requests: shaping.TraceRequests(t, mix, o.requests, 5, o.seed), Warmup: o.warmup, Header: hdr, Weights: shaping.MixWeights(mix)})
	if err != nil {
		return err
	}
	return o.report(cmd.OutOrStdout(), cmd.ErrOrStderr(), t.Name, types)
}

// printTraceTable prints the trace's table: a row per request type.
func printTraceTable(out io.Writer, types []workloads.TraceRow) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TYPE\tN\tFAILED\tROUND TRIPS median [min-max]\tSTATEMENTS (wire)\tPARSES\tpg_stat_statements/req\tEXPECTED")
	for _, tt := range types {
		exp := "-"
		if tt.Expected >= 0 {
			exp = fmt.Sprint(tt.Expected)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%g [%d-%d]\t%g [%d-%d]\t%g [%d-%d]\t%s\t%s\n", tt.Type, tt.N, tt.Failures,
			tt.RoundTrips.Median, tt.RoundTrips.Min, tt.RoundTrips.Max, tt.Statements.Median, tt.Statements.Min, tt.Statements.Max,
			tt.Parses.Median, tt.Parses.Min, tt.Parses.Max, report.PGSSText(tt.PGSS), exp)
	}
	w.Flush()
}

// report prints the trace (the table, or with --format json the trace and
// its gate as one JSON document) and the gate's verdict, writes the
// --junit file and --results' trace.json, and returns the gate's error.
func (o *traceOptions) report(stdout, stderr io.Writer, app string, types []workloads.TraceRow) error {
	gate := report.CheckBudgets(app, types, o.budget.budgets)
	if err := o.budget.writeJUnit([]report.BudgetReport{gate}); err != nil {
		return err
	}
	notes := stdout // what is not the JSON document goes to stderr with --format json
	if o.budget.format == "json" {
		notes = stderr
		if err := writeJSON(stdout, gate); err != nil {
			return err
		}
	} else {
		printTraceTable(stdout, types)
	}
	if o.out != "" {
		if _, err := raw.Load(o.out); err != nil {
			return fmt.Errorf("--results %s is not a readable results folder: %w", o.out, err)
		}
		if err := raw.WriteTrace(o.out, types); err != nil {
			return err
		}
		files, err := report.RenderFiles(o.out, report.Options{})
		if err != nil {
			return err
		}
		fmt.Fprintf(notes, "wrote %s and regenerated %d files\n", filepath.Join(o.out, raw.TraceFile), len(files))
	}
	if o.budget.junit != "" {
		fmt.Fprintf(notes, "wrote %s\n", o.budget.junit)
	}
	if gate.Verdict != report.BudgetNone {
		printGate(notes, gate)
	}
	return gateError([]report.BudgetReport{gate})
}
