package workers

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/results/stats"
)

// SeedPenalty is the write-up's claim: round-robin-like assignment costs
// "around 20%".
const SeedPenalty = 0.20

// PenaltyPoint compares the slow policy with the fast one in one
// (configuration, mix, RTT, load), on the median of the runs' p50s.
type PenaltyPoint struct {
	Layout   string    `json:"config"`
	Mix      string    `json:"mix"`
	RTTMs    float64   `json:"rtt_ms"`
	Fraction float64   `json:"fraction"`
	SlowMs   stats.Num `json:"slow_ms"`
	FastMs   stats.Num `json:"fast_ms"`
	// DiffMs = slow − fast with stats.BootstrapChangeCI's interval.
	DiffMs stats.Num `json:"diff_ms"`
	DiffCI stats.CI  `json:"diff_ci"`
	// Rel = slow / fast − 1: the penalty, with its bootstrap interval.
	Rel   stats.Num `json:"rel"`
	RelCI stats.CI  `json:"rel_ci"`
	// Significant: both cells make claims and DiffCI lies above 0.
	Significant bool `json:"significant"`
	NoClaim     bool `json:"no_claim"`

	fast, slow []float64
	key        CellKey
}

func (p *PenaltyPoint) where() string {
	return fmt.Sprintf("%s, %s, %s ms RTT, %s load", p.Layout, p.Mix, fmtNum(p.RTTMs), fmtPct(p.Fraction))
}

// Trend is the change of the penalty from one point to another:
// To.Rel − From.Rel in fractions, with a bootstrap interval (the four
// cells resampled independently).
type Trend struct {
	From    PenaltyPoint `json:"from"`
	To      PenaltyPoint `json:"to"`
	Diff    stats.Num    `json:"diff"`
	CI      stats.CI     `json:"ci"`
	Verdict string       `json:"verdict"` // "smaller", "larger", "no measurable change"
}

// Penalty is the statement of whether the seed's penalty appears.
type Penalty struct {
	Slow     string `json:"slow"`
	Fast     string `json:"fast"`
	Quantile string `json:"quantile"`
	// Points lists every (configuration, mix, RTT, load) where both ran.
	Points []PenaltyPoint `json:"points"`
	// Peak is the significant point with the largest penalty; nil when
	// none is significant.
	Peak *PenaltyPoint `json:"peak,omitempty"`
	// About20 compares Peak's interval with 20%: "consistent" (it holds
	// 20%), "smaller" or "larger".
	About20 string `json:"about_20,omitempty"`
	// Fade compares the penalty at the highest load of Peak's
	// (configuration, mix, RTT) with Peak's; nil when Peak is there.
	Fade *Trend `json:"fade,omitempty"`
	// PeakAtTop is set when Peak is at the highest load run.
	PeakAtTop bool `json:"peak_at_top,omitempty"`
	// RTT compares the penalty at each other RTT of Peak's
	// (configuration, mix, load) with Peak's.
	RTT []Trend `json:"rtt,omitempty"`
	// Statement says it in words.
	Statement string `json:"statement"`
}

// PenaltyStatement finds where the slow policy (the accept race) is slower
// than the fast one (the JSQ proxy) on the p50, with a 95% interval of the
// difference above 0, reports the largest relative penalty with its
// interval, where it is, whether its interval holds the seed's 20%,
// whether it fades at the highest load of the same configuration, mix and
// RTT, and how it changes with the RTT. Cells that make no claim take no
// part. The peak is the largest of several estimates, so its size is
// biased upward (the statement says so); its interval is that of the one
// cell, not adjusted for the choice.
func PenaltyStatement(cells []CellStat, slow, fast string, o Options) Penalty {
	o = o.withDefaults()
	pen := Penalty{Slow: slow, Fast: fast, Quantile: "p50", Points: pairedPoints(cells, slow, fast, o)}
	var s strings.Builder
	fmt.Fprintf(&s, "%s against %s (%s, median of run p50s): ", slow, fast, pen.Quantile)
	claim, sig, bestAny := pen.findPeak()
	noClaim := len(pen.Points) - claim
	if pen.Peak == nil {
		pen.noPeakStatement(&s, claim, noClaim, bestAny)
		pen.Statement = s.String()
		return pen
	}
	pen.peakStatement(&s, sig, claim, noClaim)
	pen.fadeStatement(&s, o)
	pen.rttStatement(&s, o)
	pen.Statement = s.String()
	return pen
}

// pairedPoints returns a penalty point per (configuration, mix, RTT, load)
// that ran both policies, in cell order.
func pairedPoints(cells []CellStat, slow, fast string, o Options) []PenaltyPoint {
	type pair struct{ slow, fast *CellStat }
	groups := map[CellKey]*pair{}
	var order []CellKey
	for i := range cells {
		c := &cells[i]
		if c.Policy != slow && c.Policy != fast {
			continue
		}
		g := c.CellKey.group()
		if groups[g] == nil {
			groups[g] = &pair{}
			order = append(order, g)
		}
		if c.Policy == slow {
			groups[g].slow = c
		} else {
			groups[g].fast = c
		}
	}
	slices.SortFunc(order, func(a, b CellKey) int { return compareCells(a, b, "") })
	points := []PenaltyPoint{}
	for _, g := range order {
		pr := groups[g]
		if pr.slow == nil || pr.fast == nil {
			continue
		}
		points = append(points, penaltyPoint(pr.slow, pr.fast, o))
	}
	return points
}

