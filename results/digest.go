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
	d := &digest{}
	d.add("plan %s: %d of %d tasks done (seed %d)", s.Plan, s.TasksDone, s.TasksPlanned, s.Seed)
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
	// three lines, the warnings, the summary and the report).
	room := DigestMaxLines - 10
	if len(order) > 0 {
		d.add("change of the median latency at the largest setting, 95%% CI over runs:")
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
			d.add("  ... %d more in the summary", len(order)-i)
			break
		}
		d.lines = append(d.lines, digestRow(last[k], width, allNoClaim))
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
	row += " (" + fmtPercent(c.Percent, c.PercentCI) + ")"
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

// digestVerification writes the verification verdict per setting, over
// every app, and explains the first setting not verified.
func (s *Summary) digestVerification(d *digest) {
	settings, bad := s.unverifiedSettings()
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
