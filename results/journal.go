package results

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// JournalFile is the placement and worker studies' journal of task
// attempts: a line when an attempt starts and one when it is done or
// failed. (The RTT study's tasks.jsonl predates it and keys tasks by
// number.)
const JournalFile = "attempts.jsonl"

// Attempt statuses. An attempt is recorded started before it runs, so
// that a process killed in the middle of it leaves its number taken: the
// resumed attempt takes the next one, and the killed attempt's lines,
// already in the files, are never counted with it.
const (
	Started = "started"
	Done    = "done"
	Failed  = "failed"
)

// Attempt is one line of the journal: an attempt of a task started, done
// (with the state it leaves for the tasks after it) or failed (with its
// reason). Only a done
// attempt's data counts; a failed one's stays in the raw files, marked by
// its attempt number, and no analysis reads it.
type Attempt struct {
	Task    string          `json:"task"`
	Attempt int             `json:"attempt"`
	Status  string          `json:"status"`
	Reason  string          `json:"reason,omitempty"`
	At      time.Time       `json:"at"`
	State   json.RawMessage `json:"state,omitempty"`
}

// Journal is a results folder's attempts.jsonl: which tasks are done (the
// first done attempt of a task wins) and the attempt number each task's
// next try takes.
type Journal struct {
	path  string
	done  map[string]Attempt
	tried map[string]int
	// Order lists the done tasks in the order they were done.
	Order []string
}

// OpenJournal opens dir's journal for the writer that holds the folder's
// lock: it trims the cut last line an interrupted write leaves, then reads
// it (ReadJournal).
func OpenJournal(dir string) (*Journal, error) {
	if err := TrimCutLine(filepath.Join(dir, JournalFile)); err != nil {
		return nil, err
	}
	return ReadJournal(dir)
}

// ReadJournal reads dir's journal without changing it (missing: nothing
// done yet; a cut last line is left out).
func ReadJournal(dir string) (*Journal, error) {
	j := &Journal{path: filepath.Join(dir, JournalFile), done: map[string]Attempt{}, tried: map[string]int{}}
	_, err := ReadJSONLines(j.path, JournalFile, MaxManifest, true, func(_ int, b []byte) error {
		var a Attempt
		if err := json.Unmarshal(b, &a); err != nil {
			return JSONWords(err)
		}
		if a.Task == "" || a.Attempt < 1 || (a.Status != Started && a.Status != Done && a.Status != Failed) {
			return fmt.Errorf("not an attempt rttlab wrote (task %q, attempt %d, status %q)", a.Task, a.Attempt, a.Status)
		}
		j.tried[a.Task] = max(j.tried[a.Task], a.Attempt)
		if _, ok := j.done[a.Task]; !ok && a.Status == Done {
			j.done[a.Task] = a
			j.Order = append(j.Order, a.Task)
		}
		return nil
	})
	return j, err
}

// Empty says whether the journal has no line: no attempt of any task was
// ever started (or the folder predates the journal).
func (j *Journal) Empty() bool { return len(j.tried) == 0 }

// Done returns task's done attempt.
func (j *Journal) Done(task string) (Attempt, bool) {
	a, ok := j.done[task]
	return a, ok
}

// DoneAttempt is the number of task's done attempt, 0 when not done.
func (j *Journal) DoneAttempt(task string) int { return j.done[task].Attempt }

// NextAttempt is the number task's next attempt takes.
func (j *Journal) NextAttempt(task string) int { return j.tried[task] + 1 }

// MarkDone records task's attempt as done with the state it leaves
// (marshalled to JSON; nil for none), synced before it returns.
func (j *Journal) MarkDone(task string, attempt int, state any) error {
	a := Attempt{Task: task, Attempt: attempt, Status: Done, At: time.Now().UTC()}
	if state != nil {
		b, err := json.Marshal(state)
		if err != nil {
			return err
		}
		a.State = b
	}
	if err := AppendJSONLine(j.path, a); err != nil {
		return err
	}
	j.tried[task] = max(j.tried[task], attempt)
	if _, ok := j.done[task]; !ok {
		j.done[task] = a
		j.Order = append(j.Order, task)
	}
	return nil
}

// MarkStarted records that task's attempt starts, synced before it
// returns: its number is taken whatever becomes of the process.
func (j *Journal) MarkStarted(task string, attempt int) error {
	j.tried[task] = max(j.tried[task], attempt)
	return AppendJSONLine(j.path, Attempt{Task: task, Attempt: attempt, Status: Started, At: time.Now().UTC()})
}

// MarkFailed records task's attempt as failed with its reason.
func (j *Journal) MarkFailed(task string, attempt int, reason string) error {
	j.tried[task] = max(j.tried[task], attempt)
	return AppendJSONLine(j.path, Attempt{Task: task, Attempt: attempt, Status: Failed, Reason: reason, At: time.Now().UTC()})
}
