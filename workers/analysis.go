package workers

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/rttlab/rttlab/results/stats"
)

// Run is one run of one cell: the records of every request it sent.
type Run struct {
	Cell CellKey `json:"cell"`
	Run  int     `json:"run"`
	// Rate is the offered arrival rate (requests per second).
	Rate float64 `json:"rate"`
	// Workers lists the run's worker PIDs when known (see Collisions).
	Workers []string `json:"workers,omitempty"`
	Records []Record `json:"records"`
}

// The quantiles of every cell.
var Quantiles = []struct {
	Name string
	P    float64
}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}}

// RunStat summarises one run over its measured requests; latencies in ms
// over the successful ones (NaN without any).
type RunStat struct {
	Cell      CellKey        `json:"cell"`
	Run       int            `json:"run"`
	Rate      float64        `json:"rate"`
	N         int            `json:"n"`
	Failures  int            `json:"failures"`
	P50Ms     stats.Num      `json:"p50_ms"`
	P90Ms     stats.Num      `json:"p90_ms"`
	P99Ms     stats.Num      `json:"p99_ms"`
	Collision CollisionStats `json:"collision"`
	Shares    []WorkerShare  `json:"shares"`
}

// SummarizeRun computes a run's figures; slack is the collision slack.
func SummarizeRun(run Run, slack time.Duration) RunStat {
	st := RunStat{Cell: run.Cell, Run: run.Run, Rate: run.Rate}
	var lat []float64
	for _, r := range run.Records {
		if r.Warmup {
			continue
		}
		if r.Failed {
			st.Failures++
			continue
		}
		st.N++
		lat = append(lat, float64(r.LatencyNS)/1e6)
	}
	slices.Sort(lat)
	st.P50Ms = stats.Num(stats.Percentile(lat, 0.5))
	st.P90Ms = stats.Num(stats.Percentile(lat, 0.9))
	st.P99Ms = stats.Num(stats.Percentile(lat, 0.99))
	st.Collision = Collisions(run.Records, run.Workers, slack)
	st.Shares = Shares(run.Records, run.Workers)
	return st
}

// Options tune the analysis; zero fields take the defaults.
type Options struct {
	// Seed keys every bootstrap generator (stats.NewRNG).
	Seed uint64
	// Resamples per interval (stats.Resamples).
	Resamples int
	// MinRuns is the fewest runs of a cell for a claim (6).
	MinRuns int
	// MaxFailedFraction is the largest failed share of a cell's measured
	// requests for a claim (0.01).
	MaxFailedFraction float64
	// MinRunRequests is the fewest successful requests per run for its
	// p99 to rest on more than one or two values (100); below it the cell
	// warns.
	MinRunRequests int
	// Baseline is the policy every change is against (puma:wflbw=0);
	// Reference the ideal of the penalty statement (proxy:jsq).
	Baseline, Reference string
	// Slack is the collision slack (0: the plain definition).
	Slack time.Duration
}

// Defaults of Options.
const (
	DefaultMinRunRequests = 100
)

func (o Options) withDefaults() Options {
	if o.Resamples <= 0 {
		o.Resamples = stats.Resamples
	}
	if o.MinRuns <= 0 {
		o.MinRuns = stats.MinRuns
	}
	if o.MaxFailedFraction <= 0 {
		o.MaxFailedFraction = stats.MaxFailedFraction
	}
	if o.MinRunRequests <= 0 {
		o.MinRunRequests = DefaultMinRunRequests
	}
	if o.Baseline == "" {
		o.Baseline = AcceptRace.String()
	}
	if o.Reference == "" {
		o.Reference = ProxyJSQ.String()
	}
	return o
}

// Estimate is a cell's figure with its interval.
type Estimate struct {
	Ms stats.Num `json:"ms"`
	CI stats.CI  `json:"ci"`
}

