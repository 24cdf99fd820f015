package placement

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rttlab/rttlab/results/stats"
)

// Crossover is a model's predicted crossover in N between two hosts: the N
// at which their estimates are equal, the lines being intercept + N × SQL
// RTT per host.
type Crossover struct {
	Model Model  `json:"model"`
	A     string `json:"a"`
	B     string `json:"b"`
	// Never is set when the lines do not meet at any N ≥ 0 (parallel, or
	// meeting at a negative N) or are the same line; N is then NaN
	// (written as null in JSON).
	Never bool    `json:"never"`
	N     float64 `json:"-"`
	// Below is the host with the lower estimate for N below the crossover
	// and Above the one above it. When Never, both name the host that is
	// lower at every N ≥ 0, or are empty when the lines are the same.
	Below string `json:"below"`
	Above string `json:"above"`
}

// String writes the crossover as the summaries do: "3.55 (A below, B
// above)" or "never (B lower at every N ≥ 0)".
func (c Crossover) String() string {
	switch {
	case c.Never && c.Below == "":
		return "never (identical estimates)"
	case c.Never:
		return "never (" + c.Below + " lower at every N ≥ 0)"
	}
	return strconv.FormatFloat(c.N, 'f', 2, 64) + " (" + c.Below + " below, " + c.Above + " above)"
}

// PredictedCrossover returns the crossover of model m between the estimates
// a and b of the same route: N* = (intercept_b − intercept_a) / (slope_a −
// slope_b), when the slopes differ and N* ≥ 0 (N* = 0 counts as crossing).
// The host with the smaller slope is lower above N*.
func PredictedCrossover(a, b Estimate, m Model) (Crossover, error) {
	ia, sa, err := a.Line(m)
	if err != nil {
		return Crossover{}, err
	}
	ib, sb, _ := b.Line(m)
	c := Crossover{Model: m, A: a.Host, B: b.Host, N: math.NaN()}
	lowerOf := func(x, y float64) string { // the host with the smaller of x (a) and y (b)
		switch {
		case x < y:
			return a.Host
		case y < x:
			return b.Host
		}
		return ""
	}
	if sa == sb {
		c.Never = true
		c.Below = lowerOf(ia, ib)
		c.Above = c.Below
		return c, nil
	}
	n := (ib - ia) / (sa - sb)
	flatter := lowerOf(sa, sb)
	if n < 0 {
		c.Never = true
		c.Below, c.Above = flatter, flatter
		return c, nil
	}
	if n == 0 {
		n = 0 // not −0
	}
	c.N = n
	c.Above = flatter
	c.Below = a.Host
	if flatter == a.Host {
		c.Below = b.Host
	}
	return c, nil
}

// MarshalJSON writes N as null when it is NaN.
func (c Crossover) MarshalJSON() ([]byte, error) {
	type plain Crossover
	var n *float64
	if !math.IsNaN(c.N) {
		n = &c.N
	}
	return json.Marshal(struct {
		plain
		N *float64 `json:"n"`
	}{plain(c), n})
}

