package placement

import "testing"

// The built-in plans' links put the network model's crossover between 1
// and 12 serial calls on the held-out links (where the routed comparison
// and the sweep run), with the proxy's pooled connections (one client
// round trip) and with a new connection per request (two): so the sweep
// and the routed call counts 1, 3 and 12 straddle it whichever mode runs.
func TestBuiltinLinksCrossBetween1And12(t *testing.T) {
	for _, name := range []string{"placement", "placement-smoke"} {
		p, _ := BuiltinPlan(name)
		ow := p.OneWayMs(true)
		rtt := func(x, y string) float64 { return ow[[2]string{x, y}] + ow[[2]string{y, x}] }
		for _, trips := range []float64{1, 2} {
			est := func(h string) Estimate {
				return Estimate{Host: h, ClientPathMs: trips * rtt(NodeClient, h), SQLRTTMs: rtt(h, NodeDB)}
			}
			c, err := PredictedCrossover(est(NodeA), est(NodeB), ModelNetworkOnly)
			if err != nil || c.Never || !(c.N > 1 && c.N < 12) || c.Below != NodeA || c.Above != NodeB {
				t.Errorf("%s, %g client round trips: crossover %+v (%v), want a below and b above an N in (1, 12)", name, trips, c, err)
			}
		}
		for _, n := range p.RoutedN {
			if n < 1 || n > 12 {
				t.Errorf("%s routes N=%d", name, n)
			}
		}
	}
}
