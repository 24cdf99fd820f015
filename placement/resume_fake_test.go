package placement

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/results"
)

// sessionOn returns a Fresh for the runner: a new placement session on
// lab l, the one before removed, removed itself when the test ends.
func sessionOn(t *testing.T, l *placeLab, p *Plan, first *Session) func(ctx context.Context) (*Session, error) {
	cur := first
	return func(ctx context.Context) (*Session, error) {
		if err := cur.Stack.Remove(ctx, l.Runtime()); err != nil {
			return nil, err
		}
		ps, err := StartPlacement(ctx, l.Runtime(), p, l.target(t, p), engine.Platform{}, 5*time.Second)
		if err != nil {
			return nil, err
		}
		cur = ps
		l.mu.Lock()
		for n, m := range ps.Nodes {
			l.ips[n] = m.IP
		}
		l.mu.Unlock()
		t.Cleanup(func() { ps.Stack.Remove(context.Background(), l.Runtime()) })
		return ps, nil
	}
}

// checkEveryTaskOnce checks that every task of p is done once in dir's
// journal, that the samples read back come from done attempts only, and
// that the folder re-renders to the summary the run wrote.
func checkEveryTaskOnce(t *testing.T, dir string, p *Plan) *results.Journal {
	t.Helper()
	j, err := results.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(j.Order, " ") != strings.Join(p.Tasks(), " ") {
		t.Errorf("done tasks %v, want %v", j.Order, p.Tasks())
	}
	samples, err := ReadPlaceSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range samples {
		if s.Attempt != j.DoneAttempt(s.Task) {
			t.Fatalf("a sample of %s attempt %d read back; the done attempt is %d", s.Task, s.Attempt, j.DoneAttempt(s.Task))
		}
		seen[s.Task] = true
	}
	for _, task := range p.Tasks() {
		if !seen[task] {
			t.Errorf("no samples of %s", task)
		}
	}
	before, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if _, err := ReportPlacement(dir); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if len(before) == 0 || string(before) != string(after) {
		t.Errorf("the summary re-rendered from the raw files differs from the run's:\n%s\n---\n%s", before, after)
	}
	return j
}

// faults that stop the study in each of its phases, once.
// (The decision log's reader tries 5 times.)
var phaseFaults = []struct {
	phase, op, match string
	times            int
}{
	{"baseline", "Exec", "agent sqlprobe", 1},
	{"calibration", "Exec", "agent connect", 1},
	{"second phase", "", "", 0}, // its first ICMP check, after the first phase's
	{"routed", "Exec", "cat " + proxyLog, 5},
	{"sweep", "Exec", "n=6", 1},
	{"concurrency", "Exec", "agent capacity", 1},
}