// UnmarshalJSON reads what MarshalJSON writes (null N: NaN), so a summary
// read back keeps its crossovers.
func (c *Crossover) UnmarshalJSON(b []byte) error {
	type plain Crossover
	var v struct {
		plain
		N *float64 `json:"n"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Crossover(v.plain)
	c.N = math.NaN()
	if v.N != nil {
		c.N = *v.N
	}
	return nil
}

// SweepPoint is one N of a serial-call sweep on two hosts A and B: each
// host's p50 from direct requests and the bootstrap interval of
// p50(A) − p50(B).
type SweepPoint struct {
	N      int     `json:"n"`
	AP50Ms float64 `json:"a_p50_ms"`
	BP50Ms float64 `json:"b_p50_ms"`
	// DiffMs = AP50Ms − BP50Ms: positive when B is faster.
	DiffMs float64  `json:"diff_ms"`
	DiffCI stats.CI `json:"diff_ci"`
	// NA and NB count the latencies behind each p50.
	NA int `json:"na"`
	NB int `json:"nb"`
}

// SweepKey is the stats.NewRNG key of the A − B interval at N.
func SweepKey(n int) string { return "placement-sweep\x00" + strconv.Itoa(n) }

// Sweep builds the sweep points from per-N latencies (milliseconds) of A
// and B: the p50s (stats.Percentile) and a percentile-bootstrap 95%
// interval of median(A) − median(B), A and B resampled independently
// (stats.BootstrapChangeCI with B as the base), from
// stats.NewRNG(seed, SweepKey(N)); resamples ≤ 0 means
// stats.Resamples. Only N present for both hosts make a
// point; the points come sorted by N.
func Sweep(a, b map[int][]float64, seed uint64, resamples int) []SweepPoint {
	if resamples <= 0 {
		resamples = stats.Resamples
	}
	var out []SweepPoint
	for n, la := range a {
		lb, ok := b[n]
		if !ok || len(la) == 0 || len(lb) == 0 {
			continue
		}
		pa, pb := stats.Median(la), stats.Median(lb)
		out = append(out, SweepPoint{
			N: n, AP50Ms: pa, BP50Ms: pb, DiffMs: pa - pb,
			DiffCI: stats.CIOf(stats.BootstrapChangeCI(lb, la, resamples, stats.NewRNG(seed, SweepKey(n)))),
			NA:     len(la), NB: len(lb),
		})
	}
	slices.SortFunc(out, func(x, y SweepPoint) int { return x.N - y.N })
	return out
}

// MeasuredCrossing is one change of sign of p50(A) − p50(B) between
// consecutive sweep points.
type MeasuredCrossing struct {
	// Low and High are the bracketing N values: the last N on the From
	// side and the first on the To side; equal for an exact hit (A − B
	// exactly 0 at that N), and spanning a run of exact zeros.
	Low  int `json:"low"`
	High int `json:"high"`
	// N is the point estimate: the zero of the straight line through
	// (Low, diff) and (High, diff); the N of an exact hit; the middle of a
	// run of zeros.
	N float64 `json:"n"`
	// From and To are the signs of A − B before and after: −1 A faster,
	// +1 B faster.
	From int `json:"from"`
	To   int `json:"to"`
}

// CIBracket is an interval of N over which the sign of A − B changes
// according to the bootstrap intervals: Low is the last N whose interval
// excludes 0 on the From side, High the next N whose interval excludes 0
// on the other side; points between them have intervals that contain 0.
type CIBracket struct {
	Low  int `json:"low"`
	High int `json:"high"`
	From int `json:"from"`
	To   int `json:"to"`
}

// MeasuredCrossover is what a sweep says about the crossover.
type MeasuredCrossover struct {
	Points []SweepPoint `json:"points"`
	// Crossings are the sign changes of the p50 differences, by N. More
	// than one means the sweep crosses back and forth (noise, or lines
	// that are not straight); all are reported.
	Crossings []MeasuredCrossing `json:"crossings"`
	// Supported are the sign changes that the intervals carry.
	Supported []CIBracket `json:"supported"`
	// Ties lists N where A − B is exactly 0 without a sign change across
	// it (a touch, or a zero at either end of the sweep).
	Ties []int `json:"ties,omitempty"`
	// Sign is the sign of A − B shared by every non-zero point when there
	// is no crossing (−1 A faster throughout, +1 B faster, 0 no non-zero
	// point); 0 when there are crossings.
	Sign int `json:"sign"`
}

func sign(v float64) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// MeasureCrossover finds where the sign of A − B changes in a sweep. The
// points are sorted by N first; an N listed twice or a difference that is
// not a number is an error. Each sign change between consecutive N with
// non-zero differences is a crossing, its N interpolated linearly; a run of
// exact zeros between opposite signs is one crossing spanning the run; a
// zero without a sign change across it is a tie, not a crossing.
func MeasureCrossover(points []SweepPoint) (MeasuredCrossover, error) {
	p := slices.Clone(points)
	slices.SortFunc(p, func(x, y SweepPoint) int { return x.N - y.N })
	for i := range p {
		if math.IsNaN(p[i].DiffMs) || math.IsInf(p[i].DiffMs, 0) {
			return MeasuredCrossover{}, fmt.Errorf("sweep N=%d: A − B is %v", p[i].N, p[i].DiffMs)
		}
		if i > 0 && p[i].N == p[i-1].N {
			return MeasuredCrossover{}, fmt.Errorf("sweep lists N=%d twice", p[i].N)
		}
	}
	mc := MeasuredCrossover{Points: p, Crossings: []MeasuredCrossing{}, Supported: []CIBracket{}}
	mc.findCrossings()
	mc.findSupported()
	if len(mc.Crossings) == 0 {
		for _, q := range p {
			if s := sign(q.DiffMs); s != 0 {
				mc.Sign = s
				break
			}
		}
	}
	return mc, nil
}

// findCrossings adds the sign changes of the sorted points' differences
// to Crossings and the zeros without a sign change across them to Ties.
func (mc *MeasuredCrossover) findCrossings() {
	p := mc.Points
	for i := 0; i < len(p); {
		if s := sign(p[i].DiffMs); s != 0 {
			if i+1 < len(p) {
				if t := sign(p[i+1].DiffMs); t != 0 && t != s {
					lo, hi := p[i], p[i+1]
					n := float64(lo.N) + float64(hi.N-lo.N)*lo.DiffMs/(lo.DiffMs-hi.DiffMs)
					mc.Crossings = append(mc.Crossings, MeasuredCrossing{Low: lo.N, High: hi.N, N: n, From: s, To: t})
				}
			}
			i++
			continue
		}
		j := i // p[i..j] is a maximal run of zeros
		for j+1 < len(p) && sign(p[j+1].DiffMs) == 0 {
			j++
		}
		from, to := 0, 0
		if i > 0 {
			from = sign(p[i-1].DiffMs)
		}
		if j+1 < len(p) {
			to = sign(p[j+1].DiffMs)
		}
		if from != 0 && to != 0 && from != to {
			mc.Crossings = append(mc.Crossings, MeasuredCrossing{Low: p[i].N, High: p[j].N, N: float64(p[i].N+p[j].N) / 2, From: from, To: to})
		} else {
			for k := i; k <= j; k++ {
				mc.Ties = append(mc.Ties, p[k].N)
			}
		}
		i = j + 1
	}
}

// findSupported adds to Supported each change of sign from one point whose
// interval excludes 0 to the next such point.
func (mc *MeasuredCrossover) findSupported() {
	p := mc.Points
	last := -1 // index of the last point whose interval excludes 0
	for i := range p {
		s := p[i].DiffCI.Excludes0()
		if s == 0 {
			continue
		}
		if last >= 0 && p[last].DiffCI.Excludes0() != s {
			mc.Supported = append(mc.Supported, CIBracket{Low: p[last].N, High: p[i].N, From: p[last].DiffCI.Excludes0(), To: s})
		}
		last = i
	}
}

// String summarises the measured crossover in one line, naming hosts a
// and b: "between N=1 and N=3 (interpolated 2.04; intervals: between N=1
// and N=3)", "none in N=0..48: b faster throughout", or every crossing
// when there are several.
func (mc MeasuredCrossover) String(a, b string) string {
	if len(mc.Points) == 0 {
		return "no sweep points"
	}
	lo, hi := mc.Points[0].N, mc.Points[len(mc.Points)-1].N
	faster := func(s int) string {
		switch s {
		case -1:
			return a + " faster"
		case 1:
			return b + " faster"
		}
		return "no difference"
	}
	var sb strings.Builder
	switch len(mc.Crossings) {
	case 0:
		fmt.Fprintf(&sb, "none in N=%d..%d: %s throughout", lo, hi, faster(mc.Sign))
	case 1:
		c := mc.Crossings[0]
		if c.Low == c.High {
			fmt.Fprintf(&sb, "at N=%d (exact)", c.Low)
		} else {
			fmt.Fprintf(&sb, "between N=%d and N=%d (interpolated %.2f)", c.Low, c.High, c.N)
		}
	default:
		fmt.Fprintf(&sb, "%d crossings:", len(mc.Crossings))
		for _, c := range mc.Crossings {
			fmt.Fprintf(&sb, " N=%d..%d (%.2f, %s to %s);", c.Low, c.High, c.N, faster(c.From), faster(c.To))
		}
		s := strings.TrimSuffix(sb.String(), ";")
		sb.Reset()
		sb.WriteString(s)
	}
	switch len(mc.Supported) {
	case 0:
		sb.WriteString("; no sign change carried by the intervals")
	default:
		sb.WriteString("; intervals:")
		for i, s := range mc.Supported {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, " between N=%d and N=%d", s.Low, s.High)
		}
	}
	return sb.String()
}
