// Package stats is the statistics every study and the load drivers use:
// percentiles (Hyndman-Fan type 7), seeded percentile-bootstrap
// intervals of a median, of a change of medians and of any statistic of
// several sets' medians, the gates that withhold a claim (too few runs,
// too many failures), and the JSON numbers the summaries write them as.
package stats

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// Defaults of the gates a claim must pass.
const (
	// MinRuns is the fewest runs a cell needs for a claim.
	MinRuns = 6
	// MaxFailedFraction is the largest share of failed measured requests
	// a cell may have for a claim: 1%.
	MaxFailedFraction = 0.01
	// Resamples is the number of bootstrap resamples of every interval.
	Resamples = 10000
)

// Confidence is the level of every interval in the summary.
const Confidence = 0.95

// PercentileMethod describes Percentile; the summary repeats it.
const PercentileMethod = "linear interpolation between closest ranks (Hyndman-Fan type 7, numpy's default)"

// Percentile returns the p-quantile (0 <= p <= 1) of sorted, which must be
// sorted ascending, by linear interpolation between closest ranks
// (Hyndman and Fan's type 7, the default of numpy.percentile and R's
// quantile): with h = (n-1)·p, the result is
// x[⌊h⌋] + (h-⌊h⌋)·(x[⌊h⌋+1] - x[⌊h⌋]). The median of an even count is
// therefore the mean of the two middle values. It returns NaN for no data.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	if lo < 0 {
		return sorted[0]
	}
	if lo >= n-1 {
		return sorted[n-1]
	}
	frac := h - float64(lo)
	// The explicit conversion stops the compiler from fusing the
	// multiply-add, so every platform gives the same bits.
	return sorted[lo] + float64(frac*(sorted[lo+1]-sorted[lo]))
}

// Median returns Percentile(x, 0.5) of an unsorted slice; x is not changed.
func Median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return Percentile(s, 0.5)
}

// Interval is a confidence interval; both ends are NaN when undefined.
type Interval struct {
	Low, High float64
}

// Valid reports whether both ends are numbers.
func (iv Interval) Valid() bool { return !math.IsNaN(iv.Low) && !math.IsNaN(iv.High) }

// NoInterval is an undefined interval (both ends NaN).
func NoInterval() Interval { return Interval{math.NaN(), math.NaN()} }

// StreamRNG returns PCG (math/rand/v2) seeded with seed on the stream
// named by name (its FNV64 hash): each random order a study draws (its
// tasks, its probes, a trace's requests) has a stream of its own, so a new
// one never changes the draws of the others.
func StreamRNG(seed uint64, name string) *rand.Rand {
	return rand.New(rand.NewPCG(seed, FNV64(name)))
}

// FNV64 is the FNV-1a hash of s.
func FNV64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// NewRNG returns the generator for one key: PCG (math/rand/v2) seeded with
// the first 16 bytes of SHA-256(seed as 8 little-endian bytes || key). Each
// cell has its own key, so adding an app or a setting never changes the
// intervals of other cells.
func NewRNG(seed uint64, key string) *rand.Rand {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h := sha256.New()
	h.Write(b[:])
	h.Write([]byte(key))
	sum := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[0:8]), binary.LittleEndian.Uint64(sum[8:16])))
}

// MedianResampler draws bootstrap resamples of x and returns their
// medians without sorting each resample: it counts how often each index
// is drawn and walks the counts in ascending order of x. The result is the
// same number Percentile(sorted resample, 0.5) gives.
type MedianResampler struct {
	x      []float64
	order  []int // indices of x in ascending order of value
	counts []int32
	lo     int     // sorted position of the lower middle value
	frac   float64 // interpolation weight of the upper middle value
}

// NewMedianResampler prepares the resamples of x.
func NewMedianResampler(x []float64) *MedianResampler {
	n := len(x)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case x[a] < x[b]:
			return -1
		case x[a] > x[b]:
			return 1
		}
		return 0
	})
	h := float64(n-1) * 0.5
	lo := int(math.Floor(h))
	return &MedianResampler{x: x, order: order, counts: make([]int32, n), lo: lo, frac: h - float64(lo)}
}

// Draw takes len(x) indices with replacement (rng.IntN, in order) and
// returns the median of the values drawn.
func (r *MedianResampler) Draw(rng *rand.Rand) float64 {
	n := len(r.x)
	clear(r.counts)
	for range n {
		r.counts[rng.IntN(n)]++
	}
	if n == 1 {
		return r.x[0]
	}
	var vlo, vhi float64
	haveLo := false
	cum := 0
	for _, i := range r.order {
		c := int(r.counts[i])
		if c == 0 {
			continue
		}
		cum += c
		if !haveLo && cum > r.lo {
			vlo, haveLo = r.x[i], true
		}
		if cum > r.lo+1 {
			vhi = r.x[i]
			break
		}
	}
	// The same expression as Percentile, so the bits match.
	return vlo + float64(r.frac*(vhi-vlo))
}

