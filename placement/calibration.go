package placement

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
)

// MaxSerial is the largest N (serial statements per request) a route or a
// request may carry.
const MaxSerial = 1000

// NParam is the query parameter that carries N for per-N routes
// (/serial?n=N).
const NParam = "n"

// HostCalibration is what the calibration measured for one compute host,
// from the client node (connect, /health) and from the host itself
// (SELECT 1). Times are p50s in milliseconds.
type HostCalibration struct {
	Name string `json:"name"`
	// ConnectP50Ms is the TCP connect time from the client; recorded,
	// used by no model (see the package documentation). 0: not measured.
	ConnectP50Ms float64 `json:"connect_p50_ms,omitempty"`
	// HealthP50Ms is the p50 of GET /health from the client.
	HealthP50Ms float64 `json:"health_p50_ms"`
	// Select1P50Ms is the p50 of SELECT 1 from this host to the database:
	// the models' SQL round-trip time.
	Select1P50Ms float64 `json:"select1_p50_ms"`
	// ClientPathMs, when above zero, is the client path the models use
	// instead of HealthP50Ms: the held-out /health p50, or a configured
	// estimate.
	ClientPathMs float64 `json:"client_path_ms,omitempty"`
	// ServiceTimeMs is the host's measured service time per request, the
	// queue-aware policy's cost of one request in flight (for a host that
	// serves several requests at once: 1 / its measured capacity). Zero:
	// the queue-aware policy uses the route's profiled estimate instead.
	ServiceTimeMs float64 `json:"service_time_ms,omitempty"`
}

// ClientPath returns the client path the models use: ClientPathMs when set,
// else the /health p50.
func (h HostCalibration) ClientPath() float64 {
	if h.ClientPathMs > 0 {
		return h.ClientPathMs
	}
	return h.HealthP50Ms
}

// RouteCalibration is one route as calibrated on every host.
type RouteCalibration struct {
	// Path is the request path without the query ("/feed", "/serial").
	Path string `json:"path"`
	// NSerial is the number of serial statements per request at
	// calibration (from the app's route metadata; for a per-N route, the
	// n it was calibrated at).
	NSerial int `json:"n_serial"`
	// PerN marks a route whose N comes from each request's n parameter.
	PerN bool `json:"per_n,omitempty"`
	// P50Ms is the route's p50 from the client, per host name.
	P50Ms map[string]float64 `json:"p50_ms"`
}

// Calibration is the input of the models: every compute host and every
// route. The order of Hosts is the order of estimates and the tie-break.
type Calibration struct {
	Hosts  []HostCalibration  `json:"hosts"`
	Routes []RouteCalibration `json:"routes"`
}

// ErrUnknownRoute is returned for a path the calibration does not hold.
var ErrUnknownRoute = errors.New("unknown route")

func checkMs(what string, v float64, positive bool) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%s is %v", what, v)
	case v < 0:
		return fmt.Errorf("%s is negative (%v)", what, v)
	case positive && v == 0:
		return fmt.Errorf("%s is zero (not measured?)", what)
	}
	return nil
}

// Validate checks that the calibration has hosts with unique names and
// measured (positive, finite) p50s, and routes with unique paths, N in
// 0..MaxSerial and a p50 for every host and no other.
func (c *Calibration) Validate() error {
	if len(c.Hosts) == 0 {
		return errors.New("calibration has no hosts")
	}
	seen := map[string]bool{}
	for i, h := range c.Hosts {
		if h.Name == "" {
			return fmt.Errorf("hosts[%d]: no name", i)
		}
		if seen[h.Name] {
			return fmt.Errorf("hosts[%d]: host %q listed twice", i, h.Name)
		}
		seen[h.Name] = true
		for _, f := range []struct {
			what     string
			v        float64
			positive bool
		}{
			{"connect_p50_ms", h.ConnectP50Ms, false},
			{"health_p50_ms", h.HealthP50Ms, true},
			{"select1_p50_ms", h.Select1P50Ms, true},
			{"client_path_ms", h.ClientPathMs, false},
			{"service_time_ms", h.ServiceTimeMs, false},
		} {
			if err := checkMs(f.what, f.v, f.positive); err != nil {
				return fmt.Errorf("host %s: %w", h.Name, err)
			}
		}
	}
	paths := map[string]bool{}
	for i, r := range c.Routes {
		if !strings.HasPrefix(r.Path, "/") || strings.ContainsAny(r.Path, "?#") {
			return fmt.Errorf("routes[%d]: path %q must start with / and have no query", i, r.Path)
		}
		if paths[r.Path] {
			return fmt.Errorf("routes[%d]: route %s listed twice", i, r.Path)
		}
		paths[r.Path] = true
		if r.NSerial < 0 || r.NSerial > MaxSerial {
			return fmt.Errorf("route %s: n_serial %d outside 0..%d", r.Path, r.NSerial, MaxSerial)
		}
		for _, h := range c.Hosts {
			v, ok := r.P50Ms[h.Name]
			if !ok {
				return fmt.Errorf("route %s: no p50 for host %s", r.Path, h.Name)
			}
			if err := checkMs("p50 on "+h.Name, v, true); err != nil {
				return fmt.Errorf("route %s: %w", r.Path, err)
			}
		}
		for name := range r.P50Ms {
			if !seen[name] {
				return fmt.Errorf("route %s: p50 for unknown host %q", r.Path, name)
			}
		}
	}
	return nil
}

