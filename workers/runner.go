package workers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/conc"
	"github.com/rttlab/rttlab/internal/proxyserve"
	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

// Session is the worker-scheduling study's engine side: a network,
// PostgreSQL with its agent and the load client for the whole study, and
// one app stack at a time (a Puma cluster, or W single-mode Pumas behind
// the front proxy), each app container with its agent.
type Session struct {
	D        runtime.Runtime
	Stack    *stack.Stack // RunID, network, password; Members: db, client, current apps
	Target   apps.Target
	Backend  string
	db       *stack.Member
	dbSh     *shaping.Shaping
	client   string
	current  string // the running app stack ("2x2 puma:wflbw=0")
	apps     []*stack.Member
	appSh    *shaping.Shaping
	front    string // the front proxy's container, for proxy stacks
	frontURL string
	Progress func(string)
	// DecisionsPath, when set, receives the front proxy's decision log
	// each time a proxy stack is stopped.
	DecisionsPath string
}

// workersDecisionLog is the front proxy's log inside its container.
const workersDecisionLog = "/tmp/rttlab-workers-decisions.jsonl"

func (ws *Session) say(format string, a ...any) {
	if ws.Progress != nil {
		ws.Progress(fmt.Sprintf(format, a...))
	}
}

// StartWorkers starts the network, PostgreSQL with its agent and the client.
func StartWorkers(ctx context.Context, d runtime.Runtime, t apps.Target, backend string, p engine.Platform) (ws *Session, err error) {
	runID := stack.NewRunID()
	st := &stack.Stack{RunID: runID, Target: t, DB: stack.RttlabDB(stack.NewPassword()), Platform: p}
	ws = &Session{D: d, Stack: st, Target: t, Backend: backend}
	defer func() {
		if err != nil {
			st.RemoveJoin(ctx, d, &err)
		}
	}()
	if n, ok := d.(runtime.Network); ok {
		st.Network = "rttlab-" + runID
		if st.NetworkID, err = n.CreateNetwork(ctx, st.Network, stack.NetworkLabels(runID, map[string]string{engine.LabelStack: "workers"})); err != nil {
			return ws, err
		}
	}
	ws.db, err = ws.startMember(ctx, "db", st.Image("postgres"), nil, []string{"RTTLAB_DB_PASSWORD=" + st.DB.Password})
	if err != nil {
		return ws, err
	}
	if err := stack.WaitDB(ctx, d, ws.db, p.Limit(stack.ReadyLimit)); err != nil {
		return ws, err
	}
	ws.dbSh, err = shaping.StartAgents(ctx, d, &stack.Stack{RunID: runID, NetworkID: st.NetworkID, Members: []*stack.Member{ws.db}, Platform: p}, backend, "path", "")
	if err != nil {
		return ws, err
	}
	c, err := ws.startMember(ctx, "client", stack.AgentImage, []string{"agent", "idle"}, nil)
	if err != nil {
		return ws, err
	}
	c.Shaped = false
	ws.client = c.ID
	return ws, nil
}

// startMember starts one member of the study's stack on the run's
// network, through the runtime interface.
func (ws *Session) startMember(ctx context.Context, name, image string, cmd, env []string) (*stack.Member, error) {
	return ws.Stack.StartOn(ctx, ws.D, name, name, true, runtime.MemberSpec{Image: image, Cmd: cmd, Env: env}, nil)
}

// appEnv is the app container's environment: the stack file's, the
// target's and Puma's layout.
func (ws *Session) appEnv(ctx context.Context, pumaWorkers, threads int, wflbw string) ([]string, error) {
	env, err := stack.FeedServiceEnv(ctx, ws.Stack, "app")
	if err != nil {
		return nil, err
	}
	env = append(env, fmt.Sprintf("PUMA_WORKERS=%d", pumaWorkers), fmt.Sprintf("PUMA_THREADS=%d", threads), "PUMA_WFLBW="+wflbw)
	if b := pumaWorkerBoot(ws.Stack.Platform); b != "" {
		env = append(env, "PUMA_WORKER_BOOT_TIMEOUT="+b)
	}
	sort.Strings(env)
	return env, nil
}

// pumaWorkerBoot is the PUMA_WORKER_BOOT_TIMEOUT (seconds) of an app of
// platform p: none on the engine's own platform (Puma's 60 s), and the
// worker wait's own limit under emulation, where a worker's boot took
// 94–99 s here and Puma killed it at 60.
func pumaWorkerBoot(p engine.Platform) string {
	if !p.Foreign() {
		return ""
	}
	return fmt.Sprint(int(p.Limit(time.Minute).Seconds()))
}

