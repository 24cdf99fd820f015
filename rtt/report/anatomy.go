package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

// The wire's verdict: the one-way delay the captures saw added over the
// 0 ms tasks, per direction, against half the setting.
const (
	// WireToleranceMs bounds |added one-way p50 - RTT/2|.
	WireToleranceMs = 0.02
	// WireMinMatched is the least share of sent packets paired with
	// their arrival for the figures to count.
	WireMinMatched = 0.95
	// WireMinPassing is the least share of a setting's tasks that must
	// pass on their own for the setting to be verified.
	WireMinPassing = 0.95
)

// Wire verdicts of a setting.
const (
	WireVerified   = "verified"
	WireOff        = "off"
	WireIncomplete = "incomplete"
	WireReference  = "reference" // the 0 ms setting the others are measured against
	WireNoData     = "no data"
)

// WireStat is one direction of the wire at one setting of one app, over
// the tasks that counted: the median of the tasks' one-way p50 and p99,
// and the p50 added over the 0 ms tasks against half the setting.
type WireStat struct {
	App       string
	RTTms     float64
	Unshaped  bool
	Direction string
	// Tasks counts the tasks with wire figures; Incomplete those whose
	// captures missed packets (a full ring or the packet cap), left out
	// of the figures below.
	Tasks      int
	Incomplete int
	Sent       int
	Matched    int
	P50Ms      float64
	P99Ms      float64
	// AddedMs = P50Ms - the 0 ms tasks' P50Ms (HasAdded); TargetMs is
	// half the setting. Passing counts the tasks whose own added p50 is
	// within WireToleranceMs of the target with WireMinMatched of their
	// packets paired.
	HasAdded bool
	AddedMs  float64
	TargetMs float64
	Passing  int
	// noBase says why the 0 ms tasks give no reference to measure
	// against (when HasAdded is false on a shaped setting).
	noBase string
}

// Share is Matched / Sent.
func (w *WireStat) Share() float64 { return stats.Share(w.Matched, w.Sent) }

// WireVerdict is the wire's verdict on one setting of one app, over both
// directions.
type WireVerdict struct {
	App    string
	RTTms  float64
	Status string // WireVerified, WireOff, WireIncomplete, WireReference, WireNoData
	// Why says what is off, with figures ("" when verified).
	Why string
	// Tasks counts the setting's tasks with complete captures; Passing
	// those passing in both directions; Incomplete the tasks whose
	// captures missed packets.
	Tasks, Passing, Incomplete int
}

// analyzeWire groups the wire rows of done attempts by app, setting and
// direction, and gives each setting its verdict: verified when its 0 ms
// reference is valid (complete captures that paired packets), in both
// directions the median added one-way p50 is within WireToleranceMs of
// half the setting with WireMinMatched of the packets paired, at least
// WireMinPassing of its tasks pass on their own, and no task's captures
// missed packets.
func analyzeWire(rows []raw.WireRow, o Options) ([]WireStat, []WireVerdict) {
	type key struct {
		app      string
		rtt      float64
		unshaped bool
		dir      string
	}
	groups := map[key][]raw.WireRow{}
	var keys []key
	for _, r := range rows {
		k := key{r.App, r.RTTms, r.Unshaped, r.Direction}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmpCell(a.app, "", a.rtt, b.app, "", b.rtt); c != 0 {
			return c
		}
		if a.unshaped != b.unshaped {
			return btoi(b.unshaped) - btoi(a.unshaped)
		}
		return cmpStr(a.dir, b.dir)
	})
	base := map[[2]string]float64{} // the 0 ms p50 by app and direction
	noBase := map[[2]string]string{}
	var stats []WireStat
	for _, k := range keys {
		st := wireStat(groups[k])
		st.App, st.RTTms, st.Unshaped, st.Direction, st.TargetMs = k.app, k.rtt, k.unshaped, k.dir, wireTarget(k.dir, k.rtt)
		if k.rtt == 0 && !k.unshaped {
			switch {
			case st.Tasks == st.Incomplete:
				noBase[[2]string{k.app, k.dir}] = fmt.Sprintf("every 0 ms task's captures missed packets (%d tasks)", st.Tasks)
			case math.IsNaN(st.P50Ms):
				noBase[[2]string{k.app, k.dir}] = fmt.Sprintf("the 0 ms tasks paired no packet (%d tasks)", st.Tasks-st.Incomplete)
			default:
				base[[2]string{k.app, k.dir}] = st.P50Ms
			}
		}
		stats = append(stats, st)
	}
	for i := range stats {
		st := &stats[i]
		b, ok := base[[2]string{st.App, st.Direction}]
		if !ok {
			st.noBase = noBase[[2]string{st.App, st.Direction}]
		}
		if !ok || st.Unshaped || st.Tasks == st.Incomplete {
			continue
		}
		st.HasAdded, st.AddedMs = true, st.P50Ms-b
		for _, r := range groups[key{st.App, st.RTTms, st.Unshaped, st.Direction}] {
			if r.Complete() && r.Share() >= WireMinMatched && math.Abs(r.P50Ms-b-st.TargetMs) <= wireTolerance(st.Direction)+1e-9 {
				st.Passing++
			}
		}
	}
	return stats, wireVerdicts(stats, groups2tasks(rows, base))
}

