package results

import (
	"fmt"
	"sort"
	"strings"
)

// DigestMaxLines bounds the digest a run prints when it ends.
const DigestMaxLines = 25

// Digest is what a run prints when it ends, in at most DigestMaxLines
// lines: the tasks done, a line per (app, route) with the change of its
// p50 at the largest setting and its CI, the verification verdict per
// setting (a setting the host could not verify is said once, with the
// reason and the figure that would pass), the count of warnings, and the
// paths of the full summary and the report.
func (s *Summary) Digest(summaryPath, reportPath string) string {
	var lines []string
	add := func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }
	add("plan %s: %d of %d tasks done (seed %d)", s.Plan, s.TasksDone, s.TasksPlanned, s.Seed)

	// The largest setting with a change, per (app, route), in plan order.
	type key struct{ app, route string }
	var order []key
	last := map[key]*Cell{}
	for i := range s.Cells {
		c := &s.Cells[i]
		if !c.HasBaseline {
			continue
		}
		k := key{c.App, c.Route}
		if last[k] == nil {
			order = append(order, k)
		}
		if last[k] == nil || c.RTTms > last[k].RTTms {
			last[k] = c
		}
	}
	// Room for the rows: the lines above and below them take at most 10
	// (the plan, the rows' header, the no-claim line, the verdict and its
	// three lines, the warnings, the summary and the report).
	room := DigestMaxLines - 10
	if len(order) > 0 {
		add("change of the median latency at the largest setting, 95%% CI over runs:")
	}
	width, noClaim := 0, 0
	for _, k := range order {
		width = max(width, len(k.app)+1+len(k.route))
		if last[k].NoClaim() {
			noClaim++
		}
	}
	allNoClaim := noClaim > 0 && noClaim == len(order)
	for i, k := range order {
		if i == room-1 && len(order) > room {
			add("  ... %d more in the summary", len(order)-i)
			break
		}
		c := last[k]
		row := fmt.Sprintf("  %-*s  at %s ms: %+.2f ms", width, k.app+" "+k.route, fmtSetting(c.RTTms), c.Change)
		if c.ChangeCI.Valid() {
			row += fmt.Sprintf(" [%.2f, %.2f]", c.ChangeCI.Low, c.ChangeCI.High)
		}
		row += " (" + fmtPercent(c.Percent, c.PercentCI) + ")"
		if c.HasStatements {
			row += fmt.Sprintf(", predicted %+.2f", c.Predicted)
		}
		if c.NoClaim() && !allNoClaim {
			row += "  (no claim: too few runs or too many failures)"
		}
		lines = append(lines, row)
	}
	if allNoClaim {
		add("  no claim on any row: a claim needs %d runs per cell and at most %s failed requests (a smoke plan has fewer runs)", s.Options.MinRuns, s.Options.maxFailedPercent())
	}

	// Verification per setting, over every app.
	bad := map[float64][]string{}
	var settings []float64
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
	if len(settings) > 0 {
		var verdicts []string
		for _, d := range settings {
			mark := "verified"
			if len(bad[d]) > 0 {
				mark = "NOT verified"
			}
			verdicts = append(verdicts, fmt.Sprintf("%s ms %s", fmtSetting(d), mark))
		}
		add("delay: %s", strings.Join(verdicts, ", "))
	}
	for _, d := range settings {
		if why := bad[d]; len(why) > 0 {
			n := 0
			for _, e := range settings {
				if len(bad[e]) > 0 {
					n++
				}
			}
			add("  %d of %d settings were not verified on this host; e.g. %s at %s ms: %s.", n, len(settings), why[0], fmtSetting(d), strings.Join(why[1:], "; "))
			add("  To pass, every probe's added RTT is within ±%g ms of the setting and the shaper's hold within ±%g µs of its target, with no drop;", s.Options.ToleranceMs, s.Options.ShaperToleranceUs)
			add("  a loaded or small host misses that: the changes are then against the configured RTT (see \"How exact the delay is\" in README.md).")
			break
		}
	}
	if n := len(s.Warnings); n > 0 {
		add("%d warning(s): see the summary", n)
	}
	add("summary: %s", summaryPath)
	if reportPath != "" {
		add("report:  %s", reportPath)
	}
	return strings.Join(lines, "\n") + "\n"
}
