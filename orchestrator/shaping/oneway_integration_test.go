package shaping

import (
	"context"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/enginetest"
)

// The one-way check on a real stack: the captures in the app's and the
// database's agents see the ICMP echoes and the SELECT 1 traffic leave one
// side and arrive at the other, and pair them. How much of the shaper's
// hold shows depends on where the shaper holds packets (before or after
// the receiver's kernel stamps them), so the delays are logged, not
// asserted; what must hold is the pairing, and that no packet arrives
// before it left (both stamps come from one clock).
func TestIntegrationShapeVerifyOneWay(t *testing.T) {
	rt := enginetest.Engine(t)
	sh := shapedStack(t, rt, "path")
	const echoes = 20
	rows, err := VerifyShaping(context.Background(), rt, sh, ShapeVerifyOptions{DelaysMs: []float64{1}, ICMPCount: echoes,
		SelectRuns: 2, SelectCalls: 50, ToleranceMs: 0.05, Seed: 1, OneWay: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want no shaper, 0 and 1 ms", len(rows))
	}
	for _, r := range rows {
		if len(r.OneWay) != 2 {
			t.Fatalf("row %g (no shaper %v): one-way %+v", r.RTTms, r.NoShaper, r.OneWay)
		}
		for _, d := range r.OneWay {
			t.Logf("row %g (no shaper %v) %s: sent %d, paired %d (%.1f%%), lost %d, ambiguous %d, outside %d, drops %d; p50 %.4f ms (added %+.4f), p99 %.4f, min %.4f, max %.4f",
				r.RTTms, r.NoShaper, d.Direction, d.Sent, d.Matched, 100*d.Share, d.Lost, d.Ambiguous, d.Outside, d.Drops, d.P50Ms, d.AddedP50Ms, d.P99Ms, d.MinMs, d.MaxMs)
			if d.Matched < echoes || d.Truncated {
				t.Errorf("row %g %s: %d paired of %d sent (truncated %v), want at least the %d echoes", r.RTTms, d.Direction, d.Matched, d.Sent, d.Truncated, echoes)
			}
			if d.MinMs < 0 {
				t.Errorf("row %g %s: a packet arrived %.4f ms before it left", r.RTTms, d.Direction, d.MinMs)
			}
		}
	}
}
