package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

// fakePlan is a worker study of three tasks and one capacity search on
// the accept race at 2x1: seconds on the fake engine.
const fakePlan = `name: workers-fake
policies: ["puma:wflbw=0"]
baseline: "puma:wflbw=0"
reference: "puma:wflbw=0"
configs: ["2x1"]
mixes: [{name: io, cpu_ms: 1, queries: 2}]
db_rtt_ms: [0]
load_fractions: [0.5]
runs: 3
requests: 20
warmup: 2
capacity: {max_trials: 3, trial_requests: 30, trial_warmup: 2, every_policy: false}
`

// workersLab is the fake engine scripted for the worker study: fakelab's
// PostgreSQL and agents, a Puma cluster of two workers on 127.0.0.2 at the
// app's port (its /work names the worker that answered), and an open-loop
// client that sustains up to 200 requests/s.
type workersLab struct {
	*fakelab.Lab
	openloops atomic.Int64
}

func newWorkersLab(t *testing.T, d fakelab.Double) *workersLab {
	t.Helper()
	l := &workersLab{Lab: fakelab.NewOn(t, d)}
	var n atomic.Int64
	puma := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderPID, fmt.Sprint(100+n.Add(1)%2))
		fmt.Fprint(w, "ok")
	})
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", l.HostPort))
	if err != nil {
		t.Skipf("a second loopback address on port %s: %v", l.HostPort, err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: puma}}
	srv.Start()
	t.Cleanup(srv.Close)
	l.IPByService["app"] = "127.0.0.2"
	l.Handle("rttlab agent openloop", l.openloop)
	// The agents hold whatever per-peer delay they are given.
	l.Handle("rttlab agent ctl", func(ctx context.Context, x *enginefake.Call) (int, error) {
		rep := netem.Reply{OK: true, Backend: netem.BackendUserspace, Why: "fake", Link: "eth0", Direction: netem.HookEgress, Active: x.Cmd[3] == "set"}
		return 0, json.NewEncoder(x.Stdout).Encode(rep)
	})
	return l
}

// openloop answers `agent openloop`: every arrival answered by one of the
// two workers in turn, 2 ms each; above 200 requests/s the throughput
// stays at 200.
func (l *workersLab) openloop(ctx context.Context, x *enginefake.Call) (int, error) {
	l.openloops.Add(1)
	rate, _ := strconv.ParseFloat(x.Flag("--rate"), 64)
	count, _ := strconv.Atoi(x.Flag("--count"))
	warmup, _ := strconv.Atoi(x.Flag("--warmup"))
	w := workloads.NewOpenResultWriter(x.Stdout)
	for i := range count {
		start := int64(i) * int64(time.Second) / int64(max(rate, 1))
		tags := map[string]string{HeaderPID: fmt.Sprint(100 + i%2), HeaderThread: "1", HeaderStartNS: fmt.Sprint(start), HeaderEndNS: fmt.Sprint(start + 2e6)}
		res := workloads.OpenResult{Result: workloads.Result{Seq: i, Warmup: i < warmup, Path: x.Flag("--path"), Status: 200, LatencyNS: 2e6},
			ScheduledNS: start, SentNS: start, ServiceNS: 2e6, Tags: tags}
		if err := w.Write(res); err != nil {
			return 1, err
		}
	}
	tot := workloads.OpenTotals{TargetRate: rate, OfferedRate: rate, Throughput: min(rate, 200), Scheduled: count, Sent: count, Recorded: count, Warmup: warmup, Measured: count - warmup,
		LatencyP99NS: 2e6, LatencyP50NS: 2e6}
	b, _ := json.Marshal(tot)
	fmt.Fprintln(x.Stderr, string(b))
	return 0, nil
}

// runOn starts a session on lab l and runs plan into dir; the stack is
// removed when the run ends, and nothing of it may be left.
func runOn(t *testing.T, l *workersLab, plan *Plan, dir string, ctx context.Context) (*Summary, error) {
	t.Helper()
	ws, err := StartWorkers(context.Background(), l.Runtime(), l.Target("rails"), plan.Shaper, engine.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	ws.Progress = func(string) {}
	s, rerr := (&Runner{WS: ws, Plan: plan, Dir: dir, Version: "test"}).Run(ctx)
	if err := ws.Stack.Remove(context.Background(), l.Runtime()); err != nil {
		t.Error(err)
	}
	l.RequireEmpty(t)
	return s, rerr
}

func fakeFolder(t *testing.T) (*Plan, string) {
	t.Helper()
	plan, err := ParsePlan("workers-fake.yaml", []byte(fakePlan), DefaultLimits(runtime.NumCPU()))
	if err != nil {
		t.Fatal(err)
	}
	dir := folderOf(t, plan, "test")
	// The copy of its own plan a folder keeps (the plan is no file here).
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(fakePlan), 0o644); err != nil {
		t.Fatal(err)
	}
	return plan, dir
}

// checkOnce checks that every task's run is recorded once, by a done
// attempt of the journal.
func checkOnce(t *testing.T, plan *Plan, dir string) *results.Journal {
	t.Helper()
	var lines []RunLine
	if err := readJSONLines(filepath.Join(dir, runsFile), func(b []byte) error {
		var l RunLine
		lines = append(lines, l)
		return json.Unmarshal(b, &lines[len(lines)-1])
	}); err != nil {
		t.Fatal(err)
	}
	j, err := results.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, l := range lines {
		if seen[l.Task.ID] {
			t.Errorf("task %d recorded twice", l.Task.ID)
		}
		seen[l.Task.ID] = true
		if got := j.DoneAttempt(fmt.Sprintf("task-%d", l.Task.ID)); got != l.Attempt {
			t.Errorf("task %d: run of attempt %d, the journal's done attempt %d", l.Task.ID, l.Attempt, got)
		}
	}
	if len(lines) != len(plan.Tasks()) {
		t.Errorf("%d runs for %d tasks", len(lines), len(plan.Tasks()))
	}
	return j
}

