package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rttlab/rttlab/results/plotkit"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
)

// PlotsDir is the folder, inside a results folder, that holds the plots.
const PlotsDir = "plots"

// Plot names; each is written as plots/NAME.svg and plots/NAME.png.
const (
	PlotLatency      = "latency"
	PlotChange       = "change"
	PlotRatio        = "ratio"
	PlotVerification = "verification"
	PlotRuns         = "runs"
	PlotSensitivity  = "sensitivity"
)

// The strip plot's panels.
const (
	panelWidth  = 2.7 * vg.Inch
	panelHeight = 2.4 * vg.Inch
	panelCols   = 3
)

// plotNames lists every plot Render may write, in report order.
var plotNames = []string{PlotLatency, PlotChange, PlotAttribution, PlotRatio, PlotVerification, PlotRuns, PlotSensitivity}

// routeKey names one app and route.
type routeKey struct{ app, route string }

func (k routeKey) label() string { return k.app + " " + k.route }

// routes returns the app/route pairs of the summary's cells in sorted
// order; the index of a pair is its colour in every plot.
func (s *Summary) routes() []routeKey {
	var out []routeKey
	for _, c := range s.Cells {
		k := routeKey{c.App, c.Route}
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// settings returns the distinct settings of the summary's cells, ascending.
func (s *Summary) settings() []float64 {
	out := make([]float64, len(s.Cells))
	for i, c := range s.Cells {
		out[i] = c.RTTms
	}
	return sortedDistinct(out)
}

// stripSetting is the setting of the per-run strip plot: Options.StripRTTms
// when set, else the largest setting with data.
func (s *Summary) stripSetting() (float64, error) {
	st := s.settings()
	if s.Options.StripRTTms != nil {
		v := *s.Options.StripRTTms
		if !slices.Contains(st, v) {
			return 0, fmt.Errorf("strip plot setting %s ms: the study has settings %s ms", fmtSetting(v), joinSettings(st))
		}
		return v, nil
	}
	if len(st) == 0 {
		return 0, errors.New("no cells")
	}
	return st[len(st)-1], nil
}

func joinSettings(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmtSetting(x)
	}
	return strings.Join(s, ", ")
}

// Plots renders the report's figures from the summary, in report order:
// latency, change, ratio, verification and runs. A figure without data
// (no probes, no change against 0 ms) is left out. The same summary always
// gives the same SVG bytes.
func (s *Summary) Plots() ([]plotkit.PlotFile, error) {
	return plotkit.RenderEach(s, (*Summary).latencyFigure, (*Summary).changeFigure, (*Summary).attributionFigure, (*Summary).ratioFigure, (*Summary).verificationFigure, (*Summary).runsFigure, (*Summary).sensitivityFigure)
}

// settingTicks puts the x ticks at the configured settings when they are
// few and far enough apart to label, else uses the default ticks.
func settingTicks(st []float64) plot.Ticker {
	if len(st) < 2 || len(st) > 9 {
		return plot.TickerFunc(plotkit.ReadableTicks)
	}
	span := st[len(st)-1] - st[0]
	for i := 1; i < len(st); i++ {
		if st[i]-st[i-1] < span/14 {
			return plot.TickerFunc(plotkit.ReadableTicks)
		}
	}
	ticks := make(plot.ConstantTicks, len(st))
	for i, v := range st {
		ticks[i] = plot.Tick{Value: v, Label: fmtSetting(v)}
	}
	return ticks
}

// addSeries draws a line through pts with glyphs and, where ci holds
// valid intervals, error bars; it returns the legend thumbnails.
func addSeries(p *plot.Plot, pts plotter.XYs, ci []stats.Interval, idx int) ([]plot.Thumbnailer, error) {
	return plotkit.PlotSeries(p, pts, ci, plotkit.StandardSeries(idx, false))
}

func (s *Summary) lowNNote() string {
	o := s.Options.withDefaults()
	return fmt.Sprintf("ringed: no claim (n<%d, >%s failed)", o.MinRuns, o.maxFailedPercent())
}

// addLowNRings rings the points of cells the summary makes no claim about
// (too few runs, too many failed requests) and adds one legend entry for
// them.
func addLowNRings(f *plotkit.Figure, pts plotter.XYs, note string) error {
	if len(pts) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: plotkit.Grey, Radius: vg.Points(7), Shape: draw.RingGlyph{}}
	f.P.Add(sc)
	f.Legend.Add(note, sc)
	return nil
}

