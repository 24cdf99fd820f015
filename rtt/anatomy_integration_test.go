package rtt

import (
	"context"
	"errors"
	"fmt"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/enginetest"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/rtt/report"
)

// A 2 ms delay, taken apart on the wire of every task, shows in the wire
// column (three round trips: 6 ms more on the wire) and not in the app's
// or the database's time; the wire verifies the setting, and the
// unshaped runs are the baseline of the percent change.
func TestIntegrationWireCarriesTheDelay(t *testing.T) {
	rt := enginetest.Engine(t)
	all := enginetest.BuiltApps(t, rt, "postgres", "go", "agent")
	p := &Plan{Name: "anatomy-test", Seed: 3, DelaysMs: []float64{0, 2}, Runs: 3, Requests: 30, Warmup: 5,
		Apps: []PlanApp{{Name: "go", Routes: []string{"/feed"}}}, ICMPCount: 5, SelectRuns: 1, SelectCalls: 20, TaskICMPCount: 2, TraceRequests: 10}
	p.Defaults()
	dir, err := Run(context.Background(), engine.NewLab(rt, ""), rt, all, RunOptions{Plan: p, OutDir: t.TempDir(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	d := afterRun(t, rt, dir)
	// Per task: the two one-way directions and the round trip.
	if len(d.Wire) != 3*len(d.Manifest.Tasks) || len(d.Anatomy) != p.Requests*len(d.Manifest.Tasks) {
		t.Fatalf("%d wire rows and %d requests taken apart for %d tasks", len(d.Wire), len(d.Anatomy), len(d.Manifest.Tasks))
	}
	s := report.Analyze(d, report.Options{})
	var c *report.Cell
	for i := range s.Cells {
		if s.Cells[i].RTTms == 2 {
			c = &s.Cells[i]
		}
	}
	if c == nil || !c.HasAttribution || !c.PercentOfUnshaped || len(s.Unshaped) != 1 {
		t.Fatalf("cell at 2 ms: %+v; unshaped %d", c, len(s.Unshaped))
	}
	a := c.Attribution
	t.Logf("go /feed at 2 ms: %s (%d of %d requests taken apart; the load client's own time %.1f%% of the latency)", report.AttributionLine(c), c.TakenApart.N, c.TakenApart.Measured, 100*c.Parts.Client/c.Parts.Latency)
	if a.WireConfigured != 6 || a.Wire() < 0.95*6 {
		t.Errorf("the wire carried %+.3f ms of the 6 ms configured", a.Wire())
	}
	// The delay is on the wire: the endpoints' parts stay a small share
	// of it (their own time grows a little after longer waits on this
	// kind of host, never by a round trip).
	if a.App > 0.25*a.Wire() || a.DB > 0.25*a.Wire() || a.Outside > 0.25*a.Wire() {
		t.Errorf("the delay showed outside the wire: app %+.3f, database %+.3f, client %+.3f ms", a.App, a.DB, a.Outside)
	}
	if c.TakenApart.Share() < 0.99 {
		t.Errorf("%d of %d measured requests taken apart: %q", c.TakenApart.N, c.TakenApart.Measured, c.TakenApart.LeftOut)
	}
	if c.Parts.Client > 0.1*c.Parts.Latency {
		t.Errorf("the load client's own time is %.1f%% of the latency", 100*c.Parts.Client/c.Parts.Latency)
	}
	for _, v := range s.WireVerdicts {
		if v.RTTms == 2 && v.Status != report.WireVerified {
			t.Errorf("wire at 2 ms: %s (%s)", v.Status, v.Why)
		}
	}
}

// probesWritten cancels the run once the folder holds the probes of one
// setting: the run stops while it probes the others.
type probesWritten struct {
	out    string // the results folder's parent
	cancel context.CancelFunc
	once   bool
}

func (p *probesWritten) Start(total, done int)             {}
func (p *probesWritten) Task(done, total int, desc string) {}
func (p *probesWritten) Finish()                           {}
func (p *probesWritten) Note(msg string) {
	if p.once || !strings.Contains(msg, "verification probes") {
		return
	}
	p.once = true
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			matches, _ := filepath.Glob(filepath.Join(p.out, "*", raw.ProbesFile))
			for _, m := range matches {
				if b, err := os.ReadFile(m); err == nil && strings.Count(string(b), "\n") >= 2 {
					p.cancel()
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// A run interrupted while it probes: the settings it did not probe are
// "not probed", never verified; a resume probes exactly those.
func TestIntegrationResumeAfterInterruptedProbes(t *testing.T) {
	rt := enginetest.Engine(t)
	all := enginetest.BuiltApps(t, rt, "postgres", "go", "agent")
	zero := 0
	p := &Plan{Name: "probe-drill", Seed: 11, DelaysMs: []float64{0, 0.5, 1}, Runs: 1, Requests: 5, Warmup: 1,
		Apps: []PlanApp{{Name: "go", Routes: []string{"/feed"}}}, ICMPCount: 20, SelectRuns: 2, SelectCalls: 100, TaskICMPCount: 2,
		TraceRequests: 5, UnshapedRuns: &zero}
	p.Defaults()
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := Run(ctx, engine.NewLab(rt, ""), rt, all, RunOptions{Plan: p, OutDir: out, Progress: &probesWritten{out: out, cancel: cancel}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: err = %v, want context.Canceled", err)
	}
	d := afterRun(t, rt, dir)
	missing := unprobed(p, d.Probes, "go")
	if len(missing) == 0 || len(missing) == len(p.DelaysMs) {
		t.Fatalf("settings left to probe after the interrupt: %v (want some, not all)", missing)
	}
	// The stopped run's digest names the settings no probe checked (it
	// stopped before any task, so no cell has data to judge).
	dg := report.Analyze(d, report.Options{}).Digest("summary.md", "")
	for _, m := range missing {
		w := fmt.Sprintf("go at %s ms", strconv.FormatFloat(m, 'f', -1, 64))
		if m > 0 && !(strings.Contains(dg, "not probed: ") && strings.Contains(dg, w)) {
			t.Errorf("the digest of the stopped run does not name %s as not probed:\n%s", w, dg)
		}
	}
	before := len(d.Probes)
	if _, err := Run(context.Background(), engine.NewLab(rt, ""), rt, all, RunOptions{Resume: dir}); err != nil {
		t.Fatal(err)
	}
	d = afterRun(t, rt, dir)
	if left := unprobed(p, d.Probes, "go"); len(left) != 0 {
		t.Fatalf("after the resume, still unprobed: %v", left)
	}
	perSetting := map[float64]int{}
	for _, pr := range d.Probes[before:] {
		if pr.Kind == raw.ProbeICMP {
			perSetting[pr.RTTms]++
		}
	}
	for _, m := range missing {
		if perSetting[m] != 1 {
			t.Errorf("the resume probed %g ms %d times, want once", m, perSetting[m])
		}
	}
	if len(perSetting) != len(missing) {
		t.Errorf("the resume probed %v, want only %v", perSetting, missing)
	}
	for _, c := range report.Analyze(d, report.Options{}).Cells {
		for _, u := range c.Unverified {
			if u == report.NotProbed {
				t.Errorf("cell at %g ms still not probed", c.RTTms)
			}
		}
	}
}
