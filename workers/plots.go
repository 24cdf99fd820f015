package workers

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rttlab/rttlab/results/plotkit"
	"github.com/rttlab/rttlab/results/stats"
)

// Plot names; each is written as NAME.svg and NAME.png.
const (
	PlotLatency    = "workers-latency"
	PlotCollisions = "workers-collisions"
)

// A panel's size; a policy keeps its colour and glyph in every panel.
const (
	panelW = 3.3 * vg.Inch
	panelH = 2.6 * vg.Inch
	// legendW is the width kept beside the panels for the policy legend.
	legendW = 1.9 * vg.Inch
)

// Plots draws the latency-against-load figure (p50 solid and p99 dashed
// per policy, with their 95% intervals) and the collision-rate figure,
// each a grid with a column per configuration and a row per (mix, RTT).
// Cells that make no claim are drawn like the others; the summary's
// tables carry their warnings. A summary without cells has no figures.
func (s *Summary) Plots() ([]plotkit.PlotFile, error) {
	if len(s.Cells) == 0 {
		return nil, nil
	}
	a := s.axes()
	lat := a.grid("latency (ms, log scale)")
	col := a.grid("collision rate (%)")
	legend := plotkit.NewLegend()
	for pi, pol := range a.policies {
		thumbs, err := s.drawPolicy(a, pi, lat, col)
		if err != nil {
			return nil, err
		}
		if len(thumbs) > 0 {
			legend.Add(pol, thumbs...)
		}
	}
	a.finishAxes(lat, col)
	var out []plotkit.PlotFile
	for _, f := range []struct {
		name, title, desc string
		g                 [][]*plot.Plot
	}{
		{PlotLatency, "Latency against load per policy (p50 solid, p99 dashed)",
			"Median over runs of the run p50 (solid) and p99 (dashed) against the load fraction, one colour per policy, with 95% bootstrap intervals over runs.", lat},
		{PlotCollisions, "Collision rate against load per policy",
			"Share of measured requests that started on a busy worker while another worker was idle, with 95% bootstrap intervals over runs.", col},
	} {
		fig := &plotkit.Figure{Name: f.name, Title: f.title, Desc: f.desc, Panels: f.g, Legend: legend,
			// The panels take at least the width of the title.
			W: max(vg.Length(len(a.layouts))*panelW, 6*vg.Inch) + legendW,
			H: vg.Length(len(a.rows))*panelH + 0.5*vg.Inch}
		pf, err := fig.Render()
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.name, err)
		}
		out = append(out, pf)
	}
	return out, nil
}

// panelRow is one row of panels: a mix at an RTT.
type panelRow struct {
	mix string
	rtt float64
}

// plotAxes are what the figures are laid out by: a column per
// configuration, a row per (mix, RTT) and a series per policy, each in
// drawing order.
type plotAxes struct {
	layouts  []string
	rows     []panelRow
	policies []string
}

// axes collects the configurations, rows and policies of the cells,
// sorted as the summary orders cells.
func (s *Summary) axes() plotAxes {
	var a plotAxes
	for _, c := range s.Cells {
		if !slices.Contains(a.layouts, c.Layout) {
			a.layouts = append(a.layouts, c.Layout)
		}
		if r := (panelRow{c.Mix, c.RTTMs}); !slices.Contains(a.rows, r) {
			a.rows = append(a.rows, r)
		}
		if !slices.Contains(a.policies, c.Policy) {
			a.policies = append(a.policies, c.Policy)
		}
	}
	slices.SortFunc(a.layouts, compareLayouts)
	slices.SortFunc(a.rows, func(a, b panelRow) int {
		return cmp.Or(cmp.Compare(a.mix, b.mix), cmp.Compare(a.rtt, b.rtt))
	})
	slices.SortStableFunc(a.policies, func(x, y string) int {
		return compareCells(CellKey{Policy: x}, CellKey{Policy: y}, s.Options.Baseline)
	})
	return a
}

// grid returns an empty titled panel per row and configuration, with
// title on the y axis.
func (a plotAxes) grid(title string) [][]*plot.Plot {
	g := make([][]*plot.Plot, len(a.rows))
	for i, r := range a.rows {
		g[i] = make([]*plot.Plot, len(a.layouts))
		for j, l := range a.layouts {
			g[i][j] = plotkit.NewPanel(fmt.Sprintf("%s · %s · %s ms RTT", l, r.mix, fmtNum(r.rtt)), "load (fraction of capacity)", title)
		}
	}
	return g
}

// at returns the row and column of a cell's panel.
func (a plotAxes) at(c CellStat) (int, int) {
	return slices.Index(a.rows, panelRow{c.Mix, c.RTTMs}), slices.Index(a.layouts, c.Layout)
}