// wireTarget is what a direction's p50 should add at rtt: half of it
// one way, all of it per round trip (workloads.DirRoundTrip).
func wireTarget(dir string, rtt float64) float64 {
	if dir == workloads.DirRoundTrip {
		return rtt
	}
	return rtt / 2
}

// wireTolerance is how far a direction's added p50 may be from its
// target: WireToleranceMs one way, the two ways' together per round trip.
func wireTolerance(dir string) float64 {
	if dir == workloads.DirRoundTrip {
		return 2 * WireToleranceMs
	}
	return WireToleranceMs
}

// wireStat sums up one group's rows: the complete ones' counts and the
// medians of their p50s and p99s.
func wireStat(g []raw.WireRow) WireStat {
	st := WireStat{Tasks: len(g), P50Ms: math.NaN(), P99Ms: math.NaN()}
	var p50, p99 []float64
	for _, r := range g {
		if !r.Complete() {
			st.Incomplete++
			continue
		}
		st.Sent += r.Sent
		st.Matched += r.Matched
		if r.Matched > 0 {
			p50, p99 = append(p50, r.P50Ms), append(p99, r.P99Ms)
		}
	}
	if len(p50) > 0 {
		st.P50Ms, st.P99Ms = stats.Median(p50), stats.Median(p99)
	}
	return st
}

// taskPass says, per task, whether both its directions passed.
type taskPass struct {
	app      string
	rtt      float64
	complete bool
	pass     bool
}

// groups2tasks judges each shaped task on its own: complete, and in
// both directions its added p50 within tolerance of half the setting
// with enough packets paired.
func groups2tasks(rows []raw.WireRow, base map[[2]string]float64) []taskPass {
	byTask := map[int]*taskPass{}
	var order []int
	for _, r := range rows {
		if r.Unshaped {
			continue
		}
		tp := byTask[r.Task]
		if tp == nil {
			tp = &taskPass{app: r.App, rtt: r.RTTms, complete: true, pass: true}
			byTask[r.Task] = tp
			order = append(order, r.Task)
		}
		b, ok := base[[2]string{r.App, r.Direction}]
		tp.complete = tp.complete && r.Complete()
		tp.pass = tp.pass && ok && r.Complete() && r.Share() >= WireMinMatched && math.Abs(r.P50Ms-b-wireTarget(r.Direction, r.RTTms)) <= wireTolerance(r.Direction)+1e-9
	}
	out := make([]taskPass, 0, len(order))
	for _, t := range order {
		out = append(out, *byTask[t])
	}
	return out
}

// wireVerdicts gives each (app, setting) its verdict from its two
// directions' figures.
func wireVerdicts(stats []WireStat, tasks []taskPass) []WireVerdict {
	type key struct {
		app string
		rtt float64
	}
	var out []WireVerdict
	index := map[key]int{}
	for _, st := range stats {
		if st.Unshaped {
			continue
		}
		k := key{st.App, st.RTTms}
		i, ok := index[k]
		if !ok {
			status := WireVerified
			if st.RTTms == 0 {
				status = WireReference
			}
			out = append(out, WireVerdict{App: st.App, RTTms: st.RTTms, Status: status})
			i = len(out) - 1
			index[k] = i
		}
		judgeDirection(&out[i], st)
	}
	for _, t := range tasks {
		i, ok := index[key{t.app, t.rtt}]
		switch {
		case !ok:
		case !t.complete:
			out[i].Incomplete++
		default:
			out[i].Tasks++
			if t.pass {
				out[i].Passing++
			}
		}
	}
	for i := range out {
		judgeTasks(&out[i])
	}
	return out
}

