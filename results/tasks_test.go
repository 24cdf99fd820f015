package results

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeStudy is a TaskRunner whose tasks fail as told, recording what ran.
type fakeStudy struct {
	tasks []string
	done  map[string]bool
	fail  map[string]int // task: attempts that fail before one is done
	ran   []string
	fresh int
}

func (s *fakeStudy) Tasks() []string       { return s.tasks }
func (s *fakeStudy) Done(task string) bool { return s.done[task] }
func (s *fakeStudy) RunTask(_ context.Context, task string, attempt int) (any, error) {
	s.ran = append(s.ran, task)
	if s.fail[task] > 0 {
		s.fail[task]--
		return nil, errors.New("agent gone")
	}
	s.done[task] = true
	return map[string]int{"attempt": attempt}, nil
}
func (s *fakeStudy) Retry(string) Retry {
	return Retry{Attempts: 2, Fresh: func(context.Context, error) error { s.fresh++; return nil }}
}

// RunTasks skips the tasks the folder has done, runs the others in plan
// order, retries a failed one after Fresh, and stops at a task whose last
// attempt failed; a resume then runs only what is not done, the failed
// attempts' numbers taken.
func TestRunTasks(t *testing.T) {
	dir := t.TempDir()
	j, _ := OpenJournal(dir)
	s := &fakeStudy{tasks: []string{"a", "b", "c", "d"}, done: map[string]bool{"a": true}, fail: map[string]int{"b": 1, "c": 2}}
	var said []string
	err := RunTasks(context.Background(), j, s, func(i, n int, task string) error {
		said = append(said, task)
		if n != 4 {
			t.Errorf("%s: n %d, want 4", task, n)
		}
		return nil
	})
	var tf *TaskFailedError
	if !errors.As(err, &tf) || tf.Task != "c" || tf.Attempt != 2 || tf.Tries != 2 || !strings.Contains(err.Error(), "agent gone") {
		t.Fatalf("err %v, want c's last attempt failed", err)
	}
	if strings.Join(s.ran, ",") != "b,b,c,c" || strings.Join(said, ",") != "b,c" || s.fresh != 2 {
		t.Errorf("ran %v, said %v, %d fresh", s.ran, said, s.fresh)
	}
	r, _ := ReadJournal(dir)
	if r.DoneAttempt("b") != 2 || r.NextAttempt("c") != 3 || r.DoneAttempt("a") != 0 {
		t.Errorf("journal: b done by %d, c next %d, a done by %d", r.DoneAttempt("b"), r.NextAttempt("c"), r.DoneAttempt("a"))
	}
	// The resume: c and d run, c as its third attempt.
	s.ran = nil
	if err := RunTasks(context.Background(), r, s, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.ran, ",") != "c,d" || r.DoneAttempt("c") != 3 {
		t.Errorf("resumed: ran %v, c done by %d", s.ran, r.DoneAttempt("c"))
	}
	// before's error stops the run before the task.
	s.done, s.ran = map[string]bool{}, nil
	stop := errors.New("stop")
	if err := RunTasks(context.Background(), r, s, func(int, int, string) error { return stop }); err != stop || len(s.ran) != 0 {
		t.Errorf("before failed: %v, ran %v", err, s.ran)
	}
}

// SayRetries says a failed attempt only when a retry follows.
func TestSayRetries(t *testing.T) {
	var got []string
	f := SayRetries(func(format string, a ...any) { got = append(got, format) })
	f("x", 1, errors.New("e"), false)
	f("x", 1, errors.New("e"), true)
	if len(got) != 1 || !strings.Contains(got[0], "retrying on a fresh stack") {
		t.Errorf("said %v", got)
	}
}
