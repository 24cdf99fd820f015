package rtt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/internal/conc"
	"github.com/rttlab/rttlab/internal/planfile"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/engine"
	rtm "github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
	"github.com/rttlab/rttlab/workloads"
)

// Progress receives the runner's progress. Implementations draw a bar on
// a terminal or print a line per task.
type Progress interface {
	Start(total, done int)
	Task(done, total int, desc string)
	Note(msg string)
	Finish()
}

// RunOptions configure Run.
type RunOptions struct {
	Plan    *Plan
	OutDir  string // parent of the results folder
	Resume  string // an existing results folder to continue
	Version string
	Commit  string
	// Skipped apps (e.g. an image that cannot be built here) with reasons:
	// recorded in the manifest and the summary, never silently dropped.
	Skipped  map[string]string
	Images   map[string]string
	Progress Progress
	Now      func() time.Time
	// Rendered, when set, gets the summary the run's end rendered (not
	// called when rendering failed).
	Rendered func(*report.Summary)
	// NoPlots ends the run with its summaries and report but without
	// drawing the figures (report.Options.NoPlots).
	NoPlots bool
	// TaskWatch, when set, is called before each attempt of a task sends
	// its requests (the delay set, rttlab's own captures not yet started),
	// with the task and the containers of the load client, the app and
	// the database by role ("client", "app", "db"); the function it
	// returns is called once the requests are done. It is a test's hook,
	// to watch a task's packets from outside rttlab (tcpdump in the
	// members' namespaces); its error fails the attempt.
	TaskWatch func(ctx context.Context, t raw.Task, containers map[string]string) (done func(), err error)
}

// ValidatePlanApps checks the plan's apps and routes against the apps'
// metadata, before anything starts; an error names the entry's line of a
// plan file.
func ValidatePlanApps(p *Plan, all map[string]*apps.Meta) error {
	for _, a := range p.Apps {
		at := func(field string) string { return "apps[name=" + a.Name + "]." + field }
		t, err := apps.Resolve(all, a.Name)
		if err != nil {
			return p.Place(&planfile.FieldError{Path: at("name"), Err: err})
		}
		if len(a.RequestMix) > 0 {
			continue // its requests were checked with the plan
		}
		if a.Mix != "" {
			switch a.Mix {
			case "redmine", "aimeos":
			default:
				return p.Place(planfile.At(at("mix"), "app %s: mix %q is unknown (redmine or aimeos)", a.Name, a.Mix))
			}
			continue
		}
		if len(a.Routes) == 0 {
			return p.Place(planfile.At(at("name"), "app %s: no routes (known: %s)", a.Name, strings.Join(t.Meta.RoutePaths(), ", ")))
		}
		for j, r := range a.Routes {
			path, _, _ := strings.Cut(r, "?")
			_, exact := t.Meta.Route(r) // an own app's route with its query
			if _, ok := t.Meta.Route(path); !ok && !exact {
				return p.Place(planfile.At(fmt.Sprintf("%s[%d]", at("routes"), j), "app %s: route %s is unknown (known: %s)", a.Name, r, strings.Join(t.Meta.RoutePaths(), ", ")))
			}
		}
	}
	return nil
}

// Run runs (or resumes) a plan on the runtime rt and returns the results
// folder; eng reports the engine the manifest records and the platform is
// settled against.
func Run(ctx context.Context, rt rtm.Runtime, eng engine.Engine, all map[string]*apps.Meta, o RunOptions) (string, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := o.Plan
	var f *raw.Folder
	var m *raw.Manifest
	var err error
	if o.Resume != "" {
		f, err = raw.Open(o.Resume)
		if err != nil {
			return "", err
		}
		// Closing releases the folder's lock, on every return.
		defer f.Close()
		m = &f.State().Manifest
		if p, err = resumedPlan(o.Resume, m, p); err != nil {
			return "", err
		}
	} else {
		if err := p.Validate(); err != nil {
			return "", err
		}
	}
	// A user's own apps (image: entries) resolve like the tree's apps.
	all = copyMetas(all)
	if err := AddOwnApps(p, all); err != nil {
		return "", err
	}
	if err := ValidatePlanApps(p, all); err != nil {
		return "", err
	}
	info, err := eng.EngineInfo(ctx)
	if err != nil {
		return "", err
	}
	if p.platform, err = SettlePlatform(p.Platform, info); err != nil {
		return "", err
	}
	if o.Resume == "" {
		f, err = raw.Create(o.OutDir, p.Name, o.Now())
		if err != nil {
			return "", err
		}
		defer f.Close()
		m = newManifest(p, all, o, info)
		// The task order is on disk before the first task runs.
		if err := f.WriteManifest(m); err != nil {
			return "", err
		}
	}
	dir := f.Dir()

	state, err := raw.Load(dir)
	if err != nil {
		return dir, err
	}
	runID, runErr := runPending(ctx, rt, all, p, f, state, m, o)
	return dir, finishRun(ctx, rt, f, m, o, runID, runErr)
}

