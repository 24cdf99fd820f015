package rtt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/enginetest"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
)

type cancelAfter struct {
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Start(total, done int) {}
func (c *cancelAfter) Note(string)           {}
func (c *cancelAfter) Finish()               {}
func (c *cancelAfter) Task(done, total int, desc string) {
	if c.cancel != nil && done >= c.n {
		c.cancel()
	}
}

func noneLabelled(t *testing.T, rt *engine.Runtime) {
	t.Helper()
	ctx := context.Background()
	// Only this test's objects: other runs may exist on a developer's engine.
	cs, err := rt.ListContainers(ctx, map[string]string{engine.LabelRun: ""})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Labels[engine.LabelStack] == "" {
			t.Errorf("container %s (%s) of run %s remains after the run", c.Names, c.State, c.Labels[engine.LabelRun])
		}
	}
}

// afterRun checks that a run left none of its containers and loads its
// folder.
func afterRun(t *testing.T, rt *engine.Runtime, dir string) *raw.Data {
	t.Helper()
	noneLabelled(t, rt)
	return loadFolder(t, dir)
}

func TestIntegrationSmokePlanGo(t *testing.T) {
	rt := enginetest.Engine(t)
	all := enginetest.BuiltApps(t, rt, "postgres", "go", "agent")
	p, _ := BuiltinPlan("smoke")
	p.Apps = []PlanApp{{Name: "go", Routes: []string{"/feed", "/feed-naive"}}}
	out := t.TempDir()
	dir, err := Run(context.Background(), engine.NewLab(rt, ""), rt, all, RunOptions{Plan: p, OutDir: out, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	d := afterRun(t, rt, dir)
	tasks := p.Tasks()
	if len(d.Done) != len(tasks) {
		t.Fatalf("%d of %d tasks done", len(d.Done), len(tasks))
	}
	_, req, warm := p.AppRuns(p.Apps[0])
	if len(d.Samples) != len(tasks)*(req+warm) {
		t.Fatalf("%d samples on disk, want %d", len(d.Samples), len(tasks)*(req+warm))
	}
	for _, f := range []string{"manifest.json", "samples.jsonl", "runs.csv", "probes.csv", "summary.json", "summary.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if d.Manifest.Shaper == "" || d.Manifest.ShaperReason == "" || d.Manifest.Scope != "path" || len(d.Manifest.Tasks) != len(tasks) {
		t.Errorf("manifest lacks shaper/scope/tasks: %+v", d.Manifest)
	}
	s := report.Analyze(d, report.Options{})
	change := func(route string) float64 {
		for _, c := range s.Cells {
			if c.App == "go" && c.Route == route && c.RTTms == 1 {
				return c.Change
			}
		}
		t.Fatalf("no cell for %s at 1 ms", route)
		return 0
	}
	feed, naive := change("/feed"), change("/feed-naive")
	t.Logf("change at 1 ms: /feed %+.3f ms, /feed-naive %+.3f ms", feed, naive)
	if feed <= 0 || naive <= 0 || naive <= feed {
		t.Errorf("want both changes positive and /feed-naive > /feed: %.3f %.3f", feed, naive)
	}
	// The report regenerated from the raw files matches the one written at
	// the end of the run.
	before, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	beforeHTML, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if err := report.Render(dir); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	afterHTML, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if string(before) != string(after) || string(beforeHTML) != string(afterHTML) {
		t.Error("report regenerated from the raw files differs from the one written by the run")
	}
}

func TestIntegrationInterruptAndResume(t *testing.T) {
	rt := enginetest.Engine(t)
	all := enginetest.BuiltApps(t, rt, "postgres", "go", "agent")
	zero := 0 // the counts below are the shaped tasks'
	p := &Plan{Name: "resume-test", Seed: 99, DelaysMs: []float64{0, 1}, Runs: 2, Requests: 10, Warmup: 2, UnshapedRuns: &zero,
		Apps: []PlanApp{{Name: "go", Routes: []string{"/feed"}}}, ICMPCount: 5, SelectRuns: 1, SelectCalls: 10, TaskICMPCount: 2}
	p.Defaults()
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := Run(ctx, engine.NewLab(rt, ""), rt, all, RunOptions{Plan: p, OutDir: out, Progress: &cancelAfter{n: 2, cancel: cancel}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: err = %v, want context.Canceled", err)
	}
	noneLabelled(t, rt)
	d, err := raw.Load(dir)
	if err != nil {
		t.Fatalf("folder inconsistent after the interrupt: %v", err)
	}
	if len(d.Done) < 2 || len(d.Done) >= 4 {
		t.Fatalf("%d tasks done after the interrupt, want 2 or 3", len(d.Done))
	}
	// A plan that differs is refused.
	other := *p
	other.Seed = 5
	if _, err := Run(context.Background(), engine.NewLab(rt, ""), rt, all, RunOptions{Plan: &other, Resume: dir}); err == nil {
		t.Fatal("resume with another seed was accepted")
	}
	if _, err := Run(context.Background(), engine.NewLab(rt, ""), rt, all, RunOptions{Resume: dir}); err != nil {
		t.Fatal(err)
	}
	d = afterRun(t, rt, dir)
	if len(d.Done) != 4 {
		t.Fatalf("%d of 4 tasks done after resume", len(d.Done))
	}
	per := map[int]int{}
	seqs := map[[2]int]bool{}
	for _, s := range d.Samples {
		per[s.Task]++
		k := [2]int{s.Task, s.Seq}
		if seqs[k] {
			t.Fatalf("duplicate sample task %d seq %d", s.Task, s.Seq)
		}
		seqs[k] = true
	}
	for _, tk := range d.Manifest.Tasks {
		if per[tk.ID] != 12 {
			t.Errorf("task %d has %d samples, want 12", tk.ID, per[tk.ID])
		}
	}
	// Same order and seed as the plan.
	want := p.Tasks()
	for i, tk := range d.Manifest.Tasks {
		if tk.App != want[i].App || tk.Route != want[i].Route || tk.RTTms != want[i].RTTms || tk.Run != want[i].Run {
			t.Fatalf("task order changed at %d: %+v vs %+v", i, tk, want[i])
		}
	}
}

func TestIntegrationRunRefusesBadInputBeforeStarting(t *testing.T) {
	rt := enginetest.Engine(t)
	src, _ := engine.FindSource()
	all, err := apps.Load(apps.FS(src))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	p := &Plan{Name: "bad", DelaysMs: []float64{0, 1}, Runs: 1, Requests: 1, Apps: []PlanApp{{Name: "go", Routes: []string{"/nope"}}}}
	p.Defaults()
	if _, err := Run(context.Background(), engine.NewLab(rt, ""), rt, all, RunOptions{Plan: p, OutDir: out}); err == nil {
		t.Fatal("unknown route accepted")
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("a refused plan left %d entries in the results folder", len(entries))
	}
}

// killAgentOnce kills the run's container whose name ends with suffix
// once, a moment after the
// first task is done (so during the second task).
type killAgentOnce struct {
	rt     *engine.Runtime
	after  time.Duration
	suffix string
	killed chan string
}

func (k *killAgentOnce) Start(total, done int) {}
func (k *killAgentOnce) Note(string)           {}
func (k *killAgentOnce) Finish()               {}
func (k *killAgentOnce) Task(done, total int, desc string) {
	if done != 1 {
		return
	}
	go func() {
		time.Sleep(k.after)
		ctx := context.Background()
		suffix := k.suffix
		cs, err := k.rt.ListContainers(ctx, map[string]string{engine.LabelRun: ""})
		if err != nil {
			k.killed <- ""
			return
		}
		for _, c := range cs {
			if c.State == "running" && strings.HasSuffix(c.Names[0], suffix) {
				_ = k.rt.KillContainer(ctx, c.ID, "KILL")
				k.killed <- strings.TrimPrefix(c.Names[0], "/")
				return
			}
		}
		k.killed <- ""
	}()
}

// A shaping agent killed during a task fails that task with a line that
// names the agent; the task is retried on a fresh stack and nothing from
// the failed attempt counts as data. Every done task has its shaper's
// per-side figures in shaper.csv.
func TestIntegrationAgentKilledDuringTask(t *testing.T) {
	d, failed := runKillingOnce(t, "agent-kill", 7, "-db-agent")
	if a := d.Done[failed.Task]; a <= failed.Attempt {
		t.Fatalf("task %d: done on attempt %d, failed attempt %d", failed.Task, a, failed.Attempt)
	}
	sides := map[int]int{}
	for _, r := range d.Shaper {
		if d.Done[r.Task] == r.Attempt {
			sides[r.Task]++
			if r.Packets == 0 || r.Drops != 0 || r.HoldP50Us <= 0 {
				t.Errorf("shaper row %+v: want packets, no drops, a hold", r)
			}
		}
	}
	for id := range d.Done {
		if sides[id] != 2 {
			t.Errorf("task %d has %d shaper rows, want 2 (app and db)", id, sides[id])
		}
	}
	s := report.Analyze(d, report.Options{})
	if len(s.Shaper) == 0 {
		t.Error("the summary has no shaper figures")
	}
}

// The app container killed during a task: the task is failed with the
// container's exit, retried on a fresh stack, and the summary counts the
// retry as a failed attempt, not as data.
func TestIntegrationAppKilledDuringTask(t *testing.T) {
	d, _ := runKillingOnce(t, "app-kill", 8, "-app")
	s := report.Analyze(d, report.Options{})
	retried := false
	for _, w := range s.Warnings {
		if strings.Contains(w, "attempt 1 failed") && strings.Contains(w, "done on attempt 2") {
			retried = true
		}
	}
	if !retried {
		t.Errorf("the summary does not count the retry: %q", s.Warnings)
	}
}

// runKillingOnce runs a two-task plan of the go app and kills the run's
// container whose name ends with suffix during the second task. It checks
// what every such drill must hold: nothing left behind, both tasks done,
// exactly one failed attempt naming the killed container, and no sample
// of that attempt counted as data; it returns the folder and the failure.
func runKillingOnce(t *testing.T, name string, seed uint64, suffix string) (*raw.Data, raw.TaskRecord) {
	t.Helper()
	rt := enginetest.Engine(t)
	all := enginetest.BuiltApps(t, rt, "postgres", "go", "agent")
	zero := 0 // the drill kills during one of the two shaped tasks
	p := &Plan{Name: name, Seed: seed, DelaysMs: []float64{0, 1}, Runs: 1, Requests: 2000, Warmup: 2, UnshapedRuns: &zero,
		Apps: []PlanApp{{Name: "go", Routes: []string{"/feed"}}}, ICMPCount: 5, SelectRuns: 1, SelectCalls: 10, TaskICMPCount: 2,
		Calibrate: "off"}
	p.Defaults()
	k := &killAgentOnce{rt: rt, after: 3 * time.Second, suffix: suffix, killed: make(chan string, 1)}
	dir, err := Run(context.Background(), engine.NewLab(rt, ""), rt, all, RunOptions{Plan: p, OutDir: t.TempDir(), Progress: k})
	if err != nil {
		t.Fatal(err)
	}
	killed := <-k.killed
	if killed == "" {
		t.Fatalf("no container ending in %s was found to kill", suffix)
	}
	d := afterRun(t, rt, dir)
	if len(d.Done) != 2 {
		t.Fatalf("%d of 2 tasks done", len(d.Done))
	}
	var failed []raw.TaskRecord
	for _, r := range d.Records {
		if r.Status == raw.StatusFailed {
			failed = append(failed, r)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0].Error, killed) {
		t.Fatalf("want one failed attempt naming %s, got %+v", killed, failed)
	}
	for _, s := range d.Samples {
		if s.Task == failed[0].Task && s.Attempt == failed[0].Attempt {
			t.Fatalf("a sample of the failed attempt counts as data: %+v", s)
		}
	}
	return d, failed[0]
}
