package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

type upOptions struct {
	platform platformFlag
	rtt      string
	shaper   string
	scope    string
	own      ownAppOptions

	target apps.Target
}

func newUpCmd() *cobra.Command {
	o := &upOptions{}
	cmd := &cobra.Command{
		Use:   "up APP|--app-image IMAGE|--compose FILE",
		Short: "Start PostgreSQL + APP on a fresh private network for manual poking",
		Long: `Starts PostgreSQL and APP on a new private network (building missing
images first) and prints how to reach them. The app's port is published
on 127.0.0.1 only. The stack stays up until 'rttlab down'.

Your own app instead of APP: --app-image IMAGE (or --compose FILE with
--app-service and --db-service) with --routes, and --port, --health,
--db-init, --env, --env-file as for 'rttlab run'.`,
		Example: `  rttlab up go
  curl -s http://127.0.0.1:PORT/feed
  rttlab down
  rttlab up --app-image my-app:dev --routes /api/items --port 3000 --db-init db/schema.sql`,
		Args:    o.own.args(false),
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(cmd, args) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.rtt, "rtt", "", "start with this app<->database RTT applied (0.5ms, or 0.5 in milliseconds)")
	cmd.Flags().StringVar(&o.shaper, "shaper", "auto", "auto, kernel or userspace")
	cmd.Flags().StringVar(&o.scope, "scope", "path", "path or interface")
	o.own.addFlags(cmd.Flags(), "")
	o.platform.add(cmd.Flags())
	return cmd
}

// prepare checks --rtt, --shaper and --scope and resolves the app before
// anything connects.
func (o *upOptions) prepare(cmd *cobra.Command, args []string) (err error) {
	if err := o.platform.parse(); err != nil {
		return err
	}
	if o.rtt != "" {
		if _, err := parseRTT(o.rtt); err != nil {
			return err
		}
	}
	switch o.shaper {
	case "auto", "kernel", "userspace":
	default:
		return usagef("--shaper %q: use auto, kernel or userspace", o.shaper)
	}
	if err := validScope(o.scope); err != nil {
		return err
	}
	o.target, err = o.own.resolveApp(cmd.ErrOrStderr(), cmd.Flags(), args)
	return err
}

// run starts the stack with its shaping (and --rtt applied), which stays
// up, and prints how to reach it.
func (o *upOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	targets := []apps.Target{o.target}
	out := cmd.OutOrStdout()
	rt, plat, err := connectFor(ctx, targets, out, &o.platform)
	if err != nil {
		return err
	}
	defer rt.Close()
	st, sh, err := shaping.StartShaped(ctx, engine.NewLab(rt, ""), stack.StackOptions{Target: targets[0], Up: true, Publish: true, Platform: plat}, o.shaper, o.scope, "")
	if err != nil {
		return err
	}
	if o.rtt != "" {
		d, _ := parseRTT(o.rtt)
		sh.Floor = shaping.DefaultFloor(sh.Backend)
		if err := sh.SetRTT(ctx, rt, d); err != nil {
			st.RemoveJoin(ctx, engine.NewLab(rt, ""), &err)
			return err
		}
	}
	printStack(out, st)
	fmt.Fprintf(out, "  shaping:   %s backend (%s)\n", sh.Backend, sh.Why)
	if o.rtt != "" {
		fmt.Fprintf(out, "  RTT %s applied (%s scope, floor %v): change it with 'rttlab shape set --rtt D'\n", o.rtt, o.scope, sh.Floor)
	} else {
		fmt.Fprintln(out, "  no delay set: 'rttlab shape set --rtt 0.5ms' adds one")
	}
	return nil
}

func printStack(out interface{ Write([]byte) (int, error) }, st *stack.Stack) {
	db := st.Role("db")
	app := st.Role("app")
	fmt.Fprintf(out, "stack %s is up (network %s)\n", st.RunID, st.Network)
	fmt.Fprintf(out, "  app %-10s %s  (private %s)\n", st.Target.Name, st.AppURL, st.AppAddr)
	for _, r := range st.Target.Meta.Routes {
		p := r.Path
		if r.StatementsPerN {
			p += "?n=5"
		}
		fmt.Fprintf(out, "    curl -s %s%s\n", st.AppURL, p)
	}
	fmt.Fprintf(out, "  database   %s (private %s:5432, role %s, database %s, password %s)\n", db.Name, db.IP, st.DB.User, st.DB.Database, st.DB.Password)
	fmt.Fprintf(out, "    docker exec -it -u postgres %s psql -U %s -d %s\n", db.Name, st.DB.Super, st.DB.Database)
	fmt.Fprintf(out, "  app logs:  docker logs %s\n", app.Name)
	fmt.Fprintf(out, "  stop with: rttlab down --run %s\n", st.RunID)
}

type downOptions struct {
	run string
}

