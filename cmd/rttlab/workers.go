package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workers"
)

type workersOptions struct {
	plan   string
	out    string
	resume string

	platform platformFlag

	p      *workers.Plan // settled by prepare
	target apps.Target
}

func newWorkersCmd() *cobra.Command {
	o := &workersOptions{}
	cmd := &cobra.Command{
		Use:   "workers [--plan workers|workers-smoke|FILE] [--resume DIR]",
		Short: "The worker-scheduling study: Puma's accept race against least-busy assignment, under open-loop load",
		Example: `  rttlab workers --plan workers-smoke   both mixes at two loads (minutes)
  rttlab workers                        the worker-scheduling study
  rttlab workers --resume rttlab-results/20261130T010203Z-workers`,
		Long: `Compares how requests are assigned to W workers × T threads: Puma in
cluster mode (wait_for_less_busy_worker off, Puma's default, or a larger
value) against W single-mode Pumas behind a Go front proxy (join the
shortest queue, round-robin, power of two choices). The Rails app's
/work?cpu_ms=X&queries=N route burns X ms of Ruby CPU (holding the GVL)
and runs N serial SELECTs (releasing it); every answer names the worker
and when it started and ended, so the collision rate (a request starting
on a busy worker while another worker is idle) is measured, not guessed.

Load is open-loop: Poisson arrivals, latency from each request's scheduled
send time. First each configuration's capacity is searched; then every
cell (policy, W×T, mix, database RTT, load fraction) runs in a seeded
shuffled order, in rounds. Results go to a folder under --out:
manifest.json, capacity.jsonl, runs.jsonl (every request), summary.json,
summary.md and plots/. --resume DIR continues an interrupted folder.`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(cmd) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.plan, "plan", "workers", "built-in plan (workers, workers-smoke) or a YAML plan file")
	f.StringVar(&o.out, "out", "rttlab-results", "folder that receives the results folder")
	f.StringVar(&o.resume, "resume", "", "continue an interrupted workers results folder")
	o.platform.add(f)
	return cmd
}

// prepare settles the plan (a resumed folder's own, or --plan) and the
// rails app with its /work route before anything connects.
func (o *workersOptions) prepare(cmd *cobra.Command) error {
	var err error
	if o.resume != "" {
		if cmd.Flags().Changed("plan") {
			return usagef("--resume continues the folder's own plan: leave out --plan")
		}
		if err := results.CheckResume(o.resume, results.KindWorkers); err != nil {
			return usageError{Err: err}
		}
		o.p, err = workers.FolderPlan(o.resume)
	} else {
		o.p, err = workers.LoadPlan(o.plan, workers.DefaultLimits(runtime.NumCPU()))
	}
	if err != nil {
		return usageError{Err: err}
	}
	if o.resume != "" {
		o.platform.resumes(o.resume, o.p.Platform, o.p.Emulated)
	}
	if err := o.platform.parse(); err != nil {
		return err
	}
	all, _, _, err := appsTree()
	if err != nil {
		return err
	}
	if o.target, err = apps.Resolve(all, "rails"); err != nil {
		return err
	}
	if _, ok := o.target.Meta.Route("/work"); !ok {
		return errors.New("the rails app has no /work route: rebuild rttlab from a checkout that has it")
	}
	return nil
}

// run starts the workers stack, runs (or resumes) the study and prints its
// summary.
func (o *workersOptions) run(cmd *cobra.Command) (err error) {
	plan, target := o.p, o.target
	ctx := cmd.Context()
	w := cmd.ErrOrStderr()
	dir := o.resume
	rl, plat, say, start, end, err := beginStudy(ctx, w, results.KindWorkers, dir, target, &o.platform)
	if err != nil {
		return err
	}
	defer end()
	plan.Platform, plan.Emulated = plat.String(), plat.Foreign()
	lab := rl.rt
	ws, err := workers.StartWorkers(ctx, lab, target, plan.Shaper, plat)
	if ws != nil && ws.Stack != nil {
		defer ws.Stack.RemoveJoin(ctx, lab, &err)
	}
	if err != nil {
		return err
	}
	ws.Progress = say
	if dir == "" {
		f, err := workers.CreateFolder(o.out, plan, target.Name, versionString())
		if err != nil {
			return err
		}
		defer f.Close()
		dir = f.Dir()
	}
	say(fmt.Sprintf("results in %s (%d tasks)", dir, len(plan.Tasks())))
	ws.DecisionsPath = filepath.Join(dir, "decisions.jsonl")
	r := &workers.Runner{WS: ws, Plan: plan, Dir: dir, Version: versionString()}
	_, rerr := r.Run(ctx)
	return endStudy(cmd, results.KindWorkers, dir, start, rerr)
}
