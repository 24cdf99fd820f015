package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rttlab/rttlab/internal/syncbuf"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/placement"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workers"
)

const placeDrillPlan = `name: place-drill
links:
  - {a: a, b: db, rtt_ms: 1}
  - {a: b, b: db, rtt_ms: 0.1}
held_out:
  - {from: b, to: client, ms: 0.25}
warmup: 2
requests: 10
select1_warmup: 2
select1_calls: 10
routed_warmup: 1
routed_requests: 4
routed_n: [1]
sweep_n: [0, 6]
sweep_warmup: 2
sweep_requests: 10
concurrency_rates: []
repeat: 2
icmp_count: 5
`

const workersDrillPlan = `name: workers-drill
policies: ["puma:wflbw=0"]
baseline: "puma:wflbw=0"
reference: "puma:wflbw=0"
configs: ["2x1"]
mixes: [{name: io, cpu_ms: 1, queries: 2}]
db_rtt_ms: [0]
load_fractions: [0.3]
runs: 5
requests: 40
warmup: 5
capacity: {max_trials: 3, trial_requests: 60, trial_warmup: 5, every_policy: false}
`

// studyDrill is one study's SIGKILL drill: its command line, the plan,
// and the check of its folder once resumed.
type studyDrill struct {
	cmd, plan string
	// window: the kill comes at a random moment this long after the
	// first done task, in the middle of a later task most of the time;
	// the plan's tasks after the first take longer than the window.
	window time.Duration
	check  func(t *testing.T, dir string)
}