// Change is a cell's quantile against the baseline's in the same
// (configuration, mix, RTT, load).
type Change struct {
	// DiffMs = median(cell's run values) − median(baseline's), with the
	// percentile-bootstrap interval of stats.BootstrapChangeCI.
	DiffMs stats.Num `json:"diff_ms"`
	CI     stats.CI  `json:"ci"`
	// Rel = median(cell) / median(baseline) − 1, with its own bootstrap
	// interval (both sides resampled independently, as for DiffMs).
	Rel   stats.Num `json:"rel"`
	RelCI stats.CI  `json:"rel_ci"`
	// Verdict: "slower", "faster", "no measurable difference", or
	// "no claim" when either cell makes none.
	Verdict string `json:"verdict"`
}

// CellStat is one cell's figures over its runs.
type CellStat struct {
	CellKey
	Runs int `json:"runs"`
	// Rate is the mean offered arrival rate of the runs.
	Rate float64 `json:"rate"`
	// N counts successful measured requests, Failures the failed ones.
	N              int     `json:"n"`
	Failures       int     `json:"failures"`
	FailedFraction float64 `json:"failed_fraction"`
	// P50, P90, P99: the median over runs of the run's quantile, with the
	// percentile-bootstrap interval of that median over the runs.
	P50 Estimate `json:"p50"`
	P90 Estimate `json:"p90"`
	P99 Estimate `json:"p99"`
	// RunP50Ms… hold every run's quantile, in run order.
	RunP50Ms []stats.Num `json:"run_p50_ms"`
	RunP90Ms []stats.Num `json:"run_p90_ms"`
	RunP99Ms []stats.Num `json:"run_p99_ms"`
	// VsBaseline holds the p50, p90 and p99 changes against the
	// baseline; nil for the baseline itself or when it was not run.
	VsBaseline []Change `json:"vs_baseline,omitempty"`
	// Collision sums the runs' counts; CollisionRate is their ratio, with
	// a bootstrap interval over runs (runs resampled, ratio of sums).
	Collision     CollisionStats `json:"collision"`
	CollisionRate stats.Num      `json:"collision_rate"`
	CollisionCI   stats.CI       `json:"collision_ci"`
	// Shares are the mean over runs of the runs' ranked worker shares:
	// Shares[0] the busiest worker's. Worker PIDs change from run to run,
	// so shares are compared by rank.
	Shares []float64 `json:"shares"`
	// NoClaim is set when the cell has too few runs or too many failures.
	NoClaim  bool     `json:"no_claim"`
	Warnings []string `json:"warnings,omitempty"`
}