// runPending runs the folder's pending tasks, an app's tasks on a stack
// of their own, until an app fails; it returns the run's id (the label of
// everything it started) and the first app's error.
func runPending(ctx context.Context, rt rtm.Runtime, all map[string]*apps.Meta, p *Plan, f *raw.Folder, state *raw.Data,
	m *raw.Manifest, o RunOptions) (string, error) {
	pending := state.Pending()
	total := len(m.Tasks)
	if o.Progress != nil {
		o.Progress.Start(total, total-len(pending))
	}
	done := total - len(pending)
	runID := stack.NewRunID()
	var runErr error
	for len(pending) > 0 && runErr == nil {
		app := pending[0].App
		var tasks []raw.Task
		for len(pending) > 0 && pending[0].App == app {
			tasks = append(tasks, pending[0])
			pending = pending[1:]
		}
		n, err := runApp(ctx, appTasks{rt: rt, all: all, p: p, f: f, state: state, m: m, o: o, runID: runID, app: app,
			tasks: tasks, probes: unprobed(p, state.Probes, app), done: done, total: total})
		done += n
		if err != nil {
			runErr = fmt.Errorf("%s: %w", app, err)
		}
	}
	return runID, runErr
}

// finishRun ends a run, whatever happened in it: what is left of it is
// removed, the end is recorded and the summaries are regenerated. It
// returns runErr, joined with a failed removal; a failure to record or
// render is returned when runErr is nil.
func finishRun(ctx context.Context, rt rtm.Runtime, f *raw.Folder, m *raw.Manifest, o RunOptions, runID string, runErr error) error {
	// Nothing of the run outlives it: what a failed removal left behind is
	// tried once more, and what still stays is reported, not swallowed.
	if _, err := stack.CleanRun(context.WithoutCancel(ctx), rt, runID); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("%w: %w; remove what is left with rttlab clean --run %s", stack.ErrCleanup, err, runID))
	}
	// Whatever happened, the results folder stays consistent: record the
	// end and regenerate the summaries from the raw files.
	m.End = o.Now().UTC()
	m.LoadEnd = loadAverage()
	if err := f.WriteManifest(m); err != nil && runErr == nil {
		runErr = err
	}
	if o.Progress != nil {
		o.Progress.Finish()
	}
	s, _, err := report.RenderSummary(f.Dir(), report.Options{NoPlots: o.NoPlots})
	if err != nil && runErr == nil {
		runErr = err
	}
	if err == nil && o.Rendered != nil {
		o.Rendered(s)
	}
	return runErr
}

// resumedPlan is the plan a resumed folder holds; a plan given as well
// must be the same (name and seed).
func resumedPlan(dir string, m *raw.Manifest, given *Plan) (*Plan, error) {
	old, err := manifestPlan(dir, m)
	if err != nil {
		return nil, err
	}
	if given != nil && (given.Name != old.Name || given.Seed != old.Seed) {
		return nil, fmt.Errorf("resume %s: the folder holds plan %q seed %d, not %q seed %d", dir, old.Name, old.Seed, given.Name, given.Seed)
	}
	return old, nil
}

// newManifest is a new run's manifest: the plan, versions, the engine and
// host, the shuffled tasks (less those of skipped apps) and the
// statements per request each app declares.
func newManifest(p *Plan, all map[string]*apps.Meta, o RunOptions, info engine.EngineInfo) *raw.Manifest {
	planJSON, _ := json.Marshal(p)
	m := &raw.Manifest{
		Kind: results.KindRTT, Format: results.Format,
		PlanName: p.Name, Plan: planJSON, Seed: p.Seed,
		Version: o.Version, GitCommit: o.Commit,
		EngineVersion: info.Version, EngineAPIVersion: info.APIVersion, Kernel: info.Kernel,
		Platform: p.platform.String(), Emulated: p.platform.Foreign(),
		Scope: p.Scope, Images: o.Images, Skipped: o.Skipped,
		HostCPUModel: engine.CPUModel(), HostCPUs: runtime.NumCPU(), HostMemoryBytes: uint64(info.MemBytes), HostIdle: engine.CPUIdle(),
		LoadStart: loadAverage(),
		Start:     o.Now().UTC(),
		// Every task's captures write its wire figures.
		WireChecked: true,
	}
	for _, t := range p.Tasks() {
		if _, skip := o.Skipped[t.App]; skip {
			continue
		}
		m.Tasks = append(m.Tasks, t)
	}
	for _, a := range p.Apps {
		t, _ := apps.Resolve(all, a.Name)
		for _, r := range a.Routes {
			if n := t.Meta.StatementsPerRequest(r); n >= 0 {
				m.Statements = append(m.Statements, raw.RouteStatements{App: a.Name, Route: r, PerRequest: n})
			}
		}
	}
	return m
}