// A study stopped in any phase, resumed on a fresh stack, ends with every
// task done once, nothing counted twice, and the summary the folder's raw
// files give.
func TestPlacementResumeAfterEachPhase(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		for _, f := range phaseFaults {
			t.Run(f.phase, func(t *testing.T) {
				p := smallPlan(t, "go")
				l, ps := startLab(t, p, d)
				dir := t.TempDir()
				if f.op != "" {
					l.FailOn(f.op, f.match, f.times, errors.New("agent gone"))
				} else {
					// The first phase's check pings every pair at zero and at
					// its links; the second phase's first ping fails.
					n := 0
					l.Handle("rttlab agent ping", func(ctx context.Context, x *enginefake.Call) (int, error) {
						if n++; n == 2*len(pairs())+1 {
							return 0, errors.New("agent gone")
						}
						return l.ping(ctx, x)
					})
				}
				_, err := (&Runner{Runtime: l.Runtime(), Engine: l, Session: ps, Dir: dir, Version: "test", NoPlots: fakelab.UnderRace}).Run(context.Background())
				if err == nil || !strings.Contains(err.Error(), "agent gone") {
					t.Fatalf("err %v, want the fault", err)
				}
				j, err := results.ReadJournal(dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(j.Order) == len(p.Tasks()) {
					t.Fatal("every task done despite the fault")
				}
				checkStudyTasks(t, dir, p, len(j.Order))
				next := sessionOn(t, l, p, ps)
				ps2, err := next(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				res, err := (&Runner{Runtime: l.Runtime(), Engine: l, Session: ps2, Dir: dir, Version: "test", NoPlots: fakelab.UnderRace}).Run(context.Background())
				if err != nil {
					t.Fatalf("resume: %v", err)
				}
				// The resumed run draws its figures, unless told not to
				// (the report below draws them in any case).
				if svgs, _ := filepath.Glob(filepath.Join(dir, results.PlotsDir, "*.svg")); (len(svgs) == 0) != fakelab.UnderRace {
					t.Errorf("%d figures drawn, NoPlots %v", len(svgs), fakelab.UnderRace)
				}
				checkEveryTaskOnce(t, dir, p)
				checkStudyTasks(t, dir, p, len(p.Tasks()))
				if len(res.Reps) != p.Repeat || len(res.Links) != 2*len(pairs()) || len(res.Select1) != 2 || len(res.Capacity) != 2 {
					t.Errorf("resumed result: %d reps, %d link checks, %d SELECT 1 checks, %d capacities", len(res.Reps), len(res.Links), len(res.Select1), len(res.Capacity))
				}
				if res.Measured == nil || len(res.Measured.Crossings) != 1 {
					t.Errorf("measured crossover %+v", res.Measured)
				}
			})
		}
	})
}

// A task whose attempt fails is retried on a fresh stack and done by the
// retry: the journal keeps the failed attempt with its reason, its
// samples stay in the file, and no analysis reads them.
func TestPlacementRetriesAFailedTask(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		p := smallPlan(t, "go")
		l, ps := startLab(t, p, d)
		dir := t.TempDir()
		l.FailOn("Exec", "cat "+proxyLog, 5, errors.New("agent gone"))
		var said []string
		ps.Progress = func(s string) { said = append(said, s) }
		r := &Runner{Runtime: l.Runtime(), Engine: l, Session: ps, Dir: dir, Version: "test", NoPlots: fakelab.UnderRace, Fresh: sessionOn(t, l, p, ps)}
		if _, err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		j := checkEveryTaskOnce(t, dir, p)
		if j.DoneAttempt("rep-1") != 2 {
			t.Errorf("rep-1 done by attempt %d, want the retry (2)", j.DoneAttempt("rep-1"))
		}
		b, _ := os.ReadFile(filepath.Join(dir, results.JournalFile))
		if !strings.Contains(string(b), `"task":"rep-1","attempt":1,"status":"failed","reason":`) || !strings.Contains(string(b), "agent gone") {
			t.Errorf("journal:\n%s", b)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, SamplesFile))
		if !strings.Contains(string(raw), `"task":"rep-1","attempt":1,`) {
			t.Error("the failed attempt's samples are not in samples.jsonl")
		}
		if !strings.Contains(strings.Join(said, "\n"), "rep-1: attempt 1 failed") {
			t.Errorf("progress does not tell the retry:\n%s", strings.Join(said, "\n"))
		}
	})
}

// Without a way to a fresh stack the failed task is not retried, and the
// error says which task failed.
func TestPlacementFailedTaskNamesIt(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		p := smallPlan(t, "go")
		p.SweepN, p.ConcurrencyRates = nil, nil
		l, ps := startLab(t, p, d)
		l.FailOn("Exec", "agent sqlprobe", 1, errors.New("agent gone"))
		_, err := (&Runner{Runtime: l.Runtime(), Engine: l, Session: ps, Dir: t.TempDir(), Version: "test", NoPlots: fakelab.UnderRace}).Run(context.Background())
		if err == nil || !strings.HasPrefix(err.Error(), "baseline: attempt 1 failed") {
			t.Errorf("err %v", err)
		}
	})
}