// runValues returns the runs' values of quantile q as float64s.
func (c *CellStat) runValues(q int) []float64 {
	v := [][]stats.Num{c.RunP50Ms, c.RunP90Ms, c.RunP99Ms}[q]
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// Summary is the analysis of a worker study.
type Summary struct {
	Options Options `json:"options"`
	// Method describes the intervals and definitions in a few lines.
	Method string     `json:"method"`
	Cells  []CellStat `json:"cells"`
	Runs   []RunStat  `json:"runs"`
	// Penalties are the penalty statements: the baseline against the
	// reference, against each of Puma's fixes that ran, and
	// proxy:round-robin against proxy:jsq when both ran.
	Penalties []Penalty `json:"penalties"`
	// Capacities, when the caller adds them, are rendered as a table.
	Capacities []CapacityResult `json:"capacities,omitempty"`
	// Emulated names the platform the database and Rails ran under
	// emulation, when they did: its timings make no claim.
	Emulated string `json:"emulated,omitempty"`
}

// CapacityResult is one capacity search's outcome, for the report.
type CapacityResult struct {
	Key       CapacityKey `json:"key"`
	Rate      float64     `json:"rate"`
	Ceiling   float64     `json:"ceiling"`
	Converged bool        `json:"converged"`
	Trials    int         `json:"trials"`
	Warning   string      `json:"warning,omitempty"`
}

// Keys of the bootstrap generators (stats.NewRNG), one per figure, so
// adding a cell changes no other cell's intervals.
func cellRNGKey(k CellKey, what string) string {
	return strings.Join([]string{"workers", what, k.Policy, k.Layout, k.Mix, fmtNum(k.RTTMs), fmtNum(k.Fraction)}, "\x00")
}

// Analyze summarises the runs: per cell the quantiles with intervals, the
// changes against the baseline, the collisions and the shares; then the
// penalty statements. Cells come ordered by configuration, mix, RTT,
// load, then policy (the baseline first, then by name).
func Analyze(runs []Run, o Options) *Summary {
	o = o.withDefaults()
	s := &Summary{Options: o, Cells: []CellStat{}, Runs: []RunStat{}}
	s.Method = fmt.Sprintf("Latency is from each request's scheduled send time. Per run: p50, p90 and p99 of its successful measured requests (%s). Per cell: the median of the run values, with a 95%% percentile-bootstrap interval over runs (%d resamples). Changes against %s: difference of the medians of run values, both cells resampled independently (stats.BootstrapChangeCI), and the same for the ratio. Collision: a measured request that started on a worker already running another request while some other worker had nothing in progress (slack %s); the cell's rate is collisions / timed requests over its runs, with a bootstrap interval over runs. Seed %d, one generator per figure (stats.NewRNG).",
		stats.PercentileMethod, o.Resamples, o.Baseline, o.Slack, o.Seed)
	byCell := map[CellKey][]RunStat{}
	var keys []CellKey
	for _, r := range runs {
		rs := SummarizeRun(r, o.Slack)
		s.Runs = append(s.Runs, rs)
		if _, ok := byCell[r.Cell]; !ok {
			keys = append(keys, r.Cell)
		}
		byCell[r.Cell] = append(byCell[r.Cell], rs)
	}
	slices.SortFunc(keys, func(a, b CellKey) int { return compareCells(a, b, o.Baseline) })
	slices.SortStableFunc(s.Runs, func(a, b RunStat) int {
		return cmp.Or(compareCells(a.Cell, b.Cell, o.Baseline), cmp.Compare(a.Run, b.Run))
	})
	index := map[CellKey]int{}
	for _, k := range keys {
		rs := byCell[k]
		slices.SortStableFunc(rs, func(a, b RunStat) int { return cmp.Compare(a.Run, b.Run) })
		s.Cells = append(s.Cells, cellStat(k, rs, o))
		index[k] = len(s.Cells) - 1
	}
	for i := range s.Cells {
		c := &s.Cells[i]
		if c.Policy == o.Baseline {
			continue
		}
		bk := c.CellKey
		bk.Policy = o.Baseline
		bi, ok := index[bk]
		if !ok {
			continue
		}
		base := &s.Cells[bi]
		for q := range Quantiles {
			c.VsBaseline = append(c.VsBaseline, change(base, c, q, o))
		}
	}
	s.Penalties = append(s.Penalties, PenaltyStatement(s.Cells, o.Baseline, o.Reference, o))
	// The baseline against Puma's own fixes too (its default wait and the
	// seed's 1 ms), when they ran: on a small host the proxy's hop can
	// cost more than it saves, which would hide what Puma's fix does.
	for _, fix := range PumaFixes {
		if fix != o.Baseline && fix != o.Reference && hasPolicy(s.Cells, fix) && hasPolicy(s.Cells, o.Baseline) {
			s.Penalties = append(s.Penalties, PenaltyStatement(s.Cells, o.Baseline, fix, o))
		}
	}
	rr, jsq := ProxyRoundRobin.String(), ProxyJSQ.String()
	if o.Baseline != rr && hasPolicy(s.Cells, rr) && hasPolicy(s.Cells, jsq) {
		s.Penalties = append(s.Penalties, PenaltyStatement(s.Cells, rr, jsq, o))
	}
	return s
}

// PumaFixes are Puma's remedies for the accept race that the penalty
// statements compare the baseline with: its default wait_for_less_busy_worker
// and the seed's 1 ms.
var PumaFixes = []string{"puma:wflbw=default", "puma:wflbw=0.001"}

func hasPolicy(cells []CellStat, p string) bool {
	return slices.ContainsFunc(cells, func(c CellStat) bool { return c.Policy == p })
}

// policyRank orders policies: the baseline, then the puma policies by
// wait, then the proxy policies in Rules order, then anything else by
// name.
func policyRank(p, baseline string) (int, float64, string) {
	if p == baseline {
		return 0, 0, ""
	}
	pol, err := ParsePolicy(p)
	switch {
	case err != nil:
		return 3, 0, p
	case pol.Kind == KindPuma:
		return 1, pol.WaitS, p
	}
	return 2, float64(slices.Index(Rules, pol.Rule)), p
}

func compareCells(a, b CellKey, baseline string) int {
	ra, wa, na := policyRank(a.Policy, baseline)
	rb, wb, nb := policyRank(b.Policy, baseline)
	return cmp.Or(
		compareLayouts(a.Layout, b.Layout),
		cmp.Compare(a.Mix, b.Mix),
		cmp.Compare(a.RTTMs, b.RTTMs),
		cmp.Compare(a.Fraction, b.Fraction),
		cmp.Compare(ra, rb), cmp.Compare(wa, wb), cmp.Compare(na, nb),
	)
}

func compareLayouts(a, b string) int {
	la, ea := ParseLayout(a)
	lb, eb := ParseLayout(b)
	if ea != nil || eb != nil {
		return cmp.Compare(a, b)
	}
	return cmp.Or(cmp.Compare(la.Workers, lb.Workers), cmp.Compare(la.Threads, lb.Threads))
}

func cellStat(k CellKey, rs []RunStat, o Options) CellStat {
	c := CellStat{CellKey: k, Runs: len(rs)}
	var coll []CollisionStats
	var rate float64
	var shares [][]float64
	lowRuns := 0
	for _, r := range rs {
		c.N += r.N
		c.Failures += r.Failures
		rate += r.Rate
		c.RunP50Ms = append(c.RunP50Ms, r.P50Ms)
		c.RunP90Ms = append(c.RunP90Ms, r.P90Ms)
		c.RunP99Ms = append(c.RunP99Ms, r.P99Ms)
		c.Collision = c.Collision.Add(r.Collision)
		coll = append(coll, r.Collision)
		var sh []float64
		for _, w := range r.Shares {
			sh = append(sh, float64(w.Share))
		}
		shares = append(shares, sh)
		if r.N < o.MinRunRequests {
			lowRuns++
		}
	}
	if len(rs) > 0 {
		c.Rate = rate / float64(len(rs))
	}
	if tot := c.N + c.Failures; tot > 0 {
		c.FailedFraction = float64(c.Failures) / float64(tot)
	}
	c.setEstimates(o)
	c.CollisionRate = stats.Num(c.Collision.Rate())
	c.CollisionCI = stats.CIOf(collisionCI(coll, o.Resamples, stats.NewRNG(o.Seed, cellRNGKey(k, "collision"))))
	c.Shares = meanRanked(shares)
	c.judge(o, lowRuns)
	return c
}

// setEstimates sets P50, P90 and P99 to the median of the runs' finite
// values with its bootstrap interval (NaN when there is none).
func (c *CellStat) setEstimates(o Options) {
	for q := range Quantiles {
		vals := finiteOnly(c.runValues(q))
		est := Estimate{Ms: stats.Num(math.NaN()), CI: stats.CIOf(stats.Interval{Low: math.NaN(), High: math.NaN()})}
		if len(vals) > 0 {
			est.Ms = stats.Num(stats.Median(vals))
			est.CI = stats.CIOf(stats.BootstrapMedianCI(vals, o.Resamples, stats.NewRNG(o.Seed, cellRNGKey(c.CellKey, Quantiles[q].Name))))
		}
		switch q {
		case 0:
			c.P50 = est
		case 1:
			c.P90 = est
		case 2:
			c.P99 = est
		}
	}
}

// judge withholds the cell's claim when it has too few runs, too many
// failures or no successful request, and adds a warning for each of
// those, for the lowRuns runs with too few requests, and for untimed ones.
func (c *CellStat) judge(o Options, lowRuns int) {
	if c.Runs < o.MinRuns {
		c.NoClaim = true
		c.Warnings = append(c.Warnings, fmt.Sprintf("only %d runs (fewer than %d): no claim", c.Runs, o.MinRuns))
	}
	if c.FailedFraction > o.MaxFailedFraction {
		c.NoClaim = true
		c.Warnings = append(c.Warnings, fmt.Sprintf("%d of %d measured requests failed (%.2f%%, more than %s): no claim", c.Failures, c.N+c.Failures, 100*c.FailedFraction, fmtPct(o.MaxFailedFraction)))
	}
	if c.N == 0 {
		c.NoClaim = true
		c.Warnings = append(c.Warnings, "no successful measured request: no claim")
	}
	if lowRuns > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%d of %d runs have fewer than %d successful requests: their p99 rests on one or two values", lowRuns, c.Runs, o.MinRunRequests))
	}
	if c.Collision.Untimed > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%d measured requests carry no worker times and are left out of the collision rate", c.Collision.Untimed))
	}
}

