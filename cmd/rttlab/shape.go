package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/rtt"
	"github.com/rttlab/rttlab/rtt/report"
)

func newShapeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shape",
		Short: "Set, show, clear and verify the app<->database delay",
		Example: `  rttlab up go && rttlab shape set --rtt 0.5
  rttlab shape show
  rttlab shape clear
  rttlab shape verify go --delays 0,0.5,1`,
		Long: `Acts on a stack started with 'rttlab up' (set, show, clear), or starts its
own stack to measure the shaper (verify). An RTT of D delays each
direction by D/2: the app's packets to the database and the database's
to the app, held on the wire between them.`,
	}
	cmd.AddCommand(newShapeSetCmd(), newShapeShowCmd(), newShapeClearCmd(), newShapeVerifyCmd())
	return cmd
}

func parseRTT(s string) (time.Duration, error) {
	d, err := netem.ParseDelay(s)
	if err != nil {
		return 0, usagef("--rtt: %v", err)
	}
	return d, nil
}

func validScope(s string) error {
	if s != "path" && s != "interface" {
		return usagef("--scope %q: use path (only app<->database packets) or interface (all egress)", s)
	}
	return nil
}

// findUp finds the one stack started with `up` (or the named one).
func findUp(ctx context.Context, rt *engine.Runtime, run string) (*shaping.Shaping, error) {
	lab := engine.NewLab(rt, "")
	runs, err := upRuns(ctx, lab, run)
	if err != nil {
		return nil, err
	}
	switch len(runs) {
	case 0:
		return nil, usagef("no stack started with 'rttlab up' is running: start one with 'rttlab up APP'")
	case 1:
	default:
		return nil, usagef("%d stacks are up (%s): name one with --run", len(runs), strings.Join(runs, ", "))
	}
	return shaping.FindShaping(ctx, lab, runs[0])
}

type shapeSetOptions struct {
	rtt   string
	floor string
	scope string
	run   string
}

func newShapeSetCmd() *cobra.Command {
	o := &shapeSetOptions{}
	cmd := &cobra.Command{
		Use:   "set --rtt D",
		Short: "Apply a split delay to a stack started with 'rttlab up'",
		Long: `Sets RTT D (0.5 or 0.5ms, 250us: a bare number is milliseconds, as in
run's --delays; 0 to 1s) between the app and the database of a stack
started with 'rttlab up': D/2 on each direction, held after the sender
sent a packet and before the receiver sees it (kernel netem on the
sender's link, or the userspace shaper on the stack's bridge).
--scope path (default) delays only app<->database packets; interface
delays all egress of both containers (the seed study's method).`,
		Example: `  rttlab up go
  rttlab shape set --rtt 0.5ms
  curl -s http://127.0.0.1:PORT/feed    # now pays 3 × 0.5 ms more`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if _, err := parseRTT(o.rtt); err != nil {
				return err
			}
			if o.floor != "" {
				if _, err := parseRTT(o.floor); err != nil {
					return usagef("--floor: %v", err)
				}
			}
			return validScope(o.scope)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			d, _ := parseRTT(o.rtt)
			rt, err := connect(ctx)
			if err != nil {
				return err
			}
			defer rt.Close()
			sh, err := findUp(ctx, rt, o.run)
			if err != nil {
				return err
			}
			sh.Scope = o.scope
			if o.floor != "" {
				sh.Floor, _ = parseRTT(o.floor)
			} else if err := sh.DefaultFloor(ctx, rt); err != nil {
				return err
			}
			if err := sh.SetRTT(ctx, rt, d); err != nil {
				return err
			}
			return printShow(ctx, cmd.OutOrStdout(), rt, sh)
		},
	}
	cmd.Flags().StringVar(&o.rtt, "rtt", "", "target RTT: 0.5ms, 250us, or a bare number of milliseconds (0.5)")
	cmd.Flags().StringVar(&o.scope, "scope", "path", "path or interface")
	cmd.Flags().StringVar(&o.floor, "floor", "", "added to every packet's one-way delay, 0 included, with a unit (default: 0.3ms for the userspace shaper, none for kernel netem)")
	cmd.Flags().StringVar(&o.run, "run", "", "the stack's run id (when several are up)")
	return cmd
}

