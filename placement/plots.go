package placement

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rttlab/rttlab/results/plotkit"
	"github.com/rttlab/rttlab/results/stats"
)

// The placement study's figures, written as plots/NAME.svg.
const (
	PlotPlaceSweep       = "placement-sweep"
	PlotPlaceRouted      = "placement-routed"
	PlotPlaceConcurrency = "placement-concurrency"
)

// WritePlacePlots draws the sweep (p50 against N for a and b, with both
// models' predicted lines), the routed comparison (p50 per policy and
// route with its 95% interval) and the concurrency figure (p50 and p99 per
// policy and load) into dir; a figure without data is skipped.
func WritePlacePlots(r *PlaceResult, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, fig := range []struct {
		name string
		draw func(*PlaceResult) (*plot.Plot, error)
	}{
		{PlotPlaceSweep, sweepPlot},
		{PlotPlaceRouted, routedPlot},
		{PlotPlaceConcurrency, concurrencyPlot},
	} {
		p, err := fig.draw(r)
		if err != nil {
			return out, err
		}
		if p == nil {
			continue
		}
		b, err := renderSVG(p)
		if err != nil {
			return out, err
		}
		path := filepath.Join(dir, fig.name+".svg")
		out = append(out, path)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return out, err
		}
	}
	return out, nil
}

// renderSVG draws a figure as a 6×4 inch SVG.
func renderSVG(p *plot.Plot) ([]byte, error) {
	c := vgsvg.New(6*vg.Inch, 4*vg.Inch)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sweepPlot is the serial sweep's figure: the measured p50 against N on a
// and b, and each model's predicted line; nil without a sweep.
func sweepPlot(r *PlaceResult) (*plot.Plot, error) {
	if len(r.Sweep) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "Serial sweep: p50 against serial database calls"
	p.X.Label.Text = "N serial calls"
	p.Y.Label.Text = "p50 ms (direct, held-out change in place)"
	p.Add(plotter.NewGrid())
	for i, host := range []string{NodeA, NodeB} {
		var pts plotter.XYs
		for _, s := range r.Sweep {
			y := s.AP50Ms
			if host == NodeB {
				y = s.BP50Ms
			}
			pts = append(pts, plotter.XY{X: float64(s.N), Y: y})
		}
		thumbs, err := plotkit.PlotSeries(p, pts, nil, plotkit.StandardSeries(i, false))
		if err != nil {
			return nil, err
		}
		p.Legend.Add("measured "+host, thumbs...)
	}
	if err := addModelLines(p, r); err != nil {
		return nil, err
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}

// addModelLines adds each model's predicted line per host for the per-N
// route (from the last repetition's held-out calibration) up to the
// sweep's last N, dashed by model.
func addModelLines(p *plot.Plot, r *PlaceResult) error {
	n := len(r.Reps)
	if n == 0 {
		return nil
	}
	ho := r.Reps[n-1].HeldOutCal
	maxN := float64(r.Sweep[len(r.Sweep)-1].N)
	rm, ok := perNRouteOf(ho)
	if !ok {
		return nil
	}
	rt, _ := ho.RouteN(rm, 0)
	est, err := ho.Estimates(rt)
	if err != nil {
		return nil
	}
	for mi, m := range Models {
		for hi, e := range est {
			ic, sl, err := e.Line(m)
			if err != nil {
				continue
			}
			l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: ic}, {X: maxN, Y: ic + sl*maxN}})
			if err != nil {
				return err
			}
			l.Color = plotkit.SeriesColor(hi)
			l.Dashes = []vg.Length{vg.Points(float64(2 + 4*mi)), vg.Points(3)}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s model, %s", m, e.Host), l)
		}
	}
	return nil
}

// routedPlot is the last repetition's routed comparison: each (route,
// policy) cell's p50 with its 95% interval; nil without cells.
func routedPlot(r *PlaceResult) (*plot.Plot, error) {
	n := len(r.Reps)
	if n == 0 || len(r.Reps[n-1].Routed.Cells) == 0 {
		return nil, nil
	}
	rep := r.Reps[n-1]
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Routed comparison (repetition %d): p50 with 95%% CI", rep.Rep)
	p.Y.Label.Text = "p50 ms"
	p.Add(plotter.NewGrid())
	// A column per route, the policies side by side in it, a colour and a
	// glyph each as in the legend.
	var routes []string
	legend := map[Policy]bool{}
	for _, c := range rep.Routed.Cells {
		ri := slices.Index(routes, c.Route)
		if ri < 0 {
			ri, routes = len(routes), append(routes, c.Route)
		}
		if math.IsNaN(float64(c.P50Ms)) {
			continue
		}
		pi := slices.Index(Policies, c.Policy)
		x := float64(ri) + 0.15*(float64(pi)-float64(len(Policies)-1)/2)
		pts := plotter.XYs{{X: x, Y: float64(c.P50Ms)}}
		thumbs, err := plotkit.PlotSeries(p, pts, []stats.Interval{c.P50CI.Interval()}, plotkit.StandardSeries(pi, false))
		if err != nil {
			return nil, err
		}
		if !legend[c.Policy] {
			legend[c.Policy] = true
			p.Legend.Add(string(c.Policy), thumbs...)
		}
	}
	p.NominalX(routes...)
	p.X.Min, p.X.Max = -0.5, float64(len(routes))-0.5
	p.Legend.Top, p.Legend.XOffs = true, -vg.Points(4)
	return p, nil
}

// concurrencyPlot is the concurrency phase's figure: p50 (solid) and p99
// (dashed) of all routes against load, per policy; nil without rows.
func concurrencyPlot(r *PlaceResult) (*plot.Plot, error) {
	if len(r.Concurrency) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "Concurrency: latency from the scheduled send, all routes"
	p.X.Label.Text = "load (fraction of a's capacity)"
	p.Y.Label.Text = "ms (solid p50, dashed p99)"
	p.Add(plotter.NewGrid())
	for i, pol := range Policies {
		var p50, p99 plotter.XYs
		for _, c := range r.Concurrency {
			if c.Route == "all" && c.Policy == string(pol) && !math.IsNaN(float64(c.P50Ms)) {
				p50 = append(p50, plotter.XY{X: c.Fraction, Y: float64(c.P50Ms)})
				p99 = append(p99, plotter.XY{X: c.Fraction, Y: float64(c.P99Ms)})
			}
		}
		if len(p50) == 0 {
			continue
		}
		slices.SortFunc(p50, func(a, b plotter.XY) int { return int(math.Copysign(1, a.X-b.X)) })
		slices.SortFunc(p99, func(a, b plotter.XY) int { return int(math.Copysign(1, a.X-b.X)) })
		for j, pts := range []plotter.XYs{p50, p99} {
			thumbs, err := plotkit.PlotSeries(p, pts, nil, plotkit.StandardSeries(i, j == 1))
			if err != nil {
				return nil, err
			}
			if j == 0 {
				p.Legend.Add(string(pol), thumbs...)
			}
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}

// perNRouteOf is the calibration's per-N route.
func perNRouteOf(c Calibration) (string, bool) {
	for _, rc := range c.Routes {
		if rc.PerN {
			return rc.Path, true
		}
	}
	return "", false
}