// Host returns the calibration of a host.
func (c *Calibration) Host(name string) (HostCalibration, bool) {
	for _, h := range c.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return HostCalibration{}, false
}

// RouteCalibration returns the calibration of a path.
func (c *Calibration) RouteCalibration(path string) (RouteCalibration, bool) {
	for _, r := range c.Routes {
		if r.Path == path {
			return r, true
		}
	}
	return RouteCalibration{}, false
}

// Residual returns the route residual of path on host:
// route p50 − health p50 − N_cal × SELECT 1 p50 (calibration values; the
// client-path override does not enter it). It may be negative.
func (c *Calibration) Residual(host, path string) (float64, error) {
	h, ok := c.Host(host)
	if !ok {
		return 0, fmt.Errorf("unknown host %q", host)
	}
	r, ok := c.RouteCalibration(path)
	if !ok {
		return 0, fmt.Errorf("%w %s", ErrUnknownRoute, path)
	}
	return residual(h, r)
}

// residual is route p50 − health p50 − N_cal × SELECT 1 p50 of one host.
func residual(h HostCalibration, r RouteCalibration) (float64, error) {
	p50, ok := r.P50Ms[h.Name]
	if !ok {
		return 0, fmt.Errorf("route %s: no p50 for host %s", r.Path, h.Name)
	}
	return p50 - h.HealthP50Ms - float64(r.NSerial)*h.Select1P50Ms, nil
}

// Route is one request's route: its path and its N.
type Route struct {
	Path string
	// N is the number of serial statements of the request.
	N int
	// PerN is set when N came from the request's n parameter.
	PerN bool
}

// String names the route as the logs and summaries do: the path, plus
// "?n=N" for a per-N route.
func (r Route) String() string {
	if r.PerN {
		return r.Path + "?" + NParam + "=" + strconv.Itoa(r.N)
	}
	return r.Path
}

// ParseRoute determines the route of a request URL: its path without the
// query, with N from the calibration, or for a per-N route from the n
// query parameter (required, an integer in 0..MaxSerial). Other query
// parameters are ignored.
func (c *Calibration) ParseRoute(u *url.URL) (Route, error) {
	rc, ok := c.RouteCalibration(u.Path)
	if !ok {
		return Route{}, fmt.Errorf("%w %s", ErrUnknownRoute, u.Path)
	}
	if !rc.PerN {
		return Route{Path: rc.Path, N: rc.NSerial}, nil
	}
	q := u.Query()
	if !q.Has(NParam) {
		return Route{}, fmt.Errorf("route %s needs the %s query parameter", rc.Path, NParam)
	}
	n, err := strconv.Atoi(q.Get(NParam))
	if err != nil || n < 0 || n > MaxSerial {
		return Route{}, fmt.Errorf("route %s: %s=%q is not an integer in 0..%d", rc.Path, NParam, q.Get(NParam), MaxSerial)
	}
	return Route{Path: rc.Path, N: n, PerN: true}, nil
}

// RouteN returns the route of path at the calibration's N, or for a per-N
// route at n.
func (c *Calibration) RouteN(path string, n int) (Route, error) {
	rc, ok := c.RouteCalibration(path)
	if !ok {
		return Route{}, fmt.Errorf("%w %s", ErrUnknownRoute, path)
	}
	if !rc.PerN {
		return Route{Path: path, N: rc.NSerial}, nil
	}
	if n < 0 || n > MaxSerial {
		return Route{}, fmt.Errorf("route %s: n=%d outside 0..%d", path, n, MaxSerial)
	}
	return Route{Path: path, N: n, PerN: true}, nil
}