func newDownCmd() *cobra.Command {
	o := &downOptions{}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Remove stacks started with 'rttlab up'",
		Example: `  rttlab down              remove the stack 'rttlab up' started
  rttlab down --run 3f9c0a1b2d`,
		Long: `Removes the containers and networks of every stack started with
'rttlab up' (or only the one named with --run).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := context.WithoutCancel(cmd.Context())
			rt, err := connect(ctx)
			if err != nil {
				return err
			}
			defer rt.Close()
			lab := engine.NewLab(rt, "")
			runs, err := upRuns(ctx, lab, o.run)
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no stack started with 'rttlab up' is running")
				return nil
			}
			for _, r := range runs {
				c, err := stack.CleanRun(ctx, lab, r)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "stack %s removed: %s\n", r, c)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.run, "run", "", "remove only this stack (its run id)")
	return cmd
}

// upRuns lists the run ids of stacks started by `up` (only id when set;
// refused when id is not such a stack).
func upRuns(ctx context.Context, d runtime.Lister, id string) ([]string, error) {
	filter := map[string]string{engine.LabelStack: "up"}
	if id != "" {
		filter[engine.LabelRun] = id
	}
	cs, err := d.ListMembers(ctx, filter)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range cs {
		r := c.Labels[engine.LabelRun]
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	if id != "" && len(out) == 0 {
		return nil, usagef("no stack started with 'rttlab up' has run id %q (see 'docker ps --filter label=%s=up')", id, engine.LabelStack)
	}
	return out, nil
}

type verifyOptions struct {
	platform platformFlag
	requests int
	serialN  int
	own      ownAppOptions

	target apps.Target // the own app's; unset for the tree's apps
}

func newVerifyCmd() *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify [APP...|--app-image IMAGE|--compose FILE]",
		Short: "Prove each app does the database work its routes claim (before any timing)",
		Long: `For each app (all when none named): start PostgreSQL + the app, check every
route of the route contract (status, content type, JSON shape, the 400 on a
bad n), then reset pg_stat_statements, send requests and check that the
statements per request are exactly what apps/<app>/app.yaml says (3 for
/feed, 12 for /feed-naive, N for /serial?n=N), counting only the app's
database role. Then, from the app's agent, it traces each route on the wire:
database round trips and Parse messages per request, checked against the
per-statement figures app.yaml declares under 'wire' (so axum-raw's extra
prepare round trip is proven, not assumed). A failure names the app, the route, the expected and the
observed count. The stack is removed afterwards, also on failure or Ctrl-C.

Your own app instead of APPs: --app-image IMAGE (or --compose FILE with
--app-service and --db-service) with --routes, and --port, --health,
--db-init, --env, --env-file as for 'rttlab run'. Its health path must
answer 200 and its routes 2xx; its statements per request are reported,
not asserted.`,
		Example: `  rttlab verify go node
  rttlab verify --app-image my-app:ci --routes /api/items,/api/items/1 --db-init db/schema.sql`,
		Args:    o.own.args(true),
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(cmd, args) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.Flags().IntVar(&o.requests, "requests", 10, "requests per route for the statement count")
	cmd.Flags().IntVar(&o.serialN, "serial-n", 5, "n for /serial?n=N")
	o.own.addFlags(cmd.Flags(), "")
	o.platform.add(cmd.Flags())
	return cmd
}

// prepare checks the counts and resolves an own app before anything
// connects.
func (o *verifyOptions) prepare(cmd *cobra.Command, args []string) (err error) {
	if err := o.platform.parse(); err != nil {
		return err
	}
	if o.requests < 1 || o.requests > 10000 {
		return usagef("--requests %d: use 1..10000", o.requests)
	}
	if o.serialN < 1 || o.serialN > 1000 {
		return usagef("--serial-n %d: use 1..1000", o.serialN)
	}
	if own, err := o.own.given(cmd.Flags()); err != nil || !own {
		return err
	}
	o.target, err = o.own.resolveApp(cmd.ErrOrStderr(), cmd.Flags(), args)
	return err
}

// run verifies each app on a stack of its own and fails naming the apps
// with failed checks.
func (o *verifyOptions) run(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	targets, err := verifyTargets(o, args)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	lab, plat, err := openLab(ctx, targets, out, &o.platform)
	if err != nil {
		return err
	}
	defer lab.close()
	rt := lab.rt
	o.platform.p = plat
	var failed []string
	for _, t := range targets {
		n, err := verifyOne(ctx, rt, t, o, out)
		if err != nil {
			return err
		}
		if n > 0 {
			failed = append(failed, fmt.Sprintf("%s (%d)", t.Name, n))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("verify failed: %s; see the FAIL lines above", strings.Join(failed, ", "))
	}
	return nil
}

// verifyTargets are the apps verify checks: the own app, or the named
// apps of the tree (all when none is named).
func verifyTargets(o *verifyOptions, args []string) ([]apps.Target, error) {
	if o.own.app != nil {
		return []apps.Target{o.target}, nil
	}
	all, _, _, err := appsTree()
	if err != nil {
		return nil, err
	}
	return resolveTargets(all, args)
}

func verifyOne(ctx context.Context, rt runtime.Runtime, t apps.Target, o *verifyOptions, out interface{ Write([]byte) (int, error) }) (_ int, err error) {
	st, sh, err := shaping.StartShaped(ctx, rt, stack.StackOptions{Target: t, Publish: true, Platform: o.platform.p}, "auto", "path", "")
	if err != nil {
		return 0, fmt.Errorf("verify %s: %w", t.Name, err)
	}
	defer st.RemoveJoin(ctx, rt, &err)
	fmt.Fprintf(out, "verify %s (stack %s)\n", t.Name, st.RunID)
	checks, err := shaping.VerifyStack(ctx, rt, st, shaping.VerifyOptions{
		Requests: o.requests,
		SerialN:  o.serialN,
		Shaping:  sh,
		Progress: func(c shaping.Check) { fmt.Fprintf(out, "  %s\n", c) },
	})
	if err != nil {
		return 0, fmt.Errorf("verify %s: %w", t.Name, err)
	}
	bad := shaping.Failed(checks)
	if len(bad) == 0 {
		fmt.Fprintf(out, "verify %s: PASS (%d checks)\n", t.Name, len(checks))
	} else {
		fmt.Fprintf(out, "verify %s: FAIL (%d of %d checks failed)\n", t.Name, len(bad), len(checks))
	}
	return len(bad), nil
}

// runIDRE is the form of a run id: lower-case letters and digits (and
// '-', as in the ids of one-off helpers).
var runIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

type cleanOptions struct {
	run    string
	images bool
	force  bool
}

func newCleanCmd() *cobra.Command {
	o := &cleanOptions{}
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove everything rttlab labelled (containers, networks, volumes)",
		Long: `Removes every container, network and volume carrying the label
io.rttlab.run (of all runs, or only --run ID), and nothing else: a
container without the label is never touched. Agents remove their queue
rules and qdiscs as they stop; removing a container removes its network
namespace. Wire shaping rules left in the host's tables by a killed agent
(their comment is "rttlab:<run>/<container>") are removed too, and nothing
else of the host's tables. With --images, the images rttlab built (label io.rttlab.app)
are removed too. A run whose rttlab process still lives (a study in
progress) is kept and named, unless --force.

With --runtime kube it removes the namespaces labelled io.rttlab.run on
the cluster (every run's, or --run ID's), after ending the sessions of
their node agents so that the agents undo their rules; a namespace
without the label is never touched.`,
		Example: `  rttlab clean                 remove every run's containers, networks and rules
  rttlab clean --run 3f9c0a1b2d  remove one run's (its id is in the containers' names)
  rttlab clean --images        also remove the images rttlab built
  rttlab clean --runtime kube  remove every run's namespace on the cluster`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(cmd) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.clean(cmd) },
	}
	cmd.Flags().StringVar(&o.run, "run", "", "remove only this run's objects")
	cmd.Flags().BoolVar(&o.images, "images", false, "also remove the images rttlab built")
	cmd.Flags().BoolVar(&o.force, "force", false, "also remove runs in progress (their rttlab process still lives)")
	return cmd
}