// judgeMissing holds each shaped setting to the done tasks that have no
// wire figures (wire.csv cut short or lost, raw.Data.WireMissing): a
// setting with any is incomplete, never verified on the rest, and one
// with no row left has no data (not a verdict of the probes instead).
func judgeMissing(vs []WireVerdict, d *raw.Data) []WireVerdict {
	if len(d.WireMissing) == 0 {
		return vs
	}
	byID := map[int]raw.Task{}
	for _, t := range d.Manifest.Tasks {
		byID[t.ID] = t
	}
	missing := map[setting]int{}
	for _, id := range d.WireMissing {
		if t, ok := byID[id]; ok && !t.Unshaped {
			missing[setting{t.App, t.RTTms}]++
		}
	}
	why := func(n int) string {
		return fmt.Sprintf("%d done task(s) have no wire figures (wire.csv cut short or lost)", n)
	}
	judged := map[setting]bool{}
	for i := range vs {
		v := &vs[i]
		judged[setting{v.App, v.RTTms}] = true
		n := missing[setting{v.App, v.RTTms}]
		if n == 0 || v.Status == WireReference {
			continue
		}
		if v.Status == WireVerified {
			v.Status = WireIncomplete
		}
		v.Why = strings.Join(slices.DeleteFunc([]string{v.Why, why(n)}, func(s string) bool { return s == "" }), "; ")
	}
	for _, k := range slices.SortedFunc(maps.Keys(missing), func(a, b setting) int { return cmpCell(a.app, "", a.rtt, b.app, "", b.rtt) }) {
		if !judged[k] {
			status := WireNoData
			if k.rtt == 0 {
				status = WireReference
			}
			vs = append(vs, WireVerdict{App: k.app, RTTms: k.rtt, Status: status, Why: why(missing[k])})
		}
	}
	return vs
}

// judgeTasks holds a setting that both directions' figures verified to
// its tasks: every task's captures complete, and at least WireMinPassing
// of them passing on their own.
func judgeTasks(v *WireVerdict) {
	if v.Status != WireVerified {
		return
	}
	var why string
	switch {
	case v.Incomplete > 0:
		v.Status = WireIncomplete
		why = fmt.Sprintf("%d of %d tasks' captures missed packets, left out of the figures", v.Incomplete, v.Tasks+v.Incomplete)
	case v.Tasks == 0:
		v.Status = WireNoData
		why = "no task with wire figures"
	case float64(v.Passing) < WireMinPassing*float64(v.Tasks):
		v.Status = WireOff
		why = fmt.Sprintf("%d of %d tasks passed on their own (at least %.0f%% must)", v.Passing, v.Tasks, 100*WireMinPassing)
	}
	if why != "" {
		v.Why = strings.Join(slices.DeleteFunc([]string{v.Why, why}, func(s string) bool { return s == "" }), "; ")
	}
}

// judgeDirection folds one direction's figures into a setting's verdict.
func judgeDirection(v *WireVerdict, st WireStat) {
	var why []string
	if v.Why != "" {
		why = append(why, v.Why)
	}
	switch {
	case st.Tasks == st.Incomplete:
		v.Status = WireIncomplete
		why = append(why, fmt.Sprintf("%s: every capture missed packets (%d tasks)", st.Direction, st.Tasks))
	case v.Status == WireReference:
	case !st.HasAdded:
		v.Status = WireNoData
		if st.noBase != "" {
			why = append(why, fmt.Sprintf("%s: no valid 0 ms reference: %s", st.Direction, st.noBase))
		} else {
			why = append(why, fmt.Sprintf("%s: no 0 ms tasks to measure against", st.Direction))
		}
	default:
		if st.Share() < WireMinMatched {
			v.Status = WireOff
			why = append(why, fmt.Sprintf("%s: %.1f%% of packets paired", st.Direction, 100*st.Share()))
		}
		if math.Abs(st.AddedMs-st.TargetMs) > wireTolerance(st.Direction)+1e-9 {
			v.Status = WireOff
			what := "one-way"
			if st.Direction == workloads.DirRoundTrip {
				what = "round trip"
			}
			why = append(why, fmt.Sprintf("%s %s added %s ms for %s", st.Direction, what, fmtFixed(st.AddedMs, 3), fmtFixed(st.TargetMs, 3)))
		}
	}
	v.Why = strings.Join(why, "; ")
}

// Parts is where a request's time went, averaged over the requests
// around each run's median (see Anatomy), in milliseconds.
type Parts struct {
	// Requests counts the requests averaged, over Runs runs.
	Requests, Runs int
	Latency        float64
	// Client is the load client's own time; Legs the client↔app legs.
	Client, Legs float64
	App          float64
	Wire         float64 // app↔database, both ways, every round trip
	DB           float64
	RoundTrips   float64
}

