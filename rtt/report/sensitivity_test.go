package report

import (
	"math"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results/stats"
)

// A route whose p50 grows by 3 ms per ms of RTT fits a slope of 3 with
// an interval around it, small residuals, and turns a p50 target into
// the RTT that meets it; a target beyond the settings is said to be an
// extrapolation, one below the intercept unreachable.
func TestSensitivity(t *testing.T) {
	var cells []Cell
	for _, rtt := range []float64{0, 0.5, 1} {
		c := Cell{App: "go", Route: "/feed", RTTms: rtt, HasStatements: true, Statements: 3}
		for r := range 8 {
			c.P50s = append(c.P50s, 1+3*rtt+0.01*float64(r%4))
		}
		c.NRuns, c.P50 = len(c.P50s), stats.Percentile(c.P50s, 0.5)
		cells = append(cells, c)
	}
	cells = append(cells, Cell{App: "go", Route: "/lonely", RTTms: 0, NRuns: 3, P50s: []float64{1, 1, 1}, P50: 1})
	ss := sensitivities(cells, Options{}.withDefaults(), 7)
	if len(ss) != 1 {
		t.Fatalf("%d fits, want 1 (a route at one setting has no slope)", len(ss))
	}
	s := ss[0]
	if math.Abs(s.Slope-3) > 1e-9 || !(s.SlopeCI.Low <= 3 && s.SlopeCI.High >= 3) || s.PredictedSlope != 3 {
		t.Errorf("slope %v %v predicted %v", s.Slope, s.SlopeCI, s.PredictedSlope)
	}
	for _, r := range s.Residuals {
		if math.Abs(r) > 1e-9 {
			t.Errorf("residuals %v", s.Residuals)
		}
	}
	rtt, ci, in, ok := s.TargetRTT(2.5)
	if !ok || !in || math.Abs(rtt-0.5) > 0.01 || !(ci.Low <= rtt && ci.High >= rtt) {
		t.Errorf("target 2.5 ms: %v %v in %v ok %v", rtt, ci, in, ok)
	}
	if l := s.TargetLine(10); !strings.Contains(l, "up to an RTT of 2.99") || !strings.Contains(l, "an extrapolation") {
		t.Errorf("line %q", l)
	}
	if l := s.TargetLine(0.5); !strings.Contains(l, "not reachable") {
		t.Errorf("line %q", l)
	}
	flat := Sensitivity{Slope: -0.1, Settings: []float64{0, 1}}
	if l := flat.TargetLine(3); !strings.Contains(l, "does not grow") {
		t.Errorf("line %q", l)
	}
}