// SIGKILL of rttlab place and of rttlab workers at a random moment after
// their first done task, then rttlab clean, then --resume: every task
// done once and nothing of the runs left, a container rttlab did not
// start untouched.
func TestIntegrationDrillStudiesSIGKILL(t *testing.T) {
	bin, root := drillBinary(t)
	ctx := context.Background()
	rt := drillEngine(t)
	foreign, err := rt.CreateContainer(ctx, engine.ContainerSpec{Name: "rttlab-drill-foreign-studies", Image: engine.BaseImage, Cmd: []string{"sleep", "1200"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemoveContainer(context.Background(), foreign)
	if err := rt.StartContainer(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	for _, d := range []studyDrill{
		{"place", placeDrillPlan, 20 * time.Second, checkPlaceDrill},
		{"workers", workersDrillPlan, 8 * time.Second, checkWorkersDrill},
	} {
		t.Run(d.cmd, func(t *testing.T) {
			plan := writeFile(t, t.TempDir(), d.cmd+"-drill.yaml", d.plan)
			before := labelled(t, rt)
			dir := killAfterFirstTask(t, bin, root, d.cmd, plan, d.window)
			cleanKilled(t, rt, bin, before, false)
			ins, err := rt.InspectContainer(ctx, foreign)
			if err != nil || ins.State == nil || !ins.State.Running {
				t.Fatalf("clean touched a container rttlab did not start: %v", err)
			}
			resume := exec.Command(bin, d.cmd, "--resume", dir)
			resume.Dir = root
			if out, err := resume.CombinedOutput(); err != nil {
				t.Fatalf("%s --resume: %v\n%s", d.cmd, err, out)
			}
			if left := labelledSince(t, rt, before); len(left) > 0 {
				t.Errorf("left after the resumed study: %v", left)
			}
			d.check(t, dir)
		})
	}
}

// killAfterFirstTask starts `rttlab CMD --plan plan`, waits for its first
// done task in attempts.jsonl, waits a random part of window more and
// kills it (a study that ends first is not killed: the test fails).
func killAfterFirstTask(t *testing.T, bin, root, cmdName, plan string, window time.Duration) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(bin, cmdName, "--plan", plan, "--out", out)
	cmd.Dir = root
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(6 * time.Minute)
	for {
		select {
		case err := <-exited:
			t.Fatalf("rttlab %s ended (%v) before a task was done; stderr:\n%s", cmdName, err, stderr)
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("no task done within 6 minutes; stderr:\n%s", stderr)
		case <-time.After(100 * time.Millisecond):
		}
		dirs, _ := filepath.Glob(filepath.Join(out, "*-drill*"))
		if len(dirs) != 1 {
			continue
		}
		if j, err := results.ReadJournal(dirs[0]); err == nil && len(j.Order) > 0 {
			wait := time.Duration(rand.Int64N(int64(window)))
			select {
			case err := <-exited:
				t.Fatalf("rttlab %s ended (%v) within %v of its first done task, before the kill; stderr:\n%s", cmdName, err, wait, stderr)
			case <-time.After(wait):
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			j, _ := results.ReadJournal(dirs[0])
			t.Logf("killed rttlab %s %v after its first done task; done then: %v", cmdName, wait.Round(time.Millisecond), j.Order)
			return dirs[0]
		}
	}
}

// cleanKilled runs rttlab clean --run for every run the kill left (other
// runs on a developer's engine are not the test's to remove) and checks
// that nothing is left: containers, networks, wire rules. wantRules: the
// kill must have left wire rules in the host's tables (a shaped run).
func cleanKilled(t *testing.T, rt *engine.Runtime, bin string, before []string, wantRules bool) {
	t.Helper()
	ctx := context.Background()
	cs, err := rt.ListContainers(ctx, map[string]string{engine.LabelRun: ""})
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]bool{}
	for _, c := range cs {
		runs[c.Labels[engine.LabelRun]] = true
	}
	if len(runs) == 0 {
		t.Fatal("SIGKILL left nothing to clean: the drill did not kill a running study")
	}
	if wantRules {
		shaped := 0
		for id := range runs {
			if rules, err := stack.ListWireRules(ctx, engine.NewLab(rt, ""), id); err == nil {
				shaped += len(rules)
			}
		}
		if shaped == 0 {
			t.Fatal("SIGKILL left no wire rules: the drill did not kill a shaped run")
		}
	}
	for id := range runs {
		if out, err := exec.Command(bin, "clean", "--run", id).CombinedOutput(); err != nil {
			t.Fatalf("clean --run %s: %v\n%s", id, err, out)
		}
		if rules, err := stack.ListWireRules(ctx, engine.NewLab(rt, ""), id); err != nil || len(rules) > 0 {
			t.Fatalf("rules of run %s left after clean: %q (%v)", id, rules, err)
		}
	}
	if left := labelledSince(t, rt, before); len(left) > 0 {
		t.Fatalf("left after clean: %v", left)
	}
}

// checkPlaceDrill: every task done once, every sample read back from a
// done attempt and none twice.
func checkPlaceDrill(t *testing.T, dir string) {
	p, err := placement.FolderPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	j, err := results.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(j.Order, " ") != strings.Join(p.Tasks(), " ") {
		t.Fatalf("done tasks %v, want %v", j.Order, p.Tasks())
	}
	samples, err := placement.ReadPlaceSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The raw file holds every attempt's samples, the killed one's too;
	// what is read back is each task's done attempt, whole, and only it.
	raw := map[string]int{}
	_, err = results.ReadJSONLines(filepath.Join(dir, placement.SamplesFile), "samples", results.MaxLine, false, func(_ int, b []byte) error {
		var s placement.PlaceSample
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		raw[fmt.Sprint(s.Task, " ", s.Attempt)]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, s := range samples {
		if s.Attempt != j.DoneAttempt(s.Task) {
			t.Fatalf("a sample of %s attempt %d read back; the done attempt is %d", s.Task, s.Attempt, j.DoneAttempt(s.Task))
		}
		per[s.Task]++
	}
	for _, task := range p.Tasks() {
		if n := raw[fmt.Sprint(task, " ", j.DoneAttempt(task))]; per[task] == 0 || per[task] != n {
			t.Errorf("%s: %d samples read back, %d in the file for its done attempt", task, per[task], n)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.md")); err != nil {
		t.Error(err)
	}
	t.Logf("samples per task: %v; raw lines per task and attempt: %v; attempts: %v", per, raw, tries(j, p.Tasks()))
}

// checkWorkersDrill: every task's run recorded once.
func checkWorkersDrill(t *testing.T, dir string) {
	plan, err := workers.FolderPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != len(plan.Tasks()) {
		t.Errorf("%d runs recorded for %d tasks", n, len(plan.Tasks()))
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.md")); err != nil {
		t.Error(err)
	}
}

// tries is each task's attempts so far.
func tries(j *results.Journal, tasks []string) map[string]int {
	out := map[string]int{}
	for _, task := range tasks {
		out[task] = j.NextAttempt(task) - 1
	}
	return out
}
