package placement

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rttlab/rttlab/results/stats"
)

// Sample is one measured request of the routed comparison, as the client
// saw it.
type Sample struct {
	Policy Policy `json:"policy"`
	Route  string `json:"route"`
	// Host is the upstream the proxy chose (its HeaderHost); "" when the
	// proxy chose none.
	Host      string  `json:"host"`
	LatencyMs float64 `json:"latency_ms"`
	// Failed marks a request that did not return 200 or did not return;
	// it counts in the failures and the host shares, not in the latencies.
	Failed bool `json:"failed,omitempty"`
	// Warmup samples are left out of every summary.
	Warmup bool `json:"warmup,omitempty"`
}

// HostShare is how often a policy chose a host for a route.
type HostShare struct {
	Host  string  `json:"host"`
	Count int     `json:"count"`
	Share float64 `json:"share"`
}

// PolicyRoute summarises one (policy, route) of the routed comparison.
type PolicyRoute struct {
	Policy Policy `json:"policy"`
	Route  string `json:"route"`
	// N counts successful measured requests; Failures the failed ones.
	N        int `json:"n"`
	Failures int `json:"failures"`
	// P50Ms and P99Ms are over the successful requests (NaN, null in
	// JSON, without any); P50CI is the percentile-bootstrap 95% interval
	// of the median.
	P50Ms stats.Num `json:"p50_ms"`
	P99Ms stats.Num `json:"p99_ms"`
	P50CI stats.CI  `json:"p50_ci"`
	// Hosts are the chosen-host shares over every measured request that
	// got a host (failed ones included), by host name.
	Hosts []HostShare `json:"hosts"`
}

// PolicyDiff is the median difference of one policy against a base policy
// on one route.
type PolicyDiff struct {
	Route  string `json:"route"`
	Policy Policy `json:"policy"`
	Base   Policy `json:"base"`
	// DiffMs = p50(Policy) − p50(Base): negative when Policy is faster.
	DiffMs stats.Num `json:"diff_ms"`
	CI     stats.CI  `json:"ci"`
	// Verdict is "lower" or "higher" when the interval excludes 0, else
	// "no measurable difference" (or "no data").
	Verdict string `json:"verdict"`
}

// RoutedSummary is the routed comparison's analysis.
type RoutedSummary struct {
	Seed      uint64 `json:"seed"`
	Resamples int    `json:"resamples"`
	// Method describes the intervals.
	Method string        `json:"method"`
	Cells  []PolicyRoute `json:"cells"`
	Diffs  []PolicyDiff  `json:"diffs"`
}

// PolicyCellKey is the stats.NewRNG key of a (policy, route) p50
// interval; PolicyDiffKey that of a policy difference.
func PolicyCellKey(p Policy, route string) string {
	return "placement-cell\x00" + string(p) + "\x00" + route
}

// PolicyDiffKey is the stats.NewRNG key of the interval of p50(policy)
// − p50(base) on route.
func PolicyDiffKey(route string, policy, base Policy) string {
	return "placement-diff\x00" + route + "\x00" + string(policy) + "\x00" + string(base)
}

// SummarizeRouted computes, per (policy, route) of the measured samples,
// the p50 and p99, the bootstrap interval of the p50, the failures and the
// chosen-host shares; and per route the median difference of every policy
// against user-first and of profiled against network-only, each with a
// percentile-bootstrap 95% interval (stats.BootstrapChangeCI: request
// latencies of both policies resampled independently, resamples times,
// from stats.NewRNG(seed, PolicyDiffKey(...))). Resamples ≤ 0 means
// stats.Resamples. Cells come in the order of Policies (unknown
// policies after, by name), then by route; diffs by route, then policy.
func SummarizeRouted(samples []Sample, seed uint64, resamples int) RoutedSummary {
	if resamples <= 0 {
		resamples = stats.Resamples
	}
	sum := RoutedSummary{
		Seed: seed, Resamples: resamples,
		Method: fmt.Sprintf("percentile bootstrap of the median over request latencies, %d resamples; differences resample both policies independently; seed %d, one generator per cell (stats.NewRNG)", resamples, seed),
		Cells:  []PolicyRoute{},
		Diffs:  []PolicyDiff{},
	}
	cells, keys, routes := groupRouted(samples)
	for _, k := range keys {
		sum.Cells = append(sum.Cells, cells[k].summary(k, seed, resamples))
	}
	sum.Diffs = append(sum.Diffs, routedDiffs(cells, routes, seed, resamples)...)
	return sum
}

