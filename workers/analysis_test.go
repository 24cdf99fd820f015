package workers

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// synthRun builds one run of a cell: n measured requests whose latencies
// are p50Ms × (1 + 0.1·u), u uniform in (−1, 1), plus (1-in-10) a slow
// tail, two workers alternating, and failed failures.
func synthRun(k CellKey, run int, p50Ms float64, n, failed int, rng *rand.Rand) Run {
	r := Run{Cell: k, Run: run, Rate: 100, Workers: []string{"A", "B"}}
	for i := range n {
		lat := p50Ms * (1 + 0.1*(2*rng.Float64()-1))
		if i%10 == 0 {
			lat *= 3
		}
		w := "A"
		if i%3 == 0 {
			w = "B"
		}
		start := int64(i) * 1_000_000
		r.Records = append(r.Records, Record{Worker: w, StartNS: start, EndNS: start + 500_000, LatencyNS: int64(lat * 1e6)})
	}
	for range failed {
		r.Records = append(r.Records, Record{LatencyNS: 1e9, Failed: true})
	}
	return r
}

// study builds cells for the accept race and JSQ on 2x2 cpu-heavy: at 0 ms
// RTT the race is 20% slower at 50% load and 2% slower at 90%; at 1 ms it
// is 5% slower at 50%.
func study(runs int) []Run {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []Run
	add := func(pol string, rtt, f, p50 float64) {
		k := CellKey{Policy: pol, Layout: "2x2", Mix: "cpu-heavy", RTTMs: rtt, Fraction: f}
		for r := 1; r <= runs; r++ {
			out = append(out, synthRun(k, r, p50*(1+0.01*float64(r%3)), 200, 0, rng))
		}
	}
	race, jsq := AcceptRace.String(), ProxyJSQ.String()
	add(race, 0, 0.5, 12)
	add(jsq, 0, 0.5, 10)
	add(race, 0, 0.9, 30.6)
	add(jsq, 0, 0.9, 30)
	add(race, 1, 0.5, 15.75)
	add(jsq, 1, 0.5, 15)
	return out
}

func cellOf(t *testing.T, s *Summary, pol string, rtt, f float64) *CellStat {
	t.Helper()
	for i := range s.Cells {
		c := &s.Cells[i]
		if c.Policy == pol && c.RTTMs == rtt && c.Fraction == f {
			return c
		}
	}
	t.Fatalf("no cell %s %v %v", pol, rtt, f)
	return nil
}

func TestAnalyzeCells(t *testing.T) {
	s := Analyze(study(6), Options{Seed: 3, Resamples: 2000})
	if len(s.Cells) != 6 || len(s.Runs) != 36 {
		t.Fatalf("%d cells, %d runs", len(s.Cells), len(s.Runs))
	}
	// Order: configuration, mix, RTT, load, then the baseline first.
	if s.Cells[0].Policy != AcceptRace.String() || s.Cells[1].Policy != ProxyJSQ.String() || s.Cells[0].Fraction != 0.5 || s.Cells[4].RTTMs != 1 {
		t.Errorf("order: %v %v %v", s.Cells[0].CellKey, s.Cells[1].CellKey, s.Cells[4].CellKey)
	}
	race := cellOf(t, s, AcceptRace.String(), 0, 0.5)
	jsq := cellOf(t, s, ProxyJSQ.String(), 0, 0.5)
	if race.Runs != 6 || race.N != 1200 || race.Failures != 0 || race.NoClaim {
		t.Errorf("race cell %+v", race)
	}
	if p := float64(race.P50.Ms); math.Abs(p-12.1) > 0.3 {
		t.Errorf("race p50 %v", p)
	}
	if !(race.P50.CI.Low <= race.P50.Ms && race.P50.Ms <= race.P50.CI.High) || !race.P99.CI.Valid() {
		t.Errorf("race intervals %+v %+v", race.P50, race.P99)
	}
	if race.P99.Ms <= race.P90.Ms || race.P90.Ms <= race.P50.Ms {
		t.Errorf("quantiles out of order: %v %v %v", race.P50.Ms, race.P90.Ms, race.P99.Ms)
	}
	if race.VsBaseline != nil {
		t.Error("the baseline has a change against itself")
	}
	if len(jsq.VsBaseline) != 3 {
		t.Fatalf("jsq changes %+v", jsq.VsBaseline)
	}
	ch := jsq.VsBaseline[0]
	if ch.Verdict != "faster" || float64(ch.DiffMs) > -1.5 || ch.CI.High >= 0 {
		t.Errorf("jsq p50 change %+v", ch)
	}
	if rel := float64(ch.Rel); math.Abs(rel-(10.0/12-1)) > 0.02 {
		t.Errorf("relative change %v", rel)
	}
	// Shares: B serves every third request.
	if len(race.Shares) != 2 || math.Abs(race.Shares[0]-0.665) > 0.01 {
		t.Errorf("shares %v", race.Shares)
	}
	// The synthetic requests never overlap: no collisions.
	if race.Collision.Requests != 1200 || race.Collision.Collisions != 0 || race.CollisionRate != 0 {
		t.Errorf("collisions %+v %v", race.Collision, race.CollisionRate)
	}
	// Same seed, same numbers.
	again := Analyze(study(6), Options{Seed: 3, Resamples: 2000})
	if again.Cells[1].VsBaseline[0].CI != s.Cells[1].VsBaseline[0].CI {
		t.Error("intervals differ between identical analyses")
	}
}

