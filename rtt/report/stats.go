package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

// Defaults of Options.
const (
	DefaultResamples   = 10000
	DefaultMinRuns     = 6
	DefaultToleranceMs = 0.03
	// DefaultShaperToleranceUs flags a side whose realized one-way hold
	// (median per task) is further than this from its target.
	DefaultShaperToleranceUs = 10
	// DefaultMaxFailedFraction is the largest share of failed measured
	// requests a cell (and its baseline) may have for a claim: 1%.
	DefaultMaxFailedFraction = 0.01
)

// Options tune the analysis. Zero fields take the defaults.
type Options struct {
	// Resamples is the number of bootstrap resamples (10,000).
	Resamples int
	// MinRuns is the fewest runs a cell needs before the summary makes a
	// claim about it (6); below it the numbers are shown with a warning.
	MinRuns int
	// MaxFailedFraction is the largest share of a cell's measured
	// requests that may fail (0.01); above it, in the cell or in its 0 ms
	// baseline, the numbers are shown but no claim is made, as for too
	// few runs: failed requests are left out of the percentiles, and
	// leaving out many can bias them.
	MaxFailedFraction float64
	// ToleranceMs flags a probe whose added RTT differs from the
	// configured setting by more than this (0.03 ms).
	ToleranceMs float64
	// ShaperToleranceUs flags a shaper side whose realized hold p50 is
	// further than this from its target (10 µs).
	ShaperToleranceUs float64
	// StripRTTms chooses the setting of the per-run strip plot; nil
	// chooses the largest setting.
	StripRTTms *float64
	// NoPlots renders the summaries and the report without drawing the
	// figures, and leaves a folder's figures from an earlier render as
	// they are. The fake runs' tests under the race detector set it:
	// drawing runs on one goroutine once the run's have ended, so the
	// detector has nothing to watch there, and it makes a fake run ten
	// times slower; the same tests draw every figure without it.
	NoPlots bool
}

func (o Options) withDefaults() Options {
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.MinRuns <= 0 {
		o.MinRuns = DefaultMinRuns
	}
	if o.ToleranceMs <= 0 {
		o.ToleranceMs = DefaultToleranceMs
	}
	if o.ShaperToleranceUs <= 0 {
		o.ShaperToleranceUs = DefaultShaperToleranceUs
	}
	if o.MaxFailedFraction <= 0 {
		o.MaxFailedFraction = DefaultMaxFailedFraction
	}
	return o
}

// maxFailedPercent is MaxFailedFraction as the summaries write it ("1%").
func (o Options) maxFailedPercent() string {
	return strconv.FormatFloat(o.withDefaults().MaxFailedFraction*100, 'f', -1, 64) + "%"
}

// CIMethod is the text that names the interval method in the summaries.
func (o Options) CIMethod() string {
	return fmt.Sprintf("percentile bootstrap, %d resamples over run-level p50s", o.withDefaults().Resamples)
}

// CellKey is the NewRNG key of the p50 interval of a cell; it also
// identifies the cell. The setting is written as fmtSetting does ("0.75").
func CellKey(app, route string, rtt float64) string {
	return "cell\x00" + app + "\x00" + route + "\x00" + fmtSetting(rtt)
}

// UnshapedKey is the NewRNG key of the p50 interval of a route's
// unshaped baseline; it also identifies that cell.
func UnshapedKey(app, route string) string {
	return "unshaped\x00" + app + "\x00" + route
}

// PercentKey is the NewRNG key of the interval of a cell's change in
// percent of its unshaped baseline.
func PercentKey(app, route string, rtt float64) string {
	return "percent\x00" + app + "\x00" + route + "\x00" + fmtSetting(rtt)
}

// ChangeKey is the NewRNG key of the change interval of a cell.
func ChangeKey(app, route string, rtt float64) string {
	return "change\x00" + app + "\x00" + route + "\x00" + fmtSetting(rtt)
}

// ProbeKey is the NewRNG key of a probe's change interval.
func ProbeKey(app, kind string, rtt float64) string {
	return "probe\x00" + app + "\x00" + kind + "\x00" + fmtSetting(rtt)
}

