package placement

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/workloads"
)

// ConcurrencyRow is one (rate, policy, route) cell of the concurrency
// phase: open-loop Poisson arrivals through the proxy, latency measured
// from each request's scheduled send time.
type ConcurrencyRow struct {
	Fraction float64   `json:"fraction"` // of host a's capacity
	Rate     float64   `json:"rate"`     // arrivals per second
	Policy   string    `json:"policy"`
	Route    string    `json:"route"` // "all" for every route together
	N        int       `json:"n"`
	Failures int       `json:"failures"`
	P50Ms    stats.Num `json:"p50_ms"`
	P99Ms    stats.Num `json:"p99_ms"`
	// Hosts: chosen-host shares (from the proxy's response header).
	Hosts map[string]float64 `json:"hosts"`
	// The generator's own record of the run ("all" rows only).
	LagP99Ms    float64 `json:"lag_p99_ms,omitempty"`
	MaxInFlight int     `json:"max_in_flight,omitempty"`
	Throughput  float64 `json:"throughput,omitempty"`
	Warning     string  `json:"warning,omitempty"`
}

// HostCapacity is a compute host's measured open-loop capacity for the
// routed mix.
type HostCapacity struct {
	Host      string             `json:"host"`
	Capacity  workloads.Capacity `json:"capacity"`
	ServiceMs float64            `json:"service_ms"` // 1000 / capacity
}

// routeMix is the routed comparison's routes in a seeded random order, n
// of each (with the policy query parameter when policy is set).
func (r *Runner) routeMix(n int, policy string) []string {
	var out []string
	for _, rt := range shuffled(r.Session.Plan.Routes, n, r.rng) {
		if policy != "" {
			rt += "?" + QueryPolicy + "=" + policy
		}
		out = append(out, rt)
	}
	return out
}

// trialTimeout ends a capacity trial's requests early: an overloaded
// trial fails on timeouts instead of waiting out the default 30 s.
const trialTimeout = 5 * time.Second

// ConcurrencyConnNote says how the concurrency phase connects to the
// compute hosts, and why.
const ConcurrencyConnNote = "a new connection per request to the compute hosts (capacity search and proxy upstreams): with keep-alive, single-threaded Puma serves one connection's requests while requests on its other connections wait, for seconds under open-loop load"

// capacity searches a host's highest sustained open-loop rate for the
// routed mix.
func (r *Runner) capacity(ctx context.Context, host string, maxP99 time.Duration) (workloads.Capacity, error) {
	n := max(r.Session.Plan.ConcurrencyRequests/2, 60)
	c, err := r.Session.client(r.Runtime).Capacity(ctx, agentclient.CapacityOptions{URL: r.Session.hostURL(host), Count: n, MaxP99: maxP99,
		NewConn: true, Timeout: trialTimeout, Seed: r.Session.Plan.Seed, MaxTrials: 8, Paths: r.routeMix(n/len(r.Session.Plan.Routes)+1, "")}, 20*time.Minute)
	if err != nil {
		return c, fmt.Errorf("capacity of %s: %w", host, err)
	}
	return c, nil
}

// concurrency runs the routed comparison again under open-loop arrivals at
// each plan fraction of host a's capacity, one policy at a time in a
// seeded random order.
func (r *Runner) concurrency(ctx context.Context) error {
	if len(r.res.Reps) == 0 {
		return nil
	}
	ho, err := r.capacities(ctx)
	if err != nil {
		return err
	}
	cfg := Config{
		Upstreams:   []Upstream{{Name: NodeA, URL: r.Session.hostURL(NodeA)}, {Name: NodeB, URL: r.Session.hostURL(NodeB)}},
		Calibration: ho, DefaultPolicy: PolicyUserFirst, DisableKeepAlives: true,
	}
	r.res.ConcurrencyConn = ConcurrencyConnNote
	if err := r.Session.StartProxy(ctx, r.Runtime, cfg); err != nil {
		return err
	}
	runErr := r.openLoopRuns(ctx)
	recs, derr := r.Session.StopProxy(ctx, r.Runtime)
	if runErr != nil {
		return runErr
	}
	if derr != nil {
		return derr
	}
	return r.appendDecisions(0, recs)
}

// capacities measures a's and b's open-loop capacity for the routed mix
// and returns the last repetition's held-out calibration with each host's
// service time (1000 / capacity) set.
func (r *Runner) capacities(ctx context.Context) (Calibration, error) {
	ho := r.res.Reps[len(r.res.Reps)-1].HeldOutCal
	ho.Hosts = slices.Clone(ho.Hosts) // service times go into this copy only
	// A sustained rate keeps p99 under 10× the slowest route's p50 on a.
	worst := 0.0
	for _, rc := range ho.Routes {
		if !rc.PerN {
			worst = math.Max(worst, rc.P50Ms[NodeA])
		}
	}
	maxP99 := time.Duration(math.Max(10*worst, 20) * float64(time.Millisecond))
	r.Session.say("concurrency: open-loop capacity of a and b for the routed mix (p99 under %s)", maxP99.Round(time.Microsecond))
	for i, h := range []string{NodeA, NodeB} {
		c, err := r.capacity(ctx, h, maxP99)
		if err != nil {
			return Calibration{}, err
		}
		r.res.Capacity = append(r.res.Capacity, HostCapacity{Host: h, Capacity: c, ServiceMs: 1000 / c.Rate})
		ho.Hosts[i].ServiceTimeMs = 1000 / c.Rate
		r.Session.say("  %s sustains %.0f requests/s (%d trials)", h, c.Rate, len(c.Trials))
	}
	return ho, nil
}