// loadAverage is the host's load average for the manifest, nil where it
// cannot be read.
func loadAverage() *float64 {
	if v := engine.LoadAverage(); v >= 0 {
		return &v
	}
	return nil
}

// SettlePlatform is a plan's platform on the engine described by info:
// the engine's own when the plan names none.
func SettlePlatform(s string, info engine.EngineInfo) (engine.Platform, error) {
	p, err := engine.ParsePlatform(s)
	if err != nil {
		return p, err
	}
	return p.On(info)
}

// FolderPlan returns the plan a results folder was run with.
func FolderPlan(dir string) (*Plan, error) {
	d, err := raw.Load(dir)
	if err != nil {
		return nil, err
	}
	return manifestPlan(dir, &d.Manifest)
}

func manifestPlan(dir string, m *raw.Manifest) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(m.Plan, &p); err != nil {
		return nil, fmt.Errorf("resume %s: manifest plan: %w", dir, err)
	}
	return &p, nil
}

// sessionWatcher is a runtime's watch of its members (State, and Logs
// through the exec) with the exec of the agents' sessions: what an app's
// tasks ask of the runtime.
type sessionWatcher struct {
	rtm.Stater
	*shaping.Sessions
}

// appSession is one app's stack, agents and client.
type appSession struct {
	st     *stack.Stack
	sh     *shaping.Shaping
	client shaping.Endpoint
	base   string
	header []string
}

// startSession starts an app's stack, its agents and the load client on
// the runtime rt; d runs the agents' calls.
func startSession(ctx context.Context, rt rtm.Runtime, d rtm.Execer, target apps.Target, p *Plan, runID string) (*appSession, error) {
	st, sh, err := shaping.StartShaped(ctx, rt, stack.StackOptions{RunID: runID, Target: target, Platform: p.platform}, p.Shaper, p.Scope, p.Hook)
	if err != nil {
		return nil, err
	}
	s := &appSession{st: st, sh: sh}
	s.sh.Floor = p.Floor(s.sh.Backend)
	if s.client, err = startClient(ctx, rt, st, runID); err != nil {
		st.RemoveJoin(ctx, rt, &err)
		return nil, err
	}
	s.base = fmt.Sprintf("http://app:%d", target.Meta.Port)
	if s.header, err = shaping.AuthHeaders(ctx, d, st); err != nil {
		st.RemoveJoin(ctx, rt, &err)
		return nil, err
	}
	return s, nil
}

// startClient starts the load client on the stack's network, with
// CAP_NET_RAW alone, for the capture of its packets, and returns it with
// its address.
func startClient(ctx context.Context, d rtm.Members, st *stack.Stack, runID string) (shaping.Endpoint, error) {
	c := shaping.Endpoint{Name: fmt.Sprintf("rttlab-%s-client", runID)}
	m, err := d.StartMember(ctx, rtm.MemberSpec{
		Name: c.Name, Role: "client", Image: stack.AgentImage, Cmd: []string{"agent", "idle"},
		Labels: stack.RunLabels(runID, nil), Aliases: []string{"client"},
		DropAllCaps: true, CapAdd: []rtm.Capability{rtm.CapNetRaw},
		Platform: st.Platform.Native().String(),
	})
	c.ID, c.IP = m.ID, m.Addr
	if err != nil {
		return c, err
	}
	if c.IP == "" {
		return c, fmt.Errorf("load client %s has no address on %s", c.Name, st.Network)
	}
	return c, nil
}

// appRun is what one app's tasks share: the run's plan, folder and
// manifest, the app's counts, and the session they run on (replaced when
// a crashed one is restarted).
type appRun struct {
	// rt starts and removes the app's sessions; d runs the agents' calls
	// (through their sessions) and watches the members.
	rt    rtm.Runtime
	d     rtm.Watcher
	p     *Plan
	f     *raw.Folder
	state *raw.Data
	m     *raw.Manifest
	// memberRec is the index in m.Members of each member's record of the
	// session in use, by member name.
	memberRec        map[string]int
	runID, app       string
	target           apps.Target
	requests, warmup int
	note             func(string)
	s                *appSession
	// tasks are the app's tasks this run runs (by name), done counts
	// those done so far and progress says each one done.
	tasks    map[string]raw.Task
	order    []string
	done     int
	progress func(t raw.Task, desc string)
	// watch is RunOptions.TaskWatch.
	watch func(ctx context.Context, t raw.Task, containers map[string]string) (func(), error)
}

