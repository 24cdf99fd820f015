package rtt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
	"github.com/rttlab/rttlab/workloads"
)

// The runner's logic against the in-memory engine: task order, retries,
// resume, refusal before start and cleanup. The integration tests in
// runner_integration_test.go do the same against a real engine.

func fakePlan() *Plan {
	p := &Plan{Name: "unit", Seed: 7, DelaysMs: []float64{0, 0.5, 1}, Runs: 2, Requests: 4, Warmup: 1,
		Apps:      []PlanApp{{Name: "go", Routes: []string{"/feed", "/serial?n=3"}}},
		ICMPCount: 3, SelectRuns: 2, SelectCalls: 5, TaskICMPCount: 2, TraceRequests: 2}
	p.Defaults()
	return p
}

// fakeTasks is fakePlan's task count: two routes, each 2 runs at each
// of 3 settings and 2 unshaped runs.
const fakeTasks = 2 * (3*2 + 2)

var fakeNow = func() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }

// runFake runs p on lab's apps into a folder of its own, at fakeNow, and
// returns the folder; a failed run fails the test.
func runFake(t *testing.T, lab *fakelab.Lab, p *Plan) string {
	t.Helper()
	dir, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: p, OutDir: t.TempDir(), Now: fakeNow, NoPlots: fakelab.UnderRace})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// recProgress records what the runner reports; onTask runs after each
// finished task.
type recProgress struct {
	mu       sync.Mutex
	start    []int // total, done
	done     []int
	notes    []string
	finished int
	onTask   func(done int)
}

func (p *recProgress) Start(total, done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start = []int{total, done}
}

func (p *recProgress) Task(done, total int, desc string) {
	p.mu.Lock()
	p.done = append(p.done, done)
	f := p.onTask
	p.mu.Unlock()
	if f != nil {
		f(done)
	}
}

func (p *recProgress) Note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, msg)
}

func (p *recProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished++
}

func loadFolder(t *testing.T, dir string) *raw.Data {
	t.Helper()
	d, err := raw.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// records returns tasks.jsonl's records of one task as "status/attempt".
func records(d *raw.Data, task int) []string {
	var out []string
	for _, r := range d.Records {
		if r.Task == task {
			out = append(out, fmt.Sprintf("%s/%d", r.Status, r.Attempt))
		}
	}
	return out
}

// checkLoadsFollow checks that the load client ran the given tasks, in
// order, each with its route and its RTT in place.
func checkLoadsFollow(t *testing.T, loads []fakelab.LoadCall, tasks []raw.Task) {
	t.Helper()
	if len(loads) != len(tasks) {
		t.Fatalf("%d loads for %d tasks", len(loads), len(tasks))
	}
	for i, ld := range loads {
		tk := tasks[i]
		if ld.Route != tk.Route || ld.RTT != netem.FromMs(tk.RTTms) {
			t.Fatalf("load %d ran %s at %s; task %d is %s at %g ms", i, ld.Route, ld.RTT, tk.ID, tk.Route, tk.RTTms)
		}
	}
}

// TestRunFakeRunsShuffledPlan runs the study on both doubles of the
// runtime: Docker's over the in-memory engine, and the runtime
// interface's own, without Docker's add-ons.
func TestRunFakeRunsShuffledPlan(t *testing.T) {
	for _, d := range fakelab.Doubles {
		t.Run(string(d), func(t *testing.T) { runsShuffledPlan(t, fakelab.NewOn(t, d)) })
	}
}

// The study writes the same folder on both doubles, byte for byte, but
// for the run's ID in its members' names, the clock's time of each task
// record and the host's load average at the start and end.
func TestRunFakeSameFolderOnBothDoubles(t *testing.T) {
	var dirs []string
	for _, d := range fakelab.Doubles {
		lab := fakelab.NewOn(t, d)
		dir, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: fakePlan(), OutDir: t.TempDir(), Version: "test", Now: fakeNow})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		dirs = append(dirs, dir)
	}
	host := []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`rttlab-[0-9a-f]+-`), "rttlab-RUN-"},
		{regexp.MustCompile(`"time":"[^"]*"`), `"time":""`},
		{regexp.MustCompile(`"load_(start|end)": [0-9.]+`), `"load_$1": 0`},
		{regexp.MustCompile(`(load average \(start, end\)</th><td>)[0-9.]+, [0-9.]+`), "${1}"},
	}
	fakelab.SameFolders(t, dirs[0], dirs[1], func(name string, b []byte) []byte {
		for _, h := range host {
			b = h.re.ReplaceAll(b, []byte(h.with))
		}
		return b
	})
}

