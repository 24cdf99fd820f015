package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rttlab/rttlab/results/plotkit"
	"github.com/rttlab/rttlab/results/stats"
)

// PlotAttribution is the figure of where each route's change went.
const PlotAttribution = "attribution"

// attributionPart is one part of a change, in the order the bars stack.
type attributionPart struct {
	label string
	color color.RGBA
	value func(a Attribution) float64
}

var attributionParts = []attributionPart{
	{"wire, configured (round trips × RTT)", color.RGBA{0x5a, 0x5a, 0x5a, 0xff}, func(a Attribution) float64 { return a.WireConfigured }},
	{"wire, change of round trips", color.RGBA{0x9e, 0x76, 0xc7, 0xff}, func(a Attribution) float64 { return a.WireTrips }},
	{"wire, excess", color.RGBA{0xb0, 0xb0, 0xb0, 0xff}, func(a Attribution) float64 { return a.WireExcess }},
	{"app's own time", color.RGBA{0x1f, 0x77, 0xb4, 0xff}, func(a Attribution) float64 { return a.App }},
	{"database's own time", color.RGBA{0xff, 0x7f, 0x0e, 0xff}, func(a Attribution) float64 { return a.DB }},
	{"client and legs", color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, func(a Attribution) float64 { return a.Outside }},
}

// attributionBar is the share of a category a bar takes.
const attributionBar = 0.55

// attributionFigure stacks, per route at its largest setting, the parts
// its change went to (positive parts up from 0, negative ones down),
// with the measured change of the p50 and its CI beside the bar.
func (s *Summary) attributionFigure() (*plotkit.Figure, error) {
	order, last := s.largestSettings()
	var cats []routeKey
	for _, k := range order {
		if last[k].HasAttribution {
			cats = append(cats, k)
		}
	}
	if len(cats) == 0 {
		return nil, nil
	}
	f := plotkit.NewFigure(PlotAttribution, "Where the change went, at each route's largest setting",
		"Each request taken apart on the wire: the bar stacks the change of its parts against 0 ms (requests around each run's median): the wire as configured (round trips × RTT), the wire's excess over it, the app's and the database's own time, and the client's; the black point is the measured change of the p50 with its 95% CI.",
		"", "change against 0 ms (ms)")
	for i, k := range cats {
		c := last[k]
		up, down := 0.0, 0.0
		for _, part := range attributionParts {
			v := part.value(c.Attribution)
			lo, hi := up, up+v
			if v < 0 {
				lo, hi = down+v, down
				down += v
			} else {
				up += v
			}
			if err := addBarSegment(f, float64(i)-attributionBar/2-0.06, lo, hi, part.color); err != nil {
				return nil, err
			}
		}
		pt := plotter.XYs{{X: float64(i) + attributionBar/2 + 0.02, Y: c.Change}}
		if _, err := addSeriesStyled(f, pt, []stats.Interval{c.ChangeCI}, color.RGBA{0, 0, 0, 0xff}, draw.CircleGlyph{}); err != nil {
			return nil, err
		}
	}
	for _, part := range attributionParts {
		sw, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
		if err != nil {
			return nil, err
		}
		sw.Color, sw.LineStyle.Width = part.color, 0
		f.Legend.Add(part.label, sw)
	}
	f.Legend.Add("measured change of p50, 95% CI", legendDot{})
	ratioAxes(f, cats)
	f.P.Y.Min = min(f.P.Y.Min, 0)
	return f, nil
}

// addBarSegment draws one filled segment [lo, hi] of a bar starting at x.
func addBarSegment(f *plotkit.Figure, x, lo, hi float64, c color.Color) error {
	if hi-lo == 0 {
		return nil
	}
	w := attributionBar
	pg, err := plotter.NewPolygon(plotter.XYs{{X: x, Y: lo}, {X: x + w, Y: lo}, {X: x + w, Y: hi}, {X: x, Y: hi}})
	if err != nil {
		return fmt.Errorf("plot %s: %w", f.Name, err)
	}
	pg.Color = c
	pg.LineStyle = draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}
	f.P.Add(pg)
	return nil
}

// legendDot is the legend's black point.
type legendDot struct{}

func (legendDot) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}, c.Center())
}