// openLoopRuns runs every plan fraction of a's capacity, the policies of
// each in a seeded random order, through the running proxy; it stops at
// the first error.
func (r *Runner) openLoopRuns(ctx context.Context) error {
	p := r.Session.Plan
	capA := r.res.Capacity[0].Capacity.Rate
	warm := max(p.RoutedWarmup, 5)
	for _, f := range p.ConcurrencyRates {
		rate := f * capA
		pols := slices.Clone(p.Policies)
		r.rng.Shuffle(len(pols), func(i, j int) { pols[i], pols[j] = pols[j], pols[i] })
		for _, pol := range pols {
			if err := r.openLoopRun(ctx, f, rate, pol, warm); err != nil {
				return err
			}
		}
	}
	return nil
}

// openLoopRun sends warm+ConcurrencyRequests open-loop arrivals of the
// route mix with one policy at rate through the proxy, and records the
// rows and samples.
func (r *Runner) openLoopRun(ctx context.Context, f, rate float64, pol string, warm int) error {
	p := r.Session.Plan
	r.Session.say("  %.0f%% of a's capacity (%.0f/s), %s: %d+%d arrivals", 100*f, rate, pol, warm, p.ConcurrencyRequests)
	paths := r.routeMix((warm+p.ConcurrencyRequests)/len(p.Routes)+1, pol)[:warm+p.ConcurrencyRequests]
	reqs := make([]workloads.OpenRequest, len(paths))
	for i, path := range paths {
		reqs[i] = workloads.OpenRequest{Path: path}
	}
	o := workloads.OpenLoopOptions{BaseURL: fmt.Sprintf("http://127.0.0.1:%d", proxyPort), Rate: rate, Count: len(paths), Warmup: warm,
		Seed: p.Seed, CopyHeaders: []string{HeaderHost}, Requests: reqs}
	rs, tot, err := r.Session.client(r.Runtime).OpenLoop(ctx, o, 20*time.Minute)
	if err != nil {
		return err
	}
	r.res.Concurrency = append(r.res.Concurrency, concurrencyRows(f, rate, pol, rs, tot)...)
	for _, x := range rs {
		route, _, _ := strings.Cut(x.Path, "?")
		r.write(PlaceSample{Phase: "concurrency", Kind: "http", Host: x.Tags[HeaderHost], Route: route, Policy: pol,
			Seq: x.Seq, Warmup: x.Warmup, LatencyMs: float64(x.LatencyNS) / 1e6, Status: x.Status, Error: x.Error})
	}
	return r.flush()
}

// concurrencyRows summarises one open-loop run per route and overall.
func concurrencyRows(f, rate float64, pol string, rs []workloads.OpenResult, tot workloads.OpenTotals) []ConcurrencyRow {
	type acc struct {
		ms    []float64
		fails int
		hosts map[string]int
		n     int
	}
	by := map[string]*acc{}
	get := func(k string) *acc {
		if by[k] == nil {
			by[k] = &acc{hosts: map[string]int{}}
		}
		return by[k]
	}
	for _, x := range rs {
		if x.Warmup {
			continue
		}
		route, _, _ := strings.Cut(x.Path, "?")
		for _, k := range []string{"all", route} {
			a := get(k)
			a.n++
			if h := x.Tags[HeaderHost]; h != "" {
				a.hosts[h]++
			}
			if x.Failed() {
				a.fails++
				continue
			}
			a.ms = append(a.ms, float64(x.LatencyNS)/1e6)
		}
	}
	var out []ConcurrencyRow
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := by[k]
		row := ConcurrencyRow{Fraction: f, Rate: rate, Policy: pol, Route: k, N: len(a.ms), Failures: a.fails, Hosts: map[string]float64{}, P50Ms: stats.Num(math.NaN()), P99Ms: stats.Num(math.NaN())}
		if len(a.ms) > 0 {
			s := slices.Clone(a.ms)
			slices.Sort(s)
			row.P50Ms, row.P99Ms = stats.Num(stats.Percentile(s, 0.5)), stats.Num(stats.Percentile(s, 0.99))
		}
		for h, c := range a.hosts {
			row.Hosts[h] = float64(c) / float64(a.n)
		}
		if k == "all" {
			row.LagP99Ms, row.MaxInFlight, row.Throughput, row.Warning = float64(tot.LagP99NS)/1e6, tot.MaxInFlight, tot.Throughput, tot.Warning
		}
		out = append(out, row)
	}
	return out
}