func runsShuffledPlan(t *testing.T, lab *fakelab.Lab) {
	p := fakePlan()
	prog := &recProgress{}
	var rendered *report.Summary
	dir, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: p, OutDir: t.TempDir(), Version: "test", Commit: "abc",
		Images: map[string]string{"go": "sha256:1"}, Progress: prog, Now: fakeNow, NoPlots: fakelab.UnderRace, Rendered: func(s *report.Summary) { rendered = s }})
	if err != nil {
		t.Fatal(err)
	}
	// The summary the run's end rendered is handed back, so the digest
	// needs no second analysis.
	if rendered == nil || len(rendered.Cells) == 0 {
		t.Errorf("rendered summary %+v", rendered)
	}
	if filepath.Base(dir) != "20261201T100000Z-unit" {
		t.Errorf("folder %s", dir)
	}
	d := loadFolder(t, dir)
	m := d.Manifest

	// The manifest holds the plan's shuffled order, and the tasks ran in it.
	want := p.Tasks()
	if len(m.Tasks) != len(want) || len(want) != fakeTasks {
		t.Fatalf("manifest has %d tasks, plan %d", len(m.Tasks), len(want))
	}
	natural := true
	for i, tk := range m.Tasks {
		w := want[i]
		if tk.ID != i+1 || tk.App != w.App || tk.Route != w.Route || tk.RTTms != w.RTTms || tk.Run != w.Run {
			t.Fatalf("manifest task %d = %+v, plan %+v", i, tk, w)
		}
		if i > 0 {
			prev := m.Tasks[i-1]
			if tk.Route < prev.Route || (tk.Route == prev.Route && tk.RTTms < prev.RTTms) {
				natural = false
			}
		}
	}
	if natural {
		t.Error("tasks are in plan order, not shuffled")
	}
	checkLoadsFollow(t, lab.Loads(), m.Tasks)

	// Every task is done once with its samples; probes per setting and task.
	if len(d.Done) != len(want) {
		t.Fatalf("%d of %d tasks done", len(d.Done), len(want))
	}
	perTask := map[int]int{}
	for _, s := range d.Samples {
		perTask[s.Task]++
		if s.Attempt != 1 || s.Status != 200 {
			t.Fatalf("sample %+v", s)
		}
	}
	for _, tk := range m.Tasks {
		if perTask[tk.ID] != p.Requests+p.Warmup || d.Done[tk.ID] != 1 {
			t.Fatalf("task %d: %d samples, done attempt %d", tk.ID, perTask[tk.ID], d.Done[tk.ID])
		}
	}
	kinds := map[string]int{}
	for _, pr := range d.Probes {
		kinds[pr.Kind]++
	}
	unshaped := 0
	for _, tk := range want {
		if tk.Unshaped {
			unshaped++
		}
	}
	if kinds[raw.ProbeICMP] != 3 || kinds[raw.ProbeSelect1] != 3*p.SelectRuns || kinds[raw.ProbeICMPTask] != len(want)-unshaped ||
		kinds[raw.ProbeICMPUnshaped] != unshaped || unshaped != 4 {
		t.Fatalf("probes by kind %v", kinds)
	}
	checkTaskWire(t, d, p)
	// The 1 ms setting's probe saw the fake shaper's 1 ms.
	for _, pr := range d.Probes {
		if pr.Kind == raw.ProbeICMP && pr.RTTms == 1 && pr.MedianMs != netem.Ms(fakelab.BaseRTT+time.Millisecond) {
			t.Errorf("ICMP probe at 1 ms: median %g ms", pr.MedianMs)
		}
	}
	if len(d.Trace) != 3 {
		t.Fatalf("trace rows %+v", d.Trace)
	}
	for _, r := range d.Trace {
		if r.RoundTrips.Median != r.Expected || r.PGSS != r.Expected {
			t.Errorf("trace %s: round trips %v, pgss %v, expected %v", r.Type, r.RoundTrips.Median, r.PGSS, r.Expected)
		}
	}
	if m.Shaper != "kernel" || m.EngineVersion != lab.Info.Version || m.Kernel != lab.Info.Kernel || m.End.IsZero() || m.Version != "test" {
		t.Errorf("manifest %+v", m)
	}
	if n, ok := m.StatementsFor("go", "/serial?n=3"); !ok || n != 3 {
		t.Errorf("statements of /serial?n=3: %v %v", n, ok)
	}
	for _, f := range []string{report.SummaryMDFile, report.RunsFile, "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not rendered: %v", f, err)
		}
	}
	if prog.start[0] != fakeTasks || prog.start[1] != 0 || len(prog.done) != fakeTasks || prog.done[fakeTasks-1] != fakeTasks || prog.finished != 1 {
		t.Errorf("progress start %v done %v finished %d", prog.start, prog.done, prog.finished)
	}

	// One stack: database, app, an agent per side and the client, all of
	// one run, the agents in their targets' namespaces with only the
	// capabilities shaping needs; nothing is left afterwards.
	created := lab.Started()
	if len(created) != 5 {
		t.Fatalf("created %d members: %+v", len(created), created)
	}
	run := created[0].Labels[engine.LabelRun]
	roles := map[string]int{}
	for _, c := range created {
		roles[c.Labels[engine.LabelRole]]++
		if c.Labels[engine.LabelRun] != run {
			t.Errorf("%s has run %q, want %q", c.Name, c.Labels[engine.LabelRun], run)
		}
		if c.Labels[engine.LabelRole] == "agent" {
			if !c.Beside || !slices.Equal(c.CapAdd, []string{"NET_ADMIN", "NET_RAW"}) || !c.DropAll {
				t.Errorf("agent %s: beside %v caps +%v, all dropped %v", c.Name, c.Beside, c.CapAdd, c.DropAll)
			}
		}
	}
	if roles["db"] != 1 || roles["app"] != 1 || roles["agent"] != 2 || roles["client"] != 1 {
		t.Errorf("roles %v", roles)
	}
	lab.RequireEmpty(t)
	if u := lab.NotAnswered(); len(u) > 0 {
		t.Errorf("commands nobody answered: %v", u)
	}
	// Path scope: each side's delay applies to the other side only.
	for _, e := range lab.ExecsRun() {
		if slices.Contains(e.Cmd, "set") {
			peer := e.Cmd[len(e.Cmd)-1]
			if e.Cmd[len(e.Cmd)-2] != "--peer" || (strings.Contains(e.Container, "-app-") == (peer == "127.0.0.1")) {
				t.Fatalf("%s: %v", e.Container, e.Cmd)
			}
		}
	}
}