// appTasks is one app's pending tasks as the run hands them to runApp:
// the run's plan, folder, state and manifest, the app's tasks and the
// settings it has yet to probe, and how many of the run's tasks are done.
type appTasks struct {
	rt          rtm.Runtime
	all         map[string]*apps.Meta
	p           *Plan
	f           *raw.Folder
	state       *raw.Data
	m           *raw.Manifest
	o           RunOptions
	runID, app  string
	tasks       []raw.Task
	probes      []float64
	done, total int
}

func runApp(ctx context.Context, at appTasks) (n int, err error) {
	rt, p, app, o := at.rt, at.p, at.app, at.o
	target, err := apps.Resolve(at.all, app)
	if err != nil {
		return 0, err
	}
	var pa PlanApp
	for _, a := range p.Apps {
		if a.Name == app {
			pa = a
		}
	}
	// The agents' short calls (set, show, ping, capture) go through one
	// session per container: a docker exec each would cost the engine
	// tens of milliseconds, several times per task.
	sd := shaping.WithSessions(rt)
	defer sd.Close()
	d := sessionWatcher{Stater: rt, Sessions: sd}
	r := &appRun{rt: rt, d: d, p: p, f: at.f, state: at.state, m: at.m, runID: at.runID, app: app, target: target, watch: o.TaskWatch}
	_, r.requests, r.warmup = p.AppRuns(pa)
	r.note = func(s string) {
		if o.Progress != nil {
			o.Progress.Note(s)
		}
	}
	r.note(fmt.Sprintf("%s: starting PostgreSQL, the app, two agents and the client", app))
	r.s, err = startSession(ctx, rt, d, target, p, at.runID)
	if err != nil {
		return 0, err
	}
	r.recordMembers()
	defer func() {
		if r.s != nil { // nil after a failed restart, which removed its own stack
			r.leaveMembers(ctx)
			r.s.st.RemoveJoin(ctx, rt, &err)
		}
	}()
	if err := r.prepare(ctx, at.probes); err != nil {
		return 0, err
	}
	r.setTasks(at.tasks)
	r.progress = func(t raw.Task, desc string) {
		if o.Progress != nil {
			o.Progress.Task(at.done+r.done, at.total, desc)
		}
	}
	err = results.RunTasks(ctx, &taskAttempts{r: r, tried: map[string]int{}}, r, nil)
	return r.done, r.taskError(err)
}

// recordMembers adds the session's members to the manifest (written
// with the next task's or the run's end).
func (r *appRun) recordMembers() {
	r.memberRec = map[string]int{}
	for _, m := range r.s.st.Members {
		r.memberRec[m.Name] = len(r.m.Members)
		rec := raw.MemberRecord{App: r.app, Role: m.Role, Name: m.Name, Node: m.Node, Adopted: m.Adopted}
		if m.Adopted {
			n := m.Instance.Restarts
			rec.UID, rec.Restarts = m.Instance.UID, &n
		}
		r.m.Members = append(r.m.Members, rec)
	}
}

// leaveMembers records, for each member the session found where it runs,
// its instance as the run leaves it; one that changed gets a warning in
// the log (the manifest keeps both).
func (r *appRun) leaveMembers(ctx context.Context) {
	ad, ok := r.rt.(rtm.Adopter)
	if !ok {
		return
	}
	for _, m := range r.s.st.Members {
		if !m.Adopted {
			continue
		}
		in, err := ad.InstanceOf(context.WithoutCancel(ctx), m.ID)
		if err != nil {
			slog.Warn("reading a measured member again", "member", m.Name, "err", err)
			continue
		}
		if i, ok := r.memberRec[m.Name]; ok {
			r.m.Members[i].UIDAfter, r.m.Members[i].RestartsAfter = in.UID, &in.Restarts
		}
		if in != m.Instance {
			slog.Warn("a measured member changed during the run", "member", m.Name, "before", m.Instance, "after", in)
		}
	}
}

