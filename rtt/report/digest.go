package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

// DigestMaxLines bounds the digest a run prints when it ends.
const DigestMaxLines = 25

// Digest is what a run prints when it ends, in at most DigestMaxLines
// lines: the tasks done, a line per (app, route) with the change of its
// p50 at the largest setting and its CI and, where the requests were
// taken apart on the wire, a line with where that change went; the
// verdict per setting (from the wire where the folder has its figures:
// the wire, the endpoints and the probes, each said once; else from the
// probes, a setting the host could not verify said once with the reason
// and the figure that would pass), the count of warnings, and the paths
// of the full summary and the report.
func (s *Summary) Digest(summaryPath, reportPath string) string {
	d := &digest{}
	d.add("plan %s: %d of %d tasks done (seed %d)", s.Plan, s.TasksDone, s.TasksPlanned, s.Seed)
	if s.Manifest.Emulated {
		d.add("platform %s under emulation (qemu-user): timings make no claim about that platform's hardware", s.Manifest.Platform)
	}
	s.digestChanges(d)
	s.digestVerification(d)
	if n := len(s.Warnings); n > 0 {
		d.add("%d warning(s): see the summary", n)
	}
	d.add("summary: %s", summaryPath)
	if reportPath != "" {
		d.add("report:  %s", reportPath)
	}
	return strings.Join(d.lines, "\n") + "\n"
}

// digest collects the lines of Summary.Digest.
type digest struct{ lines []string }

// add appends one formatted line.
func (d *digest) add(format string, a ...any) { d.lines = append(d.lines, fmt.Sprintf(format, a...)) }

// largestSettings returns, per (app, route) in plan order, the cell with a
// change at the largest setting.
func (s *Summary) largestSettings() (order []routeKey, last map[routeKey]*Cell) {
	last = map[routeKey]*Cell{}
	for i := range s.Cells {
		c := &s.Cells[i]
		if !c.HasBaseline {
			continue
		}
		k := routeKey{c.App, c.Route}
		if last[k] == nil {
			order = append(order, k)
		}
		if last[k] == nil || c.RTTms > last[k].RTTms {
			last[k] = c
		}
	}
	return order, last
}

// digestChanges writes a row per (app, route) with its change at the
// largest setting, cut short to leave room for the lines around them.
func (s *Summary) digestChanges(d *digest) {
	order, last := s.largestSettings()
	// Room for the rows: the lines above and below them take at most 10
	// (the plan, the rows' header, the no-claim line, the verdict and its
	// three lines, the warnings, the summary and the report). A route
	// taken apart on the wire has a second line.
	room := DigestMaxLines - 10
	perRoute := 1
	for _, k := range order {
		if last[k].HasAttribution {
			perRoute = 2
			room++ // the three-part verdict takes three lines, not four
			break
		}
	}
	if len(order) > 0 {
		head := "change of the median latency at the largest setting, 95% CI over runs"
		if perRoute == 2 {
			head += "; below it, where it went (requests around each run's median, taken apart on the wire)"
		}
		d.add("%s:", head)
	}
	width, noClaim := 0, 0
	for _, k := range order {
		width = max(width, len(k.app)+1+len(k.route))
		if last[k].NoClaim() {
			noClaim++
		}
	}
	allNoClaim := noClaim > 0 && noClaim == len(order)
	rows := room / perRoute
	for i, k := range order {
		if i == rows-1 && len(order) > rows {
			d.add("  ... %d more in the summary", len(order)-i)
			break
		}
		d.lines = append(d.lines, digestRow(last[k], width, allNoClaim))
		if c := last[k]; c.HasAttribution {
			d.lines = append(d.lines, "    "+AttributionLine(c))
		}
	}
	if allNoClaim {
		d.add("  no claim on any row: a claim needs %d runs per cell and at most %s failed requests (a smoke plan has fewer runs)", s.Options.MinRuns, s.Options.maxFailedPercent())
	}
}

// digestRow is one cell's row of the digest: its change with the CI, the
// percentage, the prediction, and a no-claim mark unless every row has one.
func digestRow(c *Cell, width int, allNoClaim bool) string {
	row := fmt.Sprintf("  %-*s  at %s ms: %+.2f ms", width, c.App+" "+c.Route, fmtSetting(c.RTTms), c.Change)
	if c.ChangeCI.Valid() {
		row += fmt.Sprintf(" [%.2f, %.2f]", c.ChangeCI.Low, c.ChangeCI.High)
	}
	row += " (" + fmtPercent(c.Percent, c.PercentCI)
	if c.PercentOfUnshaped {
		row += " of unshaped"
	}
	row += ")"
	if c.HasStatements {
		row += fmt.Sprintf(", predicted %+.2f", c.Predicted)
	}
	if c.NoClaim() && !allNoClaim {
		row += "  (no claim: too few runs or too many failures)"
	}
	return row
}

