package rtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/raw"
)

// The RTT study runs an app's tasks by the skeleton every study shares
// (results.RunTasks): appRun is its TaskRunner, taskAttempts its record.

// rttAttempts is how many attempts a task gets: the first and a retry,
// on a fresh stack when a container died.
const rttAttempts = 2

// setTasks makes tasks, in the folder's shuffled order, the ones the run
// goes through, each by its name in the skeleton (its number written
// out): the skeleton's calls find the task, and its number, by that name.
func (r *appRun) setTasks(tasks []raw.Task) {
	r.tasks, r.order = map[string]raw.Task{}, nil
	for _, t := range tasks {
		name := strconv.Itoa(t.ID)
		r.tasks[name] = t
		r.order = append(r.order, name)
	}
}

// Tasks is the app's tasks this run goes through, by number.
func (r *appRun) Tasks() []string { return r.order }

// Done says whether the folder has the task done.
func (r *appRun) Done(task string) bool { return r.state.IsDone(r.tasks[task].ID) }

// RunTask runs one attempt of a task and writes what it measured.
func (r *appRun) RunTask(ctx context.Context, task string, attempt int) (any, error) {
	t, ok := r.tasks[task]
	if !ok {
		return nil, fmt.Errorf("no task %s in the app's run", task)
	}
	err := r.runTask(ctx, t, attempt)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, err
}

// Retry retries a failed task once, on a fresh stack when a container
// crashed (a stack member or a shaping agent, even when the error came
// from a call it broke before it was seen to exit).
func (r *appRun) Retry(string) results.Retry {
	return results.Retry{
		Attempts: rttAttempts,
		Describe: func(task string) string { return fmt.Sprintf("task %s (%s)", task, describe(r.tasks[task])) },
		Failed: func(task string, attempt int, err error, _ bool) {
			desc := describe(r.tasks[task])
			slog.Warn("task failed", "task", task, "desc", desc, "attempt", attempt, "err", err)
			r.note(fmt.Sprintf("task %s (%s) failed: %v", task, desc, engine.FirstLine(err.Error())))
		},
		Fresh: func(ctx context.Context, failed error) error {
			if errors.Is(failed, stack.ErrContainerExited) || r.s.dead(ctx, r.d) != nil {
				return r.restart(ctx)
			}
			return nil
		},
	}
}

// taskError words a task's last failure as the run says it.
func (r *appRun) taskError(err error) error {
	var tf *results.TaskFailedError
	if errors.As(err, &tf) {
		return fmt.Errorf("%s failed twice: %w", tf.Label, tf.Err)
	}
	return err
}

// describe is a task in the progress lines' words.
func describe(t raw.Task) string {
	return fmt.Sprintf("%s %s %s, run %d", t.App, t.Route, t.Setting(), t.Run)
}

// taskAttempts records the RTT study's attempts in its tasks.jsonl, keyed
// by task number (the task's of that name). A started attempt is counted in memory only: its lines
// that reached the files carry its number, and a resumed folder's next
// attempt counts them (raw.Data.NextAttempt).
type taskAttempts struct {
	r     *appRun
	tried map[string]int // attempts started, by task name
}

func (a *taskAttempts) NextAttempt(task string) int {
	return max(a.r.state.NextAttempt(a.r.tasks[task].ID), a.tried[task]+1)
}

func (a *taskAttempts) MarkStarted(task string, attempt int) error {
	a.tried[task] = max(a.tried[task], attempt)
	return nil
}

// MarkDone marks the attempt done in tasks.jsonl and says the task done.
func (a *taskAttempts) MarkDone(task string, attempt int, _ any) error {
	t := a.r.tasks[task]
	if err := a.r.f.MarkDone(t.ID, attempt); err != nil {
		return err
	}
	a.r.done++
	if a.r.progress != nil {
		a.r.progress(t, describe(t))
	}
	return nil
}

func (a *taskAttempts) MarkFailed(task string, attempt int, reason string) error {
	return a.r.f.MarkFailed(a.r.tasks[task].ID, attempt, reason)
}
