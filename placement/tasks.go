package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/workloads"
)

// The placement study runs as tasks, each done once: "baseline" (SELECT 1
// at zero), "rep-K" for each repetition (calibration, held-out test and
// routed comparison), "sweep" and "concurrency". A task's attempt stamps
// its samples and decisions with its name and number; the folder's
// journal (results.JournalFile) records each attempt done or failed, and
// a done attempt's line carries the state the later tasks start from
// (placeState), so that a resumed folder continues after its last done
// task with nothing measured twice. A failed attempt (a dead agent or
// container, a lost probe) is retried once on a fresh stack, from the
// state of the task before it; its samples stay in the files, and no
// analysis reads them.

// SamplesFile is a placement folder's raw samples; DecisionsFile the
// proxy's decisions.
const (
	SamplesFile   = "samples.jsonl"
	DecisionsFile = "decisions.jsonl"
)

// folderFiles are the files of a placement folder that its runner
// appends to, which OpenFolder trims of a cut last line.
var folderFiles = []string{SamplesFile, DecisionsFile, results.JournalFile}

// CreateFolder creates the results folder of a new study of plan under
// out (results.Create), locked until its Close; the runner writes the
// manifest once the study's stack is up.
func CreateFolder(out string, plan *Plan, now time.Time) (*results.Folder, error) {
	return results.Create(out, results.KindPlacement, plan.Name, now)
}

// OpenFolder opens a placement results folder to resume it
// (results.Open): locked until its Close, its raw files trimmed of a cut
// last line.
func OpenFolder(dir string) (*results.Folder, error) {
	return results.Open(dir, results.KindPlacement, nil, folderFiles...)
}

// placeAttempts is how many attempts a task gets: the first and a retry.
const placeAttempts = 2

// Tasks lists the plan's tasks in the order they run.
func (p *Plan) Tasks() []string {
	tasks := []string{"baseline"}
	for rep := 1; rep <= p.Repeat; rep++ {
		tasks = append(tasks, fmt.Sprintf("rep-%d", rep))
	}
	if len(p.SweepN) > 0 {
		tasks = append(tasks, "sweep")
	}
	if len(p.ConcurrencyRates) > 0 {
		tasks = append(tasks, "concurrency")
	}
	return tasks
}

// placeState is what a done task leaves for the tasks after it.
type placeState struct {
	Result  *PlaceResult         `json:"result"`
	ZeroSel map[string][]float64 `json:"zero_select1,omitempty"`
	// ZeroWire is the wire's round trips during the baseline's SELECT 1.
	ZeroWire map[string]workloads.RoundTrips `json:"zero_wire,omitempty"`
	Links    []stateLink                     `json:"links,omitempty"`
}

// stateLink is one applied one-way delay of a phase's links.
type stateLink struct {
	HeldOut  bool    `json:"held_out"`
	From     string  `json:"from"`
	To       string  `json:"to"`
	OneWayMs float64 `json:"one_way_ms"`
}

func (r *Runner) state() placeState {
	st := placeState{Result: r.res, ZeroSel: r.zeroSel, ZeroWire: r.zeroWire}
	for _, heldOut := range []bool{false, true} {
		for k, ms := range r.links[heldOut] {
			st.Links = append(st.Links, stateLink{heldOut, k[0], k[1], ms})
		}
	}
	return st
}

// restore sets the runner's state from a done task's (JSON).
func (r *Runner) restore(b []byte) error {
	var st placeState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: a done task's state: %w", results.JournalFile, err)
	}
	if st.Result == nil {
		return fmt.Errorf("%s: a done task's state has no result", results.JournalFile)
	}
	r.res, r.zeroSel, r.zeroWire = st.Result, st.ZeroSel, st.ZeroWire
	r.links = map[bool]map[[2]string]float64{}
	for _, l := range st.Links {
		if r.links[l.HeldOut] == nil {
			r.links[l.HeldOut] = map[[2]string]float64{}
		}
		r.links[l.HeldOut][[2]string{l.From, l.To}] = l.OneWayMs
	}
	return nil
}

// taskRNG is the seeded order of one task: the same in a first run and in
// a resumed or retried one.
func taskRNG(seed uint64, task string) *rand.Rand { return stats.StreamRNG(seed, task) }

// Run runs every task the folder has not done (all of them in a new
// folder, whose manifest it writes) and writes summary.json, summary.md
// and the plots. The caller holds the folder's lock.
func (r *Runner) Run(ctx context.Context) (*PlaceResult, error) {
	j, err := r.open(ctx)
	if err != nil {
		return nil, err
	}
	r.journal = j
	err = results.RunTasks(ctx, placeJournal{j, r}, r, func(i, n int, task string) error {
		r.Session.say("task %d/%d: %s", i, n, task)
		return nil
	})
	if err != nil {
		return r.res, err
	}
	return r.res, r.finish()
}

// Tasks is the plan's tasks in the order they run.
func (r *Runner) Tasks() []string { return r.Session.Plan.Tasks() }

// Done says whether the folder's journal has task done.
func (r *Runner) Done(task string) bool {
	_, ok := r.journal.Done(task)
	return ok
}

// placeJournal is the folder's journal, with summary.json written once
// each task is recorded done.
type placeJournal struct {
	*results.Journal
	r *Runner
}

