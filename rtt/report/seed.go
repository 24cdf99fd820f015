package report

import (
	"fmt"
	"strings"

	"github.com/rttlab/rttlab/results/stats"
)

// The seed study ("Sub-Millisecond Database RTT in Web Applications",
// 2026-09-26): Linux tc netem half on the app's and half on the
// database's container on one NVIDIA DGX GB10 (a Grace CPU), 20 runs of
// 100 requests per setting; medians of run p50s and 95% bootstrap CIs.
// Its 0 ms went through netem with no delay, which adds next to nothing,
// so its baseline compares with rttlab's unshaped one, and its change
// with rttlab's change against 0 ms through the shaper.
const (
	SeedComparisonMs = 0.75
	seedHost         = "netem on a DGX GB10 (Grace CPU), 20 runs × 100 requests"
)

// seedRoute is one of the seed's rows at 0.75 ms.
type seedRoute struct {
	App, Route string
	Base, At   float64 // p50 at 0 ms and at 0.75 ms
	Change     float64
	CI         stats.Interval
	// RoundTrips the seed's text gives the route (0: not given).
	RoundTrips float64
}

// seedRoutes are the seed's published figures at 0.75 ms, by rttlab's
// app and route names.
var seedRoutes = []seedRoute{
	{"go", "/feed", 0.91, 3.40, 2.49, stats.Interval{Low: 2.29, High: 2.63}, 3},
	{"node", "/feed", 1.45, 3.64, 2.19, stats.Interval{Low: 2.06, High: 2.52}, 3},
	{"rails", "/feed", 1.90, 4.16, 2.26, stats.Interval{Low: 1.97, High: 2.47}, 3},
	{"rails", "/feed-naive", 3.54, 13.09, 9.55, stats.Interval{Low: 9.26, High: 10.40}, 12},
	{"axum-cached", "/feed", 0.83, 3.40, 2.57, stats.Interval{Low: 2.22, High: 2.70}, 3},
	{"axum-raw", "/feed", 1.21, 6.32, 5.11, stats.Interval{Low: 4.82, High: 5.48}, 6},
	{"redmine", "mix:redmine", 35.78, 68.02, 32.23, stats.Interval{Low: 30.39, High: 34.80}, 0},
	{"aimeos", "mix:aimeos", 65.74, 100.12, 34.37, stats.Interval{Low: 30.71, High: 35.80}, 0},
}

// seedRow is one route beside the seed at 0.75 ms.
type seedRow struct {
	Route                                                                string
	SeedBase, SeedChange, SeedRatio                                      string
	Unshaped, Change, Ratio, Wire, WireRatio, Endpoints, Verdict, Inside string
}

// seedRows sets every route the seed measured beside it, where the
// folder has a change at 0.75 ms: the baselines (the seed's 0 ms beside
// rttlab's unshaped), the changes with their CIs, each change per round
// trip ÷ RTT, the part on the wire and the endpoints' part.
func (s *Summary) seedRows() []seedRow {
	var out []seedRow
	for _, sr := range seedRoutes {
		c := findCell(s, sr.App, sr.Route, SeedComparisonMs)
		if c == nil || !c.HasBaseline {
			continue
		}
		r := seedRow{Route: sr.App + " " + sr.Route, SeedBase: fmtFixed(sr.Base, 2),
			SeedChange: fmtSigned(sr.Change, 2) + " " + fmtIv(sr.CI, 2), SeedRatio: dash,
			Unshaped: dash, Change: fmtSigned(c.Change, 2) + " " + fmtIv(c.ChangeCI, 2), Ratio: dash, Wire: dash, WireRatio: dash, Endpoints: dash,
			Inside: "no"}
		if sr.RoundTrips > 0 {
			r.SeedRatio = fmtFixed(sr.Change/(sr.RoundTrips*SeedComparisonMs), 2)
		}
		if c.HasUnshaped {
			r.Unshaped = fmtFixed(c.UnshapedP50, 2)
		}
		if c.HasStatements && c.Statements > 0 {
			r.Ratio = fmtFixed(c.Change/(c.Statements*SeedComparisonMs), 2)
		}
		if c.HasAttribution {
			a := c.Attribution
			r.Wire = fmtSigned(a.Wire(), 2)
			if a.WireConfigured > 0 {
				r.WireRatio = fmtFixed(a.PerTrip(), 3)
			}
			r.Endpoints = fmtSigned(a.App+a.DB, 2) + fmt.Sprintf(" (app %s, db %s)", fmtSigned(a.App, 2), fmtSigned(a.DB, 2))
		}
		if c.ChangeCI.Valid() && c.Change >= sr.CI.Low && c.Change <= sr.CI.High {
			r.Inside = "yes"
		}
		out = append(out, r)
	}
	return out
}

// seedMarkdown writes the routes the seed measured beside it, at its
// setting of 0.75 ms.
func (s *Summary) seedMarkdown(b *strings.Builder) {
	rows := s.seedRows()
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## Beside the seed, at %s ms\n\n", fmtSetting(SeedComparisonMs))
	fmt.Fprintf(b, "The seed: %s; its 0 ms went through netem with no delay, which adds next to nothing, so its baseline compares with the unshaped one here, and its change with the change against 0 ms here. Ratio = change ÷ (round trips × RTT): the seed's round trips as its text gives them, the traced ones here. On the wire = the change the captures saw between the app and the database, and per round trip ÷ RTT; endpoints = the change of the app's and the database's own time, which the seed could not see. Inside = the change here lies within the seed's CI.\n\n", seedHost)
	b.WriteString("| route | seed 0 ms p50 | unshaped p50 here | seed change [CI] | change here [CI] | seed ratio | ratio here | on the wire | per trip ÷ RTT | endpoints | inside |\n")
	b.WriteString("| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(r.Route), r.SeedBase, r.Unshaped, r.SeedChange, r.Change,
			r.SeedRatio, r.Ratio, r.Wire, r.WireRatio, r.Endpoints, r.Inside)
	}
	b.WriteString("\n")
}
