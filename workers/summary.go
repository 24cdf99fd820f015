package workers

import (
	"fmt"
	"slices"
	"strings"
)

// Markdown renders the summary: the penalty statements, the capacities
// (when given), then one table per (configuration, mix, RTT) with a row
// per (load, policy): runs, n, failures, p50/p90/p99 with intervals, the
// p50 and p99 changes against the baseline, the collision rate and the
// ranked worker shares; warnings follow each table.
func (s *Summary) Markdown(title string) string {
	var b strings.Builder
	if title == "" {
		title = "Worker scheduling"
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	if s.Emulated != "" {
		fmt.Fprintf(&b, "> The database and Rails ran %s under emulation (qemu-user): these timings make no claim about that platform's hardware.\n\n", s.Emulated)
	}
	s.penaltiesMarkdown(&b)
	s.capacitiesMarkdown(&b)
	s.cellsMarkdown(&b)
	b.WriteString("## Method\n\n")
	b.WriteString(s.Method)
	b.WriteString("\n")
	return b.String()
}

// penaltiesMarkdown writes the penalty statements, one item each.
func (s *Summary) penaltiesMarkdown(b *strings.Builder) {
	b.WriteString("## Does the seed's \"about 20%\" penalty appear?\n\n")
	if len(s.Penalties) == 0 {
		b.WriteString("No penalty statement: the baseline or the reference policy did not run.\n\n")
	}
	for _, p := range s.Penalties {
		fmt.Fprintf(b, "- %s\n", p.Statement)
	}
	b.WriteString("\n")
}

// capacitiesMarkdown writes the capacity table, in cell order, and its
// warnings, when capacities were given.
func (s *Summary) capacitiesMarkdown(b *strings.Builder) {
	if len(s.Capacities) == 0 {
		return
	}
	b.WriteString("## Capacity per configuration\n\n")
	b.WriteString("The highest open-loop arrival rate sustained (workloads.SearchCapacity); ceiling is the lowest rate not sustained.\n\n")
	b.WriteString("| config | mix | RTT ms | policy | capacity /s | ceiling /s | converged | trials |\n|---|---|---:|---|---:|---:|---|---:|\n")
	caps := slices.Clone(s.Capacities)
	slices.SortStableFunc(caps, func(x, y CapacityResult) int {
		a := CellKey{Policy: x.Key.Policy, Layout: x.Key.Layout, Mix: x.Key.Mix, RTTMs: x.Key.RTTMs}
		c := CellKey{Policy: y.Key.Policy, Layout: y.Key.Layout, Mix: y.Key.Mix, RTTMs: y.Key.RTTMs}
		return compareCells(a, c, s.Options.Baseline)
	})
	var warn []string
	for _, c := range caps {
		ceil := "–"
		if c.Ceiling > 0 {
			ceil = fmt.Sprintf("%.4g", c.Ceiling)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %.4g | %s | %s | %d |\n", c.Key.Layout, c.Key.Mix, fmtNum(c.Key.RTTMs), c.Key.Policy, c.Rate, ceil, yesNo(c.Converged), c.Trials)
		if c.Warning != "" {
			warn = append(warn, fmt.Sprintf("%s %s %s ms %s: %s", c.Key.Layout, c.Key.Mix, fmtNum(c.Key.RTTMs), c.Key.Policy, oneLine(c.Warning)))
		}
	}
	endTable(b, warn)
}

// endTable closes a table and lists its warnings after it.
func endTable(b *strings.Builder, warn []string) {
	b.WriteString("\n")
	for _, w := range warn {
		fmt.Fprintf(b, "- ⚠ %s\n", w)
	}
	if len(warn) > 0 {
		b.WriteString("\n")
	}
}

// cellsMarkdown writes a table per (configuration, mix, RTT) with a row
// per cell, each table followed by its cells' warnings.
func (s *Summary) cellsMarkdown(b *strings.Builder) {
	b.WriteString("## Cells\n\n")
	fmt.Fprintf(b, "Latencies in ms from the scheduled send time; each figure is the median over runs of the run's quantile, [95%% CI] by percentile bootstrap over runs. Δ is against %s (median difference, [95%% CI], and relative). Collisions: share of measured requests that started on a busy worker while another was idle. Shares: mean over runs of the busiest, second… worker's share of requests.\n\n", s.Options.Baseline)
	type group struct {
		layout, mix string
		rtt         float64
	}
	var cur *group
	var warn []string
	for i := range s.Cells {
		c := &s.Cells[i]
		g := group{c.Layout, c.Mix, c.RTTMs}
		if cur == nil || *cur != g {
			if cur != nil {
				endTable(b, warn)
				warn = nil
			}
			cur = &g
			fmt.Fprintf(b, "### %s · %s · %s ms RTT\n\n", c.Layout, c.Mix, fmtNum(c.RTTMs))
			b.WriteString("| load | rate /s | policy | runs | n | failed | p50 | p90 | p99 | Δp50 | Δp99 | collisions | shares |\n")
			b.WriteString("|---:|---:|---|---:|---:|---:|---|---|---|---|---|---|---|\n")
		}
		fmt.Fprintf(b, "| %s | %.4g | %s%s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			fmtPct(c.Fraction), c.Rate, c.Policy, claimMark(c), c.Runs, c.N, c.Failures,
			fmtEst(c.P50), fmtEst(c.P90), fmtEst(c.P99),
			fmtChange(c, 0), fmtChange(c, 2), fmtCollision(c), fmtShares(c.Shares))
		for _, w := range c.Warnings {
			warn = append(warn, fmt.Sprintf("%s %s: %s", fmtPct(c.Fraction), c.Policy, w))
		}
	}
	if cur != nil {
		endTable(b, warn)
	} else {
		b.WriteString("No cells.\n\n")
	}
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func claimMark(c *CellStat) string {
	if c.NoClaim {
		return " (no claim)"
	}
	return ""
}

func fmtEst(e Estimate) string {
	if !finite(float64(e.Ms)) {
		return "n/a"
	}
	if !e.CI.Valid() {
		return fmtMs(e.Ms)
	}
	return fmt.Sprintf("%s [%s, %s]", fmtMs(e.Ms), fmtMs(e.CI.Low), fmtMs(e.CI.High))
}

func fmtChange(c *CellStat, q int) string {
	if q >= len(c.VsBaseline) {
		return "–"
	}
	ch := c.VsBaseline[q]
	if !finite(float64(ch.DiffMs)) {
		return "n/a"
	}
	out := fmt.Sprintf("%+.2f", float64(ch.DiffMs))
	if ch.CI.Valid() {
		out += fmt.Sprintf(" [%+.2f, %+.2f]", float64(ch.CI.Low), float64(ch.CI.High))
	}
	out += " (" + fmtRel(ch.Rel) + ")"
	switch ch.Verdict {
	case "slower", "faster":
		out += " " + ch.Verdict
	case "no claim":
		out += " no claim"
	}
	return out
}

func fmtCollision(c *CellStat) string {
	r := float64(c.CollisionRate)
	if !finite(r) {
		return "n/a"
	}
	out := fmt.Sprintf("%.1f%%", 100*r)
	if c.CollisionCI.Valid() {
		out += fmt.Sprintf(" [%.1f, %.1f]", 100*float64(c.CollisionCI.Low), 100*float64(c.CollisionCI.High))
	}
	return out
}

func fmtShares(v []float64) string {
	if len(v) == 0 {
		return "n/a"
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.0f", 100*x)
	}
	return strings.Join(parts, "/") + " %"
}