func (s *Summary) latencyFigure() (*plotkit.Figure, error) {
	f := plotkit.NewFigure(PlotLatency, "Latency against configured RTT",
		"Median of the run p50s for each app and route at each configured RTT, with 95% bootstrap CI error bars.",
		"configured RTT (ms)", "p50 latency (ms)")
	f.P.X.Tick.Marker = settingTicks(s.settings())
	var lo, hi = math.Inf(1), math.Inf(-1)
	var low plotter.XYs
	n := 0
	for i, k := range s.routes() {
		var pts plotter.XYs
		var ci []stats.Interval
		for _, c := range s.Cells {
			if c.App != k.app || c.Route != k.route || c.NRuns == 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: c.RTTms, Y: c.P50})
			ci = append(ci, c.CI)
			lo, hi = math.Min(lo, c.P50), math.Max(hi, c.P50)
			if c.NoClaim() {
				low = append(low, plotter.XY{X: c.RTTms, Y: c.P50})
			}
		}
		if len(pts) == 0 {
			continue
		}
		th, err := addSeries(f.P, pts, ci, i)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		f.Legend.Add(k.label(), th...)
		n++
	}
	if n == 0 {
		return nil, nil
	}
	if err := addLowNRings(f, low, s.lowNNote()); err != nil {
		return nil, fmt.Errorf("plot %s: %w", f.Name, err)
	}
	// Routes an order of magnitude apart share the axis on a log scale.
	if lo > 0 && hi/lo > 20 {
		f.P.Y.Scale = plot.LogScale{}
		f.P.Y.Tick.Marker = plot.TickerFunc(plotkit.LogTicks)
		f.P.Y.Label.Text = "p50 latency (ms, log scale)"
	} else {
		f.P.Y.Min = 0
	}
	return f, nil
}

// sensitivityFigure draws each route's p50 against the RTT with its
// least-squares fit (solid) and the round trips' prediction from the
// fit's intercept (dashed).
func (s *Summary) sensitivityFigure() (*plotkit.Figure, error) {
	if len(s.Sensitivity) == 0 {
		return nil, nil
	}
	f := plotkit.NewFigure(PlotSensitivity, "Sensitivity: p50 against RTT, fitted and predicted",
		"Median of the run p50s at each setting (points, 95% CI bars), the least-squares fit over the settings (solid) and intercept + round trips × RTT (dashed, same colour).",
		"configured RTT (ms)", "p50 latency (ms)")
	f.P.X.Tick.Marker = settingTicks(s.settings())
	f.P.Y.Min = 0
	anyPred := false
	for i, fit := range s.Sensitivity {
		var pts plotter.XYs
		var ci []stats.Interval
		for _, c := range s.Cells {
			if c.App == fit.App && c.Route == fit.Route && c.NRuns > 0 {
				pts = append(pts, plotter.XY{X: c.RTTms, Y: c.P50})
				ci = append(ci, c.CI)
			}
		}
		x0, x1 := fit.Settings[0], fit.Settings[0]
		for _, x := range fit.Settings {
			x0, x1 = math.Min(x0, x), math.Max(x1, x)
		}
		lines := []struct {
			b      float64
			dashed bool
		}{{fit.Slope, false}}
		if fit.HasPredicted {
			lines = append(lines, struct {
				b      float64
				dashed bool
			}{fit.PredictedSlope, true})
			anyPred = true
		}
		for _, ln := range lines {
			l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: fit.Intercept + ln.b*x0}, {X: x1, Y: fit.Intercept + ln.b*x1}})
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", f.Name, err)
			}
			l.LineStyle = plotkit.LineStyle(plotkit.SeriesColor(i), ln.dashed)
			f.P.Add(l)
		}
		th, err := addSeries(f.P, pts, ci, i)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		f.Legend.Add(fmt.Sprintf("%s %s (slope %.2f)", fit.App, fit.Route, fit.Slope), th...)
	}
	if anyPred {
		f.Legend.Add("dashed: round trips × RTT", plotkit.LegendLine{LineStyle: plotkit.LineStyle(plotkit.Grey, true)})
	}
	return f, nil
}

