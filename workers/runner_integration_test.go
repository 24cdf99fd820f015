package workers

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/enginetest"
)

// TestIntegrationWorkersSmoke runs workers-smoke for real: a Puma cluster
// of 2 workers serves /work with distinct PIDs, and the JSQ front proxy
// never sends a request to a busy worker while another is idle (by its
// decision log; the workers' intervals are logged).
func TestIntegrationWorkersSmoke(t *testing.T) {
	rt := enginetest.Engine(t)
	target := enginetest.BuiltTarget(t, rt, "rails", "postgres", "agent", "rails")
	plan, ok := BuiltinPlan(PlanWorkersSmoke, DefaultLimits(runtime.NumCPU()))
	if !ok {
		t.Fatal("no workers-smoke plan")
	}
	ctx := context.Background()
	ws, err := StartWorkers(ctx, engine.NewLab(rt, ""), target, plan.Shaper, engine.Platform{})
	if ws != nil && ws.Stack != nil {
		enginetest.RemoveAtEnd(t, rt, ws.Stack)
	}
	if err != nil {
		t.Fatal(err)
	}
	ws.Progress = func(s string) { t.Log(s) }
	dir := t.TempDir()
	ws.DecisionsPath = filepath.Join(dir, "decisions.jsonl")
	r := &Runner{WS: ws, Plan: plan, Dir: dir}
	s, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Runs as recorded: the cluster's answers name two worker processes.
	var lines []RunLine
	if err := readJSONLines(filepath.Join(dir, "runs.jsonl"), func(b []byte) error {
		var l RunLine
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		lines = append(lines, l)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(plan.Tasks()) {
		t.Fatalf("%d runs recorded for %d tasks", len(lines), len(plan.Tasks()))
	}
	for _, l := range lines {
		if l.Task.Policy.Kind != KindPuma {
			continue
		}
		pids := map[string]bool{}
		for _, rec := range l.Run.Records {
			if !rec.Timed() {
				t.Fatalf("task %d: a request without worker stamps: %+v", l.Task.ID, rec)
			}
			pids[rec.Worker] = true
		}
		if len(pids) < 2 {
			t.Errorf("task %d (%s): answers from %d worker PID(s), want 2", l.Task.ID, l.Task.Cell(), len(pids))
		}
	}

	// The JSQ proxy's decisions: never a busy worker while another idles.
	b, err := os.ReadFile(ws.DecisionsPath)
	if err != nil {
		t.Fatal(err)
	}
	var jsq, busy int
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var d Decision
		if err := json.Unmarshal(line, &d); err != nil {
			t.Fatal(err)
		}
		if d.Policy != ProxyJSQ.String() {
			continue
		}
		jsq++
		if d.BusyWhileIdle() {
			busy++
		}
	}
	if jsq == 0 || busy != 0 {
		t.Errorf("JSQ decisions: %d, of which %d sent to a busy worker while another was idle", jsq, busy)
	}
	// The same from the proxy's recorded intervals: every request's hold
	// on its worker, from assignment to release in its proxy's event
	// order, rebuilt independently of the logged in-flight counts.
	byProxy := map[string][]Decision{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var d struct {
			Proxy string `json:"proxy"`
			Decision
		}
		if err := json.Unmarshal(line, &d); err != nil {
			t.Fatal(err)
		}
		byProxy[d.Proxy] = append(byProxy[d.Proxy], d.Decision)
	}
	checked, held := 0, 0
	for _, decs := range byProxy {
		c, v := HeldWhileIdle(decs, ProxyJSQ.String(), 2)
		checked, held = checked+c, held+v
	}
	if checked != jsq || held != 0 {
		t.Errorf("JSQ by the proxy's recorded holds: %d checked of %d, %d assigned to a busy worker while another held none", checked, jsq, held)
	}

	// From the workers' own recorded intervals the same property holds
	// only up to what the proxy cannot see: a worker's response still on
	// its way back keeps it "in flight" for the proxy after the worker
	// stamped its end. On this 2-vCPU host that leaves a few JSQ requests
	// per run that start on a busy worker while the other's last request
	// ended more than 5 ms earlier; the rates are logged (and reported),
	// not asserted to be zero.
	for _, l := range lines {
		if l.Task.Policy != ProxyJSQ {
			continue
		}
		cs := Collisions(l.Run.Records, l.Run.Workers, 5*time.Millisecond)
		t.Logf("task %d %s: %d collisions of %d by the intervals (slack 5 ms; busy starts %d)", l.Task.ID, l.Task.Cell(), cs.Collisions, cs.Requests, cs.BusyStarts)
		if cs.Requests == 0 || cs.Untimed != 0 {
			t.Errorf("task %d (%s): %d timed JSQ requests, %d without worker stamps", l.Task.ID, l.Task.Cell(), cs.Requests, cs.Untimed)
		}
	}
	if len(s.Cells) == 0 {
		t.Error("no cells in the summary")
	}
	for _, f := range []string{"capacity.jsonl", "runs.jsonl", "summary.json", "summary.md", "plots/workers-latency.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
