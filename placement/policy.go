package placement

import (
	"fmt"
	"math"
	"strings"
)

// Policy names a routing policy.
type Policy string

// The routing policies. The first three are the write-up's; queue-aware is
// beyond it.
const (
	// PolicyUserFirst picks the host with the lowest client path.
	PolicyUserFirst Policy = "user-first"
	// PolicyNetworkOnly picks the lowest network-only estimate.
	PolicyNetworkOnly Policy = "network-only"
	// PolicyProfiled picks the lowest profiled estimate.
	PolicyProfiled Policy = "profiled"
	// PolicyQueueAware picks the lowest profiled estimate plus requests in
	// flight × service time.
	PolicyQueueAware Policy = "queue-aware"
)

// Policies lists every policy in report order.
var Policies = []Policy{PolicyUserFirst, PolicyNetworkOnly, PolicyProfiled, PolicyQueueAware}

// ParsePolicy accepts a policy name (case-insensitive, surrounding blanks
// ignored).
func ParsePolicy(s string) (Policy, error) {
	p := Policy(strings.ToLower(strings.TrimSpace(s)))
	for _, q := range Policies {
		if p == q {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown policy %q (want one of %s)", s, policyList())
}

func policyList() string {
	names := make([]string, len(Policies))
	for i, p := range Policies {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// TieMs is the tie tolerance: scores within TieMs of the lowest score are
// ties (it only absorbs floating-point noise), and ties go to the host that
// comes first in the estimates (the calibration's host order).
const TieMs = 1e-9

// Score is one host's score under a policy, with the inputs of every
// policy, as the decision log records it.
type Score struct {
	Host          string  `json:"host"`
	ClientPathMs  float64 `json:"client_path_ms"`
	NetworkOnlyMs float64 `json:"network_only_ms"`
	ProfiledMs    float64 `json:"profiled_ms"`
	// InFlight is the host's requests in flight when the decision was made
	// (the request being decided not counted).
	InFlight int `json:"in_flight"`
	// ServiceTimeMs is the cost of one request in flight (queue-aware).
	ServiceTimeMs float64 `json:"service_time_ms"`
	// ScoreMs is what the policy compared.
	ScoreMs float64 `json:"score_ms"`
}

// Decision is a policy's choice for one request.
type Decision struct {
	Policy Policy  `json:"policy"`
	Route  string  `json:"route"`
	Host   string  `json:"host"`
	Scores []Score `json:"scores"`
}

// serviceTime is the queue-aware cost of one request in flight on the
// estimate's host: the host's measured service time, or when it was not
// measured the route's profiled estimate on that host (as if the host
// served one request at a time and every request ahead were like this one).
func serviceTime(e Estimate) float64 {
	if e.ServiceTimeMs > 0 {
		return e.ServiceTimeMs
	}
	return e.ProfiledMs
}

// Choose applies policy p to the estimates of route (one per host, as
// Calibration.Estimates returns them) and the hosts' requests in flight
// (missing hosts count 0). Scores:
//
//	user-first    clientPath
//	network-only  clientPath + N × sqlRTT
//	profiled      clientPath + residual + N × sqlRTT
//	queue-aware   profiled + inFlight × serviceTime
//
// The lowest score wins; scores within TieMs of it tie and the first such
// host in est wins. It is an error when est is empty, or holds another
// route or a host twice.
func Choose(p Policy, route Route, est []Estimate, inFlight map[string]int) (Decision, error) {
	d := Decision{Policy: p, Route: route.String()}
	if len(est) == 0 {
		return d, fmt.Errorf("route %s: no estimates", d.Route)
	}
	d.Scores = make([]Score, len(est))
	seen := make(map[string]bool, len(est))
	for i, e := range est {
		if e.Route != d.Route {
			return d, fmt.Errorf("estimate for %s is of route %s, not %s", e.Host, e.Route, d.Route)
		}
		if seen[e.Host] {
			return d, fmt.Errorf("route %s: host %s estimated twice", d.Route, e.Host)
		}
		seen[e.Host] = true
		s := Score{Host: e.Host, ClientPathMs: e.ClientPathMs, NetworkOnlyMs: e.NetworkOnlyMs, ProfiledMs: e.ProfiledMs,
			InFlight: inFlight[e.Host], ServiceTimeMs: serviceTime(e)}
		switch p {
		case PolicyUserFirst:
			s.ScoreMs = e.ClientPathMs
		case PolicyNetworkOnly:
			s.ScoreMs = e.NetworkOnlyMs
		case PolicyProfiled:
			s.ScoreMs = e.ProfiledMs
		case PolicyQueueAware:
			s.ScoreMs = e.ProfiledMs + float64(s.InFlight)*s.ServiceTimeMs
		default:
			return d, fmt.Errorf("unknown policy %q (want one of %s)", p, policyList())
		}
		if math.IsNaN(s.ScoreMs) || math.IsInf(s.ScoreMs, 0) {
			return d, fmt.Errorf("route %s: %s scores %v on %s", d.Route, p, s.ScoreMs, e.Host)
		}
		d.Scores[i] = s
	}
	low := d.Scores[0].ScoreMs
	for _, s := range d.Scores[1:] {
		low = min(low, s.ScoreMs)
	}
	for _, s := range d.Scores {
		if s.ScoreMs <= low+TieMs {
			d.Host = s.Host
			break
		}
	}
	return d, nil
}