func (s *Summary) changeFigure() (*plotkit.Figure, error) {
	f := plotkit.NewFigure(PlotChange, "Change against 0 ms, measured and predicted",
		"Measured change of the p50 against the 0 ms baseline (solid, 95% CI bars) beside the prediction statements × RTT (dashed, same colour).",
		"configured RTT (ms)", "change of p50 against 0 ms (ms)")
	f.P.X.Tick.Marker = settingTicks(s.settings())
	var low plotter.XYs
	n, anyPred := 0, false
	for i, k := range s.routes() {
		pts := plotter.XYs{}
		ci := []stats.Interval{}
		var st float64
		hasSt := false
		for _, c := range s.Cells {
			if c.App != k.app || c.Route != k.route || !c.HasBaseline {
				continue
			}
			pts = append(pts, plotter.XY{X: c.RTTms, Y: c.Change})
			ci = append(ci, c.ChangeCI)
			st, hasSt = c.Statements, c.HasStatements
			if c.NoClaim() {
				low = append(low, plotter.XY{X: c.RTTms, Y: c.Change})
			}
		}
		if len(pts) == 0 {
			continue
		}
		// The change at 0 ms is 0 by definition: anchor the line there.
		pts = append(plotter.XYs{{X: 0, Y: 0}}, pts...)
		ci = append([]stats.Interval{stats.NoInterval()}, ci...)
		if hasSt {
			if err := addPredictedChange(f, pts[len(pts)-1].X, st, i); err != nil {
				return nil, err
			}
			anyPred = true
		}
		th, err := addSeries(f.P, pts, ci, i)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		label := k.label()
		if hasSt {
			label += " (" + strconv.FormatFloat(st, 'f', -1, 64) + " stmts)"
		}
		f.Legend.Add(label, th...)
		n++
	}
	if n == 0 {
		return nil, nil
	}
	if anyPred {
		f.Legend.Add("dashed: predicted", plotkit.LegendLine{LineStyle: plotkit.LineStyle(plotkit.Grey, true)})
	}
	if err := addLowNRings(f, low, s.lowNNote()); err != nil {
		return nil, fmt.Errorf("plot %s: %w", f.Name, err)
	}
	return f, nil
}

// addPredictedChange draws the prediction statements × RTT from 0 to
// maxX, dashed in series colour idx.
func addPredictedChange(f *plotkit.Figure, maxX, statements float64, idx int) error {
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: maxX, Y: statements * maxX}})
	if err != nil {
		return fmt.Errorf("plot %s: %w", f.Name, err)
	}
	l.LineStyle = plotkit.LineStyle(plotkit.SeriesColor(idx), true)
	f.P.Add(l)
	return nil
}

// ratioWidth is the share of a ratio category the points spread over.
const ratioWidth = 0.7

// ratioPredStyle draws the predicted ratio (statements per request).
var ratioPredStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(1.2)}

func (s *Summary) ratioFigure() (*plotkit.Figure, error) {
	f := plotkit.NewFigure(PlotRatio, "Amplification ratio (change ÷ RTT)",
		"Change against 0 ms divided by the configured RTT, per app and route and setting (95% CI bars); the black bar marks the statements per request, the ratio the prediction expects.",
		"", "change ÷ RTT")
	cats := s.ratioCategories()
	if len(cats) == 0 {
		return nil, nil
	}
	var st []float64
	for _, v := range s.settings() {
		if v > 0 {
			st = append(st, v)
		}
	}
	hasPred, err := s.addPredictedRatios(f, cats)
	if err != nil {
		return nil, err
	}
	for si, v := range st {
		pts, ci := s.ratioPoints(cats, st, si)
		if len(pts) == 0 {
			continue
		}
		// One colour per setting here; the x axis names the routes.
		if err := addRatioSeries(f, pts, ci, si, fmtSetting(v)+" ms"); err != nil {
			return nil, err
		}
	}
	if hasPred {
		f.Legend.Add("predicted (statements)", plotkit.LegendLine{LineStyle: ratioPredStyle})
	}
	ratioAxes(f, cats)
	return f, nil
}

// ratioCategories returns the app/route pairs with a change, in the order
// of routes.
func (s *Summary) ratioCategories() []routeKey {
	var cats []routeKey
	for _, k := range s.routes() {
		for _, c := range s.Cells {
			if c.App == k.app && c.Route == k.route && c.HasBaseline {
				cats = append(cats, k)
				break
			}
		}
	}
	return cats
}