// Model names a cost model.
type Model string

// The two cost models of the write-up.
const (
	ModelNetworkOnly Model = "network-only"
	ModelProfiled    Model = "profiled"
)

// Models lists the cost models in report order.
var Models = []Model{ModelNetworkOnly, ModelProfiled}

// Estimate is both models' estimate of one route on one host, with the
// terms they are made of (milliseconds).
type Estimate struct {
	Host  string `json:"host"`
	Route string `json:"route"`
	N     int    `json:"n"`
	// ClientPathMs is the host's client path; SQLRTTMs its SELECT 1 p50;
	// ResidualMs the route residual on this host.
	ClientPathMs float64 `json:"client_path_ms"`
	SQLRTTMs     float64 `json:"sql_rtt_ms"`
	ResidualMs   float64 `json:"residual_ms"`
	// NetworkOnlyMs = ClientPathMs + N × SQLRTTMs.
	NetworkOnlyMs float64 `json:"network_only_ms"`
	// ProfiledMs = ClientPathMs + ResidualMs + N × SQLRTTMs.
	ProfiledMs float64 `json:"profiled_ms"`
	// ServiceTimeMs is the host's service time (0 when not measured).
	ServiceTimeMs float64 `json:"service_time_ms,omitempty"`
}

// Line returns the model's estimate as a line in N: intercept + N × slope.
func (e Estimate) Line(m Model) (intercept, slope float64, err error) {
	switch m {
	case ModelNetworkOnly:
		return e.ClientPathMs, e.SQLRTTMs, nil
	case ModelProfiled:
		return e.ClientPathMs + e.ResidualMs, e.SQLRTTMs, nil
	}
	return 0, 0, fmt.Errorf("unknown model %q", m)
}

// Ms returns the model's estimate.
func (e Estimate) Ms(m Model) (float64, error) {
	switch m {
	case ModelNetworkOnly:
		return e.NetworkOnlyMs, nil
	case ModelProfiled:
		return e.ProfiledMs, nil
	}
	return 0, fmt.Errorf("unknown model %q", m)
}

// Estimates returns both models' estimates of route on every host, in the
// calibration's host order.
func (c *Calibration) Estimates(r Route) ([]Estimate, error) {
	rc, ok := c.RouteCalibration(r.Path)
	if !ok {
		return nil, fmt.Errorf("%w %s", ErrUnknownRoute, r.Path)
	}
	if r.N < 0 || r.N > MaxSerial {
		return nil, fmt.Errorf("route %s: N=%d outside 0..%d", r.Path, r.N, MaxSerial)
	}
	out := make([]Estimate, 0, len(c.Hosts))
	for _, h := range c.Hosts {
		res, err := residual(h, rc)
		if err != nil {
			return nil, err
		}
		cp := h.ClientPath()
		sql := float64(r.N) * h.Select1P50Ms
		out = append(out, Estimate{
			Host: h.Name, Route: r.String(), N: r.N,
			ClientPathMs: cp, SQLRTTMs: h.Select1P50Ms, ResidualMs: res,
			NetworkOnlyMs: cp + sql,
			ProfiledMs:    cp + res + sql,
			ServiceTimeMs: h.ServiceTimeMs,
		})
	}
	return out, nil
}

// HeldOutRow is one line of the held-out table: a model's estimate of a
// route on a host against the p50 measured after the client-path change.
type HeldOutRow struct {
	Route        string  `json:"route"`
	Host         string  `json:"host"`
	Model        Model   `json:"model"`
	EstimateMs   float64 `json:"estimate_ms"`
	HeldOutP50Ms float64 `json:"held_out_p50_ms"`
	// ErrorMs = HeldOutP50Ms − EstimateMs (the write-up's sign: positive
	// when the model under-estimates).
	ErrorMs float64 `json:"error_ms"`
}

// HeldOut compares estimates (made with the held-out client paths) with the
// held-out p50s per host, for both models. Hosts without a held-out p50 are
// left out.
func HeldOut(est []Estimate, heldOutP50 map[string]float64) []HeldOutRow {
	var out []HeldOutRow
	for _, m := range Models {
		for _, e := range est {
			p, ok := heldOutP50[e.Host]
			if !ok {
				continue
			}
			v, _ := e.Ms(m)
			out = append(out, HeldOutRow{Route: e.Route, Host: e.Host, Model: m, EstimateMs: v, HeldOutP50Ms: p, ErrorMs: p - v})
		}
	}
	return out
}