// unverifiedSettings returns the settings with a change, ascending, and
// for each one the host could not verify its first app followed by the
// reasons.
func (s *Summary) unverifiedSettings() (settings []float64, bad map[float64][]string) {
	bad = map[float64][]string{}
	seen := map[float64]bool{}
	for i := range s.Cells {
		c := &s.Cells[i]
		if !c.HasBaseline {
			continue
		}
		if !seen[c.RTTms] {
			seen[c.RTTms] = true
			settings = append(settings, c.RTTms)
		}
		if len(c.Unverified) > 0 && len(bad[c.RTTms]) == 0 {
			bad[c.RTTms] = append([]string{c.App}, c.Unverified...)
		}
	}
	sort.Float64s(settings)
	return settings, bad
}

// AttributionLine says where a cell's change went, e.g.
//
//	+4.06 = wire +3.02 (3.00 configured) + app +0.71 + database +0.33 + client +0.00
//
// (client: the load client's own time and the client↔app legs).
//
// (client: the load client's own time and the client↔app legs); when the
// number of round trips per request changed with the setting, the wire
// says what that changed: (5.19 configured, -0.49 for 0.62 fewer round
// trips).
func AttributionLine(c *Cell) string {
	a := c.Attribution
	wire := fmtFixed(a.WireConfigured, 2) + " configured"
	if math.Abs(a.TripsChange) >= 0.05 {
		more := "more"
		if a.TripsChange < 0 {
			more = "fewer"
		}
		wire += fmt.Sprintf(", %s for %s %s round trips", fmtSigned(a.WireTrips, 2), fmtFixed(math.Abs(a.TripsChange), 2), more)
	}
	return fmt.Sprintf("%s = wire %s (%s) + app %s + database %s + client %s", fmtSigned(a.Total, 2), fmtSigned(a.Wire(), 2),
		wire, fmtSigned(a.App, 2), fmtSigned(a.DB, 2), fmtSigned(a.Outside, 2))
}

// digestVerification writes the verdict per setting, over every app: the
// wire's, the endpoints' and the probes' where the folder has the wire's
// figures, else the probes' (and explains the first setting not
// verified).
func (s *Summary) digestVerification(d *digest) {
	if len(s.WireVerdicts) > 0 {
		s.digestWire(d)
		s.digestAnatomy(d)
		s.digestEndpoints(d)
		s.digestProbes(d)
		return
	}
	settings, bad := s.unverifiedSettings()
	if miss := s.notProbed(); len(settings) == 0 && len(miss) > 0 {
		d.add("probes: not probed: %s", strings.Join(miss, ", "))
	}
	if len(settings) > 0 {
		var verdicts []string
		for _, r := range settings {
			mark := "verified"
			if len(bad[r]) > 0 {
				mark = "NOT verified"
			}
			verdicts = append(verdicts, fmt.Sprintf("%s ms %s", fmtSetting(r), mark))
		}
		d.add("delay: %s", strings.Join(verdicts, ", "))
	}
	for _, r := range settings {
		if why := bad[r]; len(why) > 0 {
			n := 0
			for _, e := range settings {
				if len(bad[e]) > 0 {
					n++
				}
			}
			d.add("  %d of %d settings were not verified on this host; e.g. %s at %s ms: %s.", n, len(settings), why[0], fmtSetting(r), strings.Join(why[1:], "; "))
			d.add("  To pass, every probe's added RTT is within ±%g ms of the setting and the shaper's hold within ±%g µs of its target, with no drop;", s.Options.ToleranceMs, s.Options.ShaperToleranceUs)
			d.add("  a loaded or small host misses that: the changes are then against the configured RTT (see \"How exact the delay is\" in README.md).")
			break
		}
	}
}

// settingVerdicts folds the apps' wire verdicts per shaped setting above
// 0 ms, ascending: off beats incomplete beats no data beats verified.
func (s *Summary) settingVerdicts() (settings []float64, status map[float64]WireVerdict) {
	rank := map[string]int{WireVerified: 0, WireNoData: 1, WireIncomplete: 2, WireOff: 3}
	status = map[float64]WireVerdict{}
	for _, v := range s.WireVerdicts {
		if v.Status == WireReference {
			continue
		}
		cur, ok := status[v.RTTms]
		if !ok {
			settings = append(settings, v.RTTms)
			cur = WireVerdict{RTTms: v.RTTms, Status: WireVerified}
		}
		cur.Tasks, cur.Passing = cur.Tasks+v.Tasks, cur.Passing+v.Passing
		if rank[v.Status] > rank[cur.Status] {
			cur.Status, cur.App, cur.Why = v.Status, v.App, v.Why
		}
		status[v.RTTms] = cur
	}
	sort.Float64s(settings)
	return settings, status
}

