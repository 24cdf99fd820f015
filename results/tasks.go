package results

import (
	"context"
	"fmt"
)

// The skeleton every study runs by: a study lists its plan's tasks and
// runs one attempt of one (TaskRunner); RunTasks goes through the tasks in
// order, skipping those the folder has done, and RunAttempts runs one task
// until an attempt is done, recording each attempt where the study keeps
// them (Attempts) and retrying a failed one as the study says (Retry).

// Attempts is where a study records its tasks' attempts: the journal
// (attempts.jsonl) of the placement and worker studies, or the RTT
// study's tasks.jsonl.
type Attempts interface {
	// NextAttempt is the number task's next attempt takes.
	NextAttempt(task string) int
	// MarkStarted records that an attempt starts, before it runs: synced
	// in the placement and worker studies' journal; the RTT study keeps
	// it in memory, its attempts' lines carrying their numbers.
	MarkStarted(task string, attempt int) error
	// MarkDone records, synced, that an attempt is done, with the state it
	// leaves for the tasks after it (nil: none).
	MarkDone(task string, attempt int, state any) error
	// MarkFailed records, synced, that an attempt failed, with its reason.
	MarkFailed(task string, attempt int, reason string) error
}

// TaskRunner is one study's run as the skeleton drives it.
type TaskRunner interface {
	// Tasks lists the plan's tasks in the order they run.
	Tasks() []string
	// Done says whether the folder already holds task's data.
	Done(task string) bool
	// RunTask runs one attempt of task and returns the state it leaves
	// once its data is on disk (nil: none).
	RunTask(ctx context.Context, task string, attempt int) (state any, err error)
	// Retry is how a failed attempt of task is retried.
	Retry(task string) Retry
}

// Retry is how a study retries a task: up to Attempts tries in all, each
// failed one recorded with its reason and followed by Fresh before the
// next.
type Retry struct {
	Attempts int
	// Fresh readies the next attempt after a failed one (its error given):
	// a fresh stack, or nothing when the stack is sound.
	Fresh func(ctx context.Context, failed error) error
	// Failed, when set, reports each failed attempt; retry says whether
	// another attempt follows.
	Failed func(task string, attempt int, err error, retry bool)
	// Describe, when set, is how the errors name a task (the task's
	// name when not).
	Describe func(task string) string
}

// TaskFailedError is a task whose last attempt failed.
type TaskFailedError struct {
	Task    string // the task's name
	Label   string // how the error names it (Retry.Describe)
	Attempt int    // the number of its last attempt
	Tries   int    // the attempts this run made
	Err     error
}

func (e *TaskFailedError) Error() string {
	return fmt.Sprintf("%s: attempt %d failed, the last of %d: %v", e.Label, e.Attempt, e.Tries, e.Err)
}

func (e *TaskFailedError) Unwrap() error { return e.Err }

// RunTasks runs, in order, every task of tr the folder has not done, each
// until an attempt is done (RunAttempts); before, when set, is called
// before each task run with its place in the plan (from 1) and the
// plan's count. It stops at the first task whose last attempt failed.
func RunTasks(ctx context.Context, rec Attempts, tr TaskRunner, before func(i, n int, task string) error) error {
	tasks := tr.Tasks()
	for i, task := range tasks {
		if tr.Done(task) {
			continue
		}
		if before != nil {
			if err := before(i+1, len(tasks), task); err != nil {
				return err
			}
		}
		err := RunAttempts(ctx, rec, task, tr.Retry(task), func(ctx context.Context, attempt int) (any, error) {
			return tr.RunTask(ctx, task, attempt)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// RunAttempts runs task until an attempt is done and records it with the
// state run returns; each attempt is recorded started first. An error
// while ctx is cancelled is returned as it is, the attempt left started
// (a resume tries the task again, as the next attempt); any other error
// fails the attempt. After the last attempt the error is a
// *TaskFailedError.
func RunAttempts(ctx context.Context, rec Attempts, task string, rt Retry, run func(ctx context.Context, attempt int) (state any, err error)) error {
	label := task
	if rt.Describe != nil {
		label = rt.Describe(task)
	}
	for tries := 1; ; tries++ {
		attempt := rec.NextAttempt(task)
		if err := rec.MarkStarted(task, attempt); err != nil {
			return err
		}
		state, err := run(ctx, attempt)
		if err == nil {
			return rec.MarkDone(task, attempt, state)
		}
		if ctx.Err() != nil {
			return err
		}
		if merr := rec.MarkFailed(task, attempt, err.Error()); merr != nil {
			return fmt.Errorf("%s: attempt %d failed (%w), and recording it failed: %v", label, attempt, err, merr)
		}
		last := tries >= max(rt.Attempts, 1)
		if rt.Failed != nil {
			rt.Failed(task, attempt, err, !last)
		}
		if last {
			return &TaskFailedError{Task: task, Label: label, Attempt: attempt, Tries: tries, Err: err}
		}
		if rt.Fresh != nil {
			if ferr := rt.Fresh(ctx, err); ferr != nil {
				return fmt.Errorf("%s: a fresh stack after attempt %d failed: %w", label, attempt, ferr)
			}
		}
	}
}

// SayRetries is a Retry.Failed that says, through say, each failed
// attempt that a retry on a fresh stack follows.
func SayRetries(say func(format string, a ...any)) func(task string, attempt int, err error, retry bool) {
	return func(task string, attempt int, err error, retry bool) {
		if retry {
			say("%s: attempt %d failed (%v); retrying on a fresh stack", task, attempt, err)
		}
	}
}