// addPredictedRatios draws, per category with statements, its predicted
// ratio as one bar across the category, and reports whether it drew any.
func (s *Summary) addPredictedRatios(f *plotkit.Figure, cats []routeKey) (bool, error) {
	hasPred := false
	for ci0, k := range cats {
		st, ok := s.Manifest.StatementsFor(k.app, k.route)
		if !ok {
			continue
		}
		x := float64(ci0)
		l, err := plotter.NewLine(plotter.XYs{{X: x - ratioWidth/2 - 0.1, Y: st}, {X: x + ratioWidth/2 + 0.1, Y: st}})
		if err != nil {
			return false, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		l.LineStyle = ratioPredStyle
		f.P.Add(l)
		hasPred = true
	}
	return hasPred, nil
}

// ratioPoints returns the ratios at setting st[si], one per category that
// has it, spread across the category by setting, with their intervals.
func (s *Summary) ratioPoints(cats []routeKey, st []float64, si int) (plotter.XYs, []stats.Interval) {
	v := st[si]
	var pts plotter.XYs
	var ci []stats.Interval
	for ci0, k := range cats {
		for _, c := range s.Cells {
			if c.App != k.app || c.Route != k.route || c.RTTms != v || !c.HasBaseline {
				continue
			}
			x := float64(ci0)
			if len(st) > 1 {
				x += -ratioWidth/2 + ratioWidth*float64(si)/float64(len(st)-1)
			}
			pts = append(pts, plotter.XY{X: x, Y: c.Ratio})
			iv := stats.NoInterval()
			if c.ChangeCI.Valid() {
				iv = stats.Interval{Low: c.ChangeCI.Low / c.RTTms, High: c.ChangeCI.High / c.RTTms}
			}
			ci = append(ci, iv)
		}
	}
	return pts, ci
}

// addRatioSeries draws one setting's ratios in series colour idx: the
// error bars of the valid intervals, then the points, with a legend entry.
func addRatioSeries(f *plotkit.Figure, pts plotter.XYs, ci []stats.Interval, idx int, label string) error {
	sc, err := addSeriesStyled(f, pts, ci, plotkit.SeriesColor(idx), plotkit.SeriesGlyph(idx))
	if err != nil {
		return err
	}
	f.Legend.Add(label, sc)
	return nil
}

// addSeriesStyled draws points in colour c and shape g: the error bars of
// the valid intervals, then the points.
func addSeriesStyled(f *plotkit.Figure, pts plotter.XYs, ci []stats.Interval, c color.Color, g draw.GlyphDrawer) (*plotter.Scatter, error) {
	var eb plotkit.XYErr
	for i, pt := range pts {
		if ci[i].Valid() {
			eb.XYs = append(eb.XYs, pt)
			eb.YErrors = append(eb.YErrors, struct{ Low, High float64 }{pt.Y - ci[i].Low, ci[i].High - pt.Y})
		}
	}
	if len(eb.XYs) > 0 {
		e, err := plotter.NewYErrorBars(eb)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		e.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(1)}
		e.CapWidth = vg.Points(5)
		f.P.Add(e)
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, fmt.Errorf("plot %s: %w", f.Name, err)
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: g}
	f.P.Add(sc)
	return sc, nil
}

// ratioAxes names the categories on the x axis, tilting the names when
// there are many, and starts the y axis at 0 with some headroom.
func ratioAxes(f *plotkit.Figure, cats []routeKey) {
	names := make([]string, len(cats))
	for i, k := range cats {
		names[i] = k.label()
	}
	f.P.NominalX(names...)
	f.P.X.Min, f.P.X.Max = -0.6, float64(len(cats))-0.4
	f.P.Y.Min = 0
	f.P.Y.Max *= 1.08
	if len(cats) > 3 {
		f.P.X.Tick.Label.Rotation = math.Pi / 7
		f.P.X.Tick.Label.XAlign = draw.XRight
		f.P.X.Tick.Label.YAlign = draw.YCenter
	}
}

// probeLabel names a probe kind in the verification plot.
func probeLabel(kind string) string {
	switch kind {
	case raw.ProbeICMP:
		return "ICMP added RTT"
	case raw.ProbeICMPTask:
		return "ICMP per-task check"
	case raw.ProbeSelect1:
		return "SELECT 1 change"
	}
	return kind
}

