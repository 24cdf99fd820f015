package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/placement"
	"github.com/rttlab/rttlab/results"
)

type placeOptions struct {
	plan      string
	out       string
	repeat    int
	seed      uint64
	keepAlive string
	resume    string
	platform  platformFlag

	p      *placement.Plan // settled by prepare
	target apps.Target
}

func newPlaceCmd() *cobra.Command {
	o := &placeOptions{}
	cmd := &cobra.Command{
		Use:   "place [--plan placement|placement-asym|placement-smoke|FILE] [--resume DIR]",
		Short: "The placement study: route each request to the compute host that answers it fastest",
		Example: `  rttlab place --plan placement-smoke   the whole study at small counts (minutes)
  rttlab place                          the placement study at the write-up's counts
  rttlab place --plan placement-asym    the same with b on half a CPU
  rttlab place --plan my-links.yaml     your own links, routes and policies
  rttlab place --resume rttlab-results/20261205T101010Z-placement-smoke`,
		Long: `Starts four nodes on one private network, each with its shaping agent: the
client (load client and routing proxy), compute hosts a and b (the same
app) and the database. Every link gets its own RTT, half per direction,
applied only between that pair. Then, in one command:

  1. calibration without the held-out change: per host TCP connect,
     /health, each route and SELECT 1 (warmup + measured requests);
  2. models: network-only = client path + N × SELECT 1, profiled = client
     path + route residual + N × SELECT 1, with each model's crossover;
  3. held-out test: the held-out one-way delay is added, new requests per
     route and host are compared with both models' estimates;
  4. routed comparison through the proxy in the client node: user-first,
     network-only, profiled and queue-aware, interleaved at random, on
     each route and on /serial?n=N at the plan's routed_n call counts;
  5. serial sweep: /serial?n=N on both hosts, the measured crossover with
     bootstrap intervals beside the predicted ones.

Links are verified with ICMP between every pair and SELECT 1 from each
host, against the same path at zero. Results go to a folder under --out:
manifest.json, samples.jsonl (every request and probe call),
decisions.jsonl (every proxy decision), attempts.jsonl (each task's
attempts), summary.json and summary.md.

The study runs as tasks (the baseline, each repetition, the sweep, the
concurrency phase), each recorded done once its samples are on disk. A
task that fails (a dead agent or container, a lost probe) is retried once
on a fresh stack; its samples are kept, marked by attempt, and never
counted. --resume DIR continues an interrupted folder after its last done
task, with the folder's own plan.

The built-in plans: placement (the write-up's geometry and counts),
placement-asym (the same with compute host b on half a CPU, so the hosts
differ in compute as well as links) and placement-smoke (reduced counts,
for CI). A plan file starts
from placement's values; see the README for its fields. On --runtime
kube, a plan's nodes: pins client, a, b and db to named cluster nodes.`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(cmd) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.plan, "plan", "placement", "built-in plan (placement, placement-asym, placement-smoke) or a YAML plan file")
	f.StringVar(&o.out, "out", "rttlab-results", "folder that receives the results folder")
	f.IntVar(&o.repeat, "repeat", 1, "repeat calibration and the routed comparison K times with fresh calibrations")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the measurement order and resampling")
	f.StringVar(&o.keepAlive, "keep-alive", "", "proxy upstream connections: on (pools, default) or off (new per request)")
	f.StringVar(&o.resume, "resume", "", "continue an interrupted placement results folder")
	o.platform.add(f)
	return cmd
}

// prepare loads the plan, applies --repeat, --seed and --keep-alive and
// resolves the plan's app, before anything connects.
func (o *placeOptions) prepare(cmd *cobra.Command) error {
	var plan *placement.Plan
	var target apps.Target
	var err error
	if o.resume != "" {
		for _, name := range []string{"plan", "repeat", "seed", "keep-alive", "out"} {
			if cmd.Flags().Changed(name) {
				return usagef("--resume continues the folder's own plan and settings: leave out --%s", name)
			}
		}
		if plan, err = placement.FolderPlan(o.resume); err != nil {
			return usageError{Err: err}
		}
		o.platform.resumes(o.resume, plan.Platform, plan.Emulated)
	} else if plan, err = placement.LoadPlan(o.plan); err != nil {
		return usageError{Err: err}
	} else if o.platform.raw == "" {
		o.platform.raw = plan.Platform
	}
	if len(plan.Nodes) > 0 && labRuntime.name != runtimeKube {
		return usagef("plan %s pins nodes (nodes:): run it with --runtime kube", plan.Name)
	}
	if err := o.platform.parse(); err != nil {
		return err
	}
	if cmd.Flags().Changed("repeat") {
		if o.repeat < 1 || o.repeat > 100 {
			return usagef("--repeat %d: use 1..100", o.repeat)
		}
		plan.Repeat = o.repeat
	}
	if cmd.Flags().Changed("seed") {
		plan.Seed = o.seed
	}
	switch o.keepAlive {
	case "":
	case "on", "off":
		v := o.keepAlive == "on"
		plan.KeepAlive = &v
	default:
		return usagef("--keep-alive %q: use on or off", o.keepAlive)
	}
	all, _, _, err := appsTree()
	if err != nil {
		return err
	}
	if target, err = plan.ValidateApp(all); err != nil {
		return usageError{Err: err}
	}
	o.p, o.target = plan, target
	return nil
}

// run starts the four nodes, runs (or resumes) the study and prints its
// summary. The cluster nodes the plan pins are checked first; a resumed
// folder is locked before the lab opens; a failed task is retried on a
// fresh stack.
func (o *placeOptions) run(cmd *cobra.Command) (err error) {
	plan, target := o.p, o.target
	ctx := cmd.Context()
	w := cmd.ErrOrStderr()
	dir := o.resume
	if err := checkKubeNodes(ctx, plan.ClusterNodes()); err != nil {
		return fmt.Errorf("plan %s: %w", plan.Name, err)
	}
	rl, plat, say, start, end, err := beginStudy(ctx, w, results.KindPlacement, dir, target, &o.platform)
	if err != nil {
		return err
	}
	defer end()
	lab := rl.rt
	plan.Platform, plan.Emulated = plat.String(), plat.Foreign()
	var ps *placement.Session
	// The session in use: the first, or the fresh one of a retry.
	defer func() {
		if ps != nil && ps.Stack != nil {
			ps.Stack.RemoveJoin(ctx, lab, &err)
		}
	}()
	startSession := func(ctx context.Context) (*placement.Session, error) {
		if ps != nil && ps.Stack != nil {
			var rerr error
			ps.Stack.RemoveJoin(ctx, lab, &rerr)
			ps = nil
			if rerr != nil {
				return nil, rerr
			}
		}
		s, err := placement.StartPlacement(ctx, lab, plan, target, plat, 0)
		ps = s
		if err != nil {
			return nil, err
		}
		ps.Progress = say
		return ps, nil
	}
	if _, err := startSession(ctx); err != nil {
		return err
	}
	if dir == "" {
		f, err := placement.CreateFolder(o.out, plan, time.Now())
		if err != nil {
			return err
		}
		defer f.Close()
		dir = f.Dir()
	}
	say(fmt.Sprintf("results in %s", dir))
	r := &placement.Runner{Runtime: lab, Engine: rl.eng, Session: ps, Dir: dir, Version: versionString(), Fresh: startSession}
	_, rerr := r.Run(ctx)
	if rerr != nil && ctx.Err() == nil {
		rerr = fmt.Errorf("placement study: %w", rerr)
	}
	return endStudy(cmd, results.KindPlacement, dir, start, rerr)
}
