// Package proxytest holds what the studies' proxy tests and benchmarks
// share: an upstream to put behind a proxy, a proxy served until stopped,
// and the paired measurement of a proxy's own added latency.
package proxytest

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rttlab/rttlab/results/stats"
)

// AddedLatency measures a proxy's own added latency: each iteration of b
// sends one GET straight to direct and one to proxied (the same upstream
// behind the proxy), back to back in alternating order, over kept-alive
// client connections, with hdr on both. It reports the p50 of each
// (direct-µs, proxied-µs) and the p50 of the paired differences
// (added-µs). A request that fails or is not answered 200 fails b.
func AddedLatency(b *testing.B, direct, proxied string, hdr http.Header) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	do := func(url string) time.Duration {
		req, _ := http.NewRequest("GET", url, nil)
		if hdr != nil {
			req.Header = hdr.Clone()
		}
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return d
	}
	do(direct) // open the connections before timing
	do(proxied)
	var dd, pd, diff []float64
	for i := 0; b.Loop(); i++ {
		var d, p time.Duration
		if i%2 == 0 {
			d, p = do(direct), do(proxied)
		} else {
			p, d = do(proxied), do(direct)
		}
		dd = append(dd, float64(d)/1e3)
		pd = append(pd, float64(p)/1e3)
		diff = append(diff, float64(p-d)/1e3)
	}
	b.ReportMetric(stats.Median(dd), "direct-µs")
	b.ReportMetric(stats.Median(pd), "proxied-µs")
	b.ReportMetric(stats.Median(diff), "added-µs")
}