// probeKey names one app's probe kind in the verification plot.
type probeKey struct{ app, kind string }

func (s *Summary) verificationFigure() (*plotkit.Figure, error) {
	tol := s.Options.withDefaults().ToleranceMs
	f := plotkit.NewFigure(PlotVerification, "Verification of the injected delay",
		fmt.Sprintf("ICMP added RTT and SELECT 1 change against 0 ms (95%% CI bars) at each configured RTT; the dashed identity line y = x is a perfect shaper, the grey band ± %s ms the tolerance.", fmtSetting(tol)),
		"configured RTT (ms)", "measured added RTT (ms)")
	keys, maxRTT := s.probeKeys()
	if len(keys) == 0 {
		return nil, nil
	}
	band, id, err := toleranceGuides(f, tol, maxRTT)
	if err != nil {
		return nil, err
	}
	f.P.X.Tick.Marker = settingTicks(s.settings())
	multiApp := false
	for _, k := range keys {
		multiApp = multiApp || k.app != keys[0].app
	}
	var flagged plotter.XYs
	for i, k := range keys {
		pts, ci, out := s.probeSeries(k)
		flagged = append(flagged, out...)
		th, err := addSeries(f.P, pts, ci, i)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		label := probeLabel(k.kind)
		if multiApp {
			label = k.app + " " + label
		}
		f.Legend.Add(label, th...)
	}
	// The identity line goes on top: thin and dashed, it hides little.
	f.P.Add(id)
	f.Legend.Add("y = x (configured)", id)
	f.Legend.Add("± "+fmtSetting(tol)+" ms tolerance", band)
	if err := addLowNRings(f, flagged, "ringed: out of tolerance"); err != nil {
		return nil, fmt.Errorf("plot %s: %w", f.Name, err)
	}
	return f, nil
}

// probeKeys returns the (app, kind) pairs of the probes with a baseline,
// in probe order, and the largest setting among them.
func (s *Summary) probeKeys() ([]probeKey, float64) {
	var keys []probeKey
	maxRTT := 0.0
	for _, p := range s.Probes {
		if !p.HasBaseline {
			continue
		}
		k := probeKey{p.App, p.Kind}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		maxRTT = math.Max(maxRTT, p.RTTms)
	}
	return keys, maxRTT
}

// toleranceGuides adds the grey tolerance band around y = x up to maxRTT
// and returns it with the dashed identity line, which the caller adds last.
func toleranceGuides(f *plotkit.Figure, tol, maxRTT float64) (*plotter.Polygon, *plotter.Line, error) {
	band, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: -tol}, {X: maxRTT, Y: maxRTT - tol}, {X: maxRTT, Y: maxRTT + tol}, {X: 0, Y: tol}})
	if err != nil {
		return nil, nil, fmt.Errorf("plot %s: %w", f.Name, err)
	}
	band.Color, band.LineStyle.Width = plotkit.BandGrey, 0
	f.P.Add(band)
	id, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: maxRTT, Y: maxRTT}})
	if err != nil {
		return nil, nil, fmt.Errorf("plot %s: %w", f.Name, err)
	}
	id.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(1), Dashes: plotkit.Dashes}
	return band, id, nil
}

// probeSeries returns one probe key's added RTT per setting, anchored at
// (0, 0), with the intervals, and the points out of tolerance.
func (s *Summary) probeSeries(k probeKey) (pts plotter.XYs, ci []stats.Interval, flagged plotter.XYs) {
	pts = plotter.XYs{{X: 0, Y: 0}}
	ci = []stats.Interval{stats.NoInterval()}
	for _, p := range s.Probes {
		if p.App == k.app && p.Kind == k.kind && p.HasBaseline {
			pts = append(pts, plotter.XY{X: p.RTTms, Y: p.Added})
			ci = append(ci, p.CI)
			if p.OutOfTolerance {
				flagged = append(flagged, plotter.XY{X: p.RTTms, Y: p.Added})
			}
		}
	}
	return pts, ci, flagged
}

// runsPanel is one app and route's panel of the per-run plot: the route's
// series index and its cell at the plotted setting.
type runsPanel struct {
	idx  int
	k    routeKey
	cell Cell
}