// stopApps removes the current app stack (containers, agents, proxy).
func (ws *Session) stopApps(ctx context.Context) error {
	var errs []error
	var ids []string
	if ws.front != "" {
		ids = append(ids, ws.front)
		if ws.DecisionsPath != "" {
			errs = append(errs, ws.saveDecisions(ctx))
		}
	}
	if ws.appSh != nil {
		for _, a := range ws.appSh.Agents {
			if a.CtlID != "" {
				// SIGTERM first: a wire shaper removes its rules from the
				// host's tables as it stops.
				_ = ws.D.StopMember(ctx, a.CtlID, 3*time.Second)
				ids = append(ids, a.CtlID)
			}
			ids = append(ids, a.ID)
		}
	}
	for _, m := range ws.apps {
		ids = append(ids, m.ID)
	}
	for _, id := range ids {
		if err := ws.D.RemoveMember(ctx, id); err != nil && !errors.Is(err, engine.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	var keep []*stack.Member
	for _, m := range ws.Stack.Members {
		if !slices.Contains(ids, m.ID) {
			keep = append(keep, m)
		}
	}
	ws.Stack.Members = keep
	ws.apps, ws.appSh, ws.front, ws.frontURL, ws.current = nil, nil, "", "", ""
	return errors.Join(errs...)
}

// saveDecisions appends the running front proxy's decision log, each
// line tagged with the stack, to DecisionsPath.
func (ws *Session) saveDecisions(ctx context.Context) error {
	var out, errb bytes.Buffer
	code, err := ws.D.Exec(ctx, ws.front, runtime.ExecSpec{Cmd: []string{"cat", workersDecisionLog}, Stdout: &out, Stderr: &errb, Timeout: time.Minute})
	if err != nil {
		return fmt.Errorf("front proxy decision log: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("front proxy decision log: %s", strings.TrimSpace(errb.String()))
	}
	decs, err := proxyserve.ReadLog[Decision](&out)
	if err != nil {
		return fmt.Errorf("front proxy decision log: %w", err)
	}
	if len(decs) == 0 {
		return nil
	}
	type line struct {
		Stack string `json:"stack"`
		Proxy string `json:"proxy"` // the front proxy's container: its event order is its own
		Decision
	}
	lines := make([]line, len(decs))
	for i, d := range decs {
		lines[i] = line{ws.current, engine.ShortID(ws.front), d}
	}
	return results.AppendJSONLines(ws.DecisionsPath, lines)
}

// Close stops the current app stack, saving the proxy's decisions.
func (ws *Session) Close(ctx context.Context) error { return ws.stopApps(ctx) }

// ensureStack makes the task's app stack the running one.
func (ws *Session) ensureStack(ctx context.Context, t Task) error {
	if ws.current == t.Stack {
		return nil
	}
	if err := ws.stopApps(ctx); err != nil {
		return err
	}
	ws.say("starting %s", t.Stack)
	l := t.Layout
	port := ws.Target.Meta.Port
	names, err := ws.startApps(ctx, t)
	if err != nil {
		return err
	}
	for _, m := range ws.apps {
		if err := stack.WaitHTTP(ctx, ws.D, m, "http://"+net.JoinHostPort(m.IP, fmt.Sprint(port))+ws.Target.Meta.Health, ws.Stack.Platform.Limit(stack.ReadyLimit)); err != nil {
			return err
		}
	}
	ws.appSh, err = shaping.StartAgents(ctx, ws.D, &stack.Stack{RunID: ws.Stack.RunID, NetworkID: ws.Stack.NetworkID, Members: ws.apps, Platform: ws.Stack.Platform}, ws.Backend, "path", "")
	if err != nil {
		return err
	}
	if t.Policy.Kind == KindPuma {
		// Every worker of the cluster must have booted before load.
		if _, err := ws.workerPIDs(ctx, "http://"+net.JoinHostPort(ws.apps[0].IP, fmt.Sprint(port)), l.Workers, ws.Stack.Platform.Limit(2*time.Minute)); err != nil {
			return err
		}
	} else if err := ws.startFront(ctx, l, names); err != nil {
		return err
	}
	ws.current = t.Stack
	return nil
}

// startApps starts the task's app members, adding them to ws.apps, and
// returns their names: one Puma in cluster mode ("app") for a Puma
// policy, else one single-mode Puma per worker ("w0", "w1", …) for the
// proxy.
func (ws *Session) startApps(ctx context.Context, t Task) ([]string, error) {
	l := t.Layout
	var names []string
	switch t.Policy.Kind {
	case KindPuma:
		wflbw := "default"
		if !t.Policy.WaitDefault {
			wflbw = strconv.FormatFloat(t.Policy.WaitS, 'f', -1, 64)
		}
		env, err := ws.appEnv(ctx, l.Workers, l.Threads, wflbw)
		if err != nil {
			return nil, err
		}
		m, err := ws.startMember(ctx, "app", ws.Stack.Image(ws.Target.Meta.Name), nil, env)
		// A member that did not start is the app stack's too: a retry
		// removes it with the rest.
		if m != nil {
			ws.apps = append(ws.apps, m)
		}
		if err != nil {
			return nil, err
		}
		names = append(names, "app")
	default:
		env, err := ws.appEnv(ctx, 0, l.Threads, "default")
		if err != nil {
			return nil, err
		}
		for i := 0; i < l.Workers; i++ {
			name := fmt.Sprintf("w%d", i)
			m, err := ws.startMember(ctx, name, ws.Stack.Image(ws.Target.Meta.Name), nil, env)
			if m != nil {
				ws.apps = append(ws.apps, m)
			}
			if err != nil {
				return nil, err
			}
			names = append(names, name)
		}
	}
	return names, nil
}

// startFront starts the proxy in front of the single-mode apps names and
// waits until it answers.
func (ws *Session) startFront(ctx context.Context, l Layout, names []string) error {
	port := ws.Target.Meta.Port
	// A new upstream connection per request, as nginx's default
	// upstream does: a single-mode Puma serves a kept-alive
	// connection's next request before requests waiting on its other
	// connections (seconds at 90% load here), which would charge the
	// policy with Puma's connection handling.
	cfg := ProxyConfig{Listen: ":8080", Threads: l.Threads, Rule: RuleJSQ, LogPath: workersDecisionLog, DisableKeepAlives: true}
	for i, n := range names {
		cfg.Upstreams = append(cfg.Upstreams, Upstream{Name: n, URL: "http://" + net.JoinHostPort(ws.apps[i].IP, fmt.Sprint(port))})
	}
	b, _ := json.Marshal(cfg)
	fm, err := ws.startMember(ctx, "front", stack.AgentImage, []string{"agent", "workers-proxy", "--config-json", string(b)}, nil)
	if fm != nil {
		fm.Shaped = false
		ws.front = fm.ID
	}
	if err != nil {
		return err
	}
	ws.frontURL = "http://" + net.JoinHostPort(fm.IP, "8080")
	return stack.WaitHTTP(ctx, ws.D, fm, ws.frontURL+ws.Target.Meta.Health, ws.Stack.Platform.Limit(time.Minute))
}

// workerPIDs asks the cluster's /work (no CPU, no queries: the route that
// names its worker) until n distinct worker PIDs have answered.
func (ws *Session) workerPIDs(ctx context.Context, base string, n int, timeout time.Duration) ([]string, error) {
	seen := map[string]bool{}
	deadline := time.Now().Add(timeout)
	tr := &httpTransportNoKeepAlive
	for len(seen) < n {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d Puma workers answered within %s", len(seen), n, timeout)
		}
		if pid, err := getHeader(ctx, tr, base+"/work?queries=0", HeaderPID); err == nil && pid != "" {
			seen[pid] = true
		} else if err := conc.Sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// setRTT applies the database RTT between every app container and the
// database, half on each side, over the backend's default floor (the
// same at every setting, so a change against 0 ms is the RTT alone).
func (ws *Session) setRTT(ctx context.Context, rttMs float64) error {
	half := time.Duration(rttMs / 2 * float64(time.Millisecond))
	floor := shaping.FloorArgs(shaping.DefaultFloor(ws.dbSh.Backend))
	dbArgs := slices.Clone(floor)
	for _, m := range ws.apps {
		dbArgs = append(dbArgs, "--peer-delay", fmt.Sprintf("%s=%dns", m.IP, half.Nanoseconds()))
		appArgs := append(slices.Clone(floor), "--peer-delay", fmt.Sprintf("%s=%dns", ws.db.IP, half.Nanoseconds()))
		if _, err := ws.appSh.Control(ctx, ws.D, ws.appSh.Agents[m.Role], "set", appArgs...); err != nil {
			return fmt.Errorf("set %s delay: %w", m.Role, err)
		}
	}
	if _, err := ws.dbSh.Control(ctx, ws.D, ws.dbSh.Agents["db"], "set", dbArgs...); err != nil {
		return fmt.Errorf("set db delay: %w", err)
	}
	return nil
}

// baseURL is where the task's load goes: the cluster or the front proxy.
func (ws *Session) baseURL() string {
	if ws.front != "" {
		return ws.frontURL
	}
	return "http://" + net.JoinHostPort(ws.apps[0].IP, fmt.Sprint(ws.Target.Meta.Port))
}

// openLoop runs one open-loop load in the client container; a member of
// the stack that died during it fails it.
func (ws *Session) openLoop(ctx context.Context, o workloads.OpenLoopOptions) ([]workloads.OpenResult, workloads.OpenTotals, error) {
	budget := time.Duration(float64(o.Count)/o.Rate*float64(time.Second)) + 2*time.Minute
	c := agentclient.Client{D: ws.D, ID: ws.client, Alive: func(ctx context.Context) error {
		for _, m := range ws.Stack.Members {
			if err := stack.CheckRunning(ctx, ws.D, m); err != nil {
				return err
			}
		}
		return nil
	}}
	return c.OpenLoop(ctx, o, budget)
}

// Runner runs a workers plan into a results folder and can resume
// one: each finished task is a line of runs.jsonl.
type Runner struct {
	WS      *Session
	Plan    *Plan
	Dir     string
	Version string

	// What Run reads from the folder before it runs the tasks: the
	// capacities and runs already in it.
	folder *workersFolder
	// tasks is the plan's tasks by name.
	tasks *taskIndex
	// start is when this run's first plan task began (the progress
	// lines' elapsed time).
	start time.Time
}

// Manifest is a workers folder's manifest.json.
type Manifest struct {
	Kind     string    `json:"kind"` // results.KindWorkers
	Format   int       `json:"format,omitempty"`
	Plan     *Plan     `json:"plan"`
	PlanFile string    `json:"plan_file"`
	Seed     uint64    `json:"seed"`
	Version  string    `json:"version"`
	Started  time.Time `json:"started"`
	Backend  string    `json:"backend"`
	App      string    `json:"app"`
}

// WorkersCapacity is one capacity search's result (capacity.jsonl).
type WorkersCapacity struct {
	Key      CapacityKey        `json:"key"`
	Capacity workloads.Capacity `json:"capacity"`
}

// RunLine is one finished task (runs.jsonl).
type RunLine struct {
	Task Task `json:"task"`
	// Attempt is the task's attempt that ran it (attempts.jsonl).
	Attempt int                  `json:"attempt,omitempty"`
	Run     Run                  `json:"run"`
	Totals  workloads.OpenTotals `json:"totals"`
}

// readJSONLines decodes every complete line of path into fn (a missing
// file is an empty one); a torn last line (an interrupted write) is left
// out.
func readJSONLines(path string, fn func([]byte) error) error {
	_, err := results.ReadJSONLines(path, filepath.Base(path), 1<<20, true, func(_ int, b []byte) error { return fn(b) })
	return err
}

// Files of a workers folder that the runner appends to.
const (
	capacityFile  = "capacity.jsonl"
	runsFile      = "runs.jsonl"
	decisionsFile = "decisions.jsonl"
)

// workerAttempts is how many attempts a capacity search or a task gets:
// the first and a retry on fresh app containers.
const workerAttempts = 2

// Run measures the capacities not yet in the folder, then every task not
// yet done, then writes the summary.
func (r *Runner) Run(ctx context.Context) (*Summary, error) {
	// The cut last line of an interrupted write goes before anything is
	// appended after it.
	for _, name := range []string{capacityFile, runsFile, decisionsFile} {
		if err := results.TrimCutLine(filepath.Join(r.Dir, name)); err != nil {
			return nil, err
		}
	}
	j, err := results.OpenJournal(r.Dir)
	if err != nil {
		return nil, err
	}
	if r.folder, err = readWorkersFolder(r.Dir); err != nil {
		return nil, err
	}
	if err := results.RunTasks(ctx, j, r, nil); err != nil {
		return nil, err
	}
	if err := r.WS.Close(ctx); err != nil {
		return nil, err
	}
	return r.summarize(r.folder.runs, r.folder.capRows)
}

// Tasks is the study's tasks in the order they run (Plan.index).
func (r *Runner) Tasks() []string { return r.index().names }

// index is the plan's tasks by name, built on first use.
func (r *Runner) index() *taskIndex {
	if r.tasks == nil {
		r.tasks = r.Plan.index()
	}
	return r.tasks
}

// Done says whether the folder holds task's capacity or run.
func (r *Runner) Done(task string) bool { return r.folder.has(r.index(), task) }

// RunTask runs one attempt of a capacity search or a task, appending what
// it measured to the folder.
func (r *Runner) RunTask(ctx context.Context, task string, attempt int) (any, error) {
	ix := r.index()
	if i, ok := ix.caps[task]; ok {
		return nil, r.searchCapacity(ctx, r.folder, ix.targets[i], fmt.Sprintf("capacity %d/%d", i+1, len(ix.targets)))
	}
	if t, ok := ix.runs[task]; ok {
		if r.start.IsZero() { // the tasks' clock starts after the capacity searches
			r.start = time.Now()
		}
		return nil, r.runTask(ctx, r.folder, t, attempt, fmt.Sprintf("[%d/%d]", t.ID, len(ix.runs)), r.start)
	}
	return nil, fmt.Errorf("no worker study task %q", task)
}

// searchCapacity measures one capacity target, appending it to
// capacity.jsonl and to f.
func (r *Runner) searchCapacity(ctx context.Context, f *workersFolder, ct CapacityTarget, what string) error {
	p, ws := r.Plan, r.WS
	t := Task{Stack: ct.Stack, Policy: ct.Policy, Layout: ct.Layout, Mix: ct.Mix, RTTMs: ct.RTTMs, Seed: ct.Seed}
	if err := ws.ensureStack(ctx, t); err != nil {
		return err
	}
	if err := ws.setRTT(ctx, ct.RTTMs); err != nil {
		return err
	}
	ws.say("%s: %s %s %s at %g ms", what, ct.Policy, ct.Layout, ct.Mix.Name, ct.RTTMs)
	opts := p.Capacity.Options()
	c, err := workloads.SearchCapacity(ctx, opts, func(ctx context.Context, rate float64) (workloads.OpenTotals, error) {
		o := p.OpenLoopOptions(t, ws.baseURL(), rate)
		o.Count, o.Warmup = p.Capacity.TrialWarmup+p.Capacity.TrialRequests, p.Capacity.TrialWarmup
		o.CopyHeaders = nil
		_, tot, err := ws.openLoop(ctx, o)
		return tot, err
	})
	if err != nil {
		return err
	}
	ws.say("  sustains %.0f requests/s (%d trials)%s", c.Rate, len(c.Trials), map[bool]string{true: "", false: "; " + c.Warning}[c.Warning == ""])
	row := WorkersCapacity{Key: ct.Key, Capacity: c}
	if err := results.AppendJSONLine(filepath.Join(r.Dir, capacityFile), row); err != nil {
		return err
	}
	f.caps[ct.Key] = c.Rate
	f.capRows = append(f.capRows, row)
	return nil
}

// Retry is how a capacity search or a task is retried: once, on fresh app
// containers (the failed ones removed, their agents and front proxy with
// them).
func (r *Runner) Retry(string) results.Retry {
	return results.Retry{Attempts: workerAttempts, Failed: results.SayRetries(r.WS.say), Fresh: func(ctx context.Context, _ error) error {
		if err := r.WS.stopApps(ctx); err != nil {
			if ctx.Err() != nil {
				return err
			}
			// What could not be removed is the failure's: the stack's
			// removal at the end takes it; the retry starts apart.
			r.WS.say("  removing the failed app containers: %v", err)
		}
		return nil
	}}
}

// runTask runs one attempt of task t, appending its run to runs.jsonl and
// to f.
func (r *Runner) runTask(ctx context.Context, f *workersFolder, t Task, attempt int, what string, start time.Time) error {
	p, ws := r.Plan, r.WS
	if err := ctx.Err(); err != nil {
		return err
	}
	rate, err := p.Rate(t, f.caps)
	if err != nil {
		return err
	}
	if err := ws.ensureStack(ctx, t); err != nil {
		return err
	}
	if err := ws.setRTT(ctx, t.RTTMs); err != nil {
		return err
	}
	ws.say("%s %s %s %s %g ms at %.0f%% (%.3g/s), run %d (elapsed %s)", what, t.Policy, t.Layout, t.Mix.Name, t.RTTMs, 100*t.Fraction, rate, t.Run, time.Since(start).Round(time.Second))
	rs, tot, err := ws.openLoop(ctx, p.OpenLoopOptions(t, ws.baseURL(), rate))
	if err != nil {
		return err
	}
	run := runFromOpen(t, rate, rs)
	if err := results.AppendJSONLine(filepath.Join(r.Dir, runsFile), RunLine{Task: t, Attempt: attempt, Run: run, Totals: tot}); err != nil {
		return err
	}
	f.done[t.ID] = true
	f.runs = append(f.runs, run)
	return nil
}

// runFromOpen is the run of task t at rate from the open-loop results:
// a record per request and the workers that served any, sorted.
func runFromOpen(t Task, rate float64, rs []workloads.OpenResult) Run {
	run := Run{Cell: t.Cell(), Run: t.Run, Rate: rate}
	workerSet := map[string]bool{}
	for _, x := range rs {
		rec := RecordFromOpen(x)
		run.Records = append(run.Records, rec)
		if rec.Worker != "" {
			workerSet[rec.Worker] = true
		}
	}
	for w := range workerSet {
		run.Workers = append(run.Workers, w)
	}
	sort.Strings(run.Workers)
	return run
}

// workersFolder is what a workers results folder holds so far: the
// capacities searched and the runs done (the first line of a task wins).
type workersFolder struct {
	caps    map[CapacityKey]float64
	capRows []WorkersCapacity
	done    map[int]bool
	runs    []Run
}

func readWorkersFolder(dir string) (*workersFolder, error) {
	f := &workersFolder{caps: map[CapacityKey]float64{}, done: map[int]bool{}}
	if err := readJSONLines(filepath.Join(dir, capacityFile), func(b []byte) error {
		var c WorkersCapacity
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
		f.caps[c.Key] = c.Capacity.Rate
		f.capRows = append(f.capRows, c)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := readJSONLines(filepath.Join(dir, runsFile), func(b []byte) error {
		var l RunLine
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		if !f.done[l.Task.ID] {
			f.done[l.Task.ID] = true
			f.runs = append(f.runs, l.Run)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return f, nil
}

// ReportWorkers regenerates a workers results folder's summary.json,
// summary.md and plots from its raw files (capacity.jsonl, runs.jsonl),
// under plan (the folder's own); it returns the files written. A folder
// without a run done is refused and nothing is written.
func ReportWorkers(dir string, plan *Plan) ([]string, error) {
	f, err := readWorkersFolder(dir)
	if err != nil {
		return nil, err
	}
	if len(f.runs) == 0 {
		return nil, fmt.Errorf("%s holds no run done (%d of %d tasks): nothing to report, nothing written",
			filepath.Join(dir, "runs.jsonl"), len(f.done), len(plan.Tasks()))
	}
	r := &Runner{Plan: plan, Dir: dir}
	if _, err := r.summarize(f.runs, f.capRows); err != nil {
		return nil, err
	}
	files := []string{filepath.Join(dir, results.SummaryJSONFile), filepath.Join(dir, results.SummaryMDFile)}
	plots, _ := filepath.Glob(filepath.Join(dir, results.PlotsDir, "*"))
	return append(files, plots...), nil
}

func (r *Runner) summarize(runs []Run, caps []WorkersCapacity) (*Summary, error) {
	s := Analyze(runs, Options{Seed: r.Plan.Seed})
	if r.Plan.Emulated {
		s.Emulated = r.Plan.Platform
	}
	for _, c := range caps {
		s.Capacities = append(s.Capacities, CapacityResult{Key: c.Key, Rate: c.Capacity.Rate, Ceiling: c.Capacity.Ceiling, Converged: c.Capacity.Converged, Trials: len(c.Capacity.Trials), Warning: c.Capacity.Warning})
	}
	if err := results.WriteJSON(r.Dir, results.SummaryJSONFile, s); err != nil {
		return s, err
	}
	if err := results.WriteAtomic(r.Dir, results.SummaryMDFile, []byte(s.Markdown("Worker scheduling: "+r.Plan.Name))); err != nil {
		return s, err
	}
	_, err := s.WritePlots(filepath.Join(r.Dir, results.PlotsDir))
	return s, err
}

// httpTransportNoKeepAlive dials a new connection per request, so every
// request to a Puma cluster can land on any worker.
var httpTransportNoKeepAlive = http.Transport{DisableKeepAlives: true}

// getHeader GETs url and returns one response header.
func getHeader(ctx context.Context, tr *http.Transport, url, header string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return resp.Header.Get(header), nil
}
