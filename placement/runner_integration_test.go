package placement

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/enginetest"
)

// TestIntegrationPlacementSmoke runs placement-smoke's code for real:
// four shaped nodes, the proxy in the client node, every phase. The
// compute host with the shorter database link must show the lower SELECT 1
// median, and network-only routing must send the 12-call route there.
func TestIntegrationPlacementSmoke(t *testing.T) {
	rt := enginetest.Engine(t)
	all := enginetest.BuiltApps(t, rt, "postgres", "agent", "rails")
	// placement-smoke's counts, with a–db 1 ms against b–db 0.1 ms.
	plan, err := LoadPlan("testdata/placement-ci.yaml")
	if err != nil {
		t.Fatal(err)
	}
	target, err := plan.ValidateApp(all)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ps, err := StartPlacement(ctx, engine.NewLab(rt, ""), plan, target, engine.Platform{}, 0)
	if ps != nil && ps.Stack != nil {
		enginetest.RemoveAtEnd(t, rt, ps.Stack)
	}
	if err != nil {
		t.Fatal(err)
	}
	ps.Progress = func(s string) { t.Log(s) }
	dir := t.TempDir()
	r := &Runner{Runtime: engine.NewLab(rt, ""), Engine: rt, Session: ps, Dir: dir}
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sel := map[string]Select1Check{}
	for _, s := range res.Select1 {
		sel[s.Host] = s
	}
	t.Logf("SELECT 1 p50 at the setting: a %.3f ms (link %.2f), b %.3f ms (link %.2f)", sel["a"].SettingP50Ms, sel["a"].ConfiguredMs, sel["b"].SettingP50Ms, sel["b"].ConfiguredMs)
	if !(sel["a"].SettingP50Ms > sel["b"].SettingP50Ms) {
		t.Errorf("SELECT 1 medians not ordered as configured: a %.3f ms (a–db %.2f ms) vs b %.3f ms (b–db %.2f ms)", sel["a"].SettingP50Ms, sel["a"].ConfiguredMs, sel["b"].SettingP50Ms, sel["b"].ConfiguredMs)
	}
	if len(res.Reps) != 1 {
		t.Fatalf("%d repetitions", len(res.Reps))
	}
	var found bool
	for _, c := range res.Reps[0].Routed.Cells {
		t.Logf("%s %s: p50 %v n %d failed %d hosts %+v", c.Policy, c.Route, c.P50Ms, c.N, c.Failures, c.Hosts)
		if c.Policy == PolicyNetworkOnly && c.Route == "/feed-naive" {
			found = true
			if len(c.Hosts) != 1 || c.Hosts[0].Host != "b" {
				t.Errorf("network-only sent the 12-call route to %+v, want b (the database-near host) every time", c.Hosts)
			}
		}
		if c.Failures > 0 {
			t.Errorf("%s %s: %d failed requests", c.Policy, c.Route, c.Failures)
		}
	}
	if !found {
		t.Error("no network-only /feed-naive cell")
	}
	if res.Reps[0].Unmatched != 0 || res.Reps[0].Decisions == 0 {
		t.Errorf("decisions %d, unmatched %d", res.Reps[0].Decisions, res.Reps[0].Unmatched)
	}
	if len(res.Sweep) != 2 {
		t.Errorf("sweep points %+v", res.Sweep)
	}
	if len(res.Capacity) != 2 || len(res.Concurrency) == 0 {
		t.Errorf("capacity %+v, %d concurrency rows", res.Capacity, len(res.Concurrency))
	}
	for _, c := range res.Concurrency {
		if c.Route == "all" && (c.N == 0 || c.MaxInFlight < 1) {
			t.Errorf("concurrency row %+v", c)
		}
	}
	// Each node's shaper reports what it did in every round of both
	// phases, with the plan's floor in place.
	if res.Backend == "userspace" {
		ph := ShaperPhases(res.Shaper)
		for _, p := range ph {
			t.Logf("shaper %s %s: %d packets, hold p50 %.0f µs, read lag p50 %.0f µs p99 %.0f µs, %d overtook", p.Phase, p.Node, p.Packets, p.HoldP50Us, p.ReadLagP50Us, p.ReadLagP99Us, p.Overtook)
			if p.Packets == 0 || p.Rounds != plan.Rounds*plan.Repeat || p.HoldP50Us < 1000*plan.FloorMs {
				t.Errorf("shaper %s %s: %+v (floor %.3f ms, %d rounds)", p.Phase, p.Node, p, plan.FloorMs, plan.Rounds*plan.Repeat)
			}
		}
		if len(ph) != 2*len(PlaceNodes) {
			t.Errorf("shaper records for %d (phase, node) pairs, want %d", len(ph), 2*len(PlaceNodes))
		}
	}
	// The folder holds the raw samples, the decisions and the summaries.
	for _, f := range []string{"manifest.json", "samples.jsonl", "decisions.jsonl", "summary.json", "summary.md"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	var man struct {
		Images        map[string]string `json:"images"`
		EngineVersion string            `json:"engine_version"`
		FloorMs       float64           `json:"floor_ms"`
	}
	mb, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err := json.Unmarshal(mb, &man); err != nil || len(man.Images) != 3 || man.Images["rails"] == "" || man.EngineVersion == "" || man.FloorMs != plan.FloorMs {
		t.Errorf("manifest: %v %+v", err, man)
	}
	var back PlaceResult
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err := json.Unmarshal(b, &back); err != nil || back.Kind != "placement" {
		t.Errorf("summary.json: %v kind %q", err, back.Kind)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	for _, want := range []string{"Held-out test", "Routed comparison", "Serial sweep", "Links: configured and verified", "Concurrency"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	t.Logf("summary:\n%s", md)

	// report recomputes the statistics from samples.jsonl alone and
	// must land on the same figures.
	if _, err := ReportPlacement(dir); err != nil {
		t.Fatal(err)
	}
	again, err := readPlaceResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, a, b float64) {
		if math.Abs(a-b) > 1e-9 && !(math.IsNaN(a) && math.IsNaN(b)) {
			t.Errorf("%s: run %v, report %v", what, a, b)
		}
	}
	for i, c := range res.Reps[0].Routed.Cells {
		same("routed p50 "+string(c.Policy)+" "+c.Route, float64(c.P50Ms), float64(again.Reps[0].Routed.Cells[i].P50Ms))
	}
	for i, h := range res.Reps[0].HeldOut {
		same("held-out estimate "+h.Route+" "+h.Host+" "+string(h.Model), h.EstimateMs, again.Reps[0].HeldOut[i].EstimateMs)
		same("held-out p50 "+h.Route+" "+h.Host, h.HeldOutP50Ms, again.Reps[0].HeldOut[i].HeldOutP50Ms)
	}
	for i, sp := range res.Sweep {
		same(fmt.Sprintf("sweep a−b at %d", sp.N), sp.DiffMs, again.Sweep[i].DiffMs)
	}
	if cmp, err := ComparePlacement(dir, dir); err != nil || !strings.Contains(cmp, "| /feed-naive | network-only |") {
		t.Errorf("compare: %v\n%s", err, cmp)
	}
}