// prepare readies the session for the app's tasks: the shaper recorded in
// the manifest, the calibration, the trace and the probes of the settings
// not yet probed.
func (r *appRun) prepare(ctx context.Context, probes []float64) error {
	d, p, s, app := r.d, r.p, r.s, r.app
	if r.m.Shaper == "" {
		r.m.Shaper, r.m.ShaperReason = s.sh.Backend, s.sh.Why
		if err := r.f.WriteManifest(r.m); err != nil {
			return err
		}
	}
	if err := calibrateSession(ctx, d, s, p, r.f, r.m, app, r.note); err != nil {
		return err
	}
	if !r.state.HasTrace(app) {
		r.note(fmt.Sprintf("%s: tracing %d requests per request type (round trips on the wire)", app, p.TraceRequests))
		if err := traceForRun(ctx, d, s, p, r.f, r.target); err != nil {
			return err
		}
	}
	if len(probes) > 0 {
		r.note(fmt.Sprintf("%s: verification probes of %d settings (ICMP %d, SELECT 1 %d×%d per setting)", app, len(probes), p.ICMPCount, p.SelectRuns, p.SelectCalls))
		if err := runProbes(ctx, d, s, p, r.f, app, probes); err != nil {
			return err
		}
	}
	return nil
}

// unprobed returns the app's settings, in the plan's probe order, that
// the folder's probes do not cover yet: a setting counts as probed once
// its ICMP row and all its SELECT 1 runs are on disk (a run stopped
// while probing left the rest out; a resume probes them).
func unprobed(p *Plan, probes []raw.Probe, app string) []float64 {
	icmp, sel := map[float64]bool{}, map[float64]int{}
	for _, pr := range probes {
		if pr.App != app {
			continue
		}
		switch pr.Kind {
		case raw.ProbeICMP:
			icmp[pr.RTTms] = true
		case raw.ProbeSelect1:
			sel[pr.RTTms]++
		}
	}
	var out []float64
	for _, rtt := range p.Settings(app) {
		if !icmp[rtt] || sel[rtt] < p.SelectRuns {
			out = append(out, rtt)
		}
	}
	return out
}

// restart replaces the crashed session with a fresh, calibrated one; the
// session is nil when a fresh one could not start (it removed its own
// stack).
func (r *appRun) restart(ctx context.Context) error {
	r.leaveMembers(ctx)
	if rerr := r.s.st.Remove(context.WithoutCancel(ctx), r.rt); rerr != nil {
		slog.Warn("removing the crashed stack", "err", rerr) // the deferred removal tries again
	}
	// The sessions were the removed agents': the fresh stack's open
	// their own on first use (a cluster gives its members the same IDs
	// again in the run's namespace).
	if sw, ok := r.d.(sessionWatcher); ok {
		sw.Close()
	}
	var err error
	r.s, err = startSession(ctx, r.rt, r.d, r.target, r.p, r.runID)
	if err != nil {
		return err
	}
	r.recordMembers()
	return calibrateSession(ctx, r.d, r.s, r.p, r.f, r.m, r.app, r.note)
}

// calibrateSession applies the app's calibration from the manifest, or
// measures it (and records it there) when the plan calibrates this
// shaper and the run has none yet.
func calibrateSession(ctx context.Context, d rtm.Watcher, s *appSession, p *Plan, f *raw.Folder, m *raw.Manifest, app string, note func(string)) error {
	if !p.Calibrates(s.sh.Backend) {
		return nil
	}
	if off := shaping.OffsetsFrom(m.Calibration, app); off != nil {
		s.sh.Offsets = off
		return nil
	}
	if p.CalibratePer == "run" && len(m.Calibration) > 0 {
		from := m.Calibration[0].App
		if off := shaping.OffsetsFrom(m.Calibration, from); off != nil && coversSettings(off, p.Settings(app)) {
			note(fmt.Sprintf("%s: applying the shaper calibration measured on %s's stack (calibrate_per: run)", app, from))
			s.sh.Offsets = off
			return nil
		}
	}
	note(fmt.Sprintf("%s: calibrating the shaper per setting (ICMP; SELECT 1 stays an independent check)", app))
	pts, err := shaping.Calibrate(ctx, d, s.sh, app, p.Settings(app), shaping.CalibrateOptions{})
	if err != nil {
		return fmt.Errorf("calibrate the shaper: %w", err)
	}
	m.Calibration = append(m.Calibration, pts...)
	return f.WriteManifest(m)
}

// coversSettings says whether off holds an offset for every non-zero
// setting.
func coversSettings(off map[int64][2]time.Duration, settingsMs []float64) bool {
	for _, s := range settingsMs {
		if _, ok := off[netem.FromMs(s).Microseconds()]; s > 0 && !ok {
			return false
		}
	}
	return true
}