// RunStat summarises one run (one done task) over its measured samples:
// warmup samples never count, failed requests are counted in Failures and
// left out of the percentiles. Latencies are in milliseconds; they are NaN
// when N is 0.
type RunStat struct {
	Task    int
	Attempt int
	App     string
	Route   string
	RTTms   float64
	Run     int
	// Unshaped: a run of the unshaped baseline (RTTms 0).
	Unshaped bool
	// N is the number of successful measured requests.
	N        int
	Failures int
	// WarmupFailures counts failed warmup requests (reported, not used).
	WarmupFailures int
	// Retried counts measured requests the HTTP client re-sent (they are
	// timed, first try included).
	Retried       int
	P50, P90, P99 float64
	Mean          float64
}

// RunStats computes one RunStat per task of samples, sorted by app, route,
// setting, run and task. Pass only samples of done attempts (Data.Samples).
func RunStats(samples []raw.Sample) []RunStat {
	type acc struct {
		rs  RunStat
		lat []float64
		sum int64
	}
	byTask := map[int]*acc{}
	for i := range samples {
		s := &samples[i]
		a := byTask[s.Task]
		if a == nil {
			a = &acc{rs: RunStat{Task: s.Task, Attempt: s.Attempt, App: s.App, Route: s.Route, RTTms: s.RTTms, Run: s.Run, Unshaped: s.Unshaped}}
			byTask[s.Task] = a
		}
		if s.Retried && !s.Warmup {
			a.rs.Retried++
		}
		switch {
		case s.Warmup && s.Failed():
			a.rs.WarmupFailures++
		case s.Warmup:
		case s.Failed():
			a.rs.Failures++
		default:
			a.lat = append(a.lat, float64(s.LatencyNS)/1e6)
			a.sum += s.LatencyNS
		}
	}
	out := make([]RunStat, 0, len(byTask))
	for _, a := range byTask {
		rs := a.rs
		rs.N = len(a.lat)
		slices.Sort(a.lat)
		rs.P50 = stats.Percentile(a.lat, 0.50)
		rs.P90 = stats.Percentile(a.lat, 0.90)
		rs.P99 = stats.Percentile(a.lat, 0.99)
		rs.Mean = math.NaN()
		if rs.N > 0 {
			rs.Mean = float64(a.sum) / float64(rs.N) / 1e6
		}
		out = append(out, rs)
	}
	sortRuns(out)
	return out
}

func sortRuns(r []RunStat) {
	slices.SortFunc(r, func(a, b RunStat) int {
		if c := cmpCell(a.App, a.Route, a.RTTms, b.App, b.Route, b.RTTms); c != 0 {
			return c
		}
		if a.Unshaped != b.Unshaped { // the unshaped baseline before 0 ms
			return btoi(b.Unshaped) - btoi(a.Unshaped)
		}
		if a.Run != b.Run {
			return a.Run - b.Run
		}
		return a.Task - b.Task
	})
}

func cmpCell(a1, r1 string, s1 float64, a2, r2 string, s2 float64) int {
	switch {
	case a1 != a2:
		return cmpStr(a1, a2)
	case r1 != r2:
		return cmpStr(r1, r2)
	case s1 < s2:
		return -1
	case s1 > s2:
		return 1
	}
	return 0
}