// The whole study on the fake engine: the capacity, every task once, the
// summary, and a stack that comes down whole.
func TestWorkersRunOnAFakeEngine(t *testing.T) {
	for _, d := range fakelab.Doubles {
		t.Run(string(d), func(t *testing.T) { workersRunOnAFakeEngine(t, newWorkersLab(t, d)) })
	}
}

func workersRunOnAFakeEngine(t *testing.T, l *workersLab) {
	plan, dir := fakeFolder(t)
	s, err := runOn(t, l, plan, dir, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkOnce(t, plan, dir)
	if s == nil || !strings.Contains(s.Markdown("x"), "puma:wflbw=0") {
		t.Error("no summary of the policy")
	}
}

// The study writes the same folder on both doubles, byte for byte but
// for the clock's time stamps.
func TestWorkersSameFolderOnBothDoubles(t *testing.T) {
	var dirs []string
	for _, d := range fakelab.Doubles {
		plan, dir := fakeFolder(t)
		if _, err := runOn(t, newWorkersLab(t, d), plan, dir, context.Background()); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		dirs = append(dirs, dir)
	}
	stamp := regexp.MustCompile(`"(started|at)": ?"[^"]*"`)
	fakelab.SameFolders(t, dirs[0], dirs[1], func(name string, b []byte) []byte { return stamp.ReplaceAll(b, []byte(`"$1":""`)) })
}

// An app container that dies during a task fails that attempt; the task
// is retried on fresh app containers and done once, the failure kept in
// the journal with its reason.
func TestWorkersRetryAFailedTask(t *testing.T) {
	for _, d := range fakelab.Doubles {
		t.Run(string(d), func(t *testing.T) { workersRetryAFailedTask(t, newWorkersLab(t, d)) })
	}
}

func workersRetryAFailedTask(t *testing.T, l *workersLab) {
	plan, dir := fakeFolder(t)
	trials := int64(-1)
	l.Handle("rttlab agent openloop", func(ctx context.Context, x *enginefake.Call) (int, error) {
		code, err := l.openloop(ctx, x)
		// The first task's load (after the capacity search): the app
		// dies under it.
		if x.Flag("--count") == fmt.Sprint(plan.Warmup+plan.Requests) && atomic.AddInt64(&trials, 1) == 0 {
			l.Exit("-app", 137, "Killed\n")
		}
		return code, err
	})
	if _, err := runOn(t, l, plan, dir, context.Background()); err != nil {
		t.Fatal(err)
	}
	j := checkOnce(t, plan, dir)
	if j.DoneAttempt("task-1") != 2 {
		t.Errorf("task 1 done by attempt %d, want the retry (2)", j.DoneAttempt("task-1"))
	}
	b, _ := os.ReadFile(filepath.Join(dir, results.JournalFile))
	if !strings.Contains(string(b), `"task":"task-1","attempt":1,"status":"failed","reason":`) {
		t.Errorf("journal:\n%s", b)
	}
}

// A study interrupted in the middle of a task, resumed on a new stack,
// ends with every task done once and nothing counted twice.
func TestWorkersResumeMidTask(t *testing.T) {
	for _, d := range fakelab.Doubles {
		t.Run(string(d), func(t *testing.T) { workersResumeMidTask(t, newWorkersLab(t, d)) })
	}
}

func workersResumeMidTask(t *testing.T, l *workersLab) {
	plan, dir := fakeFolder(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.Handle("rttlab agent openloop", func(c context.Context, x *enginefake.Call) (int, error) {
		if l.openloops.Load() == 5 {
			cancel()
			return 0, c.Err()
		}
		return l.openloop(c, x)
	})
	if _, err := runOn(t, l, plan, dir, ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the cancellation", err)
	}
	l.Handle("rttlab agent openloop", l.openloop)
	j, _ := results.ReadJournal(dir)
	if len(j.Order) == 0 || len(j.Order) == len(plan.Tasks())+1 {
		t.Fatalf("done before the resume: %v", j.Order)
	}
	checkStudyTasks(t, dir, j.Order)
	if _, err := runOn(t, l, plan, dir, context.Background()); err != nil {
		t.Fatalf("resume: %v", err)
	}
	j = checkOnce(t, plan, dir)
	checkStudyTasks(t, dir, j.Order)
}

// checkStudyTasks checks that the study lists the folder's tasks (the
// capacity searches, then the plan's tasks) as its runner runs them, done
// where the journal has them done.
func checkStudyTasks(t *testing.T, dir string, done []string) {
	t.Helper()
	plan, err := FolderPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := Study{}.Tasks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := (&Runner{Plan: plan}).Tasks()
	if len(tasks) != len(want) || len(want) != len(plan.CapacityTargets())+len(plan.Tasks()) || want[0] != "capacity-1" || want[len(want)-1] != fmt.Sprintf("task-%d", len(plan.Tasks())) {
		t.Fatalf("tasks %v, the runner's %v", tasks, want)
	}
	isDone := map[string]bool{}
	for _, n := range done {
		isDone[n] = true
	}
	for i, ts := range tasks {
		if ts.Name != want[i] || ts.Done != isDone[ts.Name] {
			t.Errorf("task %d: %+v, want %s done %v", i, ts, want[i], isDone[want[i]])
		}
	}
	if d, n, _ := results.Progress(Study{}, dir); d != len(done) || n != len(want) {
		t.Errorf("progress %d of %d, want %d of %d", d, n, len(done), len(want))
	}
}