func TestRunFakeMixAppWithAuth(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		p := fakePlan()
		p.Apps = []PlanApp{{Name: "redmine", Mix: "redmine", Runs: 1, Requests: 3}}
		p.DelaysMs = []float64{0, 0.25}
		dir := runFake(t, lab, p)
		d := loadFolder(t, dir)
		if len(d.Done) != 3 { // 0 ms, 0.25 ms and the unshaped run
			t.Fatalf("done %v", d.Done)
		}
		loads := lab.Loads()
		checkLoadsFollow(t, loads, d.Manifest.Tasks)
		for _, ld := range loads {
			if !slices.Equal(ld.Headers, []string{"X-Redmine-API-Key: " + fakelab.APIKey}) || ld.Requests != 3 {
				t.Fatalf("load %+v", ld)
			}
		}
		// The trace covers the mix's request types with their shares.
		var sum float64
		for _, r := range d.Trace {
			sum += r.Weight
			if r.Expected != -1 {
				t.Errorf("%s: expected %v for a mix", r.Type, r.Expected)
			}
		}
		if len(d.Trace) != 3 || sum < 0.999 || sum > 1.001 {
			t.Fatalf("trace %+v", d.Trace)
		}
		lab.RequireEmpty(t)
	})
}

// handleNth hands the nth call of the agent command cmd to fault and every
// other call to normal.
func handleNth(lab *fakelab.Lab, cmd string, nth int, normal, fault enginefake.Handler) {
	var n int
	lab.Handle(cmd, func(ctx context.Context, x *enginefake.Call) (int, error) {
		n++
		if n == nth {
			return fault(ctx, x)
		}
		return normal(ctx, x)
	})
}

