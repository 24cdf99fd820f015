package placement

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/rttlab/rttlab/results/plotkit"
	"github.com/rttlab/rttlab/results/stats"
)

// The placement study's figures, each written as plots/NAME.svg and
// plots/NAME.png.
const (
	PlotPlaceSweep       = "placement-sweep"
	PlotPlaceRouted      = "placement-routed"
	PlotPlaceConcurrency = "placement-concurrency"
)

// WritePlacePlots draws the sweep (p50 against N for a and b, with both
// models' predicted lines), the routed comparison (p50 per policy and
// route with its 95% interval) and the concurrency figure (p50 and p99 per
// policy and load) into dir as SVG and PNG; a figure without data is
// skipped. It returns the files written.
func WritePlacePlots(r *PlaceResult, dir string) ([]string, error) {
	plots, err := PlacePlots(r)
	if err != nil {
		return nil, err
	}
	return plotkit.WriteFiles(dir, plots)
}

// PlacePlots renders the placement study's figures in report order:
// sweep, routed comparison, concurrency; a figure without data is left
// out.
func PlacePlots(r *PlaceResult) ([]plotkit.PlotFile, error) {
	return plotkit.RenderEach(r, sweepPlot, routedPlot, concurrencyPlot)
}

// sweepPlot is the serial sweep's figure: the measured p50 against N on a
// and b, and each model's predicted line; nil without a sweep.
func sweepPlot(r *PlaceResult) (*plotkit.Figure, error) {
	if len(r.Sweep) == 0 {
		return nil, nil
	}
	f := plotkit.NewFigure(PlotPlaceSweep, "Serial sweep: p50 against serial database calls",
		"Measured p50 on a and b against the number of serial database calls, with each model's predicted line per host (dashed by model) from the last repetition's held-out calibration.",
		"N serial calls", "p50 ms (direct, held-out change in place)")
	for i, host := range []string{NodeA, NodeB} {
		var pts plotter.XYs
		for _, s := range r.Sweep {
			y := s.AP50Ms
			if host == NodeB {
				y = s.BP50Ms
			}
			pts = append(pts, plotter.XY{X: float64(s.N), Y: y})
		}
		thumbs, err := plotkit.PlotSeries(f.P, pts, nil, plotkit.StandardSeries(i, false))
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		f.Legend.Add("measured "+host, thumbs...)
	}
	if err := addModelLines(f, r); err != nil {
		return nil, fmt.Errorf("plot %s: %w", f.Name, err)
	}
	return f, nil
}

// addModelLines adds each model's predicted line per host for the per-N
// route (from the last repetition's held-out calibration) up to the
// sweep's last N, dashed by model.
func addModelLines(f *plotkit.Figure, r *PlaceResult) error {
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
			f.P.Add(l)
			f.Legend.Add(fmt.Sprintf("%s model, %s", m, e.Host), l)
		}
	}
	return nil
}

// routedPlot is the last repetition's routed comparison: each (route,
// policy) cell's p50 with its 95% interval; nil without cells.
func routedPlot(r *PlaceResult) (*plotkit.Figure, error) {
	n := len(r.Reps)
	if n == 0 || len(r.Reps[n-1].Routed.Cells) == 0 {
		return nil, nil
	}
	rep := r.Reps[n-1]
	f := plotkit.NewFigure(PlotPlaceRouted, fmt.Sprintf("Routed comparison (repetition %d): p50 with 95%% CI", rep.Rep),
		"The p50 of each route through the proxy under each policy in the last repetition, with its 95% bootstrap interval; a column per route.",
		"", "p50 ms")
	p := f.P
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
			return nil, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		if !legend[c.Policy] {
			legend[c.Policy] = true
			f.Legend.Add(string(c.Policy), thumbs...)
		}
	}
	p.NominalX(routes...)
	p.X.Min, p.X.Max = -0.5, float64(len(routes))-0.5
	return f, nil
}

// concurrencyPlot is the concurrency phase's figure: p50 (solid) and p99
// (dashed) of all routes against load, per policy; nil without rows.
func concurrencyPlot(r *PlaceResult) (*plotkit.Figure, error) {
	if len(r.Concurrency) == 0 {
		return nil, nil
	}
	f := plotkit.NewFigure(PlotPlaceConcurrency, "Concurrency: latency from the scheduled send, all routes",
		"The p50 (solid) and p99 (dashed) of all routes against the load, per policy, timed from each request's scheduled send.",
		"load (fraction of a's capacity)", "ms (solid p50, dashed p99)")
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
			thumbs, err := plotkit.PlotSeries(f.P, pts, nil, plotkit.StandardSeries(i, j == 1))
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", f.Name, err)
			}
			if j == 0 {
				f.Legend.Add(string(pol), thumbs...)
			}
		}
	}
	return f, nil
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