func cmpStr(a, b string) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// Cell is one (app, route, setting) condition across its runs. Latencies
// are in milliseconds; undefined values are NaN.
type Cell struct {
	App   string
	Route string
	RTTms float64
	// Unshaped: the route's unshaped baseline (the shaper out of the
	// path), not a setting; such cells are Summary.Unshaped.
	Unshaped bool
	// P50s are the run-level p50s of runs with at least one successful
	// measured request, sorted ascending.
	P50s []float64
	// NRuns is len(P50s); NRequests sums N over those runs.
	NRuns          int
	NRequests      int
	Failures       int
	WarmupFailures int
	// Retried counts measured requests the HTTP client re-sent.
	Retried int
	// P50 is the median of P50s; CI its percentile-bootstrap interval.
	P50 float64
	CI  stats.Interval
	// HasBaseline is set when the same app and route has a 0 ms cell with
	// runs and this cell is not that cell. Change = P50 - baseline P50;
	// ChangeCI resamples both cells' runs independently.
	HasBaseline  bool
	BaselineP50  float64
	BaselineRuns int
	// BaselineFailures and BaselineRequests are the baseline's failed
	// and successful measured requests.
	BaselineFailures int
	BaselineRequests int
	Change           float64
	ChangeCI         stats.Interval
	// Percent is the change relative to a baseline p50, in percent: the
	// unshaped baseline's when the route has one (PercentOfUnshaped; its
	// CI resamples the three cells' runs independently), else the 0 ms
	// cell's (PercentCI from the same resamples as ChangeCI).
	Percent           float64
	PercentCI         stats.Interval
	PercentOfUnshaped bool
	// HasUnshaped: the route has unshaped runs, of p50 UnshapedP50.
	HasUnshaped bool
	UnshapedP50 float64
	// Ratio is Change / RTTms (the amplification ratio).
	Ratio float64
	// Statements per request: the traced round trips per request when
	// the folder has a trace of the route (for a mix, weighted by the
	// mix's shares; FromTrace is then set), else the manifest's declared
	// statements. Predicted = Statements × RTTms when HasStatements.
	HasStatements bool
	Statements    float64
	FromTrace     bool
	Predicted     float64
	// LowN is set when this cell, or its baseline, has fewer than
	// Options.MinRuns runs: the numbers are shown but no claim is made.
	LowN bool
	// Verified is the SELECT 1 change at this setting for this app (the
	// added RTT as measured through PostgreSQL), when probes ran;
	// RatioVerified = Change / Verified.
	HasVerified   bool
	Verified      float64
	RatioVerified float64
	// Unverified lists why this setting's delay is not what it says:
	// probes out of tolerance, the shaper's hold off its target, drops.
	Unverified []string
	// TooManyFailures is set when more than Options.MaxFailedFraction of
	// the measured requests of this cell, or of its baseline, failed: the
	// numbers are shown but no claim is made, as for LowN.
	TooManyFailures bool
	Warnings        []string
	// Parts is where the time of the cell's requests went, taken apart
	// on the wire (HasParts when the folder has the anatomy); an
	// Attribution splits the change against 0 ms into those parts
	// (HasAttribution).
	Parts    Parts
	HasParts bool
	// TakenApart counts the measured requests the anatomy joined to
	// their latency and took apart (Measured 0 when the folder has no
	// wire figures for the cell).
	TakenApart     TakenApart
	Attribution    Attribution
	HasAttribution bool
}

// tracedRoundTrips is the median wire round trips per request of a
// route in the trace, or for a mix route ("mix:NAME") the mean over its
// request types weighted by their shares; ok is false when the trace has
// none.
func tracedRoundTrips(trace []workloads.TraceRow, app, route string) (float64, bool) {
	var wsum, wtrips float64
	for _, r := range trace {
		if r.App != app || r.N == 0 {
			continue
		}
		if r.Type == route {
			return r.RoundTrips.Median, true
		}
		if strings.HasPrefix(route, "mix:") && r.Weight > 0 {
			wsum += r.Weight
			wtrips += r.Weight * r.RoundTrips.Median
		}
	}
	if wsum > 0 {
		return wtrips / wsum, true
	}
	return 0, false
}

// NoClaim reports whether the summary makes no claim about the cell: too
// few runs or too many failed requests, in it or in its baseline.
func (c *Cell) NoClaim() bool { return c.LowN || c.TooManyFailures }

// ProbeStat summarises the probes of one (app, kind, setting).
//
// For ICMP kinds, Value is the median over rows of the rows' mean RTT
// (one row per setting gives that row's mean) and Added = Value - Value at
// 0 ms. For SELECT 1, Value is the median of the run medians and Added
// the median of this setting's run medians minus that of 0 ms, with a
// percentile-bootstrap CI that resamples both settings' runs
// independently. OutOfTolerance is set when |Added - RTTms| exceeds the
// tolerance.
type ProbeStat struct {
	App            string
	Kind           string
	RTTms          float64
	Rows           int
	N              int
	Failures       int
	Value          float64
	HasBaseline    bool
	Added          float64
	CI             stats.Interval
	OutOfTolerance bool
}