// A task that fails once is retried at once, recorded as failed and then
// done, and counted once.
func TestRunFakeRetriesFailedTask(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		handleNth(lab, "rttlab agent load", 3, lab.Load, func(ctx context.Context, x *enginefake.Call) (int, error) {
			fmt.Fprintln(x.Stderr, "rttlab: GET http://app:8080/feed: connection reset by peer")
			return 1, nil
		})
		prog := &recProgress{}
		dir, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: fakePlan(), OutDir: t.TempDir(), Progress: prog, Now: fakeNow, NoPlots: fakelab.UnderRace})
		if err != nil {
			t.Fatal(err)
		}
		d := loadFolder(t, dir)
		third := d.Manifest.Tasks[2].ID
		if got := records(d, third); !slices.Equal(got, []string{"failed/1", "done/2"}) {
			t.Fatalf("task %d records %v", third, got)
		}
		for _, r := range d.Records {
			if r.Status == raw.StatusFailed && !strings.Contains(r.Error, "connection reset by peer") {
				t.Errorf("failure reason %q", r.Error)
			}
		}
		if len(d.Done) != fakeTasks || d.Done[third] != 2 || len(prog.done) != fakeTasks || prog.done[fakeTasks-1] != fakeTasks {
			t.Fatalf("done %v, progress %v", d.Done, prog.done)
		}
		for _, s := range d.Samples {
			if s.Task == third && s.Attempt != 2 {
				t.Fatalf("sample of the failed attempt counted: %+v", s)
			}
		}
		if !slices.ContainsFunc(prog.notes, func(s string) bool { return strings.Contains(s, "failed") }) {
			t.Errorf("no note of the failure: %v", prog.notes)
		}
		// Not a crash: the same stack served the retry.
		if c := len(lab.Started()); c != 5 {
			t.Errorf("created %d members, want one stack", c)
		}
		lab.RequireEmpty(t)
	})
}

// Load output that is not the result format fails the attempt with the
// line that was wrong, and too few results fail it too.
func TestRunFakeRejectsBadLoadOutput(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		var n int
		lab.Handle("rttlab agent load", func(ctx context.Context, x *enginefake.Call) (int, error) {
			n++
			switch n {
			case 1:
				fmt.Fprintln(x.Stdout, `{"seq":0,"warmup":true}`)
				return 0, nil
			case 2:
				fmt.Fprintln(x.Stdout, `{"seq":0,"warmup":true,"path":"/feed","latency_ns":1,"status":200,"bytes":1,"error":""}`)
				return 0, nil
			}
			return lab.Load(ctx, x)
		})
		dir, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: fakePlan(), OutDir: t.TempDir(), Now: fakeNow, NoPlots: fakelab.UnderRace})
		if err == nil || !strings.Contains(err.Error(), "failed twice") || !strings.Contains(err.Error(), "returned 1 results, want 5") {
			t.Fatalf("err = %v", err)
		}
		d := loadFolder(t, dir)
		if len(d.Records) != 2 || !strings.Contains(d.Records[0].Error, `missing field "path"`) {
			t.Fatalf("records %+v", d.Records)
		}
		if len(d.Done) != 0 || d.Manifest.End.IsZero() {
			t.Fatalf("done %v end %v", d.Done, d.Manifest.End)
		}
		lab.RequireEmpty(t)
	})
}

// A stack member that crashed is replaced by a fresh stack before the
// retry; the old one is removed first.
func TestRunFakeRestartsCrashedStack(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		handleNth(lab, "rttlab agent load", 2, lab.Load, func(ctx context.Context, x *enginefake.Call) (int, error) {
			lab.Exit("-app", 137, "fatal error: runtime: out of memory\n")
			fmt.Fprintln(x.Stderr, "rttlab: EOF")
			return 1, nil
		})
		dir := runFake(t, lab, fakePlan())
		d := loadFolder(t, dir)
		second := d.Manifest.Tasks[1].ID
		if got := records(d, second); !slices.Equal(got, []string{"failed/1", "done/2"}) {
			t.Fatalf("records %v", got)
		}
		if r := d.Records[1]; !strings.Contains(r.Error, "container exited") || !strings.Contains(r.Error, "out of memory") || !strings.Contains(r.Error, "exit code 137") {
			t.Fatalf("failure %q", r.Error)
		}
		if c := len(lab.Started()); c != 10 {
			t.Fatalf("created %d containers, want two stacks", c)
		}
		if len(d.Done) != fakeTasks {
			t.Fatalf("done %d", len(d.Done))
		}
		lab.RequireEmpty(t)
	})
}

