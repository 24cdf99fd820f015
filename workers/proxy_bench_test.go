package workers

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rttlab/rttlab/results"
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
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	do := func(url string) time.Duration {
		t0 := time.Now()
		resp, err := client.Get(url)
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
	direct, proxied := rig.workers[0].srv.URL+"/work", rig.srv.URL+"/work"
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
	b.ReportMetric(results.Median(dd), "direct-µs")
	b.ReportMetric(results.Median(pd), "proxied-µs")
	b.ReportMetric(results.Median(diff), "added-µs")
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
