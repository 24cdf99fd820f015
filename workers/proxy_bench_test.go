package workers

import (
	"testing"

	"github.com/rttlab/rttlab/internal/proxyserve/proxytest"
)

// BenchmarkProxyAdded measures the front proxy's own added latency: each
// iteration sends one request straight to a worker and one through the
// proxy (JSQ, two workers), back to back in alternating order, over
// kept-alive connections. It reports the p50 of each and of the paired
// differences (added-µs). Keep it short on a shared machine:
//
//	go test -run x -bench ProxyAdded -benchtime 500x ./workers
func BenchmarkProxyAdded(b *testing.B) {
	rig := newProxyRig(b, 2, nil)
	proxytest.AddedLatency(b, rig.workers[0].Srv.URL+"/work", rig.srv.URL+"/work", nil)
}

// BenchmarkChooseJSQ measures one decision over eight workers.
func BenchmarkChooseJSQ(b *testing.B) {
	c := NewChooser(1, TiesRandom)
	in := []int{2, 1, 3, 1, 2, 4, 1, 2}
	for b.Loop() {
		if _, err := c.Choose(RuleJSQ, in); err != nil {
			b.Fatal(err)
		}
	}
}
