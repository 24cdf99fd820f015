package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt"
	"github.com/rttlab/rttlab/rtt/report"
)

type runOptions struct {
	plan     string
	apps     []string
	delays   string
	runs     int
	requests int
	warmup   int
	seed     uint64
	shaper   string
	scope    string
	out      string
	resume   string
	yes      bool
	platform platformFlag

	own ownAppOptions // a user's own app

	p *rtt.Plan
}

// runLong is the help text of rttlab run.
const runLong = `Runs a plan (default: the built-in 'study', the seed study's design: RTT
settings 0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1 ms, 20 runs × 100
measured requests after 20 warmup requests). 'smoke' is the same code path
at reduced counts. A FILE is a YAML plan (see README.md). --apps, --routes,
--delays, --runs, --requests, --warmup, --seed, --shaper and --scope
override the plan's fields; the others are set in a plan file.

For each app: one stack (PostgreSQL, the app, an agent per shaped
container, a load client), verification probes per setting, then the
(route, setting, run) tasks in an order shuffled by the seed. Every
request's latency is appended to samples.jsonl and fsynced per task. Ctrl-C
stops after removing every container, rule and network; continue later
with --resume DIR.

Apps with round-trip budgets (budgets: in app.yaml or in the plan's app
entry) are gated on the run's trace when it ends: a line per request type
over budget and exit status 3, as 'rttlab trace --budget' does.

Your own app: --app-image IMAGE runs an image you built (rttlab never
builds, retags or removes it) with the routes of --routes, against
PostgreSQL initialised by --db-init (SQL files, folders of .sql files in
name order, pg_dump plain or custom format). The app gets the connection
as PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE and DATABASE_URL, PORT,
and --env / --env-file. Its statements per request are reported, not
asserted (a plan's image: entry may declare them with statements:).
--compose FILE --app-service NAME --db-service NAME runs every service of
a compose file as the file says instead (images never built) and shapes
between those two services; the database service must be PostgreSQL
(credentials from its POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB).`

// runExample is run's help examples.
const runExample = `  rttlab run --plan smoke --app-image example/shop:1.4 --routes /api/items,/api/items/1 \
    --port 3000 --health /healthz --db-init schema.sql --env LOG_LEVEL=warn
  rttlab run --plan smoke --compose compose.yaml --app-service web --db-service db --routes /api/items
  rttlab run --plan smoke
  rttlab run --plan study --apps go --delays 0,0.5,1
  rttlab run --resume rttlab-results/20261130T010203Z-study`

func newRunCmd() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:     "run [--plan study|smoke|FILE]",
		Short:   "Run a study plan: shaped stacks, shuffled tasks, raw samples, statistics, report",
		Long:    runLong,
		Example: runExample,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.prepare(cmd) },
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.plan, "plan", "study", "built-in plan (study, smoke) or a YAML plan file")
	f.StringSliceVar(&o.apps, "apps", nil, "apps to run (comma list); overrides the plan's")
	f.StringVar(&o.delays, "delays", "", "RTT settings in milliseconds, comma list (e.g. 0,0.5,1)")
	f.IntVar(&o.runs, "runs", 0, "runs per (app, route, setting) (default: the plan's; study 20, smoke 3)")
	f.IntVar(&o.requests, "requests", 0, "measured requests per run (default: the plan's; study 100)")
	f.IntVar(&o.warmup, "warmup", 0, "warmup requests per run (default: the plan's; study 20)")
	f.Uint64Var(&o.seed, "seed", 0, "RNG seed of the task order and resampling (default: the plan's; study 20260926)")
	f.StringVar(&o.shaper, "shaper", "auto", "delay shaper: auto, kernel or userspace")
	f.StringVar(&o.scope, "scope", "path", "path (only app<->database packets) or interface (all egress)")
	f.StringVar(&o.out, "out", "rttlab-results", "folder that receives the results folder")
	f.StringVar(&o.resume, "resume", "", "continue an interrupted results folder")
	f.BoolVarP(&o.yes, "yes", "y", false, "start a run estimated over 10 minutes without asking")
	o.platform.add(f)
	o.own.addFlags(f, "routes for every app (comma list)")
	return cmd
}

