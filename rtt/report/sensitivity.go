package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/rttlab/rttlab/results/stats"
)

// Sensitivity is how a route's (or mix's) median latency grows with the
// database RTT, fitted over every setting: p50 = Intercept + Slope × RTT
// by least squares on the cells' p50s. SlopeCI resamples each cell's runs
// (percentile bootstrap). PredictedSlope is the round trips per request
// (traced, else declared), the slope if every round trip paid exactly the
// RTT and nothing else did. Residuals are each setting's p50 minus the
// fit.
type Sensitivity struct {
	App, Route     string
	Settings       []float64
	Slope          float64
	SlopeCI        stats.Interval
	Intercept      float64
	HasPredicted   bool
	PredictedSlope float64
	Residuals      []float64
	// Fits are the bootstrap's (intercept, slope) pairs, kept for
	// TargetRTT's interval.
	fits [][2]float64
}

// SensitivityKey is the NewRNG key of a route's slope interval.
func SensitivityKey(app, route string) string { return "slope\x00" + app + "\x00" + route }

// sensitivities fits every (app, route) with cells at two settings or
// more.
func sensitivities(cells []Cell, o Options, seed uint64) []Sensitivity {
	type key struct{ app, route string }
	var order []key
	by := map[key][]*Cell{}
	for i := range cells {
		c := &cells[i]
		if c.NRuns == 0 {
			continue
		}
		k := key{c.App, c.Route}
		if by[k] == nil {
			order = append(order, k)
		}
		by[k] = append(by[k], c)
	}
	var out []Sensitivity
	for _, k := range order {
		cs := by[k]
		if len(cs) < 2 {
			continue
		}
		if s, ok := fitSensitivity(k.app, k.route, cs, o, seed); ok {
			out = append(out, s)
		}
	}
	return out
}

// fitSensitivity fits one route's cells: the line through their p50s, the
// residuals and the slope's interval; ok is false when the settings do not
// vary.
func fitSensitivity(app, route string, cs []*Cell, o Options, seed uint64) (Sensitivity, bool) {
	s := Sensitivity{App: app, Route: route}
	xs := make([]float64, len(cs))
	ys := make([]float64, len(cs))
	for i, c := range cs {
		xs[i], ys[i] = c.RTTms, c.P50
		s.Settings = append(s.Settings, c.RTTms)
		if c.HasStatements && !s.HasPredicted {
			s.HasPredicted, s.PredictedSlope = true, c.Statements
		}
	}
	a, b, ok := leastSquares(xs, ys)
	if !ok {
		return Sensitivity{}, false
	}
	s.Intercept, s.Slope = a, b
	for i := range xs {
		s.Residuals = append(s.Residuals, ys[i]-(a+b*xs[i]))
	}
	s.bootstrapSlope(cs, xs, o.Resamples, seed)
	return s, true
}

// bootstrapSlope refits the line to each cell's resampled median, keeps
// the fits for TargetRTT, and sets SlopeCI from the slopes.
func (s *Sensitivity) bootstrapSlope(cs []*Cell, xs []float64, resamples int, seed uint64) {
	rng := stats.NewRNG(seed, SensitivityKey(s.App, s.Route))
	rs := make([]*stats.MedianResampler, len(cs))
	for i, c := range cs {
		rs[i] = stats.NewMedianResampler(c.P50s)
	}
	slopes := make([]float64, 0, resamples)
	draws := make([]float64, len(cs))
	for range resamples {
		for i := range cs {
			draws[i] = rs[i].Draw(rng)
		}
		if a, b, ok := leastSquares(xs, draws); ok {
			slopes = append(slopes, b)
			s.fits = append(s.fits, [2]float64{a, b})
		}
	}
	s.SlopeCI = stats.NoInterval()
	if len(slopes) > 0 {
		s.SlopeCI = stats.Tails(slopes)
	}
}

// leastSquares fits y = a + b·x; ok is false when x does not vary.
func leastSquares(x, y []float64) (a, b float64, ok bool) {
	n := float64(len(x))
	var sx, sy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx == 0 {
		return 0, 0, false
	}
	b = sxy / sxx
	return my - b*mx, b, true
}

// TargetRTT is the RTT (ms) at which the fitted p50 reaches targetMs,
// with the interval of the same over the bootstrap's fits. inRange says
// whether it falls within the measured settings; ok is false when the
// fit does not grow with the RTT.
func (s *Sensitivity) TargetRTT(targetMs float64) (rtt float64, ci stats.Interval, inRange, ok bool) {
	if !(s.Slope > 0) {
		return math.NaN(), stats.NoInterval(), false, false
	}
	rtt = (targetMs - s.Intercept) / s.Slope
	var rs []float64
	for _, f := range s.fits {
		if f[1] > 0 {
			rs = append(rs, (targetMs-f[0])/f[1])
		}
	}
	ci = stats.NoInterval()
	if len(rs) > 0 {
		ci = stats.Tails(rs)
	}
	lo, hi := s.Settings[0], s.Settings[0]
	for _, x := range s.Settings {
		lo, hi = min(lo, x), max(hi, x)
	}
	return rtt, ci, rtt >= lo && rtt <= hi, true
}

// TargetLine answers "how far may the database be for ROUTE to stay under
// MS": one line.
func (s *Sensitivity) TargetLine(targetMs float64) string {
	head := fmt.Sprintf("%s %s: p50 ≤ %g ms", s.App, s.Route, targetMs)
	rtt, ci, inRange, ok := s.TargetRTT(targetMs)
	switch {
	case !ok:
		return head + ": the fitted p50 does not grow with the RTT, so no RTT limit follows from it"
	case rtt < 0:
		return fmt.Sprintf("%s: not reachable: the fit gives %.2f ms already at 0 ms RTT", head, s.Intercept)
	}
	line := fmt.Sprintf("%s up to an RTT of %.3f ms %s (fit: %.2f + %.2f × RTT ms)", head, rtt, fmtIv(ci, 3), s.Intercept, s.Slope)
	if !inRange {
		line += fmt.Sprintf("; outside the measured settings (%s ms), an extrapolation", joinSettings(s.Settings))
	}
	return line
}

// sensitivityMarkdown is the summary's section on the fits.
func sensitivityMarkdown(ss []Sensitivity) string {
	if len(ss) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Sensitivity to the RTT\n\n")
	b.WriteString("p50 against the configured RTT over every setting, fitted by least squares on the cells' p50s: the slope is ms of latency per ms of RTT, [95% CI] by percentile bootstrap resampling each cell's runs. Predicted slope = round trips per request. Residual = a setting's p50 minus the fit. `rttlab report DIR --p50-target ROUTE=MS` turns a fit into the RTT at which the p50 reaches MS.\n\n")
	b.WriteString("| app | route | slope (ms/ms) | 95% CI | predicted | intercept (ms) | residuals (ms) |\n| --- | --- | ---: | --- | ---: | ---: | --- |\n")
	for _, s := range ss {
		pred := dash
		if s.HasPredicted {
			pred = fmtFixed(s.PredictedSlope, 1)
		}
		var res []string
		for i, r := range s.Residuals {
			res = append(res, fmt.Sprintf("%s: %+.2f", fmtSetting(s.Settings[i]), r))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", s.App, mdEscape(s.Route), fmtFixed(s.Slope, 2), fmtIv(s.SlopeCI, 2), pred, fmtFixed(s.Intercept, 2), strings.Join(res, ", "))
	}
	b.WriteString("\n")
	return b.String()
}
