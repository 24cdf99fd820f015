package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/workloads"
)

// traceMarkdown puts each app's traced round trips next to its measured
// amplification ratio.
func (s *Summary) traceMarkdown(b *strings.Builder) {
	if len(s.Trace) == 0 {
		return
	}
	b.WriteString("## Round trips per request (trace)\n\n")
	b.WriteString("Per request, traced one at a time without added delay: round trips = client→database bursts answered by the database, seen on the wire in the app's network namespace; statements = Query and Execute protocol messages; parses = Parse messages; pg_stat_statements = executions per request. Median [min-max].\n\n")
	var apps []string
	for _, r := range s.Trace {
		if !slices.Contains(apps, r.App) {
			apps = append(apps, r.App)
		}
	}
	for _, app := range apps {
		fmt.Fprintf(b, "### %s\n\n", mdEscape(app))
		b.WriteString("| type | share | n | round trips | statements | parses | pg_stat_statements | expected | failed |\n")
		b.WriteString("| --- | ---: | ---: | --- | --- | --- | ---: | ---: | ---: |\n")
		var wsum, wtrips float64
		for _, r := range s.Trace {
			if r.App != app {
				continue
			}
			share, exp := dash, dash
			if r.Weight > 0 {
				share = fmtFixed(r.Weight*100, 0) + "%"
				wsum += r.Weight
				wtrips += r.Weight * r.RoundTrips.Median
			}
			if r.Expected >= 0 {
				exp = fmtFixed(r.Expected, 0)
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s | %d |\n", mdEscape(r.Type), share, r.N,
				traceRange(r.RoundTrips), traceRange(r.Statements), traceRange(r.Parses), PGSSText(r.PGSS), exp, r.Failures)
		}
		b.WriteString("\n")
		var ratios []string
		for _, c := range s.Cells {
			if c.App != app || !c.HasBaseline {
				continue
			}
			ratios = append(ratios, fmt.Sprintf("%s at %s ms: %s", mdEscape(c.Route), fmtSetting(c.RTTms), fmtFixed(c.Ratio, 1)))
		}
		if wsum > 0 {
			fmt.Fprintf(b, "Mix-weighted round trips per request: %s. ", fmtFixed(wtrips/wsum, 1))
		}
		if len(ratios) > 0 {
			fmt.Fprintf(b, "Measured amplification ratio (change ÷ RTT): %s.\n\n", strings.Join(ratios, "; "))
		} else {
			b.WriteString("No measured amplification ratio for this app in this folder.\n\n")
		}
	}
}

func traceRange(r workloads.TraceRange) string {
	return fmt.Sprintf("%s [%d-%d]", fmtFixed(r.Median, 1), r.Min, r.Max)
}

// PGSSText prints pg_stat_statements executions per request: n/a where the
// database could not count them.
func PGSSText(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmtFixed(v, 2)
}