// panelSeries are one policy's points in one panel, with their intervals:
// p50 and p99 latency and the collision rate in percent.
type panelSeries struct {
	p50, p99, cr    plotter.XYs
	ci50, ci99, cic []stats.Interval
}

// seriesIn collects policy pol's points in the panel at row i, column
// j, leaving out latencies that are not positive and rates not finite.
func (s *Summary) seriesIn(a plotAxes, pol string, i, j int) panelSeries {
	var ps panelSeries
	for _, c := range s.Cells {
		if r, k := a.at(c); c.Policy != pol || r != i || k != j {
			continue
		}
		if v := float64(c.P50.Ms); finite(v) && v > 0 {
			ps.p50 = append(ps.p50, plotter.XY{X: c.Fraction, Y: v})
			ps.ci50 = append(ps.ci50, positive(c.P50.CI))
		}
		if v := float64(c.P99.Ms); finite(v) && v > 0 {
			ps.p99 = append(ps.p99, plotter.XY{X: c.Fraction, Y: v})
			ps.ci99 = append(ps.ci99, positive(c.P99.CI))
		}
		if v := float64(c.CollisionRate); finite(v) {
			ps.cr = append(ps.cr, plotter.XY{X: c.Fraction, Y: 100 * v})
			ps.cic = append(ps.cic, stats.Interval{Low: 100 * float64(c.CollisionCI.Low), High: 100 * float64(c.CollisionCI.High)})
		}
	}
	return ps
}

// drawPolicy draws policy pi's series in every panel of both figures and
// returns the legend thumbnails of its first p50 series drawn.
func (s *Summary) drawPolicy(a plotAxes, pi int, lat, col [][]*plot.Plot) ([]plot.Thumbnailer, error) {
	var thumbs []plot.Thumbnailer
	for i := range a.rows {
		for j := range a.layouts {
			ps := s.seriesIn(a, a.policies[pi], i, j)
			th, err := addSeries(lat[i][j], ps.p50, ps.ci50, pi, false)
			if err != nil {
				return nil, err
			}
			if len(thumbs) == 0 {
				thumbs = th
			}
			if _, err := addSeries(lat[i][j], ps.p99, ps.ci99, pi, true); err != nil {
				return nil, err
			}
			if _, err := addSeries(col[i][j], ps.cr, ps.cic, pi, false); err != nil {
				return nil, err
			}
		}
	}
	return thumbs, nil
}

// finishAxes sets the panels' scales: a log latency axis, a collision
// axis from 0 to at least 1%, and loads from 0 to 1.
func (a plotAxes) finishAxes(lat, col [][]*plot.Plot) {
	for i := range a.rows {
		for j := range a.layouts {
			lat[i][j].Y.Scale = plot.LogScale{}
			lat[i][j].Y.Tick.Marker = plot.TickerFunc(logTicks)
			col[i][j].Y.Min = 0
			col[i][j].Y.Max = max(col[i][j].Y.Max, 1)
			for _, p := range []*plot.Plot{lat[i][j], col[i][j]} {
				p.X.Min, p.X.Max = 0, 1
			}
		}
	}
}

// WritePlots writes every figure of Plots as NAME.svg and NAME.png in dir
// and returns the paths written.
func (s *Summary) WritePlots(dir string) ([]string, error) {
	plots, err := s.Plots()
	if err != nil {
		return nil, err
	}
	return plotkit.WriteFiles(dir, plots)
}

// positive drops a non-positive lower end (a log axis cannot show it).
func positive(c stats.CI) stats.Interval {
	iv := c.Interval()
	if !(iv.Low > 0) {
		iv.Low = math.NaN()
	}
	return iv
}

// addSeries draws a line through pts with glyphs and, where ci is valid,
// error bars; it returns the legend thumbnails.
func addSeries(p *plot.Plot, pts plotter.XYs, ci []stats.Interval, idx int, dashed bool) ([]plot.Thumbnailer, error) {
	c := plotkit.SeriesColor(idx)
	line := draw.LineStyle{Color: c, Width: vg.Points(1.4)}
	if dashed {
		line.Dashes = plotkit.Dashes
	}
	return plotkit.PlotSeries(p, pts, ci, plotkit.SeriesStyle{Color: c, Line: line, ErrWidth: vg.Points(0.8), CapWidth: vg.Points(4),
		Radius: vg.Points(2.6), Glyph: plotkit.SeriesGlyph(idx), ClampErrors: true})
}

// logTicks is plotkit.LogTicks, falling back to plain ticks when a narrow
// range holds fewer than two.
func logTicks(min, max float64) []plot.Tick {
	ticks := plotkit.LogTicks(min, max)
	if len(ticks) >= 2 || !(min > 0) || !(max > min) {
		return ticks
	}
	return plot.DefaultTicks{}.Ticks(min, max)
}