// Summary is the analysis of a results folder.
type Summary struct {
	Plan     string
	Seed     uint64
	Options  Options
	Manifest raw.Manifest
	Runs     []RunStat
	Cells    []Cell
	Probes   []ProbeStat
	// TasksPlanned and TasksDone count the manifest's tasks.
	TasksPlanned int
	TasksDone    int
	// Warnings lists, in order: incomplete-run and folder notes, failed
	// task attempts, per-cell warnings, probe tolerance flags, skipped
	// apps.
	Warnings []string
	// Trace is the per-request trace (trace.json), when the folder has one.
	Trace []workloads.TraceRow
	// Shaper is what the shaper did per app, setting and side during the
	// tasks counted as data (shaper.csv), when recorded.
	Shaper []ShaperStat
	// Sensitivity fits each route's p50 against the RTT over its settings.
	Sensitivity []Sensitivity
	// Unshaped holds each route's unshaped baseline: its runs with the
	// shaper out of the path (no queue, no floor), when the plan made
	// them.
	Unshaped []Cell
	// Wire is what the captures saw per app, setting and direction
	// during the tasks (wire.csv); WireVerdicts judge each setting by it.
	Wire         []WireStat
	WireVerdicts []WireVerdict
}

// Analyze computes run statistics, cells with bootstrap intervals and
// changes against 0 ms, and the probe summary. It is deterministic: the
// same data and seed give the same numbers.
func Analyze(d *raw.Data, o Options) *Summary {
	o = o.withDefaults()
	m := &d.Manifest
	sum := &Summary{Plan: m.PlanName, Seed: m.Seed, Options: o, Manifest: *m, Trace: d.Trace}
	sum.Runs = doneRuns(d)
	sum.taskWarnings(d)
	cells, index := groupCells(sum.Runs)
	for _, c := range cells {
		c.analyze(index, d, o)
	}
	for _, c := range cells {
		c.percentOfUnshaped(index, m.Seed, o)
	}
	slices.SortFunc(cells, func(a, b *Cell) int {
		if c := cmpCell(a.App, a.Route, a.RTTms, b.App, b.Route, b.RTTms); c != 0 || a.Unshaped == b.Unshaped {
			return c
		}
		return btoi(b.Unshaped) - btoi(a.Unshaped)
	})
	for _, c := range cells {
		if c.Unshaped {
			sum.Unshaped = append(sum.Unshaped, *c)
		} else {
			sum.Cells = append(sum.Cells, *c)
		}
		for _, w := range c.Warnings {
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("%s %s %s: %s", c.App, c.Route, c.setting(), w))
		}
	}
	sum.Wire, sum.WireVerdicts = analyzeWire(d.Wire, o)
	sum.WireVerdicts = judgeMissing(sum.WireVerdicts, d)
	sum.anatomize(d.Anatomy, d.Wire)
	sum.verify(d, o)
	for _, app := range slices.Sorted(maps.Keys(m.Skipped)) {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("app %s skipped: %s", app, m.Skipped[app]))
	}
	sum.Sensitivity = sensitivities(sum.Cells, o, m.Seed)
	return sum
}

// doneRuns is the statistics of every run of a done attempt, sorted; a
// done task without any sample is a run with no successful requests.
func doneRuns(d *raw.Data) []RunStat {
	m := &d.Manifest
	runs := RunStats(d.Samples)
	seen := map[int]bool{}
	for _, r := range runs {
		seen[r.Task] = true
	}
	for _, t := range m.Tasks {
		if a, ok := d.Done[t.ID]; ok && !seen[t.ID] {
			runs = append(runs, RunStat{Task: t.ID, Attempt: a, App: t.App, Route: t.Route, RTTms: t.RTTms, Run: t.Run, Unshaped: t.Unshaped,
				P50: math.NaN(), P90: math.NaN(), P99: math.NaN(), Mean: math.NaN()})
		}
	}
	sortRuns(runs)
	return runs
}