func traceForRun(ctx context.Context, d rtm.Watcher, s *appSession, p *Plan, f *raw.Folder, target apps.Target) error {
	mix, err := shaping.MixFor(target.Meta)
	if err != nil {
		return err
	}
	if err := s.sh.SetRTT(ctx, d, 0); err != nil {
		return err
	}
	rows, err := shaping.TraceApp(ctx, d, s.sh, shaping.TraceOptions{Requests: shaping.TraceRequests(target, mix, p.TraceRequests, 5, p.Seed),
		Warmup: 5, Header: s.header, Weights: shaping.MixWeights(mix)})
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return raw.WriteTrace(f.Dir(), rows)
}

func runProbes(ctx context.Context, d rtm.Watcher, s *appSession, p *Plan, f *raw.Folder, app string, settings []float64) error {
	for _, rtt := range settings {
		if err := s.sh.SetRTT(ctx, d, netem.FromMs(rtt)); err != nil {
			return err
		}
		pr, err := s.sh.Ping(ctx, d, p.ICMPCount, 10*time.Millisecond)
		if err != nil {
			return err
		}
		rows := []raw.Probe{{App: app, Kind: raw.ProbeICMP, RTTms: rtt, N: pr.Sent,
			MeanMs: netem.Ms(pr.Mean), MedianMs: netem.Ms(pr.Median), MinMs: netem.Ms(pr.Min), MaxMs: netem.Ms(pr.Max), Failures: pr.Lost}}
		runs, err := s.sh.SelectOne(ctx, d, p.SelectRuns, p.SelectCalls)
		if err != nil {
			return err
		}
		for _, r := range runs {
			rows = append(rows, raw.Probe{App: app, Kind: raw.ProbeSelect1, RTTms: rtt, Run: r.Run, N: r.N,
				MeanMs: netem.Ms(r.Mean), MedianMs: netem.Ms(r.Median), MinMs: netem.Ms(r.Min), MaxMs: netem.Ms(r.Max), Failures: r.Failures})
		}
		if err := f.AppendProbes(rows); err != nil {
			return err
		}
	}
	return nil
}

// runTask runs one attempt of a task on the app's current session.
func (r *appRun) runTask(ctx context.Context, t raw.Task, attempt int) error {
	d, s, p, f := r.d, r.s, r.p, r.f
	if err := s.checkDelay(ctx, d, p, f, t); err != nil {
		return err
	}
	o, err := s.loadOptions(t, p.Seed, r.requests, r.warmup)
	if err != nil {
		return err
	}
	watched := func() {}
	if r.watch != nil {
		roles := map[string]string{"client": s.client.ID}
		for _, m := range s.st.Members {
			roles[m.Role] = m.ID
		}
		if watched, err = r.watch(ctx, t, roles); err != nil {
			return fmt.Errorf("watch the task from outside: %w", err)
		}
	}
	capture, before, err := s.startWatch(ctx, d)
	if err != nil {
		watched()
		return err
	}
	defer capture.Abort()
	run, err := s.watchedLoad(ctx, d, o)
	watched()
	if err != nil {
		return err
	}
	// The captures end, the members are checked and the shapers read, at
	// once: each asks a different container.
	var caps shaping.TaskCaptures
	var cerr, derr, rerr error
	_ = conc.All(
		func() error { caps, cerr = capture.Finish(); return nil },
		func() error { derr = s.dead(ctx, d); return nil },
		func() error { rerr = s.recordShaper(ctx, d, f, t, attempt, before); return nil })
	// A member that died during the load (the app killed mid-run) makes
	// the remaining requests fail fast while the client exits normally:
	// the attempt is not data, whatever the client says.
	if derr != nil {
		return derr
	}
	if rerr != nil {
		return rerr
	}
	rs, err := s.loadResults(ctx, d, run)
	if err != nil {
		return err
	}
	if cerr != nil {
		return s.agentError(ctx, d, fmt.Errorf("capture the task's packets: %w", cerr))
	}
	return recordTask(f, t, attempt, caps, rs, s.st.OneHost())
}

// loadOptions is the load client's load for a task (its warmup and
// measured requests of the task's route or mix).
func (s *appSession) loadOptions(t raw.Task, seed uint64, requests, warmup int) (agentclient.LoadOptions, error) {
	o := agentclient.LoadOptions{URL: s.base, Warmup: warmup, Requests: requests, Headers: s.header}
	if err := loadRoute(&o, s.st.Target.Meta, t, seed); err != nil {
		return o, err
	}
	return o, nil
}

