package results

import (
	"github.com/rttlab/rttlab/results/stats"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SeriesGlyph is the point shape of the i-th series in every rttlab
// figure, as SeriesColor is its colour.
func SeriesGlyph(i int) draw.GlyphDrawer { return seriesGlyph(i) }

// Dashes is the dash pattern of a dashed series (a prediction, a p99).
var Dashes = dashes

// SeriesStyle is how PlotSeries draws one series.
type SeriesStyle struct {
	Color color.Color
	// Line is the line through the points (drawn for two or more).
	Line draw.LineStyle
	// ErrWidth and CapWidth are the error bars' line and cap widths.
	ErrWidth, CapWidth vg.Length
	// Radius and Glyph draw the points.
	Radius vg.Length
	Glyph  draw.GlyphDrawer
	// ClampErrors draws no negative half of a bar when an interval
	// misses its point (a median beside a resampled interval).
	ClampErrors bool
}

// StandardSeries is the style of the idx-th series of the RTT report's
// figures, which the other studies' figures share: its colour and glyph, a
// 1.6 pt line (dashed when asked), 1 pt error bars with 6 pt caps, and
// 3.2 pt points.
func StandardSeries(idx int, dashed bool) SeriesStyle {
	col := seriesColor(idx)
	return SeriesStyle{Color: col, Line: lineStyle(col, dashed), ErrWidth: vg.Points(1), CapWidth: vg.Points(6),
		Radius: vg.Points(3.2), Glyph: seriesGlyph(idx)}
}

// PlotSeries adds one series to p: a line through pts (two or more), an
// error bar at each point whose interval in ci is valid, and the points.
// It returns what a legend shows for the series; nothing for no points.
func PlotSeries(p *plot.Plot, pts plotter.XYs, ci []stats.Interval, st SeriesStyle) ([]plot.Thumbnailer, error) {
	if len(pts) == 0 {
		return nil, nil
	}
	var thumbs []plot.Thumbnailer
	if len(pts) > 1 {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.LineStyle = st.Line
		p.Add(l)
		thumbs = append(thumbs, l)
	}
	var eb xyErr
	for i, pt := range pts {
		if i < len(ci) && ci[i].Valid() {
			lo, hi := pt.Y-ci[i].Low, ci[i].High-pt.Y
			if st.ClampErrors {
				lo, hi = max(lo, 0), max(hi, 0)
			}
			eb.XYs = append(eb.XYs, pt)
			eb.YErrors = append(eb.YErrors, struct{ Low, High float64 }{lo, hi})
		}
	}
	if len(eb.XYs) > 0 {
		e, err := plotter.NewYErrorBars(eb)
		if err != nil {
			return nil, err
		}
		e.LineStyle = draw.LineStyle{Color: st.Color, Width: st.ErrWidth}
		e.CapWidth = st.CapWidth
		p.Add(e)
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: st.Color, Radius: st.Radius, Shape: st.Glyph}
	p.Add(sc)
	return append(thumbs, sc), nil
}