// taskWarnings counts the tasks planned and done and warns of an
// incomplete study, ignored samples, the loader's notes and every failed
// attempt.
func (sum *Summary) taskWarnings(d *raw.Data) {
	m := &d.Manifest
	sum.TasksPlanned = len(m.Tasks)
	for _, t := range m.Tasks {
		if d.IsDone(t.ID) {
			sum.TasksDone++
		}
	}
	if sum.TasksDone < sum.TasksPlanned {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("%d of %d tasks are not done: the study is incomplete (resume it with rttlab run --resume)",
			sum.TasksPlanned-sum.TasksDone, sum.TasksPlanned))
	}
	if d.Ignored > 0 {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("%d samples of attempts never marked done are ignored", d.Ignored))
	}
	sum.Warnings = append(sum.Warnings, d.Notes...)
	if m.Emulated {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("the database and the apps ran %s under emulation (qemu-user) on this engine: every timing here makes no claim about that platform's hardware", m.Platform))
	}
	tasks := map[int]raw.Task{}
	for _, t := range m.Tasks {
		tasks[t.ID] = t
	}
	for _, r := range d.Records {
		if r.Status != raw.StatusFailed {
			continue
		}
		outcome := "not done"
		if a, ok := d.Done[r.Task]; ok {
			outcome = fmt.Sprintf("done on attempt %d", a)
		}
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("%s attempt %d failed: %s (%s)", tasks[r.Task], r.Attempt, r.Error, outcome))
	}
}

// groupCells gathers runs into (app, route, setting) cells, in the order
// the runs come, with an index by CellKey; the unshaped baseline's runs
// make cells of their own, indexed by UnshapedKey.
func groupCells(runs []RunStat) ([]*Cell, map[string]*Cell) {
	var cells []*Cell
	index := map[string]*Cell{}
	for _, r := range runs {
		k := CellKey(r.App, r.Route, r.RTTms)
		if r.Unshaped {
			k = UnshapedKey(r.App, r.Route)
		}
		c := index[k]
		if c == nil {
			c = &Cell{App: r.App, Route: r.Route, RTTms: r.RTTms, Unshaped: r.Unshaped}
			index[k] = c
			cells = append(cells, c)
		}
		c.Failures += r.Failures
		c.WarmupFailures += r.WarmupFailures
		c.Retried += r.Retried
		if r.N == 0 {
			c.Warnings = append(c.Warnings, fmt.Sprintf("run %d (task %d) has no successful measured request and is left out", r.Run, r.Task))
			continue
		}
		c.P50s = append(c.P50s, r.P50)
		c.NRequests += r.N
	}
	return cells, index
}

// analyze computes a cell's median with its interval, the statements per
// request (traced or declared) and the prediction, the change against its
// 0 ms baseline in index, and its warnings.
func (c *Cell) analyze(index map[string]*Cell, d *raw.Data, o Options) {
	m := &d.Manifest
	slices.Sort(c.P50s)
	c.NRuns = len(c.P50s)
	c.P50 = stats.Percentile(c.P50s, 0.5)
	key := CellKey(c.App, c.Route, c.RTTms)
	if c.Unshaped {
		key = UnshapedKey(c.App, c.Route)
	}
	c.CI = stats.BootstrapMedianCI(c.P50s, o.Resamples, stats.NewRNG(m.Seed, key))
	c.BaselineP50, c.Change, c.Ratio, c.Predicted, c.Percent, c.UnshapedP50 = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
	c.ChangeCI, c.PercentCI = stats.NoInterval(), stats.NoInterval()
	c.LowN = c.NRuns < o.MinRuns
	c.TooManyFailures = stats.FailedFraction(c.Failures, c.NRequests) > o.MaxFailedFraction
	if trips, ok := tracedRoundTrips(d.Trace, c.App, c.Route); ok {
		// What the wire carried beats what the app declares: a driver may
		// pipeline statements, and a mix has no declared count.
		c.HasStatements, c.Statements, c.FromTrace = true, trips, true
		c.Predicted = trips * c.RTTms
	} else if st, ok := m.StatementsFor(c.App, c.Route); ok {
		c.HasStatements, c.Statements = true, st
		c.Predicted = st * c.RTTms
	}
	if c.RTTms > 0 && !c.Unshaped {
		base := index[CellKey(c.App, c.Route, 0)]
		if base != nil && base.NRuns > 0 && c.NRuns > 0 {
			c.HasBaseline = true
			c.BaselineP50 = base.P50
			c.BaselineRuns = base.NRuns
			c.Change = c.P50 - base.P50
			c.ChangeCI, c.PercentCI = stats.BootstrapChangeCIs(base.P50s, c.P50s, o.Resamples, stats.NewRNG(m.Seed, ChangeKey(c.App, c.Route, c.RTTms)))
			c.Percent = 100 * (c.P50/base.P50 - 1)
			c.Ratio = c.Change / c.RTTms
			c.LowN = c.LowN || base.NRuns < o.MinRuns
			c.BaselineFailures, c.BaselineRequests = base.Failures, base.NRequests
			c.TooManyFailures = c.TooManyFailures || stats.FailedFraction(base.Failures, base.NRequests) > o.MaxFailedFraction
		} else if c.NRuns > 0 {
			c.Warnings = append(c.Warnings, "no 0 ms baseline with runs: no change is computed")
		}
	}
	c.warn(o)
}

