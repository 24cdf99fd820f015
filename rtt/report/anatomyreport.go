package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rttlab/rttlab/workloads"
)

// attrRow is one cell's line of the attribution tables: its change and
// where it went, formatted.
type attrRow struct {
	Route, Setting, Change, ChangeCI, Total, Wire, Configured, Trips, Excess, PerTrip, App, DB, Client, RoundTrips, TakenApart, Overlaps string
	Cell                                                                                                                                 *Cell
}

// attributionSettings are the settings above 0 ms with an attribution,
// ascending.
func (s *Summary) attributionSettings() []float64 {
	var out []float64
	for _, c := range s.Cells {
		if c.HasAttribution {
			out = append(out, c.RTTms)
		}
	}
	return sortedDistinct(out)
}

// attributionRows are the cells at one setting with an attribution.
func (s *Summary) attributionRows(rtt float64) []attrRow {
	var out []attrRow
	for i := range s.Cells {
		c := &s.Cells[i]
		if c.RTTms != rtt || !c.HasAttribution {
			continue
		}
		a := c.Attribution
		out = append(out, attrRow{Route: c.App + " " + c.Route, Setting: fmtSetting(c.RTTms) + " ms", Change: fmtSigned(c.Change, 3),
			ChangeCI: fmtIv(c.ChangeCI, 3), Total: fmtSigned(a.Total, 3), Wire: fmtSigned(a.Wire(), 3), Configured: fmtFixed(a.WireConfigured, 3),
			Trips: fmtSigned(a.WireTrips, 3), Excess: fmtSigned(a.WireExcess, 3), PerTrip: fmtFixed(a.PerTrip(), 3),
			App: fmtSigned(a.App, 3), DB: fmtSigned(a.DB, 3), Client: fmtSigned(a.Outside, 3),
			RoundTrips: fmtFixed(c.Parts.RoundTrips, 1), TakenApart: fmtTakenApart(c.TakenApart), Overlaps: fmtOverlaps(c.TakenApart), Cell: c})
	}
	return out
}

// anatomyMarkdown writes where the added time went: the method, then a
// table per setting.
func (s *Summary) anatomyMarkdown(b *strings.Builder) {
	settings := s.attributionSettings()
	if len(settings) == 0 {
		return
	}
	b.WriteString("## Where the added time goes\n\n")
	fmt.Fprintf(b, "Method: %s. Wire = app↔database, both ways, every round trip; configured = round trips × RTT; round trips = what a change of their number cost on the wire; excess = the wire's change beyond both; per trip = the wire's change per round trip ÷ RTT (1: exactly the delay); app and database = their own time between the packets; client = the load client's own time and the client↔app legs. Taken apart = the share of the measured requests joined to their latency (by the sequence number each carries) and taken apart (the parts are theirs); overlaps = the database exchanges that ran beside the requests' own round trips (a background exchange, queries in parallel).\n\n", AnatomyMethod)
	for _, rtt := range settings {
		fmt.Fprintf(b, "### At %s ms\n\n", fmtSetting(rtt))
		b.WriteString("| route | change (ms) | change CI | parts' change | wire | configured | round trips' | wire excess | per trip | app | database | client | round trips | taken apart | overlaps |\n")
		b.WriteString("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, r := range s.attributionRows(rtt) {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(r.Route), r.Change, r.ChangeCI,
				r.Total, r.Wire, r.Configured, r.Trips, r.Excess, r.PerTrip, r.App, r.DB, r.Client, r.RoundTrips, r.TakenApart, r.Overlaps)
		}
		b.WriteString("\n")
		left := false
		for _, r := range s.attributionRows(rtt) {
			if t := r.Cell.TakenApart; len(t.LeftOut) > 0 {
				fmt.Fprintf(b, "- %s: %d of %d measured requests left out: %s\n", mdEscape(r.Route), t.Measured-t.N, t.Measured, strings.Join(t.LeftOut, "; "))
				left = true
			}
		}
		if left {
			b.WriteString("\n")
		}
	}
}

// baselineRow is one route's unshaped baseline beside its 0 ms cell.
type baselineRow struct {
	Route, Unshaped, UnshapedCI, Zero, ZeroCI, Shaper, PerTrip, Runs string
}

