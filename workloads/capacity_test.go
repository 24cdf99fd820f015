package workloads

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// syntheticTarget models a server with a fixed capacity: below it every
// request succeeds quickly; above it the backlog grows, so throughput
// stops at the capacity and latency from the schedule explodes.
func syntheticTarget(capacity float64, calls *[]float64) TrialFunc {
	return func(_ context.Context, rate float64) (OpenTotals, error) {
		*calls = append(*calls, rate)
		t := OpenTotals{TargetRate: rate, OfferedRate: rate, Measured: 1000, Throughput: rate, LatencyP99NS: int64(5 * time.Millisecond)}
		if rate > capacity {
			t.Throughput = capacity
			t.LatencyP99NS = int64(2 * time.Second)
		}
		return t, nil
	}
}

func TestSearchCapacityDoublesThenBisects(t *testing.T) {
	const capacity = 730.0
	var calls []float64
	c, err := SearchCapacity(context.Background(), CapacityOptions{
		CapacityCriteria: CapacityCriteria{MaxLatencyP99: 100 * time.Millisecond},
		StartRate:        50, MaxTrials: 20, Precision: 0.02,
	}, syntheticTarget(capacity, &calls))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rates tried: %v -> %+v", calls, c.Rate)
	// Doubling 50, 100, 200, 400, 800 (fails), then bisection.
	if want := []float64{50, 100, 200, 400, 800, 600}; len(calls) < len(want) || !slices.Equal(calls[:len(want)], want) {
		t.Errorf("rates tried %v, want to start %v", calls, want)
	}
	if !c.Converged || c.Rate > capacity || c.Ceiling <= capacity || c.Ceiling-c.Rate > 0.02*c.Ceiling {
		t.Errorf("capacity %v, ceiling %v, converged %v; want a bracket of %v within 2%%", c.Rate, c.Ceiling, c.Converged, capacity)
	}
	if len(c.Trials) != len(calls) || len(c.Trials) > 20 {
		t.Errorf("%d trials recorded, %d run", len(c.Trials), len(calls))
	}
	for _, tr := range c.Trials {
		if tr.Sustained != (tr.Rate <= capacity) {
			t.Errorf("trial at %v judged sustained=%v (%s)", tr.Rate, tr.Sustained, tr.Reason)
		}
		// Above the capacity the latency bound always fails; throughput
		// only once it falls below 95% of offered (above 768/s).
		if !tr.Sustained && (!strings.Contains(tr.Reason, "p99 latency 2s above 100ms") ||
			strings.Contains(tr.Reason, "throughput") != (tr.Rate > capacity/0.95)) {
			t.Errorf("trial at %v: reason %q", tr.Rate, tr.Reason)
		}
	}
}

