package rtt

import (
	"context"
	"slices"
	"testing"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/enginetest"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
)

// BenchmarkTaskCapture is the paired benchmark of what the wire's
// captures cost the requests they watch: on one go stack at 0.5 ms, each
// iteration runs the load of a task (go /feed, 100 requests after 10)
// twice, once watched by the three captures and once not, in alternating
// order, and the medians of the two p50s and of their per-pair ratio are
// reported:
//
//	RTTLAB_INTEGRATION=1 go test -run '^$' -bench TaskCapture -benchtime 20x ./rtt
func BenchmarkTaskCapture(b *testing.B) {
	rt := enginetest.Engine(b)
	target := enginetest.BuiltTarget(b, rt, "go", "postgres", "go", "agent")
	p, _ := BuiltinPlan("smoke")
	ctx := context.Background()
	lab := engine.NewLab(rt, "")
	sd := shaping.WithSessions(lab)
	defer sd.Close()
	d := sessionWatcher{Stater: lab, Sessions: sd}
	s, err := startSession(ctx, lab, d, target, p, stack.NewRunID())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.st.Remove(context.WithoutCancel(ctx), lab) }()
	if err := s.sh.SetRTT(ctx, sd, netem.FromMs(0.5)); err != nil {
		b.Fatal(err)
	}
	var with, without, ratio []float64
	b.ResetTimer()
	for i := range b.N {
		var captured, bare float64
		for _, capture := range []bool{i%2 == 0, i%2 != 0} { // alternating which goes first
			p50, err := s.loadP50(ctx, d, capture)
			if err != nil {
				b.Fatal(err)
			}
			if capture {
				captured = p50
			} else {
				bare = p50
			}
		}
		with, without, ratio = append(with, captured), append(without, bare), append(ratio, captured/bare)
	}
	b.StopTimer()
	b.ReportMetric(stats.Median(with), "p50-captured-ms")
	b.ReportMetric(stats.Median(without), "p50-bare-ms")
	b.ReportMetric(stats.Median(ratio), "captured/bare")
}

// loadP50 runs one task's load (go /feed, 100 requests after 10) on the
// session, watched by the task's captures or not, and returns the p50 of
// its measured requests in ms.
func (s *appSession) loadP50(ctx context.Context, d sessionWatcher, capture bool) (float64, error) {
	o, err := s.loadOptions(raw.Task{App: "go", Route: "/feed"}, 1, 100, 10)
	if err != nil {
		return 0, err
	}
	var c *shaping.TaskCapture
	if capture {
		if c, err = s.sh.StartTaskCapture(ctx, d, s.client, s.st.Target.Meta.Port, 0); err != nil {
			return 0, err
		}
		defer c.Abort()
	}
	run, err := s.watchedLoad(ctx, d, o)
	if err != nil {
		return 0, err
	}
	if c != nil {
		if _, err := c.Finish(); err != nil {
			return 0, err
		}
	}
	rs, err := s.loadResults(ctx, d, run)
	if err != nil {
		return 0, err
	}
	var lat []float64
	for _, r := range rs {
		if !r.Warmup && !r.Failed() {
			lat = append(lat, float64(r.LatencyNS)/1e6)
		}
	}
	slices.Sort(lat)
	return stats.Percentile(lat, 0.5), nil
}