// baselineRows pairs each route's unshaped baseline with its 0 ms cell.
func (s *Summary) baselineRows() []baselineRow {
	var out []baselineRow
	for _, u := range s.Unshaped {
		r := baselineRow{Route: u.App + " " + u.Route, Unshaped: fmtFixed(u.P50, 3), UnshapedCI: fmtIv(u.CI, 3), Zero: dash, ZeroCI: dash,
			Shaper: dash, PerTrip: dash, Runs: strconv.Itoa(u.NRuns)}
		for _, c := range s.Cells {
			if c.App == u.App && c.Route == u.Route && c.RTTms == 0 && c.NRuns > 0 {
				r.Zero, r.ZeroCI, r.Shaper = fmtFixed(c.P50, 3), fmtIv(c.CI, 3), fmtSigned(c.P50-u.P50, 3)
				r.Runs += ", " + strconv.Itoa(c.NRuns)
				if c.HasParts && c.Parts.RoundTrips > 0 {
					r.PerTrip = fmtSigned((c.P50-u.P50)/c.Parts.RoundTrips, 3)
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// baselinesMarkdown writes each route's p50 without the shaper beside
// the one through it at 0 ms.
func (s *Summary) baselinesMarkdown(b *strings.Builder) {
	rows := s.baselineRows()
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Baselines: without the shaper and through it at 0 ms\n\n")
	b.WriteString("Unshaped: the route's runs with the shaper out of the path (no queue, no floor), as a network without added delay serves it; 0 ms: through the shaper with no delay, which every setting pays (its floor and its own pass). The changes are against 0 ms; the percent changes against the unshaped p50.\n\n")
	b.WriteString("| route | runs (unshaped, 0 ms) | unshaped p50 (ms) | 95% CI | 0 ms p50 (ms) | 95% CI | the shaper's cost at 0 ms | per round trip |\n")
	b.WriteString("| --- | ---: | ---: | --- | ---: | --- | ---: | ---: |\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(r.Route), r.Runs, r.Unshaped, r.UnshapedCI, r.Zero, r.ZeroCI, r.Shaper, r.PerTrip)
	}
	b.WriteString("\n")
}

// wireRow is one app's setting and direction on the wire, formatted.
type wireRow struct {
	App, Setting, Direction, Tasks, Packets, Paired, P50, P99, Added, Target, Passing, Verdict string
	Bad                                                                                        bool
}

// wireRows formats the wire's figures with each setting's verdict.
func (s *Summary) wireRows() []wireRow {
	verdict := map[setting]WireVerdict{}
	for _, v := range s.WireVerdicts {
		verdict[setting{v.App, v.RTTms}] = v
	}
	var out []wireRow
	for _, w := range s.Wire {
		r := wireRow{App: w.App, Setting: fmtSetting(w.RTTms) + " ms", Direction: w.Direction, Tasks: strconv.Itoa(w.Tasks),
			Packets: strconv.Itoa(w.Sent), Paired: fmtFixed(100*w.Share(), 1) + "%", P50: fmtFixed(w.P50Ms, 3), P99: fmtFixed(w.P99Ms, 3),
			Added: dash, Target: fmtFixed(w.TargetMs, 3), Passing: dash, Verdict: dash}
		if w.Incomplete > 0 {
			r.Tasks += fmt.Sprintf(" (%d incomplete)", w.Incomplete)
		}
		if w.Unshaped {
			r.Setting, r.Target = "unshaped", dash
		} else if v, ok := verdict[setting{w.App, w.RTTms}]; ok {
			r.Verdict = v.Status
			r.Bad = v.Status != WireVerified && v.Status != WireReference
		}
		if w.HasAdded {
			r.Added = fmtSigned(w.AddedMs, 3)
			r.Passing = fmt.Sprintf("%d of %d", w.Passing, w.Tasks-w.Incomplete)
		}
		out = append(out, r)
	}
	return out
}

// wireMarkdown writes what the captures saw on the wire, per app,
// setting and direction, with each setting's verdict.
func (s *Summary) wireMarkdown(b *strings.Builder) {
	if len(s.Wire) == 0 && len(s.WireVerdicts) == 0 {
		return
	}
	b.WriteString("## The wire\n\n")
	if len(s.Wire) == 0 {
		b.WriteString("No task's wire figures were read (wire.csv is missing, yet the run checked the wire on every task):\n\n")
		s.wireWhy(b)
		return
	}
	fmt.Fprintf(b, "During every task both agents capture the app↔database packets (kernel stamps, one clock) and pair each packet that left one side with its arrival at the other (wire.csv). One-way = the median over tasks of each task's p50; added = that minus the 0 ms tasks'; a setting is verified when, both ways, the added one-way p50 is within ±%g ms of half the RTT with at least %.0f%% of the packets paired; passing = the tasks that meet it on their own. A task whose captures missed packets (a full ring, the packet cap) is incomplete and left out of the figures.\n\n",
		WireToleranceMs, 100*WireMinMatched)
	b.WriteString("| app | setting | direction | tasks | packets | paired | one-way p50 (ms) | one-way p99 (ms) | added (ms) | target (ms) | passing | verdict |\n")
	b.WriteString("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range s.wireRows() {
		verdict := r.Verdict
		if r.Bad {
			verdict = "**" + verdict + "** " + unverifiedMark
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(r.App), r.Setting, r.Direction, r.Tasks,
			r.Packets, r.Paired, r.P50, r.P99, r.Added, r.Target, r.Passing, verdict)
	}
	b.WriteString("\n")
	if slices.ContainsFunc(s.Wire, func(w WireStat) bool { return w.Direction == workloads.DirRoundTrip }) {
		fmt.Fprintf(b, "The %s rows are round trips, which need no clock shared by the two captures (an app and its database on two nodes): for each turn of the database (a packet from the app and the first packet the database sent back after it), the app's time from sending to receiving less the database's from receiving to sending, each read on its own capture's clock; packets = the turns, paired = those measured; added against the whole RTT within ±%g ms. Where app and database ran on different hosts only these rows are kept.\n\n",
			workloads.DirRoundTrip, 2*WireToleranceMs)
	}
	s.wireWhy(b)
}

// wireWhy lists each setting the wire did not verify, with why.
func (s *Summary) wireWhy(b *strings.Builder) {
	for _, v := range s.WireVerdicts {
		if v.Why != "" && v.Status != WireVerified && v.Status != WireReference {
			fmt.Fprintf(b, "- %s at %s ms: %s (%s)\n", v.App, fmtSetting(v.RTTms), v.Status, v.Why)
		}
	}
	b.WriteString("\n")
}

// fmtTakenApart is a cell's share of measured requests taken apart.
func fmtTakenApart(t TakenApart) string {
	if t.Measured == 0 {
		return dash
	}
	return fmtFixed(100*t.Share(), 1) + "%"
}

// fmtOverlaps is a cell's count of overlaps, "–" where its folder did not
// count them.
func fmtOverlaps(t TakenApart) string {
	if !t.Counted {
		return dash
	}
	return strconv.Itoa(t.Overlaps)
}