func printShow(ctx context.Context, w io.Writer, rt *engine.Runtime, sh *shaping.Shaping) error {
	reps, err := sh.Show(ctx, rt)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SIDE\tACTIVE\tONE-WAY DELAY\tSCOPE\tPEERS\tBACKEND")
	for _, role := range []string{"app", "db"} {
		r := reps[role]
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%s\n", role, r.Active, time.Duration(r.DelayNs), dash(r.Scope), dash(strings.Join(r.Peers, ",")), r.Backend)
	}
	tw.Flush()
	if r := reps["app"]; r.Why != "" {
		fmt.Fprintf(w, "backend: %s\n", r.Why)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newShapeShowCmd() *cobra.Command {
	c := upShapeCmd("show", "Show the delay of a stack started with 'rttlab up'", nil)
	c.Example = "  rttlab shape show"
	return c
}

func newShapeClearCmd() *cobra.Command {
	c := upShapeCmd("clear", "Remove the delay (and every rule and qdisc) from a stack started with 'rttlab up'",
		func(ctx context.Context, rt *engine.Runtime, sh *shaping.Shaping) error {
			return sh.Clear(ctx, rt)
		})
	c.Example = "  rttlab shape clear"
	return c
}

// upShapeCmd acts on the stack started with `up` (act may be nil), then
// shows its setting.
func upShapeCmd(use, short string, act func(context.Context, *engine.Runtime, *shaping.Shaping) error) *cobra.Command {
	var run string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rt, err := connect(ctx)
			if err != nil {
				return err
			}
			defer rt.Close()
			sh, err := findUp(ctx, rt, run)
			if err != nil {
				return err
			}
			if act != nil {
				if err := act(ctx, rt, sh); err != nil {
					return err
				}
			}
			return printShow(ctx, cmd.OutOrStdout(), rt, sh)
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "the stack's run id (when several are up)")
	return cmd
}

type shapeVerifyOptions struct {
	platform    platformFlag
	delays      string
	shaper      string
	scope       string
	tolerance   float64
	icmp        int
	selectRuns  int
	selectCalls int
	seed        uint64
	json        bool
	calibrate   string
	hook        string
	floorMs     float64
	oneWay      bool
	delaysMs    []float64
}

// floor is --floor as a plan's floor_ms: nil (the backend's default)
// when not given.
func (o *shapeVerifyOptions) floor() *float64 {
	if o.floorMs < 0 {
		return nil
	}
	return &o.floorMs
}

func newShapeVerifyCmd() *cobra.Command {
	o := &shapeVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify APP",
		Short: "Measure the injected delay: ICMP and SELECT 1 per setting against configured",
		Example: `  rttlab shape verify go                          ICMP, SELECT 1 and one-way checks at 0-1 ms
  rttlab shape verify go --delays 0,0.5,1 --json  the same figures as one JSON document`,
		Long: `Starts PostgreSQL + APP with their agents and, from the app's own network
namespace, measures per setting: ICMP (mean, median; added RTT against the
0 ms setting) and SELECT 1 through pgx (runs × calls, median per run;
change against 0 ms with a 95% bootstrap CI). A first row measures the
path with the shaper cleared, so the 0 ms row shows the shaper's own cost.
Rows where |added - configured| exceeds --tolerance are flagged. This is
the accuracy benchmark of the shaper; the figures depend on the host's
load, so run it on a quiet machine.

With --one-way (the default) both agents also capture the app<->database
packets on their interface while each setting is measured, with kernel
stamps on the host's one clock; each packet that left one side is paired
with its arrival at the other, so each direction's one-way delay shows as
the receiver's kernel saw it, apart from process wake-ups and from the
shaper's own statistics: p50 added against the 0 ms setting, p99, and the
share of packets paired. A delay held after the receiver's kernel stamped
the packet does not show there.`,
		Args:    cobra.ExactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(cmd, args) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.Flags().StringVar(&o.delays, "delays", "0,0.05,0.1,0.2,0.3,0.4,0.5,0.75,1", "RTT settings in milliseconds")
	cmd.Flags().StringVar(&o.shaper, "shaper", "auto", "auto, kernel or userspace")
	cmd.Flags().StringVar(&o.scope, "scope", "path", "path or interface")
	cmd.Flags().Float64Var(&o.tolerance, "tolerance", report.DefaultToleranceMs, "flag |added - configured| above this (ms), for ICMP and SELECT 1")
	cmd.Flags().StringVar(&o.hook, "hook", "", "userspace shaper's hook: wire (default: on the stack's bridge, before the receiver sees a packet), ingress or egress")
	cmd.Flags().Float64Var(&o.floorMs, "floor", -1, "ms added to every packet's one-way delay at every setting, 0 included (0: none; default: 0.3 for the userspace shaper, none for kernel netem)")
	cmd.Flags().StringVar(&o.calibrate, "calibrate", "auto", "calibrate each setting with ICMP before measuring: auto (userspace shaper only), on or off")
	cmd.Flags().BoolVar(&o.oneWay, "one-way", true, "capture the app<->database packets in both agents per setting and pair them into one-way delays")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the rows as JSON on stdout (the table goes to stderr)")
	cmd.Flags().IntVar(&o.icmp, "icmp", 50, "ICMP echoes per setting")
	cmd.Flags().IntVar(&o.selectRuns, "select-runs", 5, "SELECT 1 runs per setting")
	cmd.Flags().IntVar(&o.selectCalls, "select-calls", 200, "SELECT 1 calls per run")
	cmd.Flags().Uint64Var(&o.seed, "seed", 1, "seed of the bootstrap")
	o.platform.add(cmd.Flags())
	return cmd
}

// prepare checks the delays, shaper, scope, hook, floor and counts as a
// plan would, before anything connects.
func (o *shapeVerifyOptions) prepare(cmd *cobra.Command, args []string) error {
	if err := o.platform.parse(); err != nil {
		return err
	}
	d, err := rtt.ParseDelaysMs(o.delays)
	if err != nil {
		return usagef("--delays: %v", err)
	}
	p := &rtt.Plan{DelaysMs: d, Runs: 1, Requests: 1, Shaper: o.shaper, Scope: o.scope, Calibrate: o.calibrate, Hook: o.hook, FloorMs: o.floor(), Apps: []rtt.PlanApp{{Name: args[0]}}}
	p.Defaults()
	if err := p.Validate(); err != nil {
		return usageError{Err: err}
	}
	if o.tolerance < 0 || o.icmp < 1 || o.selectRuns < 1 || o.selectCalls < 1 {
		return usagef("--tolerance must not be negative; --icmp, --select-runs, --select-calls must be positive")
	}
	o.delaysMs = d
	return nil
}

// shapedOne is one app's stack started shaped on the lab of --runtime,
// as shape verify and trace start theirs.
type shapedOne struct {
	st  *stack.Stack
	sh  *shaping.Shaping
	lab *runLab
}

// startShapedOne opens the lab of --runtime for t (its images made, the
// platform pf settles) and starts t's stack there, shaped by shaper with
// scope and hook. The caller stops it.
func startShapedOne(ctx context.Context, w io.Writer, t apps.Target, pf *platformFlag, shaper, scope, hook string) (*shapedOne, error) {
	lab, plat, err := openLab(ctx, []apps.Target{t}, w, pf)
	if err != nil {
		return nil, err
	}
	st, sh, err := shaping.StartShaped(ctx, lab.rt, stack.StackOptions{Target: t, Platform: plat}, shaper, scope, hook)
	if err != nil {
		lab.close()
		return nil, err
	}
	return &shapedOne{st: st, sh: sh, lab: lab}, nil
}

// stop removes the stack, joining a failure to *errp, then closes the lab.
func (s *shapedOne) stop(ctx context.Context, errp *error) {
	s.st.RemoveJoin(ctx, s.lab.rt, errp)
	s.lab.close()
}

// run starts the app's stack, measures every setting (ICMP, SELECT 1, the
// shaper's hold, one-way captures) and prints the table or the JSON.
func (o *shapeVerifyOptions) run(cmd *cobra.Command, args []string) (err error) {
	ctx := cmd.Context()
	t, err := loadTarget(args[0])
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	table := out
	if o.json {
		// The table becomes the progress on stderr; stdout carries only
		// the JSON document.
		table = cmd.ErrOrStderr()
	}
	one, err := startShapedOne(ctx, cmd.ErrOrStderr(), t, &o.platform, o.shaper, o.scope, o.hook)
	if err != nil {
		return err
	}
	defer one.stop(ctx, &err)
	rt, sh := one.lab.rt, one.sh
	plan := rtt.Plan{Calibrate: o.calibrate, Hook: o.hook, FloorMs: o.floor()}
	sh.Floor = plan.Floor(sh.Backend)
	fmt.Fprintf(table, "shaper: %s (%s); floor %v; scope %s; ICMP %d echoes, SELECT 1 %d runs x %d calls; tolerance %.3f ms\n",
		sh.Backend, sh.Why, sh.Floor, o.scope, o.icmp, o.selectRuns, o.selectCalls, o.tolerance)
	var cal []shaping.CalibrationPoint
	if plan.Calibrates(sh.Backend) {
		if cal, err = calibrateShaping(ctx, rt, sh, args[0], o.delaysMs, table); err != nil {
			return err
		}
	}
	fmt.Fprintln(table, verifyLine("RTT (ms)", "ICMP mean", "ICMP median", "added", "SELECT 1", "change", "95% CI", "hold p50 app/db (µs)", "check"))
	flagged := 0
	vo := shaping.ShapeVerifyOptions{
		DelaysMs: o.delaysMs, ICMPCount: o.icmp, SelectRuns: o.selectRuns, SelectCalls: o.selectCalls,
		ToleranceMs: o.tolerance, Seed: o.seed, OneWay: o.oneWay,
		Row: printVerifyRow(table, &flagged),
	}
	rows, err := shaping.VerifyShaping(ctx, rt, sh, vo)
	if err != nil {
		return err
	}
	if flagged > 0 {
		fmt.Fprintf(table, "%d setting(s) out of tolerance\n", flagged)
	}
	if o.json {
		return shaping.WriteVerifyJSON(out, sh, vo, rows, cal)
	}
	return nil
}

// calibrateShaping calibrates every setting with ICMP, printing each
// setting's offset and residuals to table as it is calibrated.
func calibrateShaping(ctx context.Context, rt runtime.Watcher, sh *shaping.Shaping, app string, delaysMs []float64, table io.Writer) ([]shaping.CalibrationPoint, error) {
	fmt.Fprintln(table, "calibrating per setting with ICMP (SELECT 1 below is not used by it): offset per side (µs), ICMP residual per round (µs)")
	return shaping.Calibrate(ctx, rt, sh, app, delaysMs, shaping.CalibrateOptions{
		Row: func(p shaping.CalibrationPoint) {
			var rs []string
			for _, r := range p.BeforeUs {
				rs = append(rs, fmt.Sprintf("%+.0f", r))
			}
			fmt.Fprintf(table, "  %5g ms: offset %+6.1f µs; residuals %s\n", p.RTTms, p.AppOffsetUs, strings.Join(rs, " → "))
		},
	})
}

// printVerifyRow prints each row as it is measured (with the one-way
// line under it when there is one) and counts the flagged ones.
func printVerifyRow(table io.Writer, flagged *int) func(shaping.ShapeRow) {
	return func(r shaping.ShapeRow) {
		if r.Flag {
			*flagged++
		}
		fmt.Fprintln(table, verifyRowLine(r))
		if line := oneWayLine(r); line != "" {
			fmt.Fprintln(table, line)
		}
	}
}

// verifyLine lays out one line of the verify table in fixed columns, so
// rows printed as they are measured line up with the header.
func verifyLine(cols ...string) string {
	widths := []int{9, 10, 12, 8, 9, 8, 17, 21}
	var b strings.Builder
	for i, c := range cols {
		if i < len(widths) {
			fmt.Fprintf(&b, "%*s  ", widths[i], c)
		} else {
			b.WriteString(c)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

func verifyRowLine(r shaping.ShapeRow) string {
	label := fmt.Sprintf("%g", r.RTTms)
	var checks []string
	switch {
	case r.NoShaper:
		label, checks = "no shaper", []string{"reference"}
	case !r.HaveBaseline:
		checks = []string{"vs no shaper"}
	default:
		if r.ICMPFlag {
			checks = append(checks, "ICMP OUT")
		}
		if r.Select1Flag {
			checks = append(checks, "SELECT 1 OUT")
		}
		if len(checks) == 0 {
			checks = []string{"ok"}
		}
	}
	added, change, ci, hold := "-", "-", "-", "-"
	if !r.NoShaper {
		added = fmt.Sprintf("%+.3f", r.AddedMs)
		change = fmt.Sprintf("%+.3f", r.Select1Diff)
		ci = fmt.Sprintf("[%.3f, %.3f]", r.Select1CI.Low, r.Select1CI.High)
	}
	if len(r.Sides) > 0 {
		var hs []string
		for _, sd := range r.Sides {
			hs = append(hs, fmt.Sprintf("%.1f", sd.Summary.HoldP50Us))
		}
		hold = strings.Join(hs, "/")
	}
	return verifyLine(label, fmt.Sprintf("%.3f", netem.Ms(r.ICMP.Mean)), fmt.Sprintf("%.3f", netem.Ms(r.ICMP.Median)), added,
		fmt.Sprintf("%.3f", r.Select1Ms), change, ci, hold, strings.Join(checks, ", "))
}
