package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
)

type ciSmokeOptions struct {
	delays        string
	runs          int
	requests      int
	warmup        int
	traceRequests int
	verifyN       int
	seed          uint64
	shaper        string
	out           string
	budget        budgetOptions
	own           ownAppOptions // --routes is own.routes

	target apps.Target
	plan   *rtt.Plan
}

func newCISmokeCmd() *cobra.Command {
	o := &ciSmokeOptions{}
	cmd := &cobra.Command{
		Use:   "ci-smoke APP|--app-image IMAGE|--compose FILE",
		Short: "CI check of one app: verify, trace with round-trip budgets, a 2-setting run; a one-screen verdict",
		Long: `The check to run in CI on every change of APP, through the same code as
'rttlab verify', 'rttlab run' and 'rttlab trace --budget':

  1. verify     the routes answer and do the database work app.yaml says
  2. run        a results folder under --out at reduced counts: the run
                traces every request type at 0 ms (round trips, statements),
                then --runs runs of --requests requests per route at each
                of the --delays settings (default 0 and 1 ms)
  3. budgets    the trace gated on round-trip budgets (--budget and
                app.yaml's budgets:), as 'rttlab trace --budget' does

and prints a one-screen verdict on stdout (progress goes to stderr). The
timings are a smoke check, not a measurement: too few runs for a claim,
shaper calibration off. Verify failing stops it before the run.

Exit status: 0 all passed; 3 only round-trip budgets not met; 1 verify
failed or the run could not complete; 2 bad input (checked before
anything starts, budgets included).

Your own app instead of APP: --app-image IMAGE (or --compose FILE with
--app-service and --db-service) with --routes, and --port, --health,
--db-init, --env, --env-file as for 'rttlab run'. Its request types are
its routes; its statements per request are reported, not asserted.`,
		Example: `  rttlab ci-smoke go --budget /feed=3,/feed-naive=12 --junit budgets.xml
  rttlab ci-smoke --app-image my-app:ci --routes /api/items,/api/items/1 --db-init db/schema.sql`,
		Args:    o.own.args(false),
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(cmd, args) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	o.own.addFlags(f, "routes to run (comma list; default every route, a per-N route at ?n=5; required with --app-image or --compose)")
	f.StringVar(&o.delays, "delays", "0,1", "RTT settings in milliseconds, comma list")
	f.IntVar(&o.runs, "runs", 2, "runs per (route, setting)")
	f.IntVar(&o.requests, "requests", 20, "measured requests per run")
	f.IntVar(&o.warmup, "warmup", 5, "warmup requests per run")
	f.IntVar(&o.traceRequests, "trace-requests", 20, "traced requests per request type (the budget gate's sample)")
	f.IntVar(&o.verifyN, "verify-requests", 10, "requests per route for verify's statement count")
	f.Uint64Var(&o.seed, "seed", 1, "RNG seed of the task order and resampling")
	f.StringVar(&o.shaper, "shaper", "auto", "delay shaper: auto, kernel or userspace")
	f.StringVar(&o.out, "out", "rttlab-results", "folder that receives the results folder")
	o.budget.addFlags(cmd, false)
	return cmd
}

// prepare resolves the app, checks its mix, the budgets and the counts,
// and settles the plan, all before anything starts.
func (o *ciSmokeOptions) prepare(cmd *cobra.Command, args []string) (err error) {
	if o.target, err = o.own.resolveApp(cmd.ErrOrStderr(), cmd.Flags(), args); err != nil {
		return err
	}
	if _, err := shaping.MixFor(o.target.Meta); err != nil {
		return err
	}
	if err := o.budget.resolve(o.target); err != nil {
		return err
	}
	if o.verifyN < 1 || o.verifyN > 10000 {
		return usagef("--verify-requests %d: use 1..10000", o.verifyN)
	}
	if o.plan, err = ciSmokePlan(o); err != nil {
		return err
	}
	all, _, _, err := appsTree()
	if err != nil {
		return err
	}
	if err := rtt.AddOwnApps(o.plan, all); err != nil {
		return usageError{Err: err}
	}
	if err := rtt.ValidatePlanApps(o.plan, all); err != nil {
		return usageError{Err: err}
	}
	return nil
}

// run runs the steps, prints the verdict and returns its exit status.
func (o *ciSmokeOptions) run(cmd *cobra.Command) error {
	v := runCISmoke(cmd, o)
	v.Write(cmd.OutOrStdout())
	return smokeResult(v)
}

// ciSmokePlan is the plan of a ci-smoke run: one app, its routes (or its
// mix), the given settings at the given counts, probes and the per-task
// echo check at their smallest useful counts, calibration off. The
// --budget budgets are recorded in the plan entry, so the manifest holds
// what the run was gated on.
func ciSmokePlan(o *ciSmokeOptions) (*rtt.Plan, error) {
	t := o.target
	delays, err := rtt.ParseDelaysMs(o.delays)
	if err != nil {
		return nil, usagef("--delays: %v", err)
	}
	flags, err := apps.ParseBudgets(o.budget.specs)
	if err != nil {
		return nil, usageError{Err: err}
	}
	p := &rtt.Plan{
		Name: "ci-smoke", Seed: o.seed, DelaysMs: delays, Runs: o.runs, Requests: o.requests, Warmup: o.warmup,
		Shaper: o.shaper, Scope: "path", Calibrate: "off",
		ICMPCount: 10, SelectRuns: 1, SelectCalls: 20, TaskICMPCount: 2, TraceRequests: o.traceRequests,
	}
	pa := rtt.PlanApp{Name: t.Name}
	if o.own.app != nil {
		pa = *o.own.app // its routes are --routes
	}
	pa.Budgets = flags
	switch {
	case len(o.own.routes) > 0:
		pa.Routes = o.own.routes
	case t.Meta.Mix != "":
		pa.Mix = t.Meta.Mix
	default:
		if pa.Routes, err = rtt.TraceTypes(t); err != nil {
			return nil, err
		}
	}
	if len(flags) == 0 {
		pa.Budgets = nil
	}
	p.Apps = []rtt.PlanApp{pa}
	if err := p.Validate(); err != nil {
		return nil, usagef("ci-smoke: %v", err)
	}
	return p, nil
}

// runCISmoke runs the steps and returns what each found; it stops at the
// first step that fails to complete.
func runCISmoke(cmd *cobra.Command, o *ciSmokeOptions) *report.SmokeVerdict {
	ctx := cmd.Context()
	progress := cmd.ErrOrStderr()
	t := o.target
	runs, requests, _ := o.plan.AppRuns(o.plan.Apps[0])
	v := &report.SmokeVerdict{App: t.Name, DelaysMs: o.plan.DelaysMs, Runs: runs, Requests: requests, JUnit: o.budget.junit}
	all, _, _, err := appsTree()
	if err != nil {
		v.Err = err
		return v
	}
	lab, images, err := smokeLab(cmd, t)
	if err != nil {
		v.Err = err
		return v
	}
	defer lab.close()
	v.VerifyRan = true
	failed, checks, err := verifyCounted(cmd, lab.rt, t, o.verifyN, progress)
	v.VerifyFailed, v.VerifyChecks = failed, checks
	if err != nil {
		v.Err = err
		return v
	}
	if failed > 0 {
		return v
	}
	v.RunRan = true
	start := time.Now()
	dir, err := rtt.Run(ctx, lab.rt, lab.eng, all, rtt.RunOptions{Plan: o.plan, OutDir: o.out, Version: version, Commit: commit,
		Images: images, Progress: newProgress(progress)})
	v.Dir, v.Elapsed = dir, time.Since(start)
	if dir != "" {
		if d, lerr := raw.Load(dir); lerr == nil {
			v.Summary = report.Analyze(d, report.Options{})
			gate := report.CheckBudgets(t.Name, d.Trace, o.budget.budgets)
			if len(d.Trace) > 0 || len(o.budget.budgets) > 0 {
				v.Gate = &gate
				if jerr := o.budget.writeJUnit([]report.BudgetReport{gate}); jerr != nil {
					err = errors.Join(err, jerr)
				}
			}
		} else if err == nil {
			err = lerr
		}
	}
	v.Err = err
	return v
}

// smokeLab is the lab ci-smoke runs t on (run's), with t's images: an
// image that cannot be built here fails the smoke test.
func smokeLab(cmd *cobra.Command, t apps.Target) (*runLab, map[string]string, error) {
	lab, err := runLabFor(cmd)
	if err != nil {
		return nil, nil, err
	}
	images, skipped, err := lab.images([]apps.Target{t}, engine.Platform{})
	if why, ok := skipped[t.Name]; ok && err == nil {
		err = fmt.Errorf("the image of %s cannot be built here: %s", t.Name, why)
	}
	if err != nil {
		lab.close()
		return nil, nil, err
	}
	return lab, images, nil
}

// verifyCounted runs verify on a stack of its own and returns the failed
// and total checks.
func verifyCounted(cmd *cobra.Command, rt runtime.Runtime, t apps.Target, n int, w io.Writer) (failed, total int, err error) {
	counter := &lineCounter{w: w}
	failed, err = verifyOne(cmd.Context(), rt, t, &verifyOptions{requests: n, serialN: 5}, counter)
	return failed, counter.checks, err
}

// lineCounter passes verify's output through and counts its check lines
// (indented, one per check).
type lineCounter struct {
	w      io.Writer
	checks int
}

func (c *lineCounter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if strings.HasPrefix(l, "  ") {
			c.checks++
		}
	}
	return c.w.Write(b)
}

// smokeResult is the command's error for v: nil when the verdict is PASS,
// an overBudgetError (exit status 3) when only budgets were not met, else
// an error of one line (exit status 1).
func smokeResult(v *report.SmokeVerdict) error {
	if v.Err != nil {
		err := fmt.Errorf("ci-smoke %s: %w", v.App, v.Err)
		if v.Dir != "" {
			return hintError{err, resumeHint(studyOf(results.KindRTT), v.Dir)}
		}
		return err
	}
	switch {
	case v.VerifyFailed > 0:
		return fmt.Errorf("ci-smoke %s: verify failed (%d of %d checks)", v.App, v.VerifyFailed, v.VerifyChecks)
	case !v.VerifyRan || !v.RunRan || !v.RunComplete():
		return fmt.Errorf("ci-smoke %s: the run did not complete", v.App)
	}
	if v.Gate != nil {
		return gateError([]report.BudgetReport{*v.Gate})
	}
	return nil
}