// A study stopped in the middle of a task (Ctrl-C; a kill is the same to
// the files) leaves that attempt started with its samples so far in the
// file; the resumed study runs the task as the next attempt, and only
// that attempt's samples are read back.
func TestPlacementInterruptedMidTask(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		p := smallPlan(t, "go")
		l, ps := startLab(t, p, d)
		dir := t.TempDir()
		runCancelledAtLoad(t, l, ps, dir, 6)
		raw, _ := os.ReadFile(filepath.Join(dir, SamplesFile))
		if !strings.Contains(string(raw), `"task":"rep-1","attempt":1,`) {
			t.Fatal("the interrupted attempt left no samples: the test interrupts too early")
		}
		ps2, err := sessionOn(t, l, p, ps)(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&Runner{Runtime: l.Runtime(), Engine: l, Session: ps2, Dir: dir, Version: "test", NoPlots: fakelab.UnderRace}).Run(context.Background()); err != nil {
			t.Fatalf("resume: %v", err)
		}
		j := checkEveryTaskOnce(t, dir, p)
		if j.DoneAttempt("rep-1") != 2 {
			t.Errorf("rep-1 done by attempt %d, want 2 (attempt 1 was interrupted)", j.DoneAttempt("rep-1"))
		}
	})
}

// A folder whose journal has attempts started but none done has no task
// done, even with a summary.json beside it (only a folder from before the
// journal, which has none, counts as finished by its summary): its
// progress says so and report refuses it.
func TestPlacementStartedOnlyIsNotFinished(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		p := smallPlan(t, "go")
		l, ps := startLab(t, p, d)
		dir := t.TempDir()
		runCancelledAtLoad(t, l, ps, dir, 1)
		// Only the started lines stay: the process died before any done line.
		b, err := os.ReadFile(filepath.Join(dir, results.JournalFile))
		if err != nil {
			t.Fatal(err)
		}
		var started []string
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if strings.Contains(line, `"status":"started"`) {
				started = append(started, line)
			}
		}
		if len(started) == 0 {
			t.Fatalf("no started attempt in the journal:\n%s", b)
		}
		os.WriteFile(filepath.Join(dir, results.JournalFile), []byte(strings.Join(started, "")), 0o644)
		os.WriteFile(filepath.Join(dir, "summary.json"), []byte("{}\n"), 0o644)
		if done, total, err := results.Progress(Study{}, dir); err != nil || done != 0 || total != len(p.Tasks()) {
			t.Errorf("progress %d of %d (%v), want 0 of %d", done, total, err, len(p.Tasks()))
		}
		if _, err := (Study{}).Report(dir, io.Discard); err == nil || !strings.Contains(err.Error(), "none of its") {
			t.Errorf("report of a folder with nothing done: %v", err)
		}
	})
}

// runCancelledAtLoad runs the study on ps into dir and cancels it from
// within its nth agent load, which returns the cancellation; it fails t
// unless the run ends cancelled. Loads are answered by l.load again
// afterwards.
func runCancelledAtLoad(t *testing.T, l *placeLab, ps *Session, dir string, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loads := 0
	l.Handle("rttlab agent load", func(c context.Context, x *enginefake.Call) (int, error) {
		if loads++; loads == n {
			cancel()
			return 0, c.Err()
		}
		return l.load(c, x)
	})
	if _, err := (&Runner{Runtime: l.Runtime(), Engine: l, Session: ps, Dir: dir, Version: "test", NoPlots: fakelab.UnderRace}).Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the cancellation", err)
	}
	l.Handle("rttlab agent load", l.load)
}

// checkStudyTasks checks that the study lists the plan's tasks in order,
// the first done ones done (the tasks run in order).
func checkStudyTasks(t *testing.T, dir string, p *Plan, done int) {
	t.Helper()
	tasks, err := Study{}.Tasks(dir)
	if err != nil || len(tasks) != len(p.Tasks()) {
		t.Fatalf("tasks %v (%v), want %d", tasks, err, len(p.Tasks()))
	}
	for i, ts := range tasks {
		if ts.Name != p.Tasks()[i] || ts.Done != (i < done) {
			t.Errorf("task %d: %+v, want %s done %v", i, ts, p.Tasks()[i], i < done)
		}
	}
}