// When the fresh stack after a crash cannot start, the run stops with
// that error and leaves nothing behind.
func TestRunFakeRestartFails(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		lab.Handle("rttlab agent load", func(ctx context.Context, x *enginefake.Call) (int, error) {
			lab.Exit("-db", 1, "PANIC: could not write to file \"pg_wal/xlogtemp.1\": No space left on device\n")
			// The fresh stack cannot start: Docker makes its network first,
			// the runtime double its database.
			busy := errors.New("create network: could not find an available, non-overlapping IPv4 address pool")
			lab.FailOn("CreateNetwork", "", 1, busy)
			if lab.Double() == fakelab.OnRuntime {
				lab.FailOn("CreateContainer", "-db", 1, busy)
			}
			return 1, nil
		})
		dir, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: fakePlan(), OutDir: t.TempDir(), Now: fakeNow, NoPlots: fakelab.UnderRace})
		if err == nil || !strings.Contains(err.Error(), "non-overlapping") {
			t.Fatalf("err = %v", err)
		}
		d := loadFolder(t, dir)
		if got := records(d, d.Manifest.Tasks[0].ID); !slices.Equal(got, []string{"failed/1"}) {
			t.Fatalf("records %v", got)
		}
		lab.RequireEmpty(t)
	})
}

// A task that fails twice stops the run; the folder stays consistent and
// the run can be resumed.
func TestRunFakeFailsTwiceThenResumes(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		lab.FailOn("Exec", "agent load", 2, errors.New("exec rttlab in client: connection refused"))
		out := t.TempDir()
		dir, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: fakePlan(), OutDir: out, Now: fakeNow, NoPlots: fakelab.UnderRace})
		if err == nil || !strings.Contains(err.Error(), "failed twice") || !strings.HasPrefix(err.Error(), "go: ") {
			t.Fatalf("err = %v", err)
		}
		lab.RequireEmpty(t)
		d := loadFolder(t, dir)
		first := d.Manifest.Tasks[0].ID
		if got := records(d, first); !slices.Equal(got, []string{"failed/1", "failed/2"}) || d.Manifest.End.IsZero() {
			t.Fatalf("records %v", got)
		}
		if _, err := os.Stat(filepath.Join(dir, report.SummaryMDFile)); err != nil {
			t.Fatalf("summary not rendered after the failure: %v", err)
		}
		// Resume: the failed task gets attempt 3, probes and trace are not
		// repeated for an app that has them.
		if _, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Resume: dir, Now: fakeNow, NoPlots: fakelab.UnderRace}); err != nil {
			t.Fatal(err)
		}
		d = loadFolder(t, dir)
		if len(d.Done) != fakeTasks || d.Done[first] != 3 {
			t.Fatalf("done %v", d.Done)
		}
		kinds := map[string]int{}
		for _, pr := range d.Probes {
			kinds[pr.Kind]++
		}
		if kinds[raw.ProbeSelect1] != 6 {
			t.Errorf("probes repeated on resume: %v", kinds)
		}
		lab.RequireEmpty(t)
	})
}

// Ctrl-C between tasks or during one removes every container and network
// of the run; resume then runs exactly the tasks left, in the same order.
func TestRunFakeCancelCleansUpAndResumes(t *testing.T) {
	for _, during := range []bool{false, true} {
		t.Run(fmt.Sprintf("during-load=%v", during), func(t *testing.T) {
			fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				prog := &recProgress{}
				if during {
					handleNth(lab, "rttlab agent load", 4, lab.Load, func(lctx context.Context, x *enginefake.Call) (int, error) {
						cancel()
						return -1, lctx.Err()
					})
				} else {
					prog.onTask = func(done int) {
						if done == 3 {
							cancel()
						}
					}
				}
				dir, err := Run(ctx, lab.Runtime(), lab, lab.Apps, RunOptions{Plan: fakePlan(), OutDir: t.TempDir(), Progress: prog, Now: fakeNow, NoPlots: fakelab.UnderRace})
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v", err)
				}
				lab.RequireEmpty(t)
				d := loadFolder(t, dir)
				if len(d.Done) != 3 {
					t.Fatalf("done %v", d.Done)
				}
				// The interrupted task is not a failure: it is simply not done.
				for _, r := range d.Records {
					if r.Status != raw.StatusDone {
						t.Fatalf("record %+v", r)
					}
				}
				tasks := d.Manifest.Tasks
				before := len(lab.Loads())

				lab.Handle("rttlab agent load", lab.Load)
				prog2 := &recProgress{}
				if _, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Resume: dir, Progress: prog2, Now: fakeNow, NoPlots: fakelab.UnderRace}); err != nil {
					t.Fatal(err)
				}
				checkLoadsFollow(t, lab.Loads()[before:], tasks[3:])
				d = loadFolder(t, dir)
				if len(d.Done) != len(tasks) || len(d.Records) != len(tasks) {
					t.Fatalf("done %d, records %d", len(d.Done), len(d.Records))
				}
				if prog2.start[0] != fakeTasks || prog2.start[1] != 3 || prog2.done[0] != 4 {
					t.Errorf("resume progress %v %v", prog2.start, prog2.done)
				}
				lab.RequireEmpty(t)
			})
		})
	}
}