// prepare checks the form of --run, and that --images and --force go
// with Docker.
func (o *cleanOptions) prepare(cmd *cobra.Command) error {
	if labRuntime.name == runtimeKube && (o.images || o.force) {
		return usagef("--images and --force are Docker's: on a cluster, clean --runtime kube removes the runs' namespaces (every run's, in progress or not, or --run ID's)")
	}
	if cmd.Flags().Changed("run") && !runIDRE.MatchString(o.run) {
		return usagef("--run %q is not a run id: give the id in a container's name (rttlab-ID-app), or leave --run out to clean every run", o.run)
	}
	return nil
}

// clean removes what rttlab labelled (one run's, or every run's but those
// in progress unless --force) and says what it removed and kept.
func (o *cleanOptions) clean(cmd *cobra.Command) error {
	ctx := context.WithoutCancel(cmd.Context())
	if labRuntime.name == runtimeKube {
		return kubeClean(ctx, cmd.OutOrStdout(), o.run)
	}
	rt, err := connect(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	live := map[string]int{}
	if !o.force {
		if live, err = stack.LiveRuns(ctx, engine.NewLab(rt, "")); err != nil {
			return err
		}
	}
	var c stack.Cleaned
	if o.run != "" {
		if pid, ok := live[o.run]; ok {
			return usagef("run %s is in progress (rttlab pid %d runs it): stop that run (Ctrl-C removes what it started), or pass --force", o.run, pid)
		}
		c, err = stack.CleanRun(ctx, engine.NewLab(rt, ""), o.run)
		n, serr := stack.SweepWireRules(ctx, engine.NewLab(rt, ""), o.run)
		c.Rules += n
		err = errors.Join(err, serr)
	} else {
		c, err = stack.CleanAllBut(ctx, engine.NewLab(rt, ""), o.images, live)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", c)
	for run, pid := range live {
		if o.run == "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "kept run %s: in progress (rttlab pid %d); --force removes it too\n", run, pid)
		}
	}
	if len(live) > 0 && o.images && o.run == "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "kept the images: a run in progress uses them")
	}
	return err
}