func (s *Summary) runsFigure() (*plotkit.Figure, error) {
	setting, err := s.stripSetting()
	if err != nil {
		if s.Options.StripRTTms != nil {
			return nil, fmt.Errorf("plot %s: %w", PlotRuns, err)
		}
		return nil, nil
	}
	panels := s.runsPanels(setting)
	if len(panels) == 0 {
		return nil, nil
	}
	f := &plotkit.Figure{Name: PlotRuns,
		Title: fmt.Sprintf("Per-run p50 at %s ms", fmtSetting(setting)),
		Desc: fmt.Sprintf("The p50 of every run at %s ms, one panel per app and route, runs in run-number order (see runs.csv); the black line is the median of the run p50s, the grey band its 95%% CI, so outliers and run-to-run spread stand out.",
			fmtSetting(setting))}
	cols := min(panelCols, len(panels))
	rows := (len(panels) + cols - 1) / cols
	f.W, f.H = panelWidth*vg.Length(cols)+vg.Points(20), panelHeight*vg.Length(rows)+vg.Points(30)
	f.Panels = make([][]*plot.Plot, rows)
	for r := range f.Panels {
		f.Panels[r] = make([]*plot.Plot, cols)
	}
	for pi, pn := range panels {
		p, err := s.runsPanelPlot(pn, setting)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		f.Panels[pi/cols][pi%cols] = p
	}
	return f, nil
}

// runsPanels returns a panel per app and route with runs at setting, in
// the order of routes.
func (s *Summary) runsPanels(setting float64) []runsPanel {
	var panels []runsPanel
	for i, k := range s.routes() {
		for _, c := range s.Cells {
			if c.App == k.app && c.Route == k.route && c.RTTms == setting && c.NRuns > 0 {
				panels = append(panels, runsPanel{i, k, c})
				break
			}
		}
	}
	return panels
}

// runsAt returns the runs of one app and route at setting that have
// requests, in run-number order.
func (s *Summary) runsAt(k routeKey, setting float64) []RunStat {
	var runs []RunStat
	for _, r := range s.Runs {
		if r.App == k.app && r.Route == k.route && r.RTTms == setting && r.N > 0 {
			runs = append(runs, r)
		}
	}
	slices.SortStableFunc(runs, func(a, b RunStat) int { return a.Run - b.Run })
	return runs
}

// runsPanelPlot draws one panel: the run p50s over the cell's median line
// and its CI band.
func (s *Summary) runsPanelPlot(pn runsPanel, setting float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.k.label()
	plotkit.StyleFonts(p, 11)
	p.Title.Padding = vg.Points(4)
	p.X.Label.Text = "run"
	p.Y.Label.Text = "run p50 (ms)"
	p.Add(plotkit.NewGrid())
	runs := s.runsAt(pn.k, setting)
	pts := make(plotter.XYs, len(runs))
	for i, r := range runs {
		pts[i] = plotter.XY{X: float64(r.Run), Y: r.P50}
	}
	lo, hi := pts[0].X-0.5, pts[len(pts)-1].X+0.5
	c := pn.cell
	if c.CI.Valid() {
		band, err := plotter.NewPolygon(plotter.XYs{{X: lo, Y: c.CI.Low}, {X: hi, Y: c.CI.Low}, {X: hi, Y: c.CI.High}, {X: lo, Y: c.CI.High}})
		if err != nil {
			return nil, err
		}
		band.Color, band.LineStyle.Width = plotkit.BandGrey, 0
		p.Add(band)
	}
	med, err := plotter.NewLine(plotter.XYs{{X: lo, Y: c.P50}, {X: hi, Y: c.P50}})
	if err != nil {
		return nil, err
	}
	med.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(1.2)}
	p.Add(med)
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: plotkit.SeriesColor(pn.idx), Radius: vg.Points(2.8), Shape: draw.CircleGlyph{}}
	p.Add(sc)
	p.X.Min, p.X.Max = lo, hi
	p.X.Tick.Marker = runTicks(runs)
	return p, nil
}

// runTicks labels every run up to 10 runs, else about every fifth.
func runTicks(runs []RunStat) plot.Ticker {
	step := 1
	if n := len(runs); n > 10 {
		step = (n + 7) / 8
	}
	var t plot.ConstantTicks
	for i, r := range runs {
		if i%step == 0 {
			t = append(t, plot.Tick{Value: float64(r.Run), Label: strconv.Itoa(r.Run)})
		}
	}
	return t
}
