package placement

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// routedSamples makes 210 requests per (policy, route): on /naive
// user-first sits on a around 6.4 ms, network-only and profiled on b around
// 5.7 ms; on /feed every policy sits on a around 2.8 ms. Values cycle
// deterministically through ±0.1 ms in 0.01 ms steps, ten times each, so
// every p50 is exactly its base.
func routedSamples() []Sample {
	var s []Sample
	jitter := func(i int) float64 { return float64(i%21-10) / 100 }
	for _, p := range []Policy{PolicyUserFirst, PolicyNetworkOnly, PolicyProfiled} {
		for i := range 210 {
			host, base := "b", 5.7
			if p == PolicyUserFirst {
				host, base = "a", 6.4
			}
			s = append(s, Sample{Policy: p, Route: "/naive", Host: host, LatencyMs: base + jitter(i)})
			s = append(s, Sample{Policy: p, Route: "/feed", Host: "a", LatencyMs: 2.8 + jitter(i+p2i(p))})
		}
		s = append(s, Sample{Policy: p, Route: "/naive", Host: "a", LatencyMs: 99, Warmup: true})
	}
	// Two failed profiled requests on /naive, one on each host.
	s = append(s, Sample{Policy: PolicyProfiled, Route: "/naive", Host: "b", Failed: true})
	s = append(s, Sample{Policy: PolicyProfiled, Route: "/naive", Host: "a", Failed: true})
	return s
}

func p2i(p Policy) int { return len(p) }

func TestSummarizeRouted(t *testing.T) {
	sum := SummarizeRouted(routedSamples(), 42, 2000)
	if len(sum.Cells) != 6 {
		t.Fatalf("%d cells", len(sum.Cells))
	}
	// Policies in report order, then routes by name.
	order := []string{"user-first /feed", "user-first /naive", "network-only /feed", "network-only /naive", "profiled /feed", "profiled /naive"}
	for i, c := range sum.Cells {
		if got := string(c.Policy) + " " + c.Route; got != order[i] {
			t.Errorf("cell %d is %s, want %s", i, got, order[i])
		}
	}
	uf := sum.Cells[1]
	if uf.N != 210 || uf.Failures != 0 || !near(float64(uf.P50Ms), 6.4) || len(uf.Hosts) != 1 || uf.Hosts[0] != (HostShare{"a", 210, 1}) {
		t.Errorf("user-first /naive %+v", uf)
	}
	if !uf.P50CI.Valid() || float64(uf.P50CI.Low) > 6.4 || float64(uf.P50CI.High) < 6.4 {
		t.Errorf("p50 CI %+v", uf.P50CI)
	}
	pr := sum.Cells[5]
	if pr.N != 210 || pr.Failures != 2 || len(pr.Hosts) != 2 || pr.Hosts[0].Host != "a" || pr.Hosts[0].Count != 1 ||
		pr.Hosts[1].Count != 211 || !near(pr.Hosts[1].Share, 211.0/212) {
		t.Errorf("profiled /naive %+v", pr)
	}
	byKey := map[string]PolicyDiff{}
	for _, d := range sum.Diffs {
		byKey[d.Route+" "+string(d.Policy)+"-"+string(d.Base)] = d
	}
	if len(sum.Diffs) != 6 { // 2 routes × (network-only, profiled vs user-first; profiled vs network-only); no queue-aware samples
		t.Errorf("%d diffs: %+v", len(sum.Diffs), sum.Diffs)
	}
	d := byKey["/naive profiled-user-first"]
	if !near(float64(d.DiffMs), -0.7) || d.Verdict != "lower" || float64(d.CI.High) >= 0 {
		t.Errorf("profiled vs user-first on /naive %+v", d)
	}
	d = byKey["/naive profiled-network-only"]
	if !near(float64(d.DiffMs), 0) || d.Verdict != "no measurable difference" || d.CI.Excludes0() != 0 {
		t.Errorf("profiled vs network-only on /naive %+v", d)
	}
	if _, ok := byKey["/feed queue-aware-user-first"]; ok {
		t.Error("a diff for a policy without samples")
	}
	if !strings.Contains(sum.Method, "2000 resamples") || !strings.Contains(sum.Method, "seed 42") {
		t.Errorf("method %q", sum.Method)
	}
	// Deterministic per seed, and the seed matters.
	again := SummarizeRouted(routedSamples(), 42, 2000)
	if again.Diffs[1].CI != sum.Diffs[1].CI {
		t.Error("same seed, different interval")
	}
	if _, err := json.Marshal(sum); err != nil {
		t.Error(err)
	}
}

func TestSummarizeRoutedAllFailed(t *testing.T) {
	s := []Sample{
		{Policy: PolicyUserFirst, Route: "/r", Host: "a", LatencyMs: 1},
		{Policy: PolicyProfiled, Route: "/r", Host: "b", Failed: true},
		{Policy: PolicyProfiled, Route: "/r", Failed: true}, // refused before a choice
	}
	sum := SummarizeRouted(s, 1, 0)
	if sum.Resamples != 10000 {
		t.Errorf("default resamples %d", sum.Resamples)
	}
	c := sum.Cells[1]
	if c.N != 0 || c.Failures != 2 || !math.IsNaN(float64(c.P50Ms)) || c.P50CI.Valid() || len(c.Hosts) != 1 || c.Hosts[0].Share != 1 {
		t.Errorf("%+v", c)
	}
	if len(sum.Diffs) != 1 || sum.Diffs[0].Verdict != "no data" {
		t.Errorf("%+v", sum.Diffs)
	}
	b, err := json.Marshal(sum)
	if err != nil || !strings.Contains(string(b), `"p50_ms":null`) {
		t.Errorf("%v %s", err, b)
	}
	var back RoutedSummary
	if err := json.Unmarshal(b, &back); err != nil || !math.IsNaN(float64(back.Cells[1].P50Ms)) {
		t.Errorf("round trip: %v %+v", err, back.Cells[1])
	}
}