// percentOfUnshaped takes a cell's change in percent of its route's
// unshaped baseline, when the route has one with runs: the baseline
// without the shaper's floor, as the seed's netem run had it. The
// interval resamples the 0 ms, the target and the unshaped runs
// independently.
func (c *Cell) percentOfUnshaped(index map[string]*Cell, seed uint64, o Options) {
	u := index[UnshapedKey(c.App, c.Route)]
	if u == nil || u.NRuns == 0 || c.Unshaped {
		return
	}
	c.HasUnshaped, c.UnshapedP50 = true, u.P50
	if !c.HasBaseline {
		return
	}
	base := index[CellKey(c.App, c.Route, 0)]
	c.PercentOfUnshaped = true
	c.Percent = 100 * c.Change / u.P50
	c.PercentCI = stats.BootstrapMediansCI([][]float64{base.P50s, c.P50s, u.P50s}, o.Resamples, stats.NewRNG(seed, PercentKey(c.App, c.Route, c.RTTms)),
		func(m []float64) float64 { return 100 * (m[1] - m[0]) / m[2] })
}

// setting names the cell's setting: "at 0.5 ms", or "unshaped".
func (c *Cell) setting() string { return raw.Task{RTTms: c.RTTms, Unshaped: c.Unshaped}.Setting() }

// warn adds a cell's warnings: low n, failed requests (its own and its
// baseline's), re-sent requests and failed warmups.
func (c *Cell) warn(o Options) {
	if c.NRuns < o.MinRuns {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%d runs (fewer than %d): numbers shown, no claim", c.NRuns, o.MinRuns))
	} else if c.HasBaseline && c.BaselineRuns < o.MinRuns {
		c.Warnings = append(c.Warnings, fmt.Sprintf("0 ms baseline has %d runs (fewer than %d): change shown, no claim", c.BaselineRuns, o.MinRuns))
	}
	if c.Failures > 0 {
		w := fmt.Sprintf("%d of %d measured requests failed (status not 200 or transport error); they are left out of the percentiles",
			c.Failures, c.Failures+c.NRequests)
		if stats.FailedFraction(c.Failures, c.NRequests) > o.MaxFailedFraction {
			w += fmt.Sprintf("; more than %s: numbers shown, no claim", o.maxFailedPercent())
		}
		c.Warnings = append(c.Warnings, w)
	}
	if c.HasBaseline && stats.FailedFraction(c.BaselineFailures, c.BaselineRequests) > o.MaxFailedFraction {
		c.Warnings = append(c.Warnings, fmt.Sprintf("0 ms baseline: %d of %d measured requests failed (more than %s): change shown, no claim",
			c.BaselineFailures, c.BaselineFailures+c.BaselineRequests, o.maxFailedPercent()))
	}
	if c.Retried > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%d measured requests were re-sent by the HTTP client after a kept-alive connection closed; their latency includes the first try",
			c.Retried))
	}
	if c.WarmupFailures > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("failed warmup requests: %d (not timed in any case)", c.WarmupFailures))
	}
}

// verify adds the probes and the shaper's own record to the summary, warns
// of probes out of tolerance and of shaper drops, hold errors and CPU, and
// gives each cell its SELECT 1 verified delay and what left its setting
// unverified. Where the folder has the wire's figures (every task's
// captures), they judge the setting and the probes are reported beside
// them; a folder without them is judged by its probes and the shaper's
// record, and a setting with no probe is "not probed", never verified.
func (sum *Summary) verify(d *raw.Data, o Options) {
	probes, verified := sum.checkProbes(d, o)
	shaper := sum.checkShaper(d, o)
	wire := map[setting]WireVerdict{}
	for _, v := range sum.WireVerdicts {
		wire[setting{v.App, v.RTTms}] = v
	}
	for i := range sum.Cells {
		c := &sum.Cells[i]
		k := setting{c.App, c.RTTms}
		c.RatioVerified = math.NaN()
		if v, ok := verified[k]; ok && c.RTTms > 0 {
			c.HasVerified, c.Verified = true, v
			if c.HasBaseline && v > 0 {
				c.RatioVerified = c.Change / v
			}
		}
		if v, ok := wire[k]; ok {
			if v.Status != WireVerified && v.Status != WireReference {
				c.Unverified = append(c.Unverified, "wire "+v.Status+": "+v.Why)
			}
			c.Unverified = append(c.Unverified, shaper.drops[k]...)
			continue
		}
		c.Unverified = append(append(c.Unverified, probes[k]...), shaper.all[k]...)
		if c.RTTms > 0 && !sum.probed(c.App, c.RTTms) {
			c.Unverified = append(c.Unverified, NotProbed)
		}
	}
}