func finiteOnly(x []float64) []float64 {
	var out []float64
	for _, v := range x {
		if finite(v) {
			out = append(out, v)
		}
	}
	return out
}

// meanRanked averages ranked share vectors position by position (a
// missing position counts 0).
func meanRanked(v [][]float64) []float64 {
	n := 0
	for _, s := range v {
		n = max(n, len(s))
	}
	if n == 0 || len(v) == 0 {
		return nil
	}
	out := make([]float64, n)
	runs := 0
	for _, s := range v {
		if len(s) == 0 || !finite(s[0]) {
			continue
		}
		runs++
		for i, x := range s {
			out[i] += x
		}
	}
	if runs == 0 {
		return nil
	}
	for i := range out {
		out[i] /= float64(runs)
	}
	return out
}

// collisionCI resamples runs with replacement and takes the ratio of the
// summed collisions to the summed requests.
func collisionCI(runs []CollisionStats, resamples int, rng *rand.Rand) stats.Interval {
	if len(runs) == 0 {
		return stats.Interval{Low: math.NaN(), High: math.NaN()}
	}
	var v []float64
	for range resamples {
		var c, n int
		for range runs {
			r := runs[rng.IntN(len(runs))]
			c += r.Collisions
			n += r.Requests
		}
		if n > 0 {
			v = append(v, float64(c)/float64(n))
		}
	}
	return tails(v)
}

