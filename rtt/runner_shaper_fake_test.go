package rtt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
)

// statsShaper wraps the fake lab's agents so that they report themselves
// like the userspace shaper: every `ctl show` adds 50 packets held for
// their target (+3 µs) to the side's counters; drop adds lost packets.
type statsShaper struct {
	lab   *fakelab.Lab
	mu    sync.Mutex
	stats map[string]*netem.Stats // by side
}

func newStatsShaper(lab *fakelab.Lab) *statsShaper {
	s := &statsShaper{lab: lab, stats: map[string]*netem.Stats{}}
	lab.Handle("rttlab agent ctl", s.ctl)
	return s
}

func (s *statsShaper) drop(side string, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.side(side).Gaps += n
}

func (s *statsShaper) side(side string) *netem.Stats {
	st := s.stats[side]
	if st == nil {
		st = &netem.Stats{Hook: "ingress", Hold: netem.NewHist(), Late: netem.NewHist(), ReadLag: netem.NewHist(), Verdict: netem.NewHist()}
		s.stats[side] = st
	}
	return st
}

func (s *statsShaper) ctl(ctx context.Context, x *enginefake.Call) (int, error) {
	var out bytes.Buffer
	inner := *x
	inner.Stdout = &out
	code, err := s.lab.Ctl(ctx, &inner)
	if err != nil || code != 0 {
		return code, err
	}
	var rep netem.Reply
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return 1, err
	}
	s.mu.Lock()
	st := s.side(x.Service())
	st.DelayNs = rep.DelayNs
	if x.Cmd[3] == "show" {
		for range 50 {
			st.Hold.Record(rep.DelayNs + 3000)
			st.Late.Record(1000)
		}
		st.Packets += 50
		st.Stamped += 50
		st.CPUNs += 1e6
	}
	snap := *st
	snap.Hold, snap.Late, snap.ReadLag, snap.Verdict = st.Hold.Clone(), st.Late.Clone(), st.ReadLag.Clone(), st.Verdict.Clone()
	s.mu.Unlock()
	rep.Backend, rep.Why, rep.Direction, rep.Stats = "userspace", "fake userspace shaper", "ingress", &snap
	b, _ := json.Marshal(rep)
	fmt.Fprintln(x.Stdout, string(b))
	return 0, nil
}

// A task during which a shaper dropped packets is failed (its samples are
// not data) and retried; every attempt's shaper figures are in
// shaper.csv, and the summary counts only the done ones.
func TestRunFakeFailsTaskOnShaperDrops(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		sh := newStatsShaper(lab)
		handleNth(lab, "rttlab agent load", 2, lab.Load, func(ctx context.Context, x *enginefake.Call) (int, error) {
			sh.drop("db", 4)
			return lab.Load(ctx, x)
		})
		p := fakePlan()
		p.Hook = netem.HookIngress // the fake shaper's hook, which "auto" calibrates
		dir := runFake(t, lab, p)
		d := loadFolder(t, dir)
		second, failure := secondTaskRetried(t, d)
		if !strings.Contains(failure, "db side dropped 4 of") {
			t.Fatalf("failure %q does not count the drops", failure)
		}
		shaped := 0 // an unshaped task has the shaper out of its path: no rows
		for _, tk := range d.Manifest.Tasks {
			if !tk.Unshaped {
				shaped++
			}
		}
		if len(d.Shaper) != 2*(shaped+1) {
			t.Fatalf("%d shaper rows, want 2 per shaped attempt", len(d.Shaper))
		}
		for _, r := range d.Shaper {
			if r.Task == second && r.Attempt == 1 && r.Side == "db" && r.Drops != 4 {
				t.Errorf("failed attempt's row %+v: want its 4 drops recorded", r)
			}
			if r.Packets != 50 || (r.RTTms > 0 && r.HoldP50Us-r.TargetUs > 3.1) {
				t.Errorf("row %+v: want the 50 packets and hold of the task", r)
			}
		}
		// The calibration of the userspace shaper is in the manifest, one
		// point per non-zero setting; the fake adds no excess.
		if len(d.Manifest.Calibration) != 2 || d.Manifest.Calibration[0].AppOffsetUs != 0 || d.Manifest.Calibration[0].Rounds != 1 {
			t.Fatalf("calibration %+v", d.Manifest.Calibration)
		}
		s := report.Analyze(d, report.Options{})
		for _, st := range s.Shaper {
			if st.Drops != 0 {
				t.Errorf("summary counts drops of a failed attempt: %+v", st)
			}
		}
		lab.RequireEmpty(t)
	})
}

