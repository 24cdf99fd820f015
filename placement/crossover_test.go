package placement

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results/stats"
)

func TestPredictedCrossover(t *testing.T) {
	c := testCalibration()
	at := func(path string, n int) []Estimate {
		r, err := c.RouteN(path, n)
		if err != nil {
			t.Fatal(err)
		}
		est, err := c.Estimates(r)
		if err != nil {
			t.Fatal(err)
		}
		return est
	}
	for _, tc := range []struct {
		path         string
		m            Model
		n            float64
		below, above string
	}{
		// Network-only: (1.5 − 1.0) / (0.4 − 0.2) for every route.
		{"/feed", ModelNetworkOnly, 2.5, "a", "b"},
		{"/serial", ModelNetworkOnly, 2.5, "a", "b"},
		// Profiled: intercepts 1.0 + residual and 1.5 + residual.
		{"/feed", ModelProfiled, (1.8 - 1.3) / 0.2, "a", "b"},
		{"/naive", ModelProfiled, (2.0 - 1.7) / 0.2, "a", "b"},
		{"/serial", ModelProfiled, (1.9 - 1.2) / 0.2, "a", "b"},
	} {
		est := at(tc.path, 0)
		got, err := PredictedCrossover(est[0], est[1], tc.m)
		if err != nil {
			t.Fatal(err)
		}
		if got.Never || !near(got.N, tc.n) || got.Below != tc.below || got.Above != tc.above {
			t.Errorf("%s %s: %+v, want N=%v %s below, %s above", tc.path, tc.m, got, tc.n, tc.below, tc.above)
		}
		// Symmetric in the hosts.
		rev, _ := PredictedCrossover(est[1], est[0], tc.m)
		if !near(rev.N, got.N) || rev.Below != got.Below || rev.Above != got.Above {
			t.Errorf("%s %s reversed: %+v vs %+v", tc.path, tc.m, rev, got)
		}
		// The estimates are equal at the crossover.
		ia, sa, _ := est[0].Line(tc.m)
		ib, sb, _ := est[1].Line(tc.m)
		if !near(ia+got.N*sa, ib+got.N*sb) {
			t.Errorf("%s %s: estimates differ at N=%v", tc.path, tc.m, got.N)
		}
	}
	if _, err := PredictedCrossover(Estimate{}, Estimate{}, "cpu"); err == nil {
		t.Error("unknown model: no error")
	}
}

