package netem_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/workloads"
)

// BenchmarkShaperAccuracy measures the userspace shaper on two namespaces
// joined by veth, the way rttlab splits a delay (half of the RTT on each
// side, one agent per side, the default ingress hook), and reports per
// setting the ICMP median added over the unshaped path and its error
// against the setting, plus the realized one-way hold p50 of one side and
// its error against the target. Each iteration measures 100 echoes per
// setting; run it with -benchtime=3x or more on a quiet machine:
//
//	sudo go test ./netem -run '^$' -bench ShaperAccuracy -benchtime 3x
func BenchmarkShaperAccuracy(b *testing.B) {
	p := newPair(b)
	const n, interval = 100, 2 * time.Millisecond
	measure := func() workloads.PingResult {
		ping(b, p.nsA, p.b, 5, interval) // warm up
		return ping(b, p.nsA, p.b, n, interval)
	}
	ha := startHelper(b, p.nsA, p.linkA, testQueue)
	hb := startHelper(b, p.nsB, p.linkB, testQueue)
	rtts := []time.Duration{0, 50 * time.Microsecond, 100 * time.Microsecond, 300 * time.Microsecond, 750 * time.Microsecond, time.Millisecond}
	var none []float64
	added := make([][]float64, len(rtts))
	holdErr := make([][]float64, len(rtts))
	lost := 0
	for b.Loop() {
		ha.ctl(netem.Request{Op: "clear"})
		hb.ctl(netem.Request{Op: "clear"})
		base := measure()
		none = append(none, us(base.Median))
		for i, rtt := range rtts {
			a, d := netem.SplitRTT(rtt)
			ha.ctl(netem.Request{Op: "set", DelayNs: int64(a)})
			hb.ctl(netem.Request{Op: "set", DelayNs: int64(d)})
			before := hb.ctl(netem.Request{Op: "show"}).Stats
			r := measure()
			lost += r.Lost
			added[i] = append(added[i], us(r.Median)-us(base.Median))
			after := hb.ctl(netem.Request{Op: "show"}).Stats
			if before != nil && after != nil && rtt > 0 {
				if diff, err := after.Sub(*before); err == nil && diff.Hold != nil && diff.Hold.Count() > 0 {
					holdErr[i] = append(holdErr[i], float64(diff.Hold.Quantile(0.5)-int64(d))/1e3)
				}
			}
		}
	}
	b.ReportMetric(median(none), "us_rtt_unshaped")
	b.ReportMetric(float64(lost), "lost")
	for i, rtt := range rtts {
		label := fmt.Sprintf("%gms", float64(rtt.Microseconds())/1e3)
		if rtt == 0 {
			b.ReportMetric(median(added[i]), "us_cost_at_0ms")
			continue
		}
		b.ReportMetric(median(added[i])-float64(rtt.Microseconds()), "us_error_"+label)
		if len(holdErr[i]) > 0 {
			b.ReportMetric(median(holdErr[i]), "us_hold_error_"+label)
		}
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