// A shaping agent that dies while the load runs stops the load at once:
// the task fails with a line naming the agent and is retried on a fresh
// stack.
func TestRunFakeAgentDiesDuringLoad(t *testing.T) {
	prev := agentWatchInterval
	agentWatchInterval = 5 * time.Millisecond
	t.Cleanup(func() { agentWatchInterval = prev })
	fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
		newStatsShaper(lab)
		stopped := false
		handleNth(lab, "rttlab agent load", 2, lab.Load, func(ctx context.Context, x *enginefake.Call) (int, error) {
			lab.Exit("-db-agent", 137, "")
			// With its agent gone the database side passes no packet: the
			// client would wait for its timeouts.
			select {
			case <-ctx.Done():
				stopped = true
				return 0, ctx.Err()
			case <-time.After(2 * time.Minute):
				return 1, fmt.Errorf("the load was not stopped when the agent died")
			}
		})
		dir := runFake(t, lab, fakePlan())
		if !stopped {
			t.Fatal("the load was not stopped when the agent died")
		}
		d := loadFolder(t, dir)
		_, failure := secondTaskRetried(t, d)
		if !strings.Contains(failure, "shaping agent for db died") || !strings.Contains(failure, "db-agent") || !strings.Contains(failure, "exit code 137") {
			t.Fatalf("failure %q does not name the agent", failure)
		}
		if c := len(lab.Started()); c != 10 {
			t.Fatalf("created %d containers, want two stacks", c)
		}
		lab.RequireEmpty(t)
	})
}

// secondTaskRetried checks that the plan's second task failed on its
// first attempt, was done on the second, and that no sample of the failed
// attempt counts as data; it returns the task and the failure's text.
func secondTaskRetried(t *testing.T, d *raw.Data) (int, string) {
	t.Helper()
	second := d.Manifest.Tasks[1].ID
	if got := records(d, second); !slices.Equal(got, []string{"failed/1", "done/2"}) {
		t.Fatalf("records %v", got)
	}
	var failure string
	for _, r := range d.Records {
		if r.Task == second && r.Status == raw.StatusFailed {
			failure = r.Error
		}
	}
	for _, s := range d.Samples {
		if s.Task == second && s.Attempt == 1 {
			t.Fatal("a sample of the failed attempt counts as data")
		}
	}
	return second, failure
}