// prepare checks the command line and settles the plan before anything
// connects or starts: a resumed folder's own plan, or the plan with the
// flags applied, validated, then the estimate (and, for a long run on a
// terminal, the question).
func (o *runOptions) prepare(cmd *cobra.Command) error {
	fl := cmd.Flags()
	if err := o.platform.parse(); err != nil {
		return err
	}
	if o.resume != "" {
		return o.resumePlan(fl)
	}
	p, err := rtt.LoadPlan(o.plan)
	if err != nil {
		return usageError{Err: err}
	}
	all, _, _, err := appsTree()
	if err != nil {
		return err
	}
	if err := o.applyFlags(p, fl, all); err != nil {
		return err
	}
	if o.platform.raw == "" {
		// The plan file's platform, unless --platform names one.
		o.platform.raw = p.Platform
	}
	if o.own.renamed != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), o.own.renamed)
	}
	if err := p.Validate(); err != nil {
		return usageError{Err: p.Place(err)}
	}
	if err := p.CheckTasks(); err != nil {
		return usageError{Err: p.Place(err)}
	}
	// Image entries (with the routes the flags gave them) resolve like the
	// tree's apps.
	if err := rtt.AddOwnApps(p, all); err != nil {
		return usageError{Err: p.Place(err)}
	}
	if err := rtt.ValidatePlanApps(p, all); err != nil {
		return usageError{Err: err}
	}
	if err := rtt.ValidatePlanBudgets(p, all); err != nil {
		return usageError{Err: err}
	}
	o.p = p
	return o.confirm(cmd, all)
}

// resumePlan takes the plan of the folder --resume names; no flag may
// change it.
func (o *runOptions) resumePlan(fl *pflag.FlagSet) error {
	for _, f := range append([]string{"plan", "apps", "routes", "delays", "runs", "requests", "warmup", "seed", "shaper", "scope", "app-image", "compose"}, ownAppFlags...) {
		if fl.Changed(f) {
			return usagef("--resume continues the folder's own plan: drop --%s", f)
		}
	}
	if err := results.CheckResume(o.resume, results.KindRTT); err != nil {
		return usageError{Err: err}
	}
	p, err := rtt.FolderPlan(o.resume)
	if err != nil {
		return usagef("--resume %s: not a results folder of rttlab run: %v", o.resume, strings.Join(strings.Fields(err.Error()), " "))
	}
	o.platform.resumes(o.resume, p.Platform, p.Emulated)
	o.p = p
	return nil
}

// applyFlags overrides the plan's fields with the flags given: a user's
// own app, --apps, --routes, --delays, --runs, --requests, --warmup,
// --seed, --shaper and --scope. A count given on the command line
// replaces every app's own.
func (o *runOptions) applyFlags(p *rtt.Plan, fl *pflag.FlagSet, all map[string]*apps.Meta) error {
	own, err := o.own.given(fl)
	if err != nil {
		return err
	}
	if own {
		if fl.Changed("apps") {
			return usagef("--app-image and --compose run one app: drop --apps")
		}
		a, err := o.own.entry(fl.Changed)
		if err != nil {
			return err
		}
		p.Apps = []rtt.PlanApp{a}
	}
	if fl.Changed("apps") {
		if p.Apps, err = o.selectApps(p, fl, all); err != nil {
			return err
		}
	}
	if fl.Changed("routes") {
		for i := range p.Apps {
			p.Apps[i].Routes = o.own.routes
			p.Apps[i].Mix, p.Apps[i].RequestMix = "", nil
		}
	}
	if fl.Changed("delays") {
		d, err := rtt.ParseDelaysMs(o.delays)
		if err != nil {
			return usagef("--delays: %v", err)
		}
		p.DelaysMs = d
	}
	o.applyCounts(p, fl)
	if fl.Changed("seed") {
		p.Seed = o.seed
	}
	if fl.Changed("shaper") {
		p.Shaper = o.shaper
	}
	if fl.Changed("scope") {
		p.Scope = o.scope
	}
	if own || slices.ContainsFunc([]string{"apps", "routes", "delays", "runs", "requests", "warmup", "seed", "shaper", "scope"}, fl.Changed) {
		// Errors name the plan, not lines of a file the flags overrode.
		p.Overridden()
	}
	return nil
}

