package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPercentileLinearInterpolation(t *testing.T) {
	// Expected values follow h = (n-1)p by hand; they equal
	// numpy.percentile's defaults (e.g. percentile([1,2,3,4], 90) = 3.7).
	cases := []struct {
		x    []float64
		p    float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4}, 0.9, 3.7},
		{[]float64{1, 2, 3, 4}, 0.99, 3.97},
		{[]float64{1, 2, 3, 4}, 0, 1},
		{[]float64{1, 2, 3, 4}, 1, 4},
		{[]float64{15, 20, 35, 40, 50}, 0.4, 29},
		{[]float64{15, 20, 35, 40, 50}, 0.5, 35},
		{[]float64{7}, 0.99, 7},
	}
	for _, c := range cases {
		if got := Percentile(c.x, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Percentile(%v, %v) = %v, want %v", c.x, c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("Percentile(nil) = %v, want NaN", got)
	}
	x := []float64{4, 1, 3, 2}
	if got := Median(x); got != 2.5 {
		t.Errorf("Median = %v, want 2.5", got)
	}
	if !slices.Equal(x, []float64{4, 1, 3, 2}) {
		t.Errorf("Median changed its input: %v", x)
	}
}

func TestBootstrapGolden(t *testing.T) {
	if got := Median(goldenBase); math.Abs(got-0.905) > 1e-12 {
		t.Errorf("median of base = %v, want 0.905", got)
	}
	if got := Median(goldenTarget); math.Abs(got-3.39) > 1e-12 {
		t.Errorf("median of target = %v, want 3.39", got)
	}
	ci := BootstrapMedianCI(goldenBase, 10000, NewRNG(42, "cell\x00go\x00/feed\x000")) // the RTT study's key of that cell
	if math.Abs(ci.Low-0.88) > 1e-12 || math.Abs(ci.High-0.93) > 1e-12 {
		t.Errorf("base CI = %+v, want [0.88, 0.93]", ci)
	}
	cc := BootstrapChangeCI(goldenBase, goldenTarget, 10000, NewRNG(42, "change\x00go\x00/feed\x000.75"))
	if math.Abs(cc.Low-2.41) > 1e-12 || math.Abs(cc.High-2.58) > 1e-12 {
		t.Errorf("change CI = %+v, want [2.41, 2.58]", cc)
	}
}

func TestBootstrapAllEqualIsZeroWidth(t *testing.T) {
	x := []float64{1.25, 1.25, 1.25, 1.25, 1.25, 1.25}
	ci := BootstrapMedianCI(x, 10000, NewRNG(1, "k"))
	if ci.Low != 1.25 || ci.High != 1.25 {
		t.Errorf("CI of equal values = %+v, want [1.25, 1.25]", ci)
	}
	y := []float64{3.5, 3.5, 3.5}
	cc := BootstrapChangeCI(x, y, 10000, NewRNG(1, "k"))
	if cc.Low != 2.25 || cc.High != 2.25 {
		t.Errorf("change CI of equal values = %+v, want [2.25, 2.25]", cc)
	}
}

// With two values a < b, a resample's median is a (prob 1/4), b (1/4) or
// their mean (1/2), so the 95% interval is exactly [a, b] and about a
// quarter of the bootstrap medians equal a.
func TestBootstrapResamplesWithReplacement(t *testing.T) {
	x := []float64{1, 3}
	ci := BootstrapMedianCI(x, 10000, NewRNG(7, "two"))
	if ci.Low != 1 || ci.High != 3 {
		t.Errorf("CI = %+v, want [1, 3]", ci)
	}
	rng := NewRNG(7, "two")
	r := NewMedianResampler(x)
	counts := map[float64]int{}
	for range 10000 {
		counts[r.Draw(rng)]++
	}
	for v, want := range map[float64]float64{1: 0.25, 2: 0.5, 3: 0.25} {
		// 0.03 is about 6 standard deviations of a 10,000-draw frequency.
		if f := float64(counts[v]) / 10000; math.Abs(f-want) > 0.03 {
			t.Errorf("share of median %v = %.4f, want about %v", v, f, want)
		}
	}
}

// The counting resampler gives bit for bit what sorting each resample and
// taking Percentile(0.5) gives, for any size, with ties and unsorted input.
func TestMedianResamplerMatchesSorting(t *testing.T) {
	gen := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 25; n++ {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(gen.IntN(8)) + gen.Float64()*float64(gen.IntN(2)) // ties likely
		}
		fast, slow := NewRNG(5, "eq"), NewRNG(5, "eq")
		r := NewMedianResampler(x)
		buf := make([]float64, n)
		for b := range 200 {
			for i := range buf {
				buf[i] = x[slow.IntN(n)]
			}
			slices.Sort(buf)
			if got, want := r.Draw(fast), Percentile(buf, 0.5); got != want {
				t.Fatalf("n=%d resample %d: got %v, want %v (x=%v)", n, b, got, want, x)
			}
		}
	}
}

