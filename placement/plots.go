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

	"github.com/rttlab/rttlab/results"
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
	write := func(name string, p *plot.Plot) error {
		c := vgsvg.New(6*vg.Inch, 4*vg.Inch)
		p.Draw(draw.New(c))
		var b bytes.Buffer
		if _, err := c.WriteTo(&b); err != nil {
			return err
		}
		path := filepath.Join(dir, name+".svg")
		out = append(out, path)
		return os.WriteFile(path, b.Bytes(), 0o644)
	}
	if len(r.Sweep) > 0 {
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
			lp, sp, err := plotter.NewLinePoints(pts)
			if err != nil {
				return out, err
			}
			lp.Color, sp.Color = results.SeriesColor(i), results.SeriesColor(i)
			p.Add(lp, sp)
			p.Legend.Add("measured "+host, lp, sp)
		}
		if n := len(r.Reps); n > 0 {
			ho := r.Reps[n-1].HeldOutCal
			maxN := float64(r.Sweep[len(r.Sweep)-1].N)
			if rm, ok := perNRouteOf(ho); ok {
				rt, _ := ho.RouteN(rm, 0)
				if est, err := ho.Estimates(rt); err == nil {
					for mi, m := range Models {
						for hi, e := range est {
							ic, sl, err := e.Line(m)
							if err != nil {
								continue
							}
							l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: ic}, {X: maxN, Y: ic + sl*maxN}})
							if err != nil {
								return out, err
							}
							l.Color = results.SeriesColor(hi)
							l.Dashes = []vg.Length{vg.Points(float64(2 + 4*mi)), vg.Points(3)}
							p.Add(l)
							p.Legend.Add(fmt.Sprintf("%s model, %s", m, e.Host), l)
						}
					}
				}
			}
		}
		p.Legend.Top, p.Legend.Left = true, true
		if err := write(PlotPlaceSweep, p); err != nil {
			return out, err
		}
	}
	if n := len(r.Reps); n > 0 && len(r.Reps[n-1].Routed.Cells) > 0 {
		rep := r.Reps[n-1]
		p := plot.New()
		p.Title.Text = fmt.Sprintf("Routed comparison (repetition %d): p50 with 95%% CI", rep.Rep)
		p.Y.Label.Text = "p50 ms"
		p.Add(plotter.NewGrid())
		var names []string
		for i, c := range rep.Routed.Cells {
			names = append(names, fmt.Sprintf("%s\n%s", c.Route, c.Policy))
			if math.IsNaN(float64(c.P50Ms)) {
				continue
			}
			pts := plotter.XYs{{X: float64(i), Y: float64(c.P50Ms)}}
			sp, err := plotter.NewScatter(pts)
			if err != nil {
				return out, err
			}
			sp.Color = results.SeriesColor(slices.Index(Policies, c.Policy))
			p.Add(sp)
			if !math.IsNaN(float64(c.P50CI.Low)) {
				eb, err := plotter.NewYErrorBars(ciBar{x: float64(i), y: float64(c.P50Ms), lo: float64(c.P50Ms - c.P50CI.Low), hi: float64(c.P50CI.High - c.P50Ms)})
				if err == nil {
					eb.Color = sp.Color
					p.Add(eb)
				}
			}
		}
		p.NominalX(names...)
		if err := write(PlotPlaceRouted, p); err != nil {
			return out, err
		}
	}
	if len(r.Concurrency) > 0 {
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
				lp, sp, err := plotter.NewLinePoints(pts)
				if err != nil {
					return out, err
				}
				lp.Color, sp.Color = results.SeriesColor(i), results.SeriesColor(i)
				if j == 1 {
					lp.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
				} else {
					p.Legend.Add(string(pol), lp, sp)
				}
				p.Add(lp, sp)
			}
		}
		p.Legend.Top, p.Legend.Left = true, true
		if err := write(PlotPlaceConcurrency, p); err != nil {
			return out, err
		}
	}
	return out, nil
}

// ciBar is one point's asymmetric error bar.
type ciBar struct{ x, y, lo, hi float64 }

func (c ciBar) Len() int                      { return 1 }
func (c ciBar) XY(int) (float64, float64)     { return c.x, c.y }
func (c ciBar) YError(int) (float64, float64) { return c.lo, c.hi }

// perNRouteOf is the calibration's per-N route.
func perNRouteOf(c Calibration) (string, bool) {
	for _, rc := range c.Routes {
		if rc.PerN {
			return rc.Path, true
		}
	}
	return "", false
}