// routedKey is one (policy, route) cell of the routed comparison.
type routedKey struct {
	p Policy
	r string
}

// routedCell gathers one cell's measured samples: successful latencies,
// failures and chosen hosts.
type routedCell struct {
	lat   []float64
	fail  int
	hosts map[string]int
	total int
}

// groupRouted gathers the measured samples per cell; keys come in the
// order of Policies (unknown policies after, by name), then by route, and
// routes holds every route seen.
func groupRouted(samples []Sample) (map[routedKey]*routedCell, []routedKey, map[string]bool) {
	cells := map[routedKey]*routedCell{}
	var keys []routedKey
	routes := map[string]bool{}
	for _, s := range samples {
		if s.Warmup {
			continue
		}
		k := routedKey{s.Policy, s.Route}
		a := cells[k]
		if a == nil {
			a = &routedCell{hosts: map[string]int{}}
			cells[k] = a
			keys = append(keys, k)
		}
		routes[s.Route] = true
		if s.Host != "" {
			a.hosts[s.Host]++
			a.total++
		}
		if s.Failed {
			a.fail++
			continue
		}
		a.lat = append(a.lat, s.LatencyMs)
	}
	rank := func(p Policy) int {
		if i := slices.Index(Policies, p); i >= 0 {
			return i
		}
		return len(Policies)
	}
	slices.SortFunc(keys, func(x, y routedKey) int {
		if d := rank(x.p) - rank(y.p); d != 0 {
			return d
		}
		if x.p != y.p {
			return cmp.Compare(string(x.p), string(y.p))
		}
		return cmp.Compare(x.r, y.r)
	})
	return cells, keys, routes
}

// summary is the cell's p50, p99, p50 interval, failures and host shares;
// it sorts the cell's latencies.
func (a *routedCell) summary(k routedKey, seed uint64, resamples int) PolicyRoute {
	slices.Sort(a.lat)
	c := PolicyRoute{Policy: k.p, Route: k.r, N: len(a.lat), Failures: a.fail,
		P50Ms: stats.Num(stats.Percentile(a.lat, 0.5)), P99Ms: stats.Num(stats.Percentile(a.lat, 0.99)),
		P50CI: stats.CIOf(stats.BootstrapMedianCI(a.lat, resamples, stats.NewRNG(seed, PolicyCellKey(k.p, k.r)))),
		Hosts: []HostShare{}}
	for _, h := range sortedNames(a.hosts) {
		c.Hosts = append(c.Hosts, HostShare{Host: h, Count: a.hosts[h], Share: float64(a.hosts[h]) / float64(a.total)})
	}
	return c
}

// routedDiffs compares, per route (by name), network-only, profiled and
// queue-aware against user-first and profiled against network-only, for
// the policies the samples hold. It runs after the cells' summaries, which
// sort the latencies the resamples draw from.
func routedDiffs(cells map[routedKey]*routedCell, routes map[string]bool, seed uint64, resamples int) []PolicyDiff {
	pairs := [][2]Policy{
		{PolicyNetworkOnly, PolicyUserFirst},
		{PolicyProfiled, PolicyUserFirst},
		{PolicyQueueAware, PolicyUserFirst},
		{PolicyProfiled, PolicyNetworkOnly},
	}
	var out []PolicyDiff
	for _, r := range sortedNames(routes) {
		for _, pr := range pairs {
			t, b := cells[routedKey{pr[0], r}], cells[routedKey{pr[1], r}]
			if t == nil || b == nil {
				continue // a policy the run did not use
			}
			d := PolicyDiff{Route: r, Policy: pr[0], Base: pr[1]}
			d.DiffMs = stats.Num(stats.Median(t.lat) - stats.Median(b.lat))
			d.CI = stats.CIOf(stats.BootstrapChangeCI(b.lat, t.lat, resamples, stats.NewRNG(seed, PolicyDiffKey(r, pr[0], pr[1]))))
			switch {
			case len(t.lat) == 0 || len(b.lat) == 0:
				d.Verdict = "no data"
			case d.CI.Excludes0() < 0:
				d.Verdict = "lower"
			case d.CI.Excludes0() > 0:
				d.Verdict = "higher"
			default:
				d.Verdict = "no measurable difference"
			}
			out = append(out, d)
		}
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