func TestAnalyzeNoClaim(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	k := CellKey{Policy: AcceptRace.String(), Layout: "2x2", Mix: "io-heavy", Fraction: 0.9}
	kj := k
	kj.Policy = ProxyJSQ.String()
	var runs []Run
	for r := 1; r <= 6; r++ {
		runs = append(runs, synthRun(k, r, 10, 200, 3, rng)) // 3 of 203 failed: 1.5%
	}
	for r := 1; r <= 2; r++ {
		runs = append(runs, synthRun(kj, r, 8, 50, 0, rng))
	}
	s := Analyze(runs, Options{Resamples: 500})
	race := cellOf(t, s, k.Policy, 0, 0.9)
	jsq := cellOf(t, s, kj.Policy, 0, 0.9)
	if !race.NoClaim || !strings.Contains(strings.Join(race.Warnings, ";"), "failed") {
		t.Errorf("race: no claim %v, warnings %v", race.NoClaim, race.Warnings)
	}
	w := strings.Join(jsq.Warnings, ";")
	if !jsq.NoClaim || !strings.Contains(w, "only 2 runs") || !strings.Contains(w, "fewer than 100 successful") {
		t.Errorf("jsq: no claim %v, warnings %v", jsq.NoClaim, jsq.Warnings)
	}
	if v := jsq.VsBaseline[0].Verdict; v != "no claim" {
		t.Errorf("verdict %q", v)
	}
	p := s.Penalties[0]
	if p.Peak != nil || !strings.Contains(p.Statement, "none of the 1 paired cells makes a claim") {
		t.Errorf("penalty %+v", p)
	}
}

func TestPenaltyStatement(t *testing.T) {
	s := Analyze(study(8), Options{Seed: 1, Resamples: 2000})
	if len(s.Penalties) != 1 {
		t.Fatalf("%d penalty statements", len(s.Penalties))
	}
	p := s.Penalties[0]
	if len(p.Points) != 3 {
		t.Fatalf("points %+v", p.Points)
	}
	if p.Peak == nil || p.Peak.Fraction != 0.5 || p.Peak.RTTMs != 0 {
		t.Fatalf("peak %+v", p.Peak)
	}
	if rel := float64(p.Peak.Rel); math.Abs(rel-0.2) > 0.03 {
		t.Errorf("peak penalty %v", rel)
	}
	if p.About20 != "consistent" {
		t.Errorf("about 20%%: %s (interval %+v)", p.About20, p.Peak.RelCI)
	}
	if p.Fade == nil || p.Fade.Verdict != "smaller" || p.Fade.To.Fraction != 0.9 {
		t.Errorf("fade %+v", p.Fade)
	}
	if len(p.RTT) != 1 || p.RTT[0].Verdict != "smaller" || p.RTT[0].To.RTTMs != 1 {
		t.Errorf("rtt %+v", p.RTT)
	}
	for _, want := range []string{"slower with an interval excluding 0 in", "2x2, cpu-heavy, 0 ms RTT, 50% load", "consistent with the seed's \"about 20%\"", "fades toward saturation", "With 1 ms RTT", "biased upward"} {
		if !strings.Contains(p.Statement, want) {
			t.Errorf("statement lacks %q:\n%s", want, p.Statement)
		}
	}
}

func TestPenaltyAbsentAndAtTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	var runs []Run
	add := func(pol string, f, p50 float64) {
		k := CellKey{Policy: pol, Layout: "2x1", Mix: "io-heavy", Fraction: f}
		for r := 1; r <= 6; r++ {
			runs = append(runs, synthRun(k, r, p50, 200, 0, rng))
		}
	}
	// Equal everywhere: no penalty.
	add(AcceptRace.String(), 0.3, 10)
	add(ProxyJSQ.String(), 0.3, 10)
	p := PenaltyStatement(Analyze(runs, Options{Resamples: 1000}).Cells, AcceptRace.String(), ProxyJSQ.String(), Options{Resamples: 1000})
	if p.Peak != nil || !strings.Contains(p.Statement, "does not appear here") {
		t.Errorf("equal policies: %s", p.Statement)
	}
	// Largest at the highest load: does not fade.
	add(AcceptRace.String(), 0.9, 15)
	add(ProxyJSQ.String(), 0.9, 10)
	p = PenaltyStatement(Analyze(runs, Options{Resamples: 1000}).Cells, AcceptRace.String(), ProxyJSQ.String(), Options{Resamples: 1000})
	if p.Peak == nil || !p.PeakAtTop || p.Fade != nil || p.About20 != "larger" || !strings.Contains(p.Statement, "does not fade") {
		t.Errorf("peak at top: %+v\n%s", p.Peak, p.Statement)
	}
	// Nothing paired.
	p = PenaltyStatement(nil, AcceptRace.String(), ProxyJSQ.String(), Options{})
	if !strings.Contains(p.Statement, "cannot be assessed") {
		t.Errorf("empty: %s", p.Statement)
	}
}

func TestSummaryMarkdown(t *testing.T) {
	s := Analyze(study(6), Options{Seed: 3, Resamples: 500})
	s.Capacities = []CapacityResult{{Key: CapacityKey{Policy: AcceptRace.String(), Layout: "2x2", Mix: "cpu-heavy"}, Rate: 310, Ceiling: 325, Converged: true, Trials: 7}}
	md := s.Markdown("")
	for _, want := range []string{
		"# Worker scheduling",
		"## Does the seed's \"about 20%\" penalty appear?",
		"puma:wflbw=0 against proxy:jsq",
		"## Capacity per configuration",
		"| 2x2 | cpu-heavy | 0 | puma:wflbw=0 | 310 | 325 | yes | 7 |",
		"### 2x2 · cpu-heavy · 0 ms RTT",
		"### 2x2 · cpu-heavy · 1 ms RTT",
		"| 50% | 100 | proxy:jsq | 6 | 1200 | 0 |",
		"faster",
		"0.0% [0.0, 0.0]",
		"66/34 %",
		"## Method",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
	if strings.Contains(md, "emulation") {
		t.Error("a native study speaks of emulation")
	}
	s.Emulated = "linux/arm64"
	if md := s.Markdown(""); !strings.Contains(md, "# Worker scheduling\n\n> The database and Rails ran linux/arm64 under emulation (qemu-user): these timings make no claim") {
		t.Errorf("an emulated study does not say so first:\n%s", md[:200])
	}
}

// A summary with undefined figures (a run with no successful request)
// still encodes: NaN becomes null.
func TestSummaryJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	runs := study(6)
	k := CellKey{Policy: ProxyP2C.String(), Layout: "2x2", Mix: "cpu-heavy", Fraction: 0.5}
	runs = append(runs, synthRun(k, 1, 10, 0, 5, rng))
	s := Analyze(runs, Options{Resamples: 200})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"p50":{"ms":null`) || !strings.Contains(string(b), `"share":null`) {
		t.Errorf("undefined figures are not null:\n%.400s", b)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil || len(back.Cells) != len(s.Cells) {
		t.Errorf("round trip: %v", err)
	}
}

// The baseline is compared with Puma's fixes that ran, beside the proxy:
// on a host where the proxy's hop costs more than it saves, Puma's fix
// still shows.
func TestPenaltiesAgainstPumaFixes(t *testing.T) {
	runs := study(6)
	rng := rand.New(rand.NewPCG(3, 4))
	for r := 1; r <= 6; r++ {
		k := CellKey{Policy: "puma:wflbw=0.001", Layout: "2x2", Mix: "cpu-heavy", RTTMs: 0, Fraction: 0.5}
		runs = append(runs, synthRun(k, r, 10.5, 200, 0, rng))
	}
	s := Analyze(runs, Options{Seed: 3, Resamples: 2000})
	var fasts []string
	for _, p := range s.Penalties {
		fasts = append(fasts, p.Fast)
	}
	if len(s.Penalties) != 2 || fasts[0] != ProxyJSQ.String() || fasts[1] != "puma:wflbw=0.001" {
		t.Fatalf("penalties against %v, want the JSQ proxy then puma:wflbw=0.001", fasts)
	}
	p := s.Penalties[1]
	if p.Peak == nil || !strings.HasPrefix(p.Statement, "puma:wflbw=0 against puma:wflbw=0.001") {
		t.Errorf("statement %q", p.Statement)
	}
}