// startWatch starts what watches a task's requests, at once: the
// captures of the wire (checked on every task; the task fails, and is
// retried, when they cannot start) and the shapers' statistics before.
func (s *appSession) startWatch(ctx context.Context, d rtm.Watcher) (*shaping.TaskCapture, shaping.ShaperSnapshot, error) {
	var capture *shaping.TaskCapture
	var before shaping.ShaperSnapshot
	var cerr, serr error
	_ = conc.All(
		func() error {
			capture, cerr = s.sh.StartTaskCapture(ctx, d, s.client, s.st.Target.Meta.Port, 0)
			return nil
		},
		func() error { before, serr = s.sh.Snapshot(ctx, d); return nil })
	if cerr == nil && serr == nil {
		return capture, before, nil
	}
	if capture != nil {
		capture.Abort()
	}
	if cerr != nil {
		return nil, before, s.agentError(ctx, d, fmt.Errorf("capture the task's packets: %w", cerr))
	}
	return nil, before, s.agentError(ctx, d, serr)
}

// recordTask writes what one attempt of a task measured: its samples, its
// wire and its requests taken apart (the skeleton then marks it done).
func recordTask(f *raw.Folder, t raw.Task, attempt int, caps shaping.TaskCaptures, rs []workloads.Result, oneClock bool) error {
	wire, anatomy := taskWire(t, attempt, caps, rs, oneClock)
	if err := f.AppendSamples(t.ID, attempt, taskSamples(t, attempt, rs)); err != nil {
		return err
	}
	if err := f.AppendWire(wire); err != nil {
		return err
	}
	return f.AppendAnatomy(anatomy)
}

// checkDelay sets the task's delay (or takes the shaper out of the path
// for an unshaped task) and checks with a few ICMP echoes (recorded as
// the task's probe) that the path passes traffic.
func (s *appSession) checkDelay(ctx context.Context, d rtm.Watcher, p *Plan, f *raw.Folder, t raw.Task) error {
	kind := raw.ProbeICMPTask
	if t.Unshaped {
		kind = raw.ProbeICMPUnshaped
		if err := s.sh.Clear(ctx, d); err != nil {
			return s.agentError(ctx, d, err)
		}
	} else if err := s.sh.SetRTT(ctx, d, netem.FromMs(t.RTTms)); err != nil {
		return s.agentError(ctx, d, err)
	}
	// Quick check that the delay is in place before measuring.
	pr, err := s.sh.Ping(ctx, d, p.TaskICMPCount, 5*time.Millisecond)
	if err != nil {
		return s.agentError(ctx, d, err)
	}
	if pr.Lost > 0 {
		// Lost echoes on a private network: first rule out a dead agent.
		if err := s.dead(ctx, d); err != nil {
			return err
		}
	}
	if err := f.AppendProbes([]raw.Probe{{App: t.App, Kind: kind, RTTms: t.RTTms, Task: t.ID, N: pr.Sent,
		MeanMs: netem.Ms(pr.Mean), MedianMs: netem.Ms(pr.Median), MinMs: netem.Ms(pr.Min), MaxMs: netem.Ms(pr.Max), Failures: pr.Lost}}); err != nil {
		return err
	}
	if pr.Received == 0 {
		return fmt.Errorf("no ICMP echo came back %s: the path is not passing traffic", t.Setting())
	}
	return nil
}

// watchedLoad runs the load client while watching the session's
// containers: a container that exits stops the load at once, and its
// error is returned instead of the client's.
func (s *appSession) watchedLoad(ctx context.Context, d rtm.Watcher, o agentclient.LoadOptions) (agentclient.LoadRun, error) {
	// A shaping agent that dies mid-task stops traffic on its side, a
	// dead app or database leaves the client waiting on timeouts: watch
	// the session's containers and stop the load at once.
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	agentDied := make(chan error, 1)
	go func() {
		tick := time.NewTicker(agentWatchInterval)
		defer tick.Stop()
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
				if err := s.dead(loadCtx, d); err != nil && loadCtx.Err() == nil && errors.Is(err, stack.ErrContainerExited) {
					agentDied <- err
					stopLoad()
					return
				}
			}
		}
	}()
	run, err := agentclient.Client{D: d, ID: s.client.ID}.RunLoad(loadCtx, o)
	stopLoad()
	select {
	case aerr := <-agentDied:
		return run, aerr
	default:
	}
	return run, err
}

// recordShaper records what the shapers did during the load (the change
// of their figures since before) and fails the attempt on dropped
// packets.
func (s *appSession) recordShaper(ctx context.Context, d rtm.Watcher, f *raw.Folder, t raw.Task, attempt int, before shaping.ShaperSnapshot) error {
	after, serr := s.sh.Snapshot(ctx, d)
	if serr != nil {
		return s.agentError(ctx, d, serr)
	}
	deltas, serr := shaping.ShaperDeltas(before, after)
	if serr != nil {
		return serr
	}
	if t.Unshaped {
		return nil // the shaper was out of the path: nothing of its to record
	}
	if err := f.AppendShaper(shaperRows(t, attempt, deltas, after.At.Sub(before.At))); err != nil {
		return err
	}
	return shaping.DropError(deltas)
}

