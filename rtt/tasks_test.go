package rtt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/raw"
)

// The RTT study's record of attempts: a task's attempts take the numbers
// after those the folder saw, a started one is counted in memory, a failed
// one and a done one go to tasks.jsonl (a done one said as progress), and
// the errors name the task in the run's words.
func TestTaskAttempts(t *testing.T) {
	f, err := raw.Create(t.TempDir(), "attempts", time.Unix(0, 0).UTC())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tasks := []raw.Task{{ID: 1, App: "go", Route: "/feed", RTTms: 0.5, Run: 1}, {ID: 2, App: "go", Route: "/feed", RTTms: 0, Run: 1}}
	if err := f.WriteManifest(&raw.Manifest{PlanName: "attempts", Tasks: tasks, Start: time.Unix(0, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	state := loadFolder(t, f.Dir())
	var said []string
	r := &appRun{f: f, state: state, note: func(s string) { said = append(said, s) }}
	r.setTasks(tasks)
	r.progress = func(_ raw.Task, desc string) { said = append(said, "done: "+desc) }
	a := &taskAttempts{r: r, tried: map[string]int{}}
	if a.NextAttempt("1") != 1 {
		t.Fatalf("a fresh task's first attempt %d", a.NextAttempt("1"))
	}
	// Attempt 1 fails, attempt 2 is done (no fresh stack asked of a live one:
	// the retry here has no stack, so Fresh is left out).
	rt := r.Retry("1")
	rt.Fresh = nil
	calls := 0
	err = results.RunAttempts(context.Background(), a, "1", rt, func(_ context.Context, attempt int) (any, error) {
		if calls++; attempt == 1 {
			return nil, errors.New("agent gone")
		}
		return nil, nil
	})
	if err != nil || calls != 2 || r.done != 1 {
		t.Fatalf("retry: %v, %d calls, %d done", err, calls, r.done)
	}
	if len(said) != 2 || !strings.Contains(said[0], "task 1 (go /feed at 0.5 ms, run 1) failed: agent gone") || said[1] != "done: go /feed at 0.5 ms, run 1" {
		t.Errorf("said %q", said)
	}
	// Task 2 fails twice: the run's words.
	err = results.RunAttempts(context.Background(), a, "2", rt, func(context.Context, int) (any, error) { return nil, errors.New("dead") })
	if err := r.taskError(err); err == nil || err.Error() != "task 2 (go /feed at 0 ms, run 1) failed twice: dead" {
		t.Errorf("the last failure: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(f.Dir(), raw.TasksFile))
	if n := strings.Count(string(b), `"status":"failed"`); n != 3 || strings.Count(string(b), `"status":"done"`) != 1 {
		t.Errorf("tasks.jsonl:\n%s", b)
	}
	back := loadFolder(t, f.Dir())
	if !back.IsDone(1) || back.Done[1] != 2 || back.IsDone(2) || back.NextAttempt(2) != 3 {
		t.Errorf("read back: 1 done by %d, 2 done %v, 2's next attempt %d", back.Done[1], back.IsDone(2), back.NextAttempt(2))
	}
	// A started attempt that left no line still takes its number.
	if err := a.MarkStarted("2", 3); err != nil || a.NextAttempt("2") != 4 {
		t.Errorf("started in memory: %v, next %d", err, a.NextAttempt("2"))
	}
}