// applyCounts sets the plan's --runs, --requests and --warmup when given;
// a count given replaces every app's own.
func (o *runOptions) applyCounts(p *rtt.Plan, fl *pflag.FlagSet) {
	counts := []struct {
		flag  string
		value int
		plan  *int
		app   func(*rtt.PlanApp) *int
	}{
		{"runs", o.runs, &p.Runs, func(a *rtt.PlanApp) *int { return &a.Runs }},
		{"requests", o.requests, &p.Requests, func(a *rtt.PlanApp) *int { return &a.Requests }},
		{"warmup", o.warmup, &p.Warmup, func(a *rtt.PlanApp) *int { return &a.Warmup }},
	}
	for _, c := range counts {
		if !fl.Changed(c.flag) {
			continue
		}
		*c.plan = c.value
		for i := range p.Apps {
			*c.app(&p.Apps[i]) = 0
		}
	}
}

// selectApps is the plan's apps that --apps names, in its order; an app
// the plan does not list runs with the routes --routes gives.
func (o *runOptions) selectApps(p *rtt.Plan, fl *pflag.FlagSet, all map[string]*apps.Meta) ([]rtt.PlanApp, error) {
	var list []rtt.PlanApp
	for _, a := range o.apps {
		found := false
		for _, pa := range p.Apps {
			if pa.Name == a {
				list, found = append(list, pa), true
			}
		}
		if found {
			continue
		}
		if _, err := apps.Resolve(all, a); err != nil {
			return nil, usageError{Err: err}
		}
		// An app the plan does not list has no routes to take: they must
		// be named.
		if !fl.Changed("routes") {
			var names []string
			for _, pa := range p.Apps {
				names = append(names, pa.Name)
			}
			return nil, usagef("app %s is not in plan %s (its apps: %s): name its routes with --routes, or use a plan file that lists it", a, p.Name, strings.Join(names, ", "))
		}
		list = append(list, rtt.PlanApp{Name: a})
	}
	return list, nil
}

// run builds what the plan needs, runs it (or resumes it), prints the
// digest and gates the round-trip budgets.
func (o *runOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	all, _, _, err := appsTree()
	if err != nil {
		return err
	}
	lab, err := runLabFor(cmd)
	if err != nil {
		return err
	}
	defer lab.close()
	p := o.p
	plat, err := o.platform.settle(ctx, lab.eng)
	if err != nil {
		return err
	}
	if err := lab.platform(plat); err != nil {
		return err
	}
	p.Platform, p.Emulated = plat.String(), plat.Foreign()
	if err := rtt.AddOwnApps(p, all); err != nil {
		return err
	}
	var targets []apps.Target
	for _, a := range p.Apps {
		t, err := apps.Resolve(all, a.Name)
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}
	images, skipped, err := lab.images(targets, plat)
	if err != nil {
		return err
	}
	var sum *report.Summary
	ro := rtt.RunOptions{Plan: o.p, OutDir: o.out, Resume: o.resume, Version: version, Commit: commit,
		Skipped: skipped, Images: images, Progress: newProgress(cmd.ErrOrStderr()),
		Rendered: func(s *report.Summary) { sum = s }}
	start := time.Now()
	dir, err := rtt.Run(ctx, lab.rt, lab.eng, all, ro)
	if dir != "" {
		printStudyEnd(out, cmd.ErrOrStderr(), report.Study{Rendered: sum}, dir, start, err == nil)
	}
	if err != nil && dir != "" {
		return hintError{err, resumeHint(studyOf(results.KindRTT), dir)}
	}
	if err != nil {
		return err
	}
	// Round-trip budgets (app.yaml's, the plan's) gate on the run's trace.
	return gateRun(out, dir, p, all, skipped)
}