// NotProbed is why a setting without any verification probe is not
// verified (a run stopped before it probed that setting).
const NotProbed = "not probed"

// setting is one app's setting.
type setting struct {
	app string
	rtt float64
}

// probed says whether an app's setting has a verification probe (ICMP or
// SELECT 1; the quick check before each task does not count).
func (sum *Summary) probed(app string, rtt float64) bool {
	for _, p := range sum.Probes {
		if p.App == app && p.RTTms == rtt && (p.Kind == raw.ProbeICMP || p.Kind == raw.ProbeSelect1) {
			return true
		}
	}
	return false
}

// checkProbes analyzes the probes into the summary, warns of those out of
// tolerance and of settings probed without a 0 ms probe to compare with,
// and returns the reasons per setting and the SELECT 1 changes.
func (sum *Summary) checkProbes(d *raw.Data, o Options) (map[setting][]string, map[setting]float64) {
	unverified := map[setting][]string{}
	verified := map[setting]float64{}
	sum.Probes = analyzeProbes(d.Probes, d.Manifest.Seed, o)
	for _, p := range sum.Probes {
		k := setting{p.App, p.RTTms}
		if p.Kind == raw.ProbeSelect1 && p.HasBaseline {
			verified[k] = p.Added
		}
		if p.RTTms > 0 && !p.HasBaseline && (p.Kind == raw.ProbeICMP || p.Kind == raw.ProbeSelect1) {
			unverified[k] = append(unverified[k], fmt.Sprintf("%s has no 0 ms probe to compare with", p.Kind))
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("probe %s %s at %s ms: no 0 ms probe of the same kind, so nothing to compare with",
				p.App, p.Kind, fmtSetting(p.RTTms)))
		}
		if p.OutOfTolerance {
			why := fmt.Sprintf("%s added %s ms", p.Kind, fmtSigned(p.Added, 3))
			unverified[k] = append(unverified[k], why)
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("probe %s %s at %s ms: added %s ms differs from the configured %s ms by more than %s ms",
				p.App, p.Kind, fmtSetting(p.RTTms), fmtFixed(p.Added, 3), fmtSetting(p.RTTms), fmtSetting(o.ToleranceMs)))
		}
	}
	return unverified, verified
}

// shaperChecks are the shaper's own reasons against a setting: drops
// (which count wherever the setting is judged), and all of them.
type shaperChecks struct {
	drops, all map[setting][]string
}

// checkShaper analyzes the shaper's record into the summary and warns of
// its drops, hold errors and CPU.
func (sum *Summary) checkShaper(d *raw.Data, o Options) shaperChecks {
	sc := shaperChecks{drops: map[setting][]string{}, all: map[setting][]string{}}
	sum.Shaper = AnalyzeShaper(d.Shaper, d.Done)
	for _, st := range sum.Shaper {
		k := setting{st.App, st.RTTms}
		if st.Drops > 0 {
			why := fmt.Sprintf("%s shaper dropped %d packets", st.Side, st.Drops)
			sc.drops[k] = append(sc.drops[k], why)
			sc.all[k] = append(sc.all[k], why)
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("shaper %s %s side at %s ms: %d packets dropped in tasks counted as data",
				st.App, st.Side, fmtSetting(st.RTTms), st.Drops))
		}
		// At 0 ms the hold is the shaper's floor (its read lag), shown in
		// the shaper table; every setting pays it, so it is no flag.
		if st.TargetUs > 0 && math.Abs(st.ErrorUs) > o.ShaperToleranceUs+1e-9 {
			sc.all[k] = append(sc.all[k], fmt.Sprintf("%s shaper hold p50 %s µs for %s µs", st.Side, fmtFixed(st.HoldP50Us, 1), fmtFixed(st.TargetUs, 1)))
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("shaper %s %s side at %s ms: realized hold p50 %s µs differs from the target %s µs by more than %s µs",
				st.App, st.Side, fmtSetting(st.RTTms), fmtFixed(st.HoldP50Us, 1), fmtFixed(st.TargetUs, 1), fmtSetting(o.ShaperToleranceUs)))
		}
		if st.CPUCores > 1 {
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("shaper %s %s side at %s ms used %s cores (more than one)",
				st.App, st.Side, fmtSetting(st.RTTms), fmtFixed(st.CPUCores, 2)))
		}
	}
	return sc
}