// Bad input is refused before anything is created: no container, no
// network, no results folder.
func TestRunFakeRefusesBeforeStart(t *testing.T) {
	lab := fakelab.New(t)
	{
		existing := runFake(t, lab, fakePlan())
		cases := []struct {
			name string
			mod  func(o *RunOptions, l *fakelab.Lab)
			want string
		}{
			{"no delays", func(o *RunOptions, l *fakelab.Lab) { o.Plan.DelaysMs = nil }, "delays_ms is empty"},
			{"unknown app", func(o *RunOptions, l *fakelab.Lab) { o.Plan.Apps[0].Name = "cobol" }, `unknown app "cobol"`},
			{"unknown route", func(o *RunOptions, l *fakelab.Lab) { o.Plan.Apps[0].Routes = []string{"/nope"} }, "route /nope is unknown"},
			{"unknown mix", func(o *RunOptions, l *fakelab.Lab) { o.Plan.Apps[0] = PlanApp{Name: "redmine", Mix: "shop"} }, `mix "shop" is unknown`},
			{"no routes", func(o *RunOptions, l *fakelab.Lab) { o.Plan.Apps[0].Routes = nil }, "no routes"},
			{"no engine", func(o *RunOptions, l *fakelab.Lab) { l.FailOn("EngineInfo", "", 1, engine.ErrNoEngine) }, "no Docker engine"},
			{"resume of another plan", func(o *RunOptions, l *fakelab.Lab) { o.Resume, o.Plan.Seed = existing, 99 }, "seed 7, not \"unit\" seed 99"},
			{"resume of no folder", func(o *RunOptions, l *fakelab.Lab) { o.Resume = filepath.Join(existing, "nope") }, "manifest"},
		}
		for _, c := range cases {
			fakelab.OnEach(t, func(t *testing.T, l *fakelab.Lab) {
				t.Run(c.name, func(t *testing.T) {
					out := t.TempDir()
					o := RunOptions{Plan: fakePlan(), OutDir: out, Now: fakeNow, NoPlots: fakelab.UnderRace}
					c.mod(&o, l)
					dir, err := Run(context.Background(), l.Runtime(), l, l.Apps, o)
					if err == nil || !strings.Contains(err.Error(), c.want) {
						t.Fatalf("err = %v, want %q", err, c.want)
					}
					if dir != "" {
						t.Errorf("returned folder %q", dir)
					}
					if !l.Untouched() {
						t.Errorf("the runtime was used before the refusal: engine %v", l.Calls())
					}
					if ents, _ := os.ReadDir(out); len(ents) != 0 {
						t.Errorf("results folder created: %v", ents)
					}
				})
			})
		}
	}
}

