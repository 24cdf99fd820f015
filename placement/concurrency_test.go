package placement

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/workloads"
)

func TestConcurrencyRows(t *testing.T) {
	mk := func(path, host string, ms float64, status int, warm bool) workloads.OpenResult {
		return workloads.OpenResult{Result: workloads.Result{Path: path, LatencyNS: int64(ms * 1e6), Status: status, Warmup: warm},
			Tags: map[string]string{HeaderHost: host}}
	}
	rs := []workloads.OpenResult{
		mk("/feed?rttlab_policy=profiled", "a", 100, 200, true), // warmup: left out
		mk("/feed?rttlab_policy=profiled", "a", 2, 200, false),
		mk("/feed?rttlab_policy=profiled", "a", 4, 200, false),
		mk("/feed-naive?rttlab_policy=profiled", "b", 6, 200, false),
		mk("/feed-naive?rttlab_policy=profiled", "b", 0, 502, false),
	}
	rows := concurrencyRows(0.3, 30, "profiled", rs, workloads.OpenTotals{LagP99NS: 2e6, MaxInFlight: 3, Throughput: 29})
	if len(rows) != 3 || rows[0].Route != "/feed" || rows[1].Route != "/feed-naive" || rows[2].Route != "all" {
		t.Fatalf("rows %+v", rows)
	}
	all := rows[2]
	if all.N != 3 || all.Failures != 1 || float64(all.P50Ms) != 4 || all.Hosts["a"] != 0.5 || all.Hosts["b"] != 0.5 || all.LagP99Ms != 2 || all.MaxInFlight != 3 {
		t.Errorf("all %+v", all)
	}
	if rows[1].N != 1 || rows[1].Failures != 1 || rows[1].Hosts["b"] != 1 || rows[1].LagP99Ms != 0 {
		t.Errorf("/feed-naive %+v", rows[1])
	}
	// A cell where everything failed has no percentiles, and still encodes.
	none := concurrencyRows(0.7, 70, "user-first", []workloads.OpenResult{mk("/feed", "", 0, 0, false)}, workloads.OpenTotals{})
	if !math.IsNaN(float64(none[0].P50Ms)) {
		t.Errorf("p50 of no successes: %v", none[0].P50Ms)
	}
	if _, err := json.Marshal(none); err != nil {
		t.Error(err)
	}
}

func TestPlaceMarkdownAndWarnings(t *testing.T) {
	p, _ := BuiltinPlan("placement-smoke")
	res := &PlaceResult{Kind: "placement", Plan: p, RunID: "r1", Backend: "userspace", KeepAlive: true, Started: time.Unix(0, 0), Finished: time.Unix(60, 0),
		Links:       []LinkCheck{{Phase: "calibration", A: "a", B: "db", ConfiguredMs: 0.25, ZeroMs: 0.5, SettingMs: 0.9, AddedMs: 0.4}},
		Select1:     []Select1Check{{Host: "a", ConfiguredMs: 0.25, ZeroP50Ms: 0.4, SettingP50Ms: 0.66, AddedMs: 0.26}},
		Concurrency: []ConcurrencyRow{{Fraction: 0.7, Rate: 70, Policy: "user-first", Route: "all", N: 90, Failures: 10, P50Ms: 3, P99Ms: 40, Hosts: map[string]float64{"a": 1}, Warning: "schedule lag p99 3 ms"}},
		// Two rounds of the calibration on a and one on db: a's pass
		// (read lag p50 median 350 µs) exceeds the 300 µs floor, db's not.
		Shaper: []PlaceShaperRound{
			{Rep: 1, Phase: "calibration", Node: "a", Direction: "ingress", Summary: netem.Summary{Packets: 100, Drops: 1, Overtook: 2, HoldP50Us: 420, ReadLagP50: 300, ReadLagP99: 900, LateP99Us: 50}},
			{Rep: 1, Phase: "calibration", Node: "db", Direction: "ingress", Summary: netem.Summary{Packets: 50, HoldP50Us: 410, ReadLagP50: 100, ReadLagP99: 200, LateP99Us: 20}},
			{Rep: 1, Phase: "calibration", Node: "a", Direction: "ingress", Summary: netem.Summary{Packets: 80, HoldP50Us: 440, ReadLagP50: 400, ReadLagP99: 700, LateP99Us: 80}},
		},
	}
	r := &Runner{res: res}
	r.warn()
	w := strings.Join(res.Warnings, "\n")
	for _, want := range []string{"shaper on a (calibration): its pass (read lag p50 350 µs) exceeds the floor (300 µs), so up to 50 µs", "shaper on a (calibration): 1 packets dropped", "link a–db (calibration): ICMP added 0.400 ms for 0.250 ms configured", "concurrency 70% user-first all: 10 of 100 requests failed: no claim", "load generator: schedule lag"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	if strings.Contains(w, "shaper on db") {
		t.Errorf("db's pass under the floor warned:\n%s", w)
	}
	if strings.Contains(w, "SELECT 1 from a") {
		t.Errorf("a SELECT 1 within 0.05 ms warned:\n%s", w)
	}
	res.Reps = []PlaceRep{
		{Rep: 1, Predicted: []PredictedRow{{Route: "/feed", Model: ModelProfiled, Crossover: Crossover{N: 3.55, Below: "a", Above: "b"}}}},
		{Rep: 2, Predicted: []PredictedRow{{Route: "/feed", Model: ModelProfiled, Crossover: Crossover{N: 1.25, Below: "a", Above: "b"}}}},
	}
	md := PlaceMarkdown(res)
	if !strings.Contains(md, "| /feed | profiled | 3.55 (a below, b above); 1.25 (a below, b above) | 2.30 (1.25–3.55) |") {
		t.Errorf("crossover movement missing:\n%s", md)
	}
	for _, want := range []string{"## ⚠ Warnings", "| calibration | a–db | 0.250 | 0.500 | 0.900 | 0.400 | 0 |", "| 70% | 70 | user-first | all | 90 | 10 | 3.000 | 40.000 | a 100% |",
		"| calibration | a | ingress | 2 | 180 | 430 | 350 | 900 | 80 | 1 | 2 |", "| calibration | db | ingress | 1 | 50 | 410 | 100 | 200 | 20 | 0 | 0 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
}

// A study whose database and app ran under emulation says so under its
// title; a native one says nothing of it.
func TestPlaceMarkdownSaysEmulated(t *testing.T) {
	p, _ := BuiltinPlan("placement-smoke")
	res := &PlaceResult{Kind: "placement", Plan: p, RunID: "r1", Started: time.Unix(0, 0), Finished: time.Unix(60, 0)}
	if strings.Contains(PlaceMarkdown(res), "emulation") {
		t.Error("a native study speaks of emulation")
	}
	p.Platform, p.Emulated = "linux/arm64", true
	if md := PlaceMarkdown(res); !strings.Contains(md, "> The database and the app ran linux/arm64 under emulation (qemu-user): these timings make no claim") {
		t.Errorf("markdown:\n%s", md)
	}
}