// TakenApart is how many of a cell's measured requests the anatomy
// could join to their latency and take apart, of how many, and why the
// others were left out.
type TakenApart struct {
	N, Measured int
	// LeftOut says why requests were left out, a cause a line ("" when
	// none were).
	LeftOut []string
	// From the tasks' join by sequence number (Counted: every task's
	// wire rows have the counts; folders written before lack them): the
	// measured requests no request on the wire was joined to, those left
	// out for a negative client time, and the exchanges that ran beside
	// the requests' own round trips.
	Unpaired, NegativeClient, Overlaps int
	Counted                            bool
}

// Share is N / Measured (NaN when nothing was measured).
func (t TakenApart) Share() float64 {
	if t.Measured == 0 {
		return math.NaN()
	}
	return float64(t.N) / float64(t.Measured)
}

// Attribution splits a cell's change against its 0 ms cell into the
// wire as configured (round trips × RTT), the wire's part of a change in
// the number of round trips (each one more or less costs the 0 ms
// cell's wire per round trip: an app whose driver sends some exchanges
// in the background makes a number that varies with the timing), the
// wire's excess over both (the delay per round trip beyond the
// setting), the app's time, the database's time and the rest (the
// client's own time and the legs). They add up to Total, the change of
// the parts' latency.
type Attribution struct {
	Total, WireConfigured, WireTrips, WireExcess, App, DB, Outside float64
	// TripsChange is the change of the round trips per request.
	TripsChange float64
}

// Wire is the change on the wire: configured, round trips' and excess.
func (a Attribution) Wire() float64 { return a.WireConfigured + a.WireTrips + a.WireExcess }

// PerTrip is the wire's change per round trip against the RTT: 1 when
// each round trip carries exactly the configured delay.
func (a Attribution) PerTrip() float64 { return (a.WireConfigured + a.WireExcess) / a.WireConfigured }

// AnatomyBand is the share of each run's requests, around its median,
// whose parts are averaged: those from the 40th to the 60th percentile
// of the run's latency.
const AnatomyBand = 0.2

// AnatomyMethod says how the parts are taken; the summaries repeat it.
const AnatomyMethod = "each measured request is taken apart on the wire (captures of the client's, the app's and the database's namespaces, kernel stamps on one clock); per run the requests from the 40th to the 60th percentile of its latency are averaged, and a cell's parts are the mean over its runs; the change of each part is its cell's minus the 0 ms cell's, so the parts add up to the change of their latency; the wire's change is split into round trips × RTT (configured), the change of the number of round trips × the 0 ms cell's wire per round trip, and the excess per round trip"

// partsOf averages, per run, the parts of the successful requests whose
// latency lies in the run's middle band, then over the runs.
func partsOf(rows []raw.AnatomyRow) (Parts, bool) {
	byTask := map[int][]raw.AnatomyRow{}
	var tasks []int
	for _, r := range rows {
		if r.Failed {
			continue
		}
		if _, ok := byTask[r.Task]; !ok {
			tasks = append(tasks, r.Task)
		}
		byTask[r.Task] = append(byTask[r.Task], r)
	}
	slices.Sort(tasks)
	var p Parts
	for _, t := range tasks {
		run := byTask[t]
		lat := make([]float64, len(run))
		for i, r := range run {
			lat[i] = r.LatencyMs
		}
		slices.Sort(lat)
		lo, hi := stats.Percentile(lat, 0.5-AnatomyBand/2), stats.Percentile(lat, 0.5+AnatomyBand/2)
		var sum Parts
		for _, r := range run {
			if r.LatencyMs < lo || r.LatencyMs > hi {
				continue
			}
			sum.Requests++
			sum.Latency += r.LatencyMs
			sum.Client += r.ClientMs
			sum.Legs += r.LegInMs + r.LegOutMs
			sum.App += r.AppMs()
			sum.Wire += r.WireMs()
			sum.DB += r.DBMs
			sum.RoundTrips += float64(r.RoundTrips)
		}
		if sum.Requests == 0 {
			continue
		}
		n := float64(sum.Requests)
		p.Runs++
		p.Requests += sum.Requests
		p.Latency += sum.Latency / n
		p.Client += sum.Client / n
		p.Legs += sum.Legs / n
		p.App += sum.App / n
		p.Wire += sum.Wire / n
		p.DB += sum.DB / n
		p.RoundTrips += sum.RoundTrips / n
	}
	if p.Runs == 0 {
		return p, false
	}
	r := float64(p.Runs)
	p.Latency, p.Client, p.Legs, p.App, p.Wire, p.DB, p.RoundTrips = p.Latency/r, p.Client/r, p.Legs/r, p.App/r, p.Wire/r, p.DB/r, p.RoundTrips/r
	return p, true
}