// calibrate_per: run calibrates the shaper on the first app's stack only;
// the second app applies those offsets (and says so), and both still run
// their verification probes. calibrate_per: app calibrates each.
func TestRunFakeCalibratePerRun(t *testing.T) {
	for _, per := range []string{"run", "app"} {
		fakelab.OnEach(t, func(t *testing.T, lab *fakelab.Lab) {
			newStatsShaper(lab)
			calPings := 0
			lab.Handle("rttlab agent ping", func(ctx context.Context, x *enginefake.Call) (int, error) {
				if x.Flag("--count") == "200" { // the calibration's echoes per measurement
					calPings++
				}
				return lab.Ping(ctx, x)
			})
			p := fakePlan()
			p.Apps = append(p.Apps, PlanApp{Name: "node", Routes: []string{"/feed"}})
			p.CalibratePer = per
			p.Hook = netem.HookIngress
			prog := &recProgress{}
			dir, err := Run(context.Background(), lab.Runtime(), lab, lab.Apps, RunOptions{Plan: p, OutDir: t.TempDir(), Now: fakeNow, NoPlots: fakelab.UnderRace, Progress: prog})
			if err != nil {
				t.Fatal(err)
			}
			d := loadFolder(t, dir)
			apps := map[string]int{}
			for _, c := range d.Manifest.Calibration {
				apps[c.App]++
			}
			reused := slices.ContainsFunc(prog.notes, func(n string) bool { return strings.Contains(n, "calibrate_per: run") })
			switch per {
			case "run":
				if len(apps) != 1 || apps[d.Manifest.Calibration[0].App] != 2 || !reused {
					t.Errorf("per run: calibration %v, reuse noted %v (notes %q)", apps, reused, prog.notes)
				}
			case "app":
				if apps["go"] != 2 || apps["node"] != 2 || reused {
					t.Errorf("per app: calibration %v, reuse noted %v", apps, reused)
				}
			}
			// Two non-zero settings, one round each (the fake has no excess),
			// two measurements a round: 4 calibration pings per calibrating app.
			if want := map[string]int{"run": 4, "app": 8}[per]; calPings != want {
				t.Errorf("per %s: %d calibration pings, want %d", per, calPings, want)
			}
			if probes := len(d.Probes); probes == 0 {
				t.Errorf("per %s: no verification probes", per)
			}
			lab.RequireEmpty(t)
		})
	}
}

func TestShaperDeltasAndDrops(t *testing.T) {
	mk := func(pkts, gaps uint64, holds ...int64) *netem.Stats {
		h := netem.NewHist()
		for _, v := range holds {
			h.Record(v)
		}
		return &netem.Stats{DelayNs: 375000, Packets: pkts, Gaps: gaps, Hold: h, CPUNs: int64(pkts) * 1000}
	}
	t0 := time.Unix(100, 0)
	before := shaping.ShaperSnapshot{At: t0, Replies: map[string]netem.Reply{
		"app": {Direction: "ingress", Stats: mk(10, 0, 375000)}, "db": {Direction: "ingress", Stats: mk(10, 1, 375000)}}}
	after := shaping.ShaperSnapshot{At: t0.Add(time.Second), Replies: map[string]netem.Reply{
		"app": {Direction: "ingress", Stats: mk(110, 0, 375000, 380000, 380000)}, "db": {Direction: "ingress", Stats: mk(60, 4, 375000, 400000)}}}
	ds, err := shaping.ShaperDeltas(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Role != "app" || ds[0].Summary.Packets != 100 || ds[1].Summary.Drops != 3 {
		t.Fatalf("deltas %+v", ds)
	}
	if hp := ds[0].Summary.HoldP50Us; math.Abs(hp-380) > 1 {
		t.Errorf("app hold p50 %.1f µs over the task, want 380", hp)
	}
	err = shaping.DropError(ds)
	if err == nil || !strings.Contains(err.Error(), "db side dropped 3 of 53 packets") {
		t.Fatalf("drop error %v", err)
	}
	rows := shaperRows(raw.Task{ID: 4, App: "go", Route: "/feed", RTTms: 0.75}, 2, ds, time.Second)
	if len(rows) != 2 || rows[1].Drops != 3 || rows[1].Side != "db" || rows[0].Attempt != 2 || rows[0].TargetUs != 375 || rows[0].CPUCores != 0.0001 {
		t.Fatalf("rows %+v", rows)
	}
	// A restarted agent (counters went backwards) is an error, not data.
	if _, err := shaping.ShaperDeltas(after, before); err == nil {
		t.Fatal("counters going backwards were accepted")
	}
	// No drops: no error.
	if err := shaping.DropError(ds[:1]); err != nil {
		t.Fatal(err)
	}
}
