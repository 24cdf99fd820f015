package results

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The journal: the first done attempt of a task wins, attempt numbers go
// on across failures and reopenings, a done attempt's state comes back,
// and the cut last line of an interrupted write is trimmed by the writer
// and left alone by a reader.
func TestJournal(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil || len(j.Order) != 0 || j.NextAttempt("a") != 1 {
		t.Fatalf("an empty folder: %+v %v", j, err)
	}
	if err := j.MarkFailed("a", 1, "agent gone"); err != nil {
		t.Fatal(err)
	}
	if err := j.MarkDone("a", 2, map[string]int{"n": 7}); err != nil {
		t.Fatal(err)
	}
	if err := j.MarkDone("b", 1, nil); err != nil {
		t.Fatal(err)
	}
	// A crash mid-write leaves a cut line.
	f, _ := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"task":"c","attem`)
	f.Close()

	r, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, JournalFile)); !strings.HasSuffix(string(b), `"attem`) {
		t.Error("a reader changed the journal")
	}
	j, err = OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, JournalFile)); !strings.HasSuffix(string(b), "\n") {
		t.Error("the writer did not trim the cut line")
	}
	for _, j := range []*Journal{r, j} {
		if strings.Join(j.Order, ",") != "a,b" || j.DoneAttempt("a") != 2 || j.NextAttempt("a") != 3 || j.DoneAttempt("c") != 0 || j.NextAttempt("c") != 1 {
			t.Errorf("order %v, a done by %d, next %d; c done by %d, next %d", j.Order, j.DoneAttempt("a"), j.NextAttempt("a"), j.DoneAttempt("c"), j.NextAttempt("c"))
		}
		a, _ := j.Done("a")
		var st map[string]int
		if json.Unmarshal(a.State, &st) != nil || st["n"] != 7 {
			t.Errorf("a's state %s", a.State)
		}
	}
	// A second done line of a task does not replace the first.
	if err := j.MarkDone("a", 3, nil); err != nil {
		t.Fatal(err)
	}
	if j, _ = ReadJournal(dir); j.DoneAttempt("a") != 2 {
		t.Errorf("a done by %d after a second done line, want 2", j.DoneAttempt("a"))
	}
}

func TestJournalRefusesForeignLines(t *testing.T) {
	for _, line := range []string{`{"task":"a","attempt":0,"status":"done"}`, `{"task":"","attempt":1,"status":"done"}`, `{"task":"a","attempt":1,"status":"maybe"}`, `[1]`, ``} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, JournalFile), []byte(line+"\n"), 0o644)
		if _, err := ReadJournal(dir); err == nil || !strings.Contains(err.Error(), JournalFile+":1") {
			t.Errorf("%q: %v, want an error naming the line", line, err)
		}
	}
}

// RunAttempts on the journal: a failed attempt is recorded and retried
// after Fresh, up to Attempts; the last failure names the task; a
// cancelled attempt stays started, neither done nor failed.
func TestRunAttempts(t *testing.T) {
	dir := t.TempDir()
	j, _ := OpenJournal(dir)
	ctx := context.Background()
	var fresh, said int
	rt := Retry{Attempts: 2, Fresh: func(context.Context, error) error { fresh++; return nil }, Failed: func(_ string, _ int, _ error, retry bool) {
		if retry {
			said++
		}
	}}
	calls := 0
	err := RunAttempts(ctx, j, "x", rt, func(_ context.Context, attempt int) (any, error) {
		if calls++; attempt == 1 {
			return nil, errors.New("agent gone")
		}
		return "ok", nil
	})
	if err != nil || calls != 2 || fresh != 1 || said != 1 || j.DoneAttempt("x") != 2 {
		t.Errorf("retry: %v, %d calls, %d fresh, %d said, done by %d", err, calls, fresh, said, j.DoneAttempt("x"))
	}
	err = RunAttempts(ctx, j, "y", rt, func(context.Context, int) (any, error) { return nil, errors.New("dead") })
	if err == nil || err.Error() != "y: attempt 2 failed, the last of 2: dead" {
		t.Errorf("the last failure: %v", err)
	}
	if j.NextAttempt("y") != 3 {
		t.Errorf("y's next attempt %d", j.NextAttempt("y"))
	}
	// A retry on a stack that cannot be made fresh stops there.
	err = RunAttempts(ctx, j, "z", Retry{Attempts: 3, Fresh: func(context.Context, error) error { return errors.New("no engine") }},
		func(context.Context, int) (any, error) { return nil, errors.New("dead") })
	if err == nil || !strings.Contains(err.Error(), "z: a fresh stack after attempt 1 failed: no engine") {
		t.Errorf("fresh fails: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = RunAttempts(cctx, j, "w", rt, func(ctx context.Context, _ int) (any, error) { return nil, ctx.Err() })
	if !errors.Is(err, context.Canceled) || j.NextAttempt("w") != 2 {
		t.Errorf("cancelled: %v, next attempt %d (want 2: the cancelled one stays started, neither done nor failed)", err, j.NextAttempt("w"))
	}
	r, _ := ReadJournal(dir)
	if strings.Join(r.Order, ",") != "x" || r.NextAttempt("y") != 3 || r.NextAttempt("z") != 2 || r.NextAttempt("w") != 2 {
		t.Errorf("read back: order %v, y next %d, z next %d, w next %d", r.Order, r.NextAttempt("y"), r.NextAttempt("z"), r.NextAttempt("w"))
	}
	// A process killed mid-attempt leaves it started: the resumed
	// attempt takes the next number.
	if err := j.MarkStarted("k", 1); err != nil {
		t.Fatal(err)
	}
	if r, _ := ReadJournal(dir); r.NextAttempt("k") != 2 || r.DoneAttempt("k") != 0 {
		t.Errorf("killed mid-attempt: next %d, done by %d", r.NextAttempt("k"), r.DoneAttempt("k"))
	}
}

// ReadJSONLines: every complete line with its number, the cut last line
// returned apart, a missing file empty only when allowed, an empty or
// over-long line an error naming file and line.
func TestReadJSONLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.jsonl")
	os.WriteFile(path, []byte("{\"a\":1}\n{\"a\":2}\n{\"a\""), 0o644)
	var got []int
	l, err := ReadJSONLines(path, "x", 100, false, func(line int, b []byte) error { got = append(got, line); return nil })
	if err != nil || len(got) != 2 || l.Count != 2 || l.Complete != 16 || string(l.Cut) != `{"a"` {
		t.Errorf("%v %+v %v", got, l, err)
	}
	if _, err := ReadJSONLines(filepath.Join(dir, "none"), "x", 100, true, nil); err != nil {
		t.Errorf("missing, allowed: %v", err)
	}
	if _, err := ReadJSONLines(filepath.Join(dir, "none"), "x", 100, false, nil); err == nil {
		t.Error("missing, not allowed: no error")
	}
	for body, want := range map[string]string{"{}\n\n": "x.jsonl:2: empty line", "{}\n" + strings.Repeat("x", 200) + "\n": "x.jsonl:2:"} {
		os.WriteFile(path, []byte(body), 0o644)
		if _, err := ReadJSONLines(path, "x", 100, false, func(int, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	os.WriteFile(path, []byte("{}\n"), 0o644)
	if _, err := ReadJSONLines(path, "x", 100, false, func(int, []byte) error { return errors.New("not mine") }); err == nil || !strings.HasSuffix(err.Error(), "x.jsonl:1: not mine") {
		t.Errorf("fn's error: %v", err)
	}
}