// probeGroup gathers the probe rows of one app, kind and setting: their
// summary and the medians of the rows with a successful probe.
type probeGroup struct {
	st   ProbeStat
	vals []float64
}

func analyzeProbes(probes []raw.Probe, seed uint64, o Options) []ProbeStat {
	groups, order := groupProbes(probes)
	for _, g := range order {
		if g.st.RTTms == 0 {
			continue
		}
		base := groups[ProbeKey(g.st.App, g.st.Kind, 0)]
		if base == nil || len(base.vals) == 0 || len(g.vals) == 0 {
			continue
		}
		g.st.HasBaseline = true
		g.st.Added = g.st.Value - base.st.Value
		if g.st.Kind == raw.ProbeSelect1 {
			g.st.CI = stats.BootstrapChangeCI(base.vals, g.vals, o.Resamples, stats.NewRNG(seed, ProbeKey(g.st.App, g.st.Kind, g.st.RTTms)))
		}
		// The 1e-9 ms slack keeps float noise at the exact boundary from
		// flagging.
		g.st.OutOfTolerance = math.Abs(g.st.Added-g.st.RTTms) > o.ToleranceMs+1e-9
	}
	out := make([]ProbeStat, len(order))
	for i, g := range order {
		out[i] = g.st
	}
	sortProbeStats(out)
	return out
}

// groupProbes groups the probe rows by app, kind and setting, in order of
// first appearance, and sets each group's value to the median of its rows'
// medians (no added RTT or interval yet).
func groupProbes(probes []raw.Probe) (map[string]*probeGroup, []*probeGroup) {
	groups := map[string]*probeGroup{}
	var order []*probeGroup
	for _, p := range probes {
		k := ProbeKey(p.App, p.Kind, p.RTTms)
		g := groups[k]
		if g == nil {
			g = &probeGroup{st: ProbeStat{App: p.App, Kind: p.Kind, RTTms: p.RTTms}}
			groups[k] = g
			order = append(order, g)
		}
		g.st.Rows++
		g.st.N += p.N
		g.st.Failures += p.Failures
		if p.N-p.Failures <= 0 {
			continue // no successful probe in this row: no value
		}
		// Medians throughout: one late echo or call must not move the
		// verification figure (the mean is kept in probes.csv).
		g.vals = append(g.vals, p.MedianMs)
	}
	for _, g := range order {
		slices.Sort(g.vals)
		g.st.Value = stats.Percentile(g.vals, 0.5)
		g.st.Added = math.NaN()
		g.st.CI = stats.NoInterval()
	}
	return groups, order
}

// sortProbeStats orders probe summaries by app, then kind (ICMP, the
// per-task ICMP check, SELECT 1), then setting.
func sortProbeStats(out []ProbeStat) {
	kindRank := map[string]int{raw.ProbeICMP: 0, raw.ProbeICMPTask: 1, raw.ProbeICMPUnshaped: 2, raw.ProbeSelect1: 3}
	slices.SortFunc(out, func(a, b ProbeStat) int {
		if a.App != b.App {
			return cmpStr(a.App, b.App)
		}
		if a.Kind != b.Kind {
			return kindRank[a.Kind] - kindRank[b.Kind]
		}
		return cmpCell("", "", a.RTTms, "", "", b.RTTms)
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fmtSetting formats an RTT setting in ms with as few digits as needed
// (0, 0.05, 0.75, 1).
func fmtSetting(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