// Shifting every target value by c shifts the change and both ends of its
// interval by exactly c (values and c are dyadic, so the arithmetic is
// exact, and the same seed draws the same indices).
func TestChangeShiftsExactly(t *testing.T) {
	base := []float64{0.875, 0.9375, 1, 0.8125, 0.90625, 0.96875, 0.84375}
	const c = 2.25
	shifted := make([]float64, len(base))
	for i, v := range base {
		shifted[i] = v + c
	}
	if got := Median(shifted) - Median(base); got != c {
		t.Errorf("change = %v, want %v", got, c)
	}
	target := []float64{3.125, 3.25, 3.0625, 3.5, 3.1875, 3.375}
	moved := make([]float64, len(target))
	for i, v := range target {
		moved[i] = v + c
	}
	a := BootstrapChangeCI(base, target, 10000, NewRNG(9, "shift"))
	b := BootstrapChangeCI(base, moved, 10000, NewRNG(9, "shift"))
	if b.Low-a.Low != c || b.High-a.High != c {
		t.Errorf("shifted CI %+v, unshifted %+v: ends should move by exactly %v", b, a, c)
	}
	// Against itself the change interval straddles 0.
	self := BootstrapChangeCI(base, base, 10000, NewRNG(9, "self"))
	if !(self.Low < 0 && self.High > 0) {
		t.Errorf("change CI of a cell against itself = %+v, want it to contain 0", self)
	}
}

// NewRNG seeds PCG with the first 16 bytes of SHA-256(LE(seed) || key).
// The seed words below come from Python's hashlib, independently of Go.
func TestNewRNGDerivation(t *testing.T) {
	want := rand.New(rand.NewPCG(7262542639453467824, 11733678674020668872))
	got := NewRNG(42, "x")
	for i := range 4 {
		if g, w := got.Uint64(), want.Uint64(); g != w {
			t.Fatalf("draw %d = %d, want %d", i, g, w)
		}
	}
	if NewRNG(42, "x").Uint64() == NewRNG(42, "y").Uint64() {
		t.Error("different keys give the same stream")
	}
	if NewRNG(42, "x").Uint64() == NewRNG(43, "x").Uint64() {
		t.Error("different seeds give the same stream")
	}
}

func BenchmarkBootstrapMedianCI(b *testing.B) {
	x := slices.Clone(goldenTarget)
	x = append(x, goldenTarget...)
	x = append(x, goldenTarget[:4]...) // 20 runs, the study's design
	b.ReportAllocs()
	for b.Loop() {
		BootstrapMedianCI(x, 10000, NewRNG(42, "bench"))
	}
}

func BenchmarkBootstrapChangeCI(b *testing.B) {
	base := append(append(slices.Clone(goldenBase), goldenBase...), goldenBase[:4]...)
	target := append(append(slices.Clone(goldenTarget), goldenTarget...), goldenTarget[:4]...)
	b.ReportAllocs()
	for b.Loop() {
		BootstrapChangeCI(base, target, 10000, NewRNG(42, "bench"))
	}
}

// The prediction takes the round trips the trace saw on the wire: a
// route's own, or a mix's weighted by its shares; nothing when untraced.
func TestBootstrapMediansCIIsTheChangeCI(t *testing.T) {
	base := []float64{1.1, 1.3, 0.9, 1.2, 1.0, 1.4}
	target := []float64{2.0, 2.4, 1.9, 2.2, 2.1}
	want := BootstrapChangeCI(base, target, 2000, NewRNG(7, "c"))
	got := BootstrapMediansCI([][]float64{base, target}, 2000, NewRNG(7, "c"), func(m []float64) float64 { return m[1] - m[0] })
	if got != want {
		t.Errorf("medians CI %v, change CI %v", got, want)
	}
	none := BootstrapMediansCI([][]float64{{0}, {1}}, 100, NewRNG(7, "c"), func(m []float64) float64 { return m[1] / m[0] })
	if !math.IsNaN(none.Low) || !math.IsNaN(none.High) {
		t.Errorf("a statistic never finite gave %v", none)
	}
	if iv := BootstrapMediansCI([][]float64{base, nil}, 100, NewRNG(7, "c"), func(m []float64) float64 { return m[0] }); !math.IsNaN(iv.Low) {
		t.Errorf("an empty set gave %v", iv)
	}
}

// Golden values: run-level p50s of a fixed cell and the seed 42. An
// independent Python implementation (random.choices, 10,000 resamples,
// same percentile rule) gives [0.88, 0.93] and [2.41..2.415, 2.58], so the
// pinned bounds are the expected ones, not just whatever the code printed.
var (
	goldenBase   = []float64{0.91, 0.88, 0.95, 0.90, 0.93, 0.89, 0.92, 0.87}
	goldenTarget = []float64{3.40, 3.31, 3.52, 3.38, 3.45, 3.36, 3.49, 3.29}
)