func TestSearchCapacityFirstTrialFails(t *testing.T) {
	var calls []float64
	c, err := SearchCapacity(context.Background(), CapacityOptions{
		CapacityCriteria: CapacityCriteria{MaxLatencyP99: 100 * time.Millisecond},
		StartRate:        1000, MaxTrials: 30,
	}, syntheticTarget(90, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if calls[1] != 500 || c.Rate > 90 || c.Rate < 90*0.95 || !c.Converged {
		t.Errorf("rates %v gave capacity %v (converged %v), want within 5%% below 90", calls, c.Rate, c.Converged)
	}
}

func TestSearchCapacityLimits(t *testing.T) {
	crit := CapacityCriteria{MaxLatencyP99: time.Second}
	var calls []float64
	// Everything up to MaxRate is sustained: stop there, no ceiling.
	c, err := SearchCapacity(context.Background(), CapacityOptions{CapacityCriteria: crit, StartRate: 100, MaxRate: 1000, MaxTrials: 10},
		syntheticTarget(5000, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []float64{100, 200, 400, 800, 1000}) || c.Rate != 1000 || c.Ceiling != 0 || c.Converged {
		t.Errorf("rates %v: capacity %v ceiling %v converged %v", calls, c.Rate, c.Ceiling, c.Converged)
	}

	// The trial budget ends the search before it converges.
	calls = nil
	c, err = SearchCapacity(context.Background(), CapacityOptions{CapacityCriteria: crit, StartRate: 100, MaxTrials: 4},
		syntheticTarget(5000, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 4 || c.Rate != 800 || c.Converged {
		t.Errorf("rates %v: capacity %v converged %v", calls, c.Rate, c.Converged)
	}

	// Nothing sustained within the budget.
	calls = nil
	c, err = SearchCapacity(context.Background(), CapacityOptions{CapacityCriteria: crit, StartRate: 100, MaxTrials: 3},
		syntheticTarget(1, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []float64{100, 50, 25}) || c.Rate != 0 || c.Ceiling != 25 || c.Converged {
		t.Errorf("rates %v: capacity %v ceiling %v converged %v", calls, c.Rate, c.Ceiling, c.Converged)
	}
}

func TestSearchCapacityFailuresAndWarnings(t *testing.T) {
	// Failures above 1% fail a trial even with good throughput and latency;
	// generator warnings are collected.
	trial := func(_ context.Context, rate float64) (OpenTotals, error) {
		t := OpenTotals{TargetRate: rate, OfferedRate: rate, Throughput: rate, Measured: 1000}
		if rate > 300 {
			t.Failures = 20
			t.Warning = "schedule lag p99 2ms exceeds 1ms"
		}
		return t, nil
	}
	c, err := SearchCapacity(context.Background(), CapacityOptions{
		CapacityCriteria: CapacityCriteria{MaxLatencyP99: time.Second}, StartRate: 100, MaxTrials: 20,
	}, trial)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rate > 300 || c.Rate < 300*0.95 || !strings.Contains(c.Warning, "at 400 requests/s: schedule lag") {
		t.Errorf("capacity %v, warning %q", c.Rate, c.Warning)
	}
	for _, tr := range c.Trials {
		if !tr.Sustained && !strings.Contains(tr.Reason, "20 of 1000 requests failed") {
			t.Errorf("trial at %v: reason %q", tr.Rate, tr.Reason)
		}
	}
}

func TestSearchCapacityErrors(t *testing.T) {
	boom := errors.New("stack died")
	n := 0
	c, err := SearchCapacity(context.Background(), CapacityOptions{
		CapacityCriteria: CapacityCriteria{MaxLatencyP99: time.Second}, StartRate: 10, MaxTrials: 10,
	}, func(_ context.Context, rate float64) (OpenTotals, error) {
		n++
		if n == 3 {
			return OpenTotals{}, boom
		}
		return OpenTotals{TargetRate: rate, OfferedRate: rate, Throughput: rate, Measured: 10}, nil
	})
	if !errors.Is(err, boom) || len(c.Trials) != 2 || c.Rate != 20 {
		t.Errorf("error %v, %d trials, capacity %v", err, len(c.Trials), c.Rate)
	}

	ok := func(context.Context, float64) (OpenTotals, error) { return OpenTotals{}, nil }
	good := CapacityOptions{CapacityCriteria: CapacityCriteria{MaxLatencyP99: time.Second}, StartRate: 10, MaxTrials: 5}
	cases := []struct {
		name string
		mod  func(*CapacityOptions)
		want string
	}{
		{"no start", func(o *CapacityOptions) { o.StartRate = 0 }, "start rate 0"},
		{"max below start", func(o *CapacityOptions) { o.MaxRate = 5 }, "below start rate"},
		{"no trials", func(o *CapacityOptions) { o.MaxTrials = 0 }, "maximum trials 0"},
		{"no latency bound", func(o *CapacityOptions) { o.MaxLatencyP99 = 0 }, "p99 latency bound"},
		{"bad throughput share", func(o *CapacityOptions) { o.MinThroughput = 1.5 }, "minimum throughput"},
		{"bad precision", func(o *CapacityOptions) { o.Precision = 1 }, "precision"},
	}
	for _, cs := range cases {
		o := good
		cs.mod(&o)
		if _, err := SearchCapacity(context.Background(), o, ok); err == nil || !strings.Contains(err.Error(), cs.want) {
			t.Errorf("%s: error %v, want %q", cs.name, err, cs.want)
		}
	}
	if _, err := SearchCapacity(context.Background(), good, nil); err == nil {
		t.Error("no error without a trial function")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SearchCapacity(ctx, good, ok); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled search: error %v", err)
	}
}

func TestCapacityCriteriaSustained(t *testing.T) {
	c := CapacityCriteria{MaxLatencyP99: 50 * time.Millisecond}
	base := OpenTotals{TargetRate: 100, OfferedRate: 97, Throughput: 93, Measured: 200, Failures: 2, LatencyP99NS: int64(40 * time.Millisecond)}
	if ok, why := c.Sustained(base); !ok {
		t.Errorf("within every bound but judged unsustained: %s", why)
	}
	// Throughput is compared with the offered (realised) rate, not the target.
	low := base
	low.Throughput = 92
	if ok, why := c.Sustained(low); ok || !strings.Contains(why, "of 97/s offered") {
		t.Errorf("throughput 92 of 97 offered: sustained %v (%s)", ok, why)
	}
	if ok, why := c.Sustained(OpenTotals{TargetRate: 10}); ok || why != "no measured results" {
		t.Errorf("empty trial: sustained %v (%s)", ok, why)
	}
	strict := CapacityCriteria{MaxLatencyP99: time.Second, MaxFailures: -1}
	if ok, _ := strict.Sustained(base); ok {
		t.Error("2 failures sustained with no failures allowed")
	}
}