// findPeak sets Peak to the significant point with the largest penalty
// and returns the points that make a claim, the significant ones, and the
// claiming point with the largest estimate.
func (pen *Penalty) findPeak() (claim, sig int, bestAny *PenaltyPoint) {
	for i := range pen.Points {
		p := &pen.Points[i]
		if p.NoClaim {
			continue
		}
		claim++
		if bestAny == nil || float64(p.Rel) > float64(bestAny.Rel) {
			bestAny = p
		}
		if p.Significant {
			sig++
			if pen.Peak == nil || float64(p.Rel) > float64(pen.Peak.Rel) {
				pen.Peak = p
			}
		}
	}
	return claim, sig, bestAny
}

// noPeakStatement says why there is no peak: no paired cell, none that
// makes a claim, or no significant penalty (then the largest estimate).
func (pen *Penalty) noPeakStatement(s *strings.Builder, claim, noClaim int, bestAny *PenaltyPoint) {
	switch {
	case len(pen.Points) == 0:
		fmt.Fprintf(s, "no (configuration, mix, RTT, load) ran both policies, so the penalty cannot be assessed.")
	case claim == 0:
		fmt.Fprintf(s, "none of the %d paired cells makes a claim (too few runs or too many failures), so the penalty cannot be assessed.", len(pen.Points))
	default:
		fmt.Fprintf(s, "%s is nowhere slower with an interval excluding 0 (%d paired cells", pen.Slow, claim)
		if noClaim > 0 {
			fmt.Fprintf(s, "; %d more make no claim", noClaim)
		}
		fmt.Fprintf(s, "); the largest point estimate is %s %s at %s. The seed's \"about 20%%\" penalty does not appear here.",
			fmtRel(bestAny.Rel), fmtRelCI(bestAny.RelCI), bestAny.where())
	}
}

// peakStatement tells where the penalty is significant and how large the
// peak is, and sets About20 from the peak's interval against 20%.
func (pen *Penalty) peakStatement(s *strings.Builder, sig, claim, noClaim int) {
	p := pen.Peak
	fmt.Fprintf(s, "%s is slower with an interval excluding 0 in %d of %d paired cells", pen.Slow, sig, claim)
	if noClaim > 0 {
		fmt.Fprintf(s, " (%d more make no claim)", noClaim)
	}
	fmt.Fprintf(s, ". The largest penalty is %s %s at %s (%s ms against %s ms)", fmtRel(p.Rel), fmtRelCI(p.RelCI), p.where(), fmtMs(p.SlowMs), fmtMs(p.FastMs))
	switch {
	case float64(p.RelCI.High) < SeedPenalty:
		pen.About20 = "smaller"
		s.WriteString(": smaller than the seed's \"about 20%\" (the interval lies below 20%)")
	case float64(p.RelCI.Low) > SeedPenalty:
		pen.About20 = "larger"
		s.WriteString(": larger than the seed's \"about 20%\" (the interval lies above 20%)")
	default:
		pen.About20 = "consistent"
		s.WriteString(": consistent with the seed's \"about 20%\" (the interval holds 20%)")
	}
	s.WriteString("; being the largest of several estimates, it is biased upward.")
}

// fadeStatement compares the peak with the highest load of the same
// configuration, mix and RTT, setting PeakAtTop or Fade.
func (pen *Penalty) fadeStatement(s *strings.Builder, o Options) {
	p := pen.Peak
	var top *PenaltyPoint
	for i := range pen.Points {
		q := &pen.Points[i]
		if q.Layout == p.Layout && q.Mix == p.Mix && q.RTTMs == p.RTTMs && !q.NoClaim && (top == nil || q.Fraction > top.Fraction) {
			top = q
		}
	}
	if top == p {
		pen.PeakAtTop = true
		s.WriteString(" It is largest at the highest load run, so it does not fade toward saturation here.")
		return
	}
	tr := trend(*p, *top, o, "fade")
	pen.Fade = &tr
	fmt.Fprintf(s, " At the highest load (%s) of the same configuration, mix and RTT it is %s %s, %s %s points from the peak: ",
		fmtPct(top.Fraction), fmtRel(top.Rel), fmtRelCI(top.RelCI), fmtPoints(tr.Diff), fmtPointsCI(tr.CI))
	switch tr.Verdict {
	case "smaller":
		s.WriteString("it fades toward saturation, as the seed expects.")
	case "larger":
		s.WriteString("it grows toward saturation, against the seed's expectation.")
	default:
		s.WriteString("no measurable change, so a fade toward saturation is not shown.")
	}
}

