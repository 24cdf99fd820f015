package placement

import (
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/rttlab/rttlab/results"
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
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	do := func(url string) time.Duration {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set(HeaderPolicy, "user-first") // a
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
	direct, proxied := a.srv.URL+"/serial?n=3", srv.URL+"/serial?n=3"
	do(direct) // open every connection before timing connections before timing
	do(proxied)
	var dd, pd, diff []float64
	b.ResetTimer()
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
	b.StopTimer()
	b.ReportMetric(results.Median(dd), "direct-µs")
	b.ReportMetric(results.Median(pd), "proxied-µs")
	b.ReportMetric(results.Median(diff), "added-µs")
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