// confirmLonger is the estimate over which a run started on a terminal
// asks before it starts.
const confirmLonger = 10 * time.Minute

// confirm prints, before anything starts, the plan, its tasks and the
// estimated wall time; on a terminal, a run estimated over confirmLonger
// asks first unless --yes was given.
func (o *runOptions) confirm(cmd *cobra.Command, all map[string]*apps.Meta) error {
	p := o.p
	est := p.Estimate(all)
	w := cmd.ErrOrStderr()
	settings := count(len(p.DelaysMs), "setting")
	if p.UnshapedRuns == nil || *p.UnshapedRuns > 0 {
		settings += " and unshaped"
	}
	fmt.Fprintf(w, "plan %s: %s (%s, %s), %s on a 2-core host\n", p.Name, count(len(p.Tasks()), "task"),
		count(len(p.Apps), "app"), settings, rtt.EstimateText(est))
	in, ok := cmd.InOrStdin().(*os.File)
	if o.yes || est <= confirmLonger || !ok || !term.IsTerminal(int(in.Fd())) {
		return nil
	}
	fmt.Fprintf(w, "start it? --apps, --delays and --runs cut it down; --yes skips this question [y/N] ")
	answer, _ := bufio.NewReader(in).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return usagef("not started: answer y, or pass --yes")
	}
	return nil
}

// count writes n things: "1 app", "3 apps".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// buildForRun makes the images; an app whose image cannot be built for a
// reason of this host (no network for its package registry) is skipped
// with that reason, any other failure stops the run.
func buildForRun(cmd *cobra.Command, rt *engine.Runtime, targets []apps.Target, plat engine.Platform) (map[string]string, map[string]string, error) {
	ctx := cmd.Context()
	w := cmd.ErrOrStderr()
	// A user's image is checked first: it is never built or pulled.
	own, err := ownImages(ctx, rt, targets)
	if err != nil {
		return nil, nil, err
	}
	if err := ensureBases(ctx, rt, plat, imagesFor(targets, true), w); err != nil {
		return nil, nil, err
	}
	b, err := newBuilder(ctx, rt, false, nil, plat)
	if err != nil {
		return nil, nil, err
	}
	images := own
	skipped := map[string]string{}
	var failed error
	b.BuildEach(ctx, imagesFor(targets, true), 0, func(n string, r engine.Built, err error) bool {
		if err != nil {
			if reason, ok := engine.SkipReason(err); ok {
				fmt.Fprintf(w, "image %s: skipped: %s\n", n, reason)
				for _, t := range targets {
					if t.Meta.Name == n {
						skipped[t.Name] = reason
					}
				}
				return true
			}
			if failed == nil {
				failed = err
				fmt.Fprintf(w, "image %s: failed\n", n)
			}
			return false
		}
		fmt.Fprintf(w, "image %s: %s (%.1fs)\n", n, shortID(r.ID), r.Duration.Seconds())
		images[n] = r.ID
		return true
	})
	if failed != nil {
		return nil, nil, failed
	}
	return images, skipped, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// progress draws a bar on a terminal, else prints a line per task.
type progress struct {
	w     io.Writer
	tty   bool
	bar   *progressbar.ProgressBar
	start time.Time
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

func (p *progress) Start(total, done int) {
	p.start = time.Now()
	if p.tty {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(p.w), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetDescription("tasks"), progressbar.OptionClearOnFinish())
		_ = p.bar.Set(done)
		return
	}
	fmt.Fprintf(p.w, "%d tasks, %d already done\n", total, done)
}

func (p *progress) Task(done, total int, desc string) {
	if p.bar != nil {
		_ = p.bar.Set(done)
		return
	}
	el := time.Since(p.start)
	fmt.Fprintf(p.w, "[%d/%d] %s (elapsed %s)\n", done, total, desc, el.Round(time.Second))
}

func (p *progress) Note(msg string) {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintln(p.w, msg)
	if p.bar != nil {
		_ = p.bar.RenderBlank()
	}
}

func (p *progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
