package placement

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/rttlab/rttlab/internal/proxyserve/proxytest"
)

// BenchmarkProxy measures the proxy's own added latency: each iteration
// sends one request straight to an upstream and one through the proxy to
// the same upstream, back to back in alternating order, over kept-alive
// client connections (the proxy keeps its upstream pool too). It reports
// the p50 of each and the p50 of the paired differences as added-µs.
//
//	go test -bench Proxy -run x ./placement
func BenchmarkProxy(b *testing.B) {
	a, other := newTestUpstream(b, "a"), newTestUpstream(b, "b")
	_, srv, _ := startProxy(b, testConfig(a.srv.URL, other.srv.URL))
	hdr := http.Header{HeaderPolicy: {"user-first"}} // a
	proxytest.AddedLatency(b, a.srv.URL+"/serial?n=3", srv.URL+"/serial?n=3", hdr)
}

// BenchmarkProxyDecide measures the decision alone: route parsing, both
// models' estimates and a queue-aware choice, as ServeHTTP makes them.
func BenchmarkProxyDecide(b *testing.B) {
	c := testCalibration()
	u, _ := url.Parse("/serial?n=12")
	inFlight := map[string]int{"a": 2, "b": 1}
	for b.Loop() {
		r, err := c.ParseRoute(u)
		if err != nil {
			b.Fatal(err)
		}
		est, _ := c.Estimates(r)
		if _, err := Choose(PolicyQueueAware, r, est, inFlight); err != nil {
			b.Fatal(err)
		}
	}
}
