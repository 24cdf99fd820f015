package netem_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/workloads"
)

// TestUserspacePrecision logs the precision figures of the userspace
// shaper on two namespaces joined by veth, the way rttlab splits a delay:
// half of the configured RTT on each side's egress (one agent per side).
// It asserts nothing about timing: the figures are for the report.
// RTTLAB_PRECISION_PINGS sets the echoes per setting (default 200).
func TestUserspacePrecision(t *testing.T) {
	if testing.Short() {
		t.Skip("precision figures take a few seconds; skipped with -short")
	}
	p := newPair(t)
	n := 200
	if v, err := strconv.Atoi(os.Getenv("RTTLAB_PRECISION_PINGS")); err == nil && v > 0 {
		n = v
	}
	const interval = 2 * time.Millisecond
	measure := func() workloads.PingResult {
		ping(t, p.nsA, p.b, 10, interval) // warm up
		return ping(t, p.nsA, p.b, n, interval)
	}
	none := measure()

	ha := startHelper(t, p.nsA, p.linkA, testQueue)
	hb := startHelper(t, p.nsB, p.linkB, testQueue)
	rtts := []time.Duration{0, 50 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond}
	res := make([]workloads.PingResult, len(rtts))
	late := make([]string, len(rtts))
	for i, rtt := range rtts {
		app, db := netem.SplitRTT(rtt)
		ha.ctl(netem.Request{Op: "set", DelayNs: int64(app)})
		hb.ctl(netem.Request{Op: "set", DelayNs: int64(db)})
		before := hb.ctl(netem.Request{Op: "show"}).Stats
		res[i] = measure()
		after := hb.ctl(netem.Request{Op: "show"}).Stats
		if before != nil && after != nil {
			if d, err := after.Sub(*before); err == nil {
				late[i] = fmt.Sprintf("B release late p50 %.1fµs p90 %.1fµs (%d packets)",
					float64(d.Late.Quantile(0.5))/1e3, float64(d.Late.Quantile(0.9))/1e3, d.Packets)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "userspace shaper precision, %d echoes per setting, %v interval, RTT split half per side\n", n, interval)
	fmt.Fprintf(&b, "no shaper: median %.3f ms (min %.3f, mean %.3f)\n", ms(none.Median), ms(none.Min), ms(none.Mean))
	fmt.Fprintf(&b, "overhead of the shaper at 0 ms vs no shaper: %+.3f ms (median)\n", ms(res[0].Median-none.Median))
	fmt.Fprintf(&b, "%-8s %-10s %-10s %-10s %-10s %-5s %s\n", "rtt_ms", "median_ms", "mean_ms", "added_ms", "error_ms", "lost", "shaper")
	for i, rtt := range rtts {
		added := res[i].Median - res[0].Median
		fmt.Fprintf(&b, "%-8.3f %-10.3f %-10.3f %-10.3f %-+10.3f %-5d %s\n", ms(rtt), ms(res[i].Median), ms(res[i].Mean), ms(added), ms(added-rtt), res[i].Lost, late[i])
	}
	t.Log("\n" + b.String())
}