// digestWire writes the wire's verdict per setting: what the captures of
// every task saw, against half the setting each way.
func (s *Summary) digestWire(d *digest) {
	settings, status := s.settingVerdicts()
	var parts []string
	tasks, passing, sent, matched := 0, 0, 0, 0
	var first *WireVerdict
	for _, r := range settings {
		v := status[r]
		parts = append(parts, fmt.Sprintf("%s ms %s", fmtSetting(r), v.Status))
		tasks, passing = tasks+v.Tasks, passing+v.Passing
		if v.Status != WireVerified && first == nil {
			first = &v
		}
	}
	oneWay := false
	for _, w := range s.Wire {
		if !w.Unshaped && w.RTTms > 0 && w.Direction != workloads.DirRoundTrip {
			sent, matched = sent+w.Sent, matched+w.Matched
			oneWay = true
		}
	}
	line := "wire (captured in both namespaces on every task): " + strings.Join(parts, ", ")
	if tasks > 0 {
		judged, tol := "one-way added within ±%g ms of half the RTT", WireToleranceMs
		if !oneWay {
			// App and database on two hosts: no clock serves both
			// captures, and the round trip alone was judged.
			judged, tol = "no one-way figure (app and database on two hosts, no shared clock): round trip added within ±%g ms of the RTT", wireTolerance(workloads.DirRoundTrip)
		}
		line += fmt.Sprintf("; "+judged+" in %.0f%% of %d tasks", tol, 100*float64(passing)/float64(tasks), tasks)
	}
	if sent > 0 {
		line += fmt.Sprintf(", %.1f%% of packets paired", 100*float64(matched)/float64(sent))
	}
	line += s.tripsNote()
	if first != nil {
		line += fmt.Sprintf("; e.g. %s at %s ms: %s", first.App, fmtSetting(first.RTTms), first.Why)
	}
	d.add("%s", line)
}

// tripsNote is the round trips' part of the wire line, at the largest
// setting whose round trip has an added figure: the median over apps of
// the added round trip (each turn of the database measured on each
// capture's own clock), beside the sum of the two one-way added figures
// where the captures shared a clock. Empty for a folder without round
// trips.
func (s *Summary) tripsNote() string {
	type cell struct {
		app string
		rtt float64
	}
	added := map[cell]map[string]float64{} // by direction
	best := 0.0
	for _, w := range s.Wire {
		if w.Unshaped || !w.HasAdded {
			continue
		}
		c := cell{w.App, w.RTTms}
		if added[c] == nil {
			added[c] = map[string]float64{}
		}
		added[c][w.Direction] = w.AddedMs
		if w.Direction == workloads.DirRoundTrip {
			best = max(best, w.RTTms)
		}
	}
	if best <= 0 {
		return ""
	}
	var trips, oneWay []float64
	turns, measured := 0, 0
	for _, w := range s.Wire {
		if w.Unshaped || !w.HasAdded || w.Direction != workloads.DirRoundTrip || w.RTTms != best {
			continue
		}
		trips = append(trips, w.AddedMs)
		turns, measured = turns+w.Sent, measured+w.Matched
		dirs := added[cell{w.App, best}]
		a, okA := dirs[workloads.DirAppToDB]
		b, okB := dirs[workloads.DirDBToApp]
		if okA && okB {
			oneWay = append(oneWay, a+b)
		}
	}
	note := fmt.Sprintf("; per round trip (each capture on its own clock, no clock shared): added %s ms at %s ms", fmtFixed(stats.Median(trips), 3), fmtSetting(best))
	if len(oneWay) > 0 {
		note += fmt.Sprintf(" (the two one-way: %s)", fmtFixed(stats.Median(oneWay), 3))
	}
	if turns > 0 {
		note += fmt.Sprintf(", %.1f%% of the database's turns measured", 100*float64(measured)/float64(turns))
	}
	return note
}

// digestAnatomy writes how many measured requests of every cell were
// joined to their latency and taken apart on the wire, and, where the
// folder counted the join by sequence number, those not joined, those
// left out for a negative client time and the overlaps.
func (s *Summary) digestAnatomy(d *digest) {
	var n, measured, unpaired, negative, overlaps int
	counted := true
	for _, cells := range [][]Cell{s.Unshaped, s.Cells} {
		for _, c := range cells {
			t := c.TakenApart
			if t.Measured == 0 {
				continue
			}
			n, measured = n+t.N, measured+t.Measured
			unpaired, negative, overlaps = unpaired+t.Unpaired, negative+t.NegativeClient, overlaps+t.Overlaps
			counted = counted && t.Counted
		}
	}
	if measured == 0 {
		return
	}
	line := fmt.Sprintf("requests taken apart on the wire: %d of %d measured (%.1f%%)", n, measured, 100*float64(n)/float64(measured))
	if counted {
		line += fmt.Sprintf(", each joined to its latency by its sequence number; %d not joined, %d left out for a negative client time; %d overlaps",
			unpaired, negative, overlaps)
	}
	d.add("%s", line)
}

