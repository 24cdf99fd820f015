package workloads

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkOpenLoop measures how well the open-loop generator keeps its
// own schedule against a handler that writes 64 bytes: one op is one
// arrival at the given rate, so ns/op is about 1e9/rate and the figures of
// interest are the reported schedule lag percentiles (lag-p50-ns,
// lag-p99-ns, lag-max-ns, over every request sent), the service latency
// p50 and the largest number of requests in flight. spin=off (the
// default) sleeps on timers only; spin=1ms busy-polls the clock for the
// last millisecond before each send (ignored with -cpu 1).
func BenchmarkOpenLoop(b *testing.B) {
	for _, rate := range []float64{1000, 5000} {
		for _, spin := range []time.Duration{0, time.Millisecond} {
			name := fmt.Sprintf("rate=%g/spin=%s", rate, spin)
			if spin == 0 {
				name = fmt.Sprintf("rate=%g/spin=off", rate)
			}
			b.Run(name, func(b *testing.B) {
				srv := benchServer(b)
				b.ResetTimer()
				tot, err := RunOpenLoop(context.Background(), OpenLoopOptions{
					BaseURL: srv.URL, Requests: PathRequests("/feed"),
					Rate: rate, Count: max(b.N, 2), Warmup: 1, Seed: 1, SpinWindow: spin,
				}, nil)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if tot.Failures != 0 || tot.WarmupFailures != 0 {
					b.Fatalf("%d failed requests", tot.Failures+tot.WarmupFailures)
				}
				b.ReportMetric(float64(tot.LagP50NS), "lag-p50-ns")
				b.ReportMetric(float64(tot.LagP99NS), "lag-p99-ns")
				b.ReportMetric(float64(tot.LagMaxNS), "lag-max-ns")
				b.ReportMetric(float64(tot.ServiceP50NS), "svc-p50-ns")
				b.ReportMetric(float64(tot.MaxInFlight), "inflight-max")
				b.ReportMetric(tot.SentRate/tot.OfferedRate, "sent/offered")
			})
		}
	}
}