func tails(v []float64) stats.Interval {
	if len(v) == 0 {
		return stats.Interval{Low: math.NaN(), High: math.NaN()}
	}
	slices.Sort(v)
	a := (1 - stats.Confidence) / 2
	return stats.Interval{Low: stats.Percentile(v, a), High: stats.Percentile(v, 1-a)}
}

func change(base, c *CellStat, q int, o Options) Change {
	b, t := finiteOnly(base.runValues(q)), finiteOnly(c.runValues(q))
	ch := Change{DiffMs: stats.Num(math.NaN()), Rel: stats.Num(math.NaN()), Verdict: "no data"}
	ch.CI = stats.CIOf(stats.Interval{Low: math.NaN(), High: math.NaN()})
	ch.RelCI = ch.CI
	if len(b) == 0 || len(t) == 0 {
		return ch
	}
	mb, mt := stats.Median(b), stats.Median(t)
	ch.DiffMs = stats.Num(mt - mb)
	ch.Rel = stats.Num(mt/mb - 1)
	name := Quantiles[q].Name
	ch.CI = stats.CIOf(stats.BootstrapChangeCI(b, t, o.Resamples, stats.NewRNG(o.Seed, cellRNGKey(c.CellKey, "change-"+name+"\x00"+base.Policy))))
	ch.RelCI = stats.CIOf(stats.BootstrapMediansCI([][]float64{b, t}, o.Resamples, stats.NewRNG(o.Seed, cellRNGKey(c.CellKey, "rel-"+name+"\x00"+base.Policy)),
		func(m []float64) float64 { return m[1]/m[0] - 1 }))
	switch {
	case base.NoClaim || c.NoClaim:
		ch.Verdict = "no claim"
	case ch.CI.Excludes0() > 0:
		ch.Verdict = "slower"
	case ch.CI.Excludes0() < 0:
		ch.Verdict = "faster"
	default:
		ch.Verdict = "no measurable difference"
	}
	return ch
}