// digestEndpoints writes how much the app's and the database's own time
// changed at the largest setting: the part of the change that is not the
// wire's.
func (s *Summary) digestEndpoints(d *digest) {
	_, last := s.largestSettings()
	var app, db, excess []float64
	rtt := 0.0
	for _, c := range last {
		if c.HasAttribution {
			app, db = append(app, c.Attribution.App), append(db, c.Attribution.DB)
			excess = append(excess, c.Attribution.Total-c.Attribution.WireConfigured)
			rtt = max(rtt, c.RTTms)
		}
	}
	if len(app) == 0 {
		d.add("endpoints: no request was taken apart on the wire, so the app's and the database's time are not known")
		return
	}
	d.add("endpoints (the app's and the database's own time, not the wire), median over %d routes at their largest setting (%s ms): app %s ms, database %s ms per request; the change exceeds round trips × RTT by %s ms",
		len(app), fmtSetting(rtt), fmtSigned(stats.Median(app), 2), fmtSigned(stats.Median(db), 2), fmtSigned(stats.Median(excess), 2))
}

// digestProbes writes the probes' added RTT per setting, reported beside
// the wire, not judged, a value per setting and kind ("–" where that
// kind has none, so that values and settings line up); settings without
// a probe are named.
func (s *Summary) digestProbes(d *digest) {
	vals := map[string]map[float64][]float64{}
	var settings []float64
	seen := map[float64]bool{}
	for _, p := range s.Probes {
		if !p.HasBaseline || (p.Kind != raw.ProbeICMP && p.Kind != raw.ProbeSelect1) {
			continue
		}
		if vals[p.Kind] == nil {
			vals[p.Kind] = map[float64][]float64{}
		}
		vals[p.Kind][p.RTTms] = append(vals[p.Kind][p.RTTms], p.Added)
		if !seen[p.RTTms] {
			seen[p.RTTms] = true
			settings = append(settings, p.RTTms)
		}
	}
	sort.Float64s(settings)
	var parts []string
	for _, kind := range []string{raw.ProbeICMP, raw.ProbeSelect1} {
		var v []string
		any := false
		for _, r := range settings {
			if x := vals[kind][r]; len(x) > 0 {
				v, any = append(v, fmtSigned(stats.Median(x), 2)), true
			} else {
				v = append(v, dash)
			}
		}
		if any {
			parts = append(parts, fmt.Sprintf("%s added %s ms", map[string]string{raw.ProbeICMP: "ICMP", raw.ProbeSelect1: "SELECT 1"}[kind], strings.Join(v, "/")))
		}
	}
	var names []string
	for _, r := range settings {
		names = append(names, fmtSetting(r))
	}
	line := "probes (reported, not the verdict)"
	if len(parts) > 0 {
		line += fmt.Sprintf(" at %s ms: %s", strings.Join(names, "/"), strings.Join(parts, "; "))
	}
	if miss := s.notProbed(); len(miss) > 0 {
		line += "; not probed: " + strings.Join(miss, ", ")
	} else if len(parts) == 0 {
		line += ": none"
	}
	d.add("%s", line)
}

// notProbed names the (app, setting) pairs above 0 ms without a probe:
// the plan's settings of every app that ran (so that a folder whose run
// stopped while it probed says which, before any task of them), then
// any other setting with a cell.
func (s *Summary) notProbed() []string {
	var out []string
	seen := map[setting]bool{}
	add := func(app string, rtt float64) {
		k := setting{app, rtt}
		if rtt > 0 && !seen[k] && !s.probed(app, rtt) {
			seen[k] = true
			out = append(out, fmt.Sprintf("%s at %s ms", app, fmtSetting(rtt)))
		}
	}
	planned := map[setting]bool{}
	for _, t := range s.Manifest.Tasks {
		if _, skipped := s.Manifest.Skipped[t.App]; !skipped && !t.Unshaped {
			planned[setting{t.App, t.RTTms}] = true
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(planned), func(a, b setting) int {
		return cmp.Or(cmp.Compare(a.app, b.app), cmp.Compare(a.rtt, b.rtt))
	}) {
		add(k.app, k.rtt)
	}
	for _, c := range s.Cells {
		add(c.App, c.RTTms)
	}
	return out
}