// loadResults decodes the load client's results; a client that failed is
// blamed on a stack member that is no longer running when there is one.
func (s *appSession) loadResults(ctx context.Context, d rtm.Watcher, run agentclient.LoadRun) ([]workloads.Result, error) {
	rs, failed, err := run.Results()
	if failed {
		for _, mem := range s.st.Members {
			if cerr := stack.CheckRunning(ctx, d, mem); cerr != nil {
				return nil, cerr
			}
		}
	}
	return rs, err
}

// loadRoute sets the load's route: the task's route, or its mix
// (rttlab's by name, a user's request_mix as JSON) with the run's seed.
func loadRoute(o *agentclient.LoadOptions, m *apps.Meta, t raw.Task, planSeed uint64) error {
	mix, ok := strings.CutPrefix(t.Route, "mix:")
	if !ok {
		o.Route = t.Route
		return nil
	}
	o.Seed = fmt.Sprint(planSeed ^ stats.FNV64(fmt.Sprintf("%s/run%d", t.App, t.Run)))
	if len(m.RequestMix) == 0 {
		o.Mix = mix
		return nil
	}
	js, err := json.Marshal(m.RequestMix)
	if err != nil {
		return err
	}
	o.MixJSON = string(js)
	return nil
}

// agentWatchInterval is how often a load task checks that the shaping
// agents still run.
var agentWatchInterval = time.Second

// agentError returns err, or, when an agent has died, an error naming it
// (wrapping stack.ErrContainerExited so the task is retried on a fresh stack).
func (s *appSession) agentError(ctx context.Context, d rtm.Watcher, err error) error {
	if cerr := s.sh.CheckAgents(ctx, d); cerr != nil && errors.Is(cerr, stack.ErrContainerExited) {
		return cerr
	}
	return err
}

// dead returns an error naming a container of the session that is no
// longer running, or nil; the containers are asked at once.
func (s *appSession) dead(ctx context.Context, d rtm.Watcher) error {
	errs := make([]error, len(s.st.Members)+1)
	fns := []func() error{func() error { errs[len(errs)-1] = s.sh.CheckAgents(ctx, d); return nil }}
	for i, m := range s.st.Members {
		fns = append(fns, func() error { errs[i] = stack.CheckRunning(ctx, d, m); return nil })
	}
	_ = conc.All(fns...)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// shaperRows turns the per-side shaper figures of one task attempt into
// shaper.csv rows.
func shaperRows(t raw.Task, attempt int, deltas []shaping.ShaperDelta, wall time.Duration) []raw.ShaperRow {
	rows := make([]raw.ShaperRow, 0, len(deltas))
	for _, d := range deltas {
		sm := d.Summary
		rows = append(rows, raw.ShaperRow{Task: t.ID, Attempt: attempt, App: t.App, Route: t.Route, RTTms: t.RTTms,
			Side: d.Role, Direction: d.Direction, TargetUs: sm.TargetUs, Packets: sm.Packets, Stamped: sm.Stamped, Drops: sm.Drops,
			HoldP50Us: sm.HoldP50Us, HoldP99Us: sm.HoldP99Us, HoldMaxUs: sm.HoldMaxUs, LateP50Us: sm.LateP50Us, LateP99Us: sm.LateP99Us,
			LagP50Us: sm.ReadLagP50, LagP99Us: sm.ReadLagP99, CPUCores: sm.CPUCores, WallS: wall.Seconds()})
	}
	return rows
}

// taskSamples turns the load client's results of one attempt of a task
// into samples, keeping everything the client reported about each request.
func taskSamples(t raw.Task, attempt int, rs []workloads.Result) []raw.Sample {
	samples := make([]raw.Sample, len(rs))
	for i, r := range rs {
		samples[i] = raw.Sample{Task: t.ID, Attempt: attempt, App: t.App, Route: t.Route, RTTms: t.RTTms, Run: t.Run, Unshaped: t.Unshaped,
			Seq: r.Seq, Warmup: r.Warmup, LatencyNS: r.LatencyNS, Status: r.Status, Bytes: r.Bytes, Error: r.Error, Retried: r.Retried}
	}
	return samples
}

func copyMetas(all map[string]*apps.Meta) map[string]*apps.Meta {
	out := make(map[string]*apps.Meta, len(all))
	for k, v := range all {
		out[k] = v
	}
	return out
}