// A stack that cannot start leaves nothing behind, whichever step fails.
func TestRunFakeStartFailuresCleanUp(t *testing.T) {
	cases := []struct {
		name  string
		setup func(l *fakelab.Lab)
		want  string
	}{
		{"client not created", func(l *fakelab.Lab) { l.FailOn("CreateContainer", "-client", 1, errors.New("no space left on device")) }, "no space left"},
		{"app crashes at start", func(l *fakelab.Lab) {
			l.Healthy.Store(false)
			l.CrashOnStart("-app", 1, 1, "panic: connect to db: password authentication failed\n")
		}, "password authentication failed"},
		{"database crashes at start", func(l *fakelab.Lab) {
			l.CrashOnStart("-db", 1, 1, "initdb: error: could not create directory\n")
		}, "could not create directory"},
		{"agent crashes at start", func(l *fakelab.Lab) {
			l.CrashOnStart("-agent", 1, 2, "rttlab: --shaper kernel: sch_netem is not available\n")
		}, "agent for"},
		// The error names the image (its wording is the runtime's).
		{"agent image missing", func(l *fakelab.Lab) {
			l.DropImage(stack.AgentImage)
		}, stack.AgentImage},
		{"no auth key", func(l *fakelab.Lab) {
			l.Handle("cat", func(ctx context.Context, x *enginefake.Call) (int, error) { return 1, nil })
		}, "did not finish its set-up"},
		{"trace fails", func(l *fakelab.Lab) {
			l.Handle("rttlab agent trace", func(ctx context.Context, x *enginefake.Call) (int, error) {
				fmt.Fprintln(x.Stderr, "rttlab: open packet socket: operation not permitted")
				return 1, nil
			})
		}, "operation not permitted"},
		{"probe fails", func(l *fakelab.Lab) {
			l.Handle("rttlab agent sqlprobe", func(ctx context.Context, x *enginefake.Call) (int, error) {
				fmt.Fprintln(x.Stderr, "rttlab: connect: connection refused")
				return 1, nil
			})
		}, "SELECT 1 probe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fakelab.OnEach(t, func(t *testing.T, l *fakelab.Lab) {
				c.setup(l)
				p := fakePlan()
				if c.name == "no auth key" {
					p.Apps = []PlanApp{{Name: "redmine", Mix: "redmine"}}
				}
				_, err := Run(context.Background(), l.Runtime(), l, l.Apps, RunOptions{Plan: p, OutDir: t.TempDir(), Now: fakeNow, NoPlots: fakelab.UnderRace})
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want %q", err, c.want)
				}
				l.RequireEmpty(t)
			})
		})
	}
}

// A removal that fails is not swallowed: the run reports it, and says how
// to remove what is left.
func TestRunFakeSurfacesCleanupFailure(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		lab.FailOn("RemoveContainer", "-db", -1, errors.New("remove: device or resource busy"))
		_, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: fakePlan(), OutDir: t.TempDir(), Now: fakeNow, NoPlots: fakelab.UnderRace})
		if err == nil || !strings.Contains(err.Error(), "device or resource busy") || !strings.Contains(err.Error(), "rttlab clean --run") {
			t.Fatalf("err = %v", err)
		}
		if !errors.Is(err, stack.ErrCleanup) {
			t.Errorf("%v is not ErrCleanup", err)
		}
		// The database is left, and on Docker the network it is on.
		cs, ns := lab.Left()
		nets := 1
		if lab.Double() == fakelab.OnRuntime {
			nets = 0
		}
		if len(cs) != 1 || !strings.HasSuffix(cs[0], "-db") || len(ns) != nets {
			t.Fatalf("left: %v %v", cs, ns)
		}
	})
}

// checkTaskWire checks that every task has its wire rows, both ways and
// per round trip (the fake's wire: 1 µs each way plus the delay), and its
// measured requests taken apart, the delay on the wire and none in the
// app or the database.
func checkTaskWire(t *testing.T, d *raw.Data, p *Plan) {
	t.Helper()
	rows := map[int]int{}
	for _, w := range d.Wire {
		rows[w.Task]++
		if w.Sent == 0 || w.Matched != w.Sent || w.Requests != p.Requests+p.Warmup || w.Anatomized != w.Requests || w.Problem != "" {
			t.Errorf("wire row %+v", w)
		}
		if w.Direction == workloads.DirRoundTrip {
			want := 0.002 + w.RTTms
			if w.Unshaped {
				want = 0.002
			}
			if math.Abs(w.P50Ms-want) > 1e-6 {
				t.Errorf("task %d: round trip %.4f ms, want %.4f", w.Task, w.P50Ms, want)
			}
		}
	}
	parts := map[int]int{}
	for _, a := range d.Anatomy {
		parts[a.Task]++
		oneWay := a.RTTms / 2
		if a.Unshaped {
			oneWay = 0
		}
		want := float64(a.RoundTrips) * (2*0.001 + 2*oneWay)
		if a.RoundTrips == 0 || math.Abs(a.WireMs()-want) > 1e-6 || a.ClientMs <= 0 || math.Abs(a.DBMs-float64(a.RoundTrips)*0.003) > 1e-6 {
			t.Errorf("request %+v: wire %.4f ms, want %.4f", a, a.WireMs(), want)
		}
	}
	for _, tk := range d.Manifest.Tasks {
		if rows[tk.ID] != 3 || parts[tk.ID] != p.Requests {
			t.Errorf("task %d: %d wire rows, %d requests taken apart", tk.ID, rows[tk.ID], parts[tk.ID])
		}
	}
}

