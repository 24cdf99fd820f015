package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rttlab/rttlab/internal/syncbuf"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/rtt/raw"
)

// drillBinary builds rttlab for the reliability drills, which run it as a
// user would: a separate process that gets signals.
func drillBinary(t *testing.T) (bin, root string) {
	t.Helper()
	if testing.Short() || os.Getenv("RTTLAB_INTEGRATION") == "" {
		t.Skip("reliability drill: runs under make test (RTTLAB_INTEGRATION=1)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("reliability drill needs root (shaping)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("reliability drill needs the go command to build rttlab: %v", err)
	}
	wd, _ := os.Getwd()
	root = filepath.Dir(filepath.Dir(wd)) // cmd/rttlab -> module root
	bin = filepath.Join(t.TempDir(), "rttlab")
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build rttlab: %v\n%s", err, out)
	}
	return bin, root
}

// drillEngine connects to the engine the drills run against, for the
// test's length.
func drillEngine(t *testing.T) *engine.Runtime {
	t.Helper()
	rt, err := engine.NewRuntime(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

const drillPlan = `name: drill
seed: 3
delays_ms: [0, 1]
runs: 3
requests: 300
` + drillProbes + `apps:
  - name: go
    routes: [/feed]
`

// drillProbes are the few probes and warmup requests per setting that
// the drills' plans share: they check the wiring, not the delays.
const drillProbes = `warmup: 2
calibrate: "off"
icmp_count: 5
select1_runs: 1
select1_calls: 10
task_icmp_count: 2
`

// startRun starts `rttlab run` on the drill plan and waits until its
// results folder has a done task; it returns the process, the folder and
// what the process writes to its standard error (for failure messages).
// A run that ends before that fails the test at once, with its stderr.
// The returned process has a waiter: call wait, not cmd.Wait.
func startRun(t *testing.T, bin, root, plan, out string) (cmd *exec.Cmd, dir string, stderr *syncbuf.Buffer, wait func() error) {
	t.Helper()
	cmd = exec.Command(bin, "run", "--plan", plan, "--out", out)
	cmd.Dir = root
	stderr = &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	var werr error
	wait = func() error {
		once.Do(func() { werr = <-exited })
		return werr
	}
	deadline := time.After(4 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			t.Fatalf("rttlab run ended (%v) before a task was done; stderr:\n%s", err, stderr)
		case <-deadline:
			_ = cmd.Process.Kill()
			_ = wait()
			t.Fatalf("no task done within 4 minutes; stderr:\n%s", stderr)
		case <-tick.C:
			dirs, _ := filepath.Glob(filepath.Join(out, "*-drill"))
			if len(dirs) == 1 && doneTasks(dirs[0]) >= 1 {
				return cmd, dirs[0], stderr, wait
			}
		}
	}
}

func doneTasks(dir string) int {
	f, err := os.Open(filepath.Join(dir, "tasks.jsonl"))
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"done"`) {
			n++
		}
	}
	return n
}

// labelled lists the containers and networks of rttlab runs.
func labelled(t *testing.T, rt *engine.Runtime) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	cs, err := rt.ListContainers(ctx, map[string]string{engine.LabelRun: ""})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	ns, err := rt.ListNetworks(ctx, map[string]string{engine.LabelRun: ""})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		out = append(out, fmt.Sprintf("network %s (owner %s)", n.Name, n.Labels[stack.LabelOwner]))
	}
	return out
}

// labelledSince is what labelled lists now that it did not list before:
// objects of other runs on a developer's engine, or left by an earlier
// test (which reports them itself), are not the drill's.
func labelledSince(t *testing.T, rt *engine.Runtime, before []string) []string {
	t.Helper()
	var out []string
	for _, l := range labelled(t, rt) {
		if !slices.Contains(before, l) {
			out = append(out, l)
		}
	}
	return out
}

// resumeAndCheck resumes dir to the end and checks that every task has
// exactly one done attempt with all its samples, none twice.
func resumeAndCheck(t *testing.T, bin, root, dir string) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--resume", dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	d, err := raw.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Done) != len(d.Manifest.Tasks) {
		t.Fatalf("%d of %d tasks done after resume", len(d.Done), len(d.Manifest.Tasks))
	}
	seen := map[[3]int]bool{}
	per := map[int]int{}
	for _, s := range d.Samples {
		k := [3]int{s.Task, s.Attempt, s.Seq}
		if seen[k] {
			t.Fatalf("sample task %d attempt %d seq %d is there twice", s.Task, s.Attempt, s.Seq)
		}
		seen[k] = true
		per[s.Task]++
	}
	for _, tk := range d.Manifest.Tasks {
		if per[tk.ID] != 302 {
			t.Errorf("task %d has %d samples, want 302", tk.ID, per[tk.ID])
		}
	}
}

// Ctrl-C in the middle of a run: exit 130, nothing of the run left, the
// folder consistent; --resume completes with no sample lost or doubled.
// SIGKILL in the middle of a run: `rttlab clean` removes what it left,
// containers and the wire shaper's rules in the host's tables (and not a
// container rttlab did not start); --resume completes.
func TestIntegrationDrillSignals(t *testing.T) {
	bin, root := drillBinary(t)
	ctx := context.Background()
	rt := drillEngine(t)
	plan := writeFile(t, t.TempDir(), "drill.yaml", drillPlan)

	t.Run("SIGINT", func(t *testing.T) {
		before := labelled(t, rt)
		if len(before) > 0 {
			t.Logf("labelled before the drill (not its to judge): %v", before)
		}
		cmd, dir, stderr, wait := startRun(t, bin, root, plan, t.TempDir())
		pid := cmd.Process.Pid
		sent := time.Now()
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err := wait()
		exited := time.Since(sent)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("after SIGINT: %v, want exit status 130; stderr:\n%s", err, stderr)
		}
		if left := labelledSince(t, rt, before); len(left) > 0 {
			t.Fatalf("left after SIGINT (the run's pid %d, exited %v after the signal): %v; stderr:\n%s",
				pid, exited.Round(time.Millisecond), left, stderr)
		}
		if _, err := raw.Load(dir); err != nil {
			t.Fatalf("folder inconsistent after SIGINT: %v", err)
		}
		resumeAndCheck(t, bin, root, dir)
	})

	t.Run("SIGKILL", func(t *testing.T) {
		foreign, err := rt.CreateContainer(ctx, engine.ContainerSpec{Name: "rttlab-drill-foreign", Image: engine.BaseImage,
			Cmd: []string{"sleep", "600"}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.RemoveContainer(context.Background(), foreign)
		if err := rt.StartContainer(ctx, foreign); err != nil {
			t.Fatal(err)
		}
		before := labelled(t, rt)
		cmd, dir, _, wait := startRun(t, bin, root, plan, t.TempDir())
		// While the study runs, clean keeps it: its rttlab process lives.
		cs, err := rt.ListContainers(ctx, map[string]string{engine.LabelRun: ""})
		if err != nil || len(cs) == 0 {
			t.Fatalf("no container of the running study: %v", err)
		}
		busy := exec.Command(bin, "clean", "--run", cs[0].Labels[engine.LabelRun])
		if out, err := busy.CombinedOutput(); busy.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "is in progress") {
			t.Fatalf("clean --run of a study in progress: %v\n%s", err, out)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = wait()
		// The killed run's wire shaper outlived rttlab with its rules in
		// the host's tables; clean removes them with it.
		cleanKilled(t, rt, bin, before, true)
		ins, err := rt.InspectContainer(ctx, foreign)
		if err != nil || ins.State == nil || !ins.State.Running {
			t.Fatalf("clean touched a container rttlab did not start: %v", err)
		}
		resumeAndCheck(t, bin, root, dir)
	})
}