// attribute is the change from base to p at the setting rtt.
func attribute(base, p Parts, rtt float64) Attribution {
	a := Attribution{Total: p.Latency - base.Latency, App: p.App - base.App, DB: p.DB - base.DB,
		Outside: (p.Client + p.Legs) - (base.Client + base.Legs), TripsChange: p.RoundTrips - base.RoundTrips}
	a.WireConfigured = p.RoundTrips * rtt
	if base.RoundTrips > 0 {
		a.WireTrips = a.TripsChange * base.Wire / base.RoundTrips
	}
	a.WireExcess = (p.Wire - base.Wire) - a.WireConfigured - a.WireTrips
	return a
}

// anatomize gives every cell (and unshaped baseline) its parts, how many
// of its measured requests were taken apart and why the rest were not
// (from the tasks' wire rows), and every cell with a 0 ms cell its
// attribution.
func (sum *Summary) anatomize(rows []raw.AnatomyRow, wire []raw.WireRow) {
	type key struct {
		app, route string
		rtt        float64
		unshaped   bool
	}
	byCell := map[key][]raw.AnatomyRow{}
	for _, r := range rows {
		k := key{r.App, r.Route, r.RTTms, r.Unshaped}
		byCell[k] = append(byCell[k], r)
	}
	tasks := map[key][]raw.WireRow{} // one row per task attempt: the anatomy is on both directions' rows
	for _, w := range wire {
		if w.Direction == workloads.DirAppToDB {
			k := key{w.App, w.Route, w.RTTms, w.Unshaped}
			tasks[k] = append(tasks[k], w)
		}
	}
	takenApart := func(c *Cell, k key) {
		if len(tasks[k]) > 0 {
			c.TakenApart = takenApartOf(len(byCell[k]), c.NRequests+c.Failures, tasks[k])
		}
	}
	for i := range sum.Unshaped {
		c := &sum.Unshaped[i]
		k := key{c.App, c.Route, 0, true}
		c.Parts, c.HasParts = partsOf(byCell[k])
		takenApart(c, k)
	}
	base := map[[2]string]Parts{}
	for i := range sum.Cells {
		c := &sum.Cells[i]
		k := key{c.App, c.Route, c.RTTms, false}
		c.Parts, c.HasParts = partsOf(byCell[k])
		takenApart(c, k)
		if c.HasParts && c.RTTms == 0 {
			base[[2]string{c.App, c.Route}] = c.Parts
		}
	}
	for i := range sum.Cells {
		c := &sum.Cells[i]
		if b, ok := base[[2]string{c.App, c.Route}]; ok && c.HasParts && c.RTTms > 0 {
			c.HasAttribution, c.Attribution = true, attribute(b, c.Parts, c.RTTms)
		}
	}
}

// takenApartOf counts a cell's measured requests taken apart and says
// why the rest were left out, from its tasks' wire rows: a task whose
// requests on the wire could not be joined to the client's (its
// problem), requests with an event a capture missed, requests no request
// on the wire was joined to, requests whose client time came out
// negative, and what no task accounts for.
func takenApartOf(n, measured int, tasks []raw.WireRow) TakenApart {
	t := TakenApart{N: n, Measured: measured, Counted: len(tasks) > 0}
	problems, firstProblem, incomplete := 0, "", 0
	for _, w := range tasks {
		t.Counted = t.Counted && w.Counted
		t.Unpaired += w.Unpaired
		t.NegativeClient += w.NegativeClient
		t.Overlaps += w.Overlaps
		switch {
		case w.Problem != "":
			problems++
			if firstProblem == "" {
				firstProblem = w.Problem
			}
		default:
			incomplete += w.Incomplete
		}
	}
	if problems > 0 {
		t.LeftOut = append(t.LeftOut, fmt.Sprintf("%d of %d tasks' requests could not be joined to the client's (e.g. %s)", problems, len(tasks), firstProblem))
	}
	if incomplete > 0 {
		t.LeftOut = append(t.LeftOut, fmt.Sprintf("%d requests with an event a capture missed", incomplete))
	}
	if t.Unpaired > 0 {
		t.LeftOut = append(t.LeftOut, fmt.Sprintf("%d requests no request on the wire was joined to by its sequence number", t.Unpaired))
	}
	if t.NegativeClient > 0 {
		t.LeftOut = append(t.LeftOut, fmt.Sprintf("%d requests whose client time came out negative", t.NegativeClient))
	}
	if len(t.LeftOut) == 0 && n < measured {
		t.LeftOut = append(t.LeftOut, fmt.Sprintf("%d requests not found on the wire", measured-n))
	}
	return t
}
