package report

import (
	"math"
	"testing"

	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

func ms(v float64) int64 { return int64(math.Round(v * 1e6)) }

func TestRunStats(t *testing.T) {
	var s []raw.Sample
	add := func(lat float64, warm bool, status int, errText string) {
		s = append(s, raw.Sample{Task: 7, Attempt: 1, App: "go", Route: "/feed", RTTms: 0.5, Run: 2,
			Seq: len(s), Warmup: warm, LatencyNS: ms(lat), Status: status, Error: errText})
	}
	add(100, true, 200, "") // warmup: never counted
	add(50, true, 500, "")  // failed warmup
	add(4, false, 200, "")
	add(1, false, 200, "")
	add(3, false, 200, "")
	add(2, false, 200, "")
	add(90, false, 503, "")      // failed: counted, not timed
	add(0, false, 0, "EOF")      // transport error
	add(80, false, 200, "reset") // status 200 with an error still fails
	r := RunStats(s)
	if len(r) != 1 {
		t.Fatalf("got %d runs, want 1", len(r))
	}
	got := r[0]
	want := RunStat{Task: 7, Attempt: 1, App: "go", Route: "/feed", RTTms: 0.5, Run: 2,
		N: 4, Failures: 3, WarmupFailures: 1, P50: 2.5, P90: 3.7, P99: 3.97, Mean: 2.5}
	if math.Abs(got.P99-want.P99) > 1e-12 || math.Abs(got.P90-want.P90) > 1e-12 {
		t.Errorf("p90/p99 = %v/%v, want %v/%v", got.P90, got.P99, want.P90, want.P99)
	}
	got.P90, got.P99 = want.P90, want.P99
	if got != want {
		t.Errorf("RunStats = %+v\nwant      %+v", got, want)
	}
}

func TestTracedRoundTrips(t *testing.T) {
	trace := []workloads.TraceRow{
		{App: "axum-raw", Type: "/feed", N: 100, RoundTrips: workloads.TraceRange{Median: 1}},
		{App: "redmine", Type: "issue-list", Weight: 0.75, N: 100, RoundTrips: workloads.TraceRange{Median: 20}},
		{App: "redmine", Type: "issue-show", Weight: 0.25, N: 100, RoundTrips: workloads.TraceRange{Median: 40}},
		{App: "go", Type: "/feed", N: 0, RoundTrips: workloads.TraceRange{Median: 9}},
	}
	for _, c := range []struct {
		app, route string
		want       float64
		ok         bool
	}{{"axum-raw", "/feed", 1, true}, {"redmine", "mix:redmine", 25, true}, {"go", "/feed", 0, false}, {"node", "/feed", 0, false}} {
		got, ok := tracedRoundTrips(trace, c.app, c.route)
		if ok != c.ok || got != c.want {
			t.Errorf("%s %s: %v %v, want %v %v", c.app, c.route, got, ok, c.want, c.ok)
		}
	}
}

// The general interval over several sets' medians is the change interval
// when its statistic is the change: same draws, same order, same tails;
// a statistic that is never finite gives no interval.