// rttStatement compares the peak with each other RTT of its configuration,
// mix and load, adding each to RTT.
func (pen *Penalty) rttStatement(s *strings.Builder, o Options) {
	p := pen.Peak
	for i := range pen.Points {
		q := &pen.Points[i]
		if q == p || q.NoClaim || q.Layout != p.Layout || q.Mix != p.Mix || q.Fraction != p.Fraction {
			continue
		}
		tr := trend(*p, *q, o, "rtt")
		pen.RTT = append(pen.RTT, tr)
		fmt.Fprintf(s, " With %s ms RTT it is %s %s, %s %s points from the peak's %s ms: %s.",
			fmtNum(q.RTTMs), fmtRel(q.Rel), fmtRelCI(q.RelCI), fmtPoints(tr.Diff), fmtPointsCI(tr.CI), fmtNum(p.RTTMs), tr.Verdict)
	}
}

func penaltyPoint(slow, fast *CellStat, o Options) PenaltyPoint {
	p := PenaltyPoint{Layout: slow.Layout, Mix: slow.Mix, RTTMs: slow.RTTMs, Fraction: slow.Fraction,
		NoClaim: slow.NoClaim || fast.NoClaim, key: slow.CellKey}
	p.slow, p.fast = finiteOnly(slow.runValues(0)), finiteOnly(fast.runValues(0))
	nan := stats.Interval{Low: math.NaN(), High: math.NaN()}
	p.SlowMs, p.FastMs, p.DiffMs, p.Rel = stats.Num(math.NaN()), stats.Num(math.NaN()), stats.Num(math.NaN()), stats.Num(math.NaN())
	p.DiffCI, p.RelCI = stats.CIOf(nan), stats.CIOf(nan)
	if len(p.slow) == 0 || len(p.fast) == 0 {
		p.NoClaim = true
		return p
	}
	ms, mf := stats.Median(p.slow), stats.Median(p.fast)
	p.SlowMs, p.FastMs, p.DiffMs, p.Rel = stats.Num(ms), stats.Num(mf), stats.Num(ms-mf), stats.Num(ms/mf-1)
	key := cellRNGKey(slow.CellKey, "penalty\x00"+fast.Policy)
	p.DiffCI = stats.CIOf(stats.BootstrapChangeCI(p.fast, p.slow, o.Resamples, stats.NewRNG(o.Seed, key)))
	p.RelCI = stats.CIOf(stats.BootstrapMediansCI([][]float64{p.fast, p.slow}, o.Resamples, stats.NewRNG(o.Seed, key+"\x00rel"),
		func(m []float64) float64 { return m[1]/m[0] - 1 }))
	p.Significant = !p.NoClaim && p.DiffCI.Excludes0() > 0
	return p
}

func trend(from, to PenaltyPoint, o Options, what string) Trend {
	t := Trend{From: from, To: to, Diff: stats.Num(float64(to.Rel) - float64(from.Rel))}
	key := strings.Join([]string{"workers-trend", what, from.key.Policy, cellRNGKey(from.key, ""), cellRNGKey(to.key, "")}, "\x00")
	t.CI = stats.CIOf(stats.BootstrapMediansCI([][]float64{from.fast, from.slow, to.fast, to.slow}, o.Resamples, stats.NewRNG(o.Seed, key),
		func(m []float64) float64 { return (m[3]/m[2] - 1) - (m[1]/m[0] - 1) }))
	switch t.CI.Excludes0() {
	case -1:
		t.Verdict = "smaller"
	case 1:
		t.Verdict = "larger"
	default:
		t.Verdict = "no measurable change"
	}
	return t
}

// fmtRel prints a relative change as a percentage.
func fmtRel(v stats.Num) string { return fmtHundredfold("%+.1f%%", v) }

func fmtRelCI(c stats.CI) string { return fmtHundredfoldCI("[95%% CI %+.1f%%, %+.1f%%]", c) }

// fmtPoints prints a difference of shares in percentage points.
func fmtPoints(v stats.Num) string { return fmtHundredfold("%+.1f", v) }

func fmtPointsCI(c stats.CI) string { return fmtHundredfoldCI("[%+.1f, %+.1f]", c) }

// fmtHundredfold prints 100·v with format; "n/a" when v is not finite.
func fmtHundredfold(format string, v stats.Num) string {
	if !finite(float64(v)) {
		return "n/a"
	}
	return fmt.Sprintf(format, 100*float64(v))
}

// fmtHundredfoldCI prints 100 times the interval's bounds with format;
// "[no interval]" when it is not valid.
func fmtHundredfoldCI(format string, c stats.CI) string {
	if !c.Valid() {
		return "[no interval]"
	}
	return fmt.Sprintf(format, 100*float64(c.Low), 100*float64(c.High))
}

func fmtMs(v stats.Num) string {
	f := float64(v)
	switch {
	case !finite(f):
		return "n/a"
	case math.Abs(f) >= 100:
		return fmt.Sprintf("%.0f", f)
	case math.Abs(f) >= 10:
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprintf("%.2f", f)
}