func TestPredictedCrossoverNever(t *testing.T) {
	mk := func(host string, cp, sql float64) Estimate {
		return Estimate{Host: host, ClientPathMs: cp, SQLRTTMs: sql}
	}
	for _, tc := range []struct {
		name         string
		a, b         Estimate
		never        bool
		n            float64
		below, above string
		text         string
	}{
		{"parallel", mk("a", 1, 0.3), mk("b", 2, 0.3), true, math.NaN(), "a", "a", "never (a lower at every N ≥ 0)"},
		{"identical", mk("a", 1, 0.3), mk("b", 1, 0.3), true, math.NaN(), "", "", "never (identical estimates)"},
		// a is lower at N=0 and flatter: the lines met at N = −5.
		{"negative root", mk("a", 1, 0.2), mk("b", 2, 0.4), true, math.NaN(), "a", "a", "never (a lower at every N ≥ 0)"},
		{"at zero", mk("a", 1, 0.2), mk("b", 1, 0.4), false, 0, "b", "a", "0.00 (b below, a above)"},
		{"crosses", mk("a", 1, 0.4), mk("b", 2, 0.2), false, 5, "a", "b", "5.00 (a below, b above)"},
	} {
		got, err := PredictedCrossover(tc.a, tc.b, ModelNetworkOnly)
		if err != nil {
			t.Fatal(err)
		}
		if got.Never != tc.never || got.Below != tc.below || got.Above != tc.above {
			t.Errorf("%s: %+v", tc.name, got)
		}
		if tc.never != math.IsNaN(got.N) || (!tc.never && !near(got.N, tc.n)) {
			t.Errorf("%s: N=%v, want %v", tc.name, got.N, tc.n)
		}
		if got.String() != tc.text {
			t.Errorf("%s: %q, want %q", tc.name, got.String(), tc.text)
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if tc.never != strings.Contains(string(b), `"n":null`) {
			t.Errorf("%s: JSON %s", tc.name, b)
		}
	}
}

func pts(diffs map[int]float64) []SweepPoint {
	var out []SweepPoint
	for n, d := range diffs {
		out = append(out, SweepPoint{N: n, AP50Ms: 10 + d, BP50Ms: 10, DiffMs: d, DiffCI: stats.CI{Low: stats.Num(math.NaN()), High: stats.Num(math.NaN())}})
	}
	return out
}

// TestMeasuredCrossoverWriteUp runs the write-up's first sweep table and
// intervals: the crossover lies between one and three calls.
func TestMeasuredCrossoverWriteUp(t *testing.T) {
	table := []struct {
		n    int
		a, b float64
		ci   stats.CI
	}{
		{0, 1.044, 1.499, stats.CI{Low: stats.Num(math.NaN()), High: stats.Num(math.NaN())}},
		{1, 1.668, 1.844, stats.CI{Low: -0.246, High: -0.115}},
		{3, 2.603, 2.443, stats.CI{Low: 0.046, High: 0.260}},
		{6, 3.956, 3.225, stats.CI{}},
		{12, 6.668, 4.555, stats.CI{}},
		{24, 12.039, 7.405, stats.CI{}},
		{48, 22.435, 12.743, stats.CI{}},
	}
	var p []SweepPoint
	for i := len(table) - 1; i >= 0; i-- { // out of order on purpose
		r := table[i]
		ci := r.ci
		if i > 2 {
			d := r.a - r.b
			ci = stats.CI{Low: stats.Num(d - 0.1), High: stats.Num(d + 0.1)}
		}
		p = append(p, SweepPoint{N: r.n, AP50Ms: r.a, BP50Ms: r.b, DiffMs: r.a - r.b, DiffCI: ci})
	}
	mc, err := MeasureCrossover(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(mc.Crossings) != 1 {
		t.Fatalf("crossings %+v", mc.Crossings)
	}
	c := mc.Crossings[0]
	d1, d3 := 1.668-1.844, 2.603-2.443
	want := 1 + 2*d1/(d1-d3)
	if c.Low != 1 || c.High != 3 || !near(c.N, want) || c.From != -1 || c.To != 1 {
		t.Errorf("crossing %+v, want 1..3 at %v", c, want)
	}
	if len(mc.Supported) != 1 || mc.Supported[0] != (CIBracket{Low: 1, High: 3, From: -1, To: 1}) {
		t.Errorf("supported %+v", mc.Supported)
	}
	if got := mc.String("A", "B"); got != "between N=1 and N=3 (interpolated 2.05); intervals: between N=1 and N=3" {
		t.Errorf("String: %q", got)
	}

	// The two-call follow-up: a tiny A-faster difference whose interval
	// holds 0 moves the point estimate to 2..3 but not the supported
	// bracket.
	p = append(p, SweepPoint{N: 2, DiffMs: -0.006, DiffCI: stats.CI{Low: -0.075, High: 0.048}})
	mc, _ = MeasureCrossover(p)
	if len(mc.Crossings) != 1 || mc.Crossings[0].Low != 2 || mc.Crossings[0].High != 3 {
		t.Errorf("with N=2: crossings %+v", mc.Crossings)
	}
	if len(mc.Supported) != 1 || mc.Supported[0].Low != 1 || mc.Supported[0].High != 3 {
		t.Errorf("with N=2: supported %+v", mc.Supported)
	}
}

func TestMeasuredCrossoverCases(t *testing.T) {
	for _, tc := range []struct {
		name      string
		diffs     map[int]float64
		crossings []MeasuredCrossing
		ties      []int
		sign      int
		text      string
	}{
		{name: "none, B faster", diffs: map[int]float64{0: 0.5, 3: 1, 12: 4}, sign: 1,
			text: "none in N=0..12: B faster throughout; no sign change carried by the intervals"},
		{name: "none, A faster", diffs: map[int]float64{0: -0.5, 3: -1}, sign: -1},
		{name: "crossing", diffs: map[int]float64{0: -1, 4: 3}, crossings: []MeasuredCrossing{{Low: 0, High: 4, N: 1, From: -1, To: 1}}},
		{name: "exact hit", diffs: map[int]float64{0: -1, 2: 0, 4: 1}, crossings: []MeasuredCrossing{{Low: 2, High: 2, N: 2, From: -1, To: 1}},
			text: "at N=2 (exact); no sign change carried by the intervals"},
		{name: "run of zeros", diffs: map[int]float64{0: -1, 1: 0, 3: 0, 6: 2}, crossings: []MeasuredCrossing{{Low: 1, High: 3, N: 2, From: -1, To: 1}}},
		{name: "touch", diffs: map[int]float64{0: -1, 2: 0, 4: -1}, ties: []int{2}, sign: -1},
		{name: "zero at the end", diffs: map[int]float64{0: -1, 2: -0.5, 4: 0}, ties: []int{4}, sign: -1},
		{name: "zero at the start", diffs: map[int]float64{0: 0, 2: 0.5}, ties: []int{0}, sign: 1},
		{name: "all zero", diffs: map[int]float64{0: 0, 2: 0}, ties: []int{0, 2}, sign: 0},
		{name: "multiple", diffs: map[int]float64{0: -1, 1: 1, 3: -1, 6: 2},
			crossings: []MeasuredCrossing{{Low: 0, High: 1, N: 0.5, From: -1, To: 1}, {Low: 1, High: 3, N: 2, From: 1, To: -1}, {Low: 3, High: 6, N: 4, From: -1, To: 1}},
			text:      "3 crossings: N=0..1 (0.50, A faster to B faster); N=1..3 (2.00, B faster to A faster); N=3..6 (4.00, A faster to B faster); no sign change carried by the intervals"},
	} {
		mc, err := MeasureCrossover(pts(tc.diffs))
		if err != nil {
			t.Fatal(err)
		}
		if len(mc.Crossings) != len(tc.crossings) {
			t.Errorf("%s: crossings %+v, want %+v", tc.name, mc.Crossings, tc.crossings)
			continue
		}
		for i, c := range mc.Crossings {
			w := tc.crossings[i]
			if c.Low != w.Low || c.High != w.High || !near(c.N, w.N) || c.From != w.From || c.To != w.To {
				t.Errorf("%s: crossing %d %+v, want %+v", tc.name, i, c, w)
			}
		}
		if !slices.Equal(mc.Ties, tc.ties) || mc.Sign != tc.sign {
			t.Errorf("%s: ties %v sign %d, want %v %d", tc.name, mc.Ties, mc.Sign, tc.ties, tc.sign)
		}
		if tc.text != "" && mc.String("A", "B") != tc.text {
			t.Errorf("%s: %q\nwant %q", tc.name, mc.String("A", "B"), tc.text)
		}
	}
}

func TestMeasuredCrossoverSupportedMultiple(t *testing.T) {
	p := []SweepPoint{
		{N: 0, DiffMs: -1, DiffCI: stats.CI{Low: -1.2, High: -0.8}},
		{N: 1, DiffMs: 0.1, DiffCI: stats.CI{Low: -0.1, High: 0.3}}, // holds 0
		{N: 2, DiffMs: 1, DiffCI: stats.CI{Low: 0.8, High: 1.2}},
		{N: 3, DiffMs: -1, DiffCI: stats.CI{Low: -1.2, High: -0.8}},
		{N: 4, DiffMs: -2, DiffCI: stats.CI{Low: stats.Num(math.NaN()), High: stats.Num(math.NaN())}}, // undefined: no side
	}
	mc, err := MeasureCrossover(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []CIBracket{{Low: 0, High: 2, From: -1, To: 1}, {Low: 2, High: 3, From: 1, To: -1}}
	if !slices.Equal(mc.Supported, want) {
		t.Errorf("supported %+v, want %+v", mc.Supported, want)
	}
	if !strings.HasSuffix(mc.String("A", "B"), "intervals: between N=0 and N=2, between N=2 and N=3") {
		t.Errorf("String: %q", mc.String("A", "B"))
	}
}

func TestMeasuredCrossoverErrors(t *testing.T) {
	if _, err := MeasureCrossover([]SweepPoint{{N: 1, DiffMs: 1}, {N: 1, DiffMs: 2}}); err == nil {
		t.Error("duplicate N: no error")
	}
	if _, err := MeasureCrossover([]SweepPoint{{N: 1, DiffMs: math.NaN()}}); err == nil {
		t.Error("NaN difference: no error")
	}
	mc, err := MeasureCrossover(nil)
	if err != nil || mc.String("A", "B") != "no sweep points" {
		t.Errorf("empty: %v %q", err, mc.String("A", "B"))
	}
}

func TestSweep(t *testing.T) {
	a := map[int][]float64{0: {1, 1.1, 0.9, 1.05, 0.95}, 3: {2, 2.1, 1.9, 2.05, 1.95}, 6: {9}}
	b := map[int][]float64{0: {1.5, 1.6, 1.4, 1.55, 1.45}, 3: {1.8, 1.9, 1.7, 1.85, 1.75}, 12: {4}}
	p := Sweep(a, b, 7, 1000)
	if len(p) != 2 || p[0].N != 0 || p[1].N != 3 {
		t.Fatalf("points %+v (only N on both hosts, sorted)", p)
	}
	if !near(p[0].DiffMs, -0.5) || !near(p[1].DiffMs, 0.2) || p[0].NA != 5 || p[1].NB != 5 {
		t.Errorf("points %+v", p)
	}
	if p[0].DiffCI.Excludes0() != -1 || p[1].DiffCI.Excludes0() != 1 {
		t.Errorf("intervals %+v %+v", p[0].DiffCI, p[1].DiffCI)
	}
	if q := Sweep(a, b, 7, 1000); q[1].DiffCI != p[1].DiffCI {
		t.Error("same seed, different interval")
	}
	mc, _ := MeasureCrossover(p)
	if len(mc.Crossings) != 1 || len(mc.Supported) != 1 {
		t.Errorf("%+v", mc)
	}
	// Zero resamples take the default count, as SummarizeRouted does,
	// rather than leaving every interval empty.
	if d := Sweep(a, b, 7, 0); d[0].DiffCI.Excludes0() != -1 {
		t.Errorf("default resamples: %+v", d[0].DiffCI)
	}
}

func TestCrossoverJSONRoundTrip(t *testing.T) {
	for _, c := range []Crossover{
		{Model: ModelProfiled, A: "a", B: "b", N: 3.55, Below: "a", Above: "b"},
		{Model: ModelNetworkOnly, A: "a", B: "b", Never: true, N: math.NaN(), Below: "b", Above: "b"},
	} {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back Crossover
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.String() != c.String() || back.Model != c.Model || back.Never != c.Never {
			t.Errorf("%s → %s → %+v", c, b, back)
		}
	}
}