// BootstrapMedianCI returns the 95% percentile-bootstrap interval of the
// median of x: draw len(x) values with replacement, take their median,
// repeat resamples times, and report the 2.5th and 97.5th percentiles
// (Percentile) of those medians. Indices are drawn with rng.IntN in order,
// resample by resample. NaN interval for empty x.
func BootstrapMedianCI(x []float64, resamples int, rng *rand.Rand) Interval {
	if len(x) == 0 || resamples <= 0 {
		return NoInterval()
	}
	meds := make([]float64, resamples)
	r := NewMedianResampler(x)
	for b := range meds {
		meds[b] = r.Draw(rng)
	}
	return Tails(meds)
}

// BootstrapChangeCI returns the 95% percentile-bootstrap interval of
// median(target) - median(base), resampling base and target independently
// (each resample draws len(base) baseline indices, then len(target) target
// indices, from one rng).
func BootstrapChangeCI(base, target []float64, resamples int, rng *rand.Rand) Interval {
	change, _ := BootstrapChangeCIs(base, target, resamples, rng)
	return change
}

// BootstrapChangeCIs returns, from the same resamples as
// BootstrapChangeCI (so the change's interval is the same), the 95%
// intervals of the change and of the relative change in percent,
// 100 × (median(target) / median(base) − 1).
func BootstrapChangeCIs(base, target []float64, resamples int, rng *rand.Rand) (change, percent Interval) {
	if len(base) == 0 || len(target) == 0 || resamples <= 0 {
		return NoInterval(), NoInterval()
	}
	d := make([]float64, resamples)
	rel := make([]float64, resamples)
	rb, rt := NewMedianResampler(base), NewMedianResampler(target)
	for b := range d {
		mb := rb.Draw(rng)
		mt := rt.Draw(rng)
		d[b] = mt - mb
		rel[b] = 100 * (mt/mb - 1)
	}
	return Tails(d), Tails(rel)
}

// BootstrapMediansCI is the general form of the intervals above, for a
// statistic of several independent sets' medians: each resample draws
// every set anew (len(set) indices with rng.IntN, set after set), f maps
// the sets' medians to the statistic, and the 95% percentile interval of
// f's values is returned; resamples where f is not finite (a ratio over a
// zero median) are left out. NaN interval when a set is empty or no
// resample is finite.
func BootstrapMediansCI(sets [][]float64, resamples int, rng *rand.Rand, f func(meds []float64) float64) Interval {
	rs := make([]*MedianResampler, len(sets))
	for i, s := range sets {
		if len(s) == 0 {
			return NoInterval()
		}
		rs[i] = NewMedianResampler(s)
	}
	meds := make([]float64, len(sets))
	var v []float64
	for range resamples {
		for i, r := range rs {
			meds[i] = r.Draw(rng)
		}
		if x := f(meds); !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return NoInterval()
	}
	return Tails(v)
}

// Tails is the 95% percentile interval of the resampled statistics v
// (sorted in place).
func Tails(v []float64) Interval {
	slices.Sort(v)
	a := (1 - Confidence) / 2
	return Interval{Percentile(v, a), Percentile(v, 1-a)}
}

// FailedFraction is the share of measured requests that failed (0 when
// there were none): the failure gate compares it with a study's limit.
func FailedFraction(failed, ok int) float64 { return Share(failed, failed+ok) }

// Share is n / of, 0 when of is 0.
func Share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// BootstrapDiffChangeCI returns the 95% percentile-bootstrap interval of
// (median(bTarget) - median(bBase)) - (median(aTarget) - median(aBase)),
// resampling the four sets of runs independently: each resample draws
// A's baseline, A's target, B's baseline and B's target indices, in that
// order, from one rng.
func BootstrapDiffChangeCI(aBase, aTarget, bBase, bTarget []float64, resamples int, rng *rand.Rand) Interval {
	if len(aBase) == 0 || len(aTarget) == 0 || len(bBase) == 0 || len(bTarget) == 0 || resamples <= 0 {
		return NoInterval()
	}
	ab, at, bb, bt := NewMedianResampler(aBase), NewMedianResampler(aTarget), NewMedianResampler(bBase), NewMedianResampler(bTarget)
	d := make([]float64, resamples)
	for i := range d {
		mab := ab.Draw(rng)
		mat := at.Draw(rng)
		mbb := bb.Draw(rng)
		mbt := bt.Draw(rng)
		d[i] = (mbt - mbb) - (mat - mab)
	}
	return Tails(d)
}