func (a placeJournal) MarkDone(task string, attempt int, state any) error {
	if err := a.Journal.MarkDone(task, attempt, state); err != nil {
		return err
	}
	return a.r.writeJSON(results.SummaryJSONFile, a.r.res)
}

// Retry retries a failed task on a fresh session (none without Fresh);
// RunTask has put back the state of the task before it.
func (r *Runner) Retry(string) results.Retry {
	return results.Retry{Attempts: r.attempts(), Fresh: r.fresh, Failed: results.SayRetries(r.Session.say)}
}

func (r *Runner) attempts() int {
	if r.Fresh == nil {
		return 1
	}
	return placeAttempts
}

// open opens the folder's journal and readies its samples (after
// trimming a cut last line, as results.Open does) and sets the state: a new study's, whose manifest it
// writes, or the last done task's.
func (r *Runner) open(ctx context.Context) (*results.Journal, error) {
	j, err := results.OpenJournal(r.Dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(r.Dir, SamplesFile)
	if err := results.TrimCutLine(path); err != nil {
		return nil, err
	}
	r.sbuf.Reset()
	r.links = map[bool]map[[2]string]float64{}
	if n := len(j.Order); n > 0 {
		a, _ := j.Done(j.Order[n-1])
		if err := r.restore(a.State); err != nil {
			return nil, err
		}
		r.Session.say("resuming: %d of %d tasks done (%v)", n, len(r.Session.Plan.Tasks()), j.Order)
		r.noteNodes()
		return j, nil
	}
	r.res = &PlaceResult{Kind: results.KindPlacement, Plan: r.Session.Plan, RunID: r.Session.Stack.RunID, Backend: r.Session.Shaping.Backend, KeepAlive: r.Session.Plan.Pools(), Started: time.Now().UTC()}
	if a := r.Session.Shaping.Agents[NodeA]; a != nil {
		r.res.Backend = a.Info.Backend
	}
	r.noteNodes()
	if _, err := os.Stat(filepath.Join(r.Dir, results.ManifestFile)); err == nil {
		return j, nil
	}
	if err := r.writeManifest(ctx); err != nil {
		return nil, err
	}
	return j, nil
}

// fresh readies the retry of a failed task on a fresh session.
func (r *Runner) fresh(ctx context.Context, _ error) error {
	s, err := r.Fresh(ctx)
	if err != nil {
		return err
	}
	r.Session = s
	r.noteNodes()
	return nil
}

// RunTask runs one attempt of task and returns the state it leaves once
// its samples are on disk; a failed attempt puts back the state of the
// task before it.
func (r *Runner) RunTask(ctx context.Context, task string, attempt int) (any, error) {
	before, err := json.Marshal(r.state())
	if err != nil {
		return nil, err
	}
	r.task, r.attempt, r.werr = task, attempt, nil
	r.rng = taskRNG(r.Session.Plan.Seed, task)
	err = r.runPhase(ctx, task)
	if ferr := r.flush(); err == nil {
		err = ferr
	}
	if err != nil {
		if rerr := r.restore(before); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return r.state(), nil
}

// runPhase runs task's measurements. The sweep and the concurrency phase
// run with the held-out links, set again first (a resumed study's stack
// is a fresh one).
func (r *Runner) runPhase(ctx context.Context, task string) error {
	var rep int
	switch {
	case task == "baseline":
		var err error
		r.zeroSel, r.zeroWire, err = r.baseline(ctx)
		return err
	case task == "sweep" || task == "concurrency":
		if l, ok := r.links[true]; ok {
			if err := r.Session.SetLinks(ctx, r.Runtime, l); err != nil {
				return err
			}
		}
		if task == "sweep" {
			return r.sweep(ctx)
		}
		return r.concurrency(ctx)
	}
	if _, err := fmt.Sscanf(task, "rep-%d", &rep); err != nil {
		return fmt.Errorf("no placement task %q", task)
	}
	pr, err := r.rep(ctx, rep, r.zeroSel)
	if err != nil {
		return err
	}
	r.res.Reps = append(r.res.Reps, pr)
	return nil
}

// flush appends the attempt's buffered samples, synced
// (results.AppendSynced); the first error of the samples' writes comes
// first.
func (r *Runner) flush() error {
	err := results.AppendSynced(filepath.Join(r.Dir, SamplesFile), r.sbuf.Bytes())
	r.sbuf.Reset()
	if err != nil && r.werr == nil {
		r.werr = err
	}
	return r.werr
}

// FolderPlan is a placement folder's own plan, from its manifest, for
// --resume: the plan as the study first ran it (--repeat, --seed and
// --keep-alive applied).
func FolderPlan(dir string) (*Plan, error) {
	if err := results.CheckResume(dir, results.KindPlacement); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, results.ManifestFile)
	b, err := capped.ReadFile(path, "manifest", results.MaxManifest)
	if err != nil {
		return nil, fmt.Errorf("%s is not a placement results folder: %w", dir, err)
	}
	var m struct {
		Plan *Plan `json:"plan"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", results.JSONErrPos(path, b, err), results.JSONWords(err))
	}
	if m.Plan == nil {
		return nil, fmt.Errorf("%s: no plan: not a placement folder rttlab wrote", path)
	}
	if err := m.Plan.Validate(); err != nil {
		return nil, fmt.Errorf("%s: the folder's plan: %w", dir, err)
	}
	return m.Plan, nil
}