// A capture that cannot start fails the task with its reason, and the
// retry with it: no task is ever done without its wire's figures.
func TestRunFakeCaptureCannotStart(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		lab.HandleStream("rttlab agent capture", func(ctx context.Context, x *enginefake.Call) (int, error) {
			fmt.Fprintln(x.Stderr, "rttlab: capture: packet socket: operation not permitted (needs CAP_NET_RAW)")
			return 1, nil
		})
		dir, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: fakePlan(), OutDir: t.TempDir(), Now: fakeNow, NoPlots: fakelab.UnderRace})
		if err == nil || !strings.Contains(err.Error(), "failed twice: capture the task's packets") || !strings.Contains(err.Error(), "needs CAP_NET_RAW") {
			t.Fatalf("err = %v", err)
		}
		d := loadFolder(t, dir)
		if len(d.Done) != 0 || len(d.Wire) != 0 {
			t.Fatalf("done %v, wire rows %d", d.Done, len(d.Wire))
		}
		failed := 0
		for _, r := range d.Records {
			if r.Status == raw.StatusFailed && strings.Contains(r.Error, "needs CAP_NET_RAW") {
				failed++
			}
		}
		if failed != 2 {
			t.Errorf("%d failed attempts naming the reason, want 2: %+v", failed, d.Records)
		}
		lab.RequireEmpty(t)
	})
}

// A run stopped while it probes: the folder's summary and digest name the
// settings no probe checked, and a resume probes exactly those, after
// which none is named.
func TestRunFakeInterruptedProbesNotProbed(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The second setting's SELECT 1 probe: the first one's are written.
		handleNth(lab, "rttlab agent sqlprobe", 2, lab.SQLProbe, func(sctx context.Context, x *enginefake.Call) (int, error) {
			cancel()
			return -1, sctx.Err()
		})
		dir, err := Run(ctx, lab.Runtime(), lab, lab.Apps, RunOptions{Plan: fakePlan(), OutDir: t.TempDir(), Progress: &recProgress{}, Now: fakeNow, NoPlots: fakelab.UnderRace})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		lab.RequireEmpty(t)
		d := loadFolder(t, dir)
		missing := unprobed(fakePlan(), d.Probes, "go")
		if len(missing) == 0 || len(missing) == 3 {
			t.Fatalf("settings left to probe: %v (want some, not all)", missing)
		}
		var names []string
		for _, m := range missing {
			if m > 0 {
				names = append(names, fmt.Sprintf("go at %s ms", strconv.FormatFloat(m, 'f', -1, 64)))
			}
		}
		if len(names) == 0 {
			t.Fatalf("no setting above 0 ms left to probe: %v", missing)
		}
		want := "not probed: " + strings.Join(names, ", ")
		s := report.Analyze(d, report.Options{})
		if dg := s.Digest("summary.md", ""); !strings.Contains(dg, want) {
			t.Errorf("the digest of the stopped run lacks %q:\n%s", want, dg)
		}
		if md := string(s.Markdown()); !strings.Contains(md, "Not probed (no ICMP or SELECT 1 probe of the setting): "+strings.Join(names, ", ")+".") {
			t.Errorf("the summary of the stopped run does not name %v", names)
		}

		lab.Handle("rttlab agent sqlprobe", lab.SQLProbe)
		if _, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Resume: dir, Progress: &recProgress{}, Now: fakeNow, NoPlots: fakelab.UnderRace}); err != nil {
			t.Fatal(err)
		}
		lab.RequireEmpty(t)
		d = loadFolder(t, dir)
		if left := unprobed(fakePlan(), d.Probes, "go"); len(left) != 0 {
			t.Fatalf("after the resume, still unprobed: %v", left)
		}
		s = report.Analyze(d, report.Options{})
		if dg := s.Digest("summary.md", ""); strings.Contains(dg, "not probed") {
			t.Errorf("the digest after the resume still says not probed:\n%s", dg)
		}
		for _, c := range s.Cells {
			if c.RTTms > 0 && slices.Contains(c.Unverified, report.NotProbed) {
				t.Errorf("cell at %g ms not probed after the resume", c.RTTms)
			}
		}
	})
}
