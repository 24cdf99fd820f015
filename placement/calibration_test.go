package placement

import (
	"errors"
	"math"
	"net/url"
	"strings"
	"testing"
)

const eps = 1e-9

func near(a, b float64) bool { return math.Abs(a-b) < eps }

// testCalibration is a two-host calibration with round numbers, so every
// expected value below is computed by hand:
//
//	A: health 1.0, SELECT 1 0.4      B: health 1.5, SELECT 1 0.2
//	/feed   N=3:  p50 A 2.5, B 2.4   residual A 0.3, B 0.3
//	/naive  N=12: p50 A 6.5, B 4.4   residual A 0.7, B 0.5
//	/serial n=0:  p50 A 1.2, B 1.9   residual A 0.2, B 0.4
func testCalibration() Calibration {
	return Calibration{
		Hosts: []HostCalibration{
			{Name: "a", ConnectP50Ms: 0.09, HealthP50Ms: 1.0, Select1P50Ms: 0.4},
			{Name: "b", ConnectP50Ms: 0.6, HealthP50Ms: 1.5, Select1P50Ms: 0.2},
		},
		Routes: []RouteCalibration{
			{Path: "/feed", NSerial: 3, P50Ms: map[string]float64{"a": 2.5, "b": 2.4}},
			{Path: "/naive", NSerial: 12, P50Ms: map[string]float64{"a": 6.5, "b": 4.4}},
			{Path: "/serial", NSerial: 0, PerN: true, P50Ms: map[string]float64{"a": 1.2, "b": 1.9}},
		},
	}
}

func TestResidual(t *testing.T) {
	c := testCalibration()
	for _, tc := range []struct {
		host, path string
		want       float64
	}{
		{"a", "/feed", 2.5 - 1.0 - 3*0.4},
		{"b", "/feed", 2.4 - 1.5 - 3*0.2},
		{"a", "/naive", 6.5 - 1.0 - 12*0.4},
		{"b", "/naive", 4.4 - 1.5 - 12*0.2},
		{"a", "/serial", 0.2},
		{"b", "/serial", 0.4},
	} {
		got, err := c.Residual(tc.host, tc.path)
		if err != nil || !near(got, tc.want) {
			t.Errorf("Residual(%s, %s) = %v, %v; want %v", tc.host, tc.path, got, err, tc.want)
		}
	}
	if _, err := c.Residual("c", "/feed"); err == nil {
		t.Error("unknown host: no error")
	}
	if _, err := c.Residual("a", "/nope"); !errors.Is(err, ErrUnknownRoute) {
		t.Errorf("unknown route: %v", err)
	}
	// A residual can be negative (the route is faster than the sum of its
	// parts); it is kept as is.
	c.Routes[0].P50Ms["a"] = 2.0
	if got, _ := c.Residual("a", "/feed"); !near(got, -0.2) {
		t.Errorf("negative residual = %v, want -0.2", got)
	}
}

func TestEstimates(t *testing.T) {
	c := testCalibration()
	type want struct{ net, prof float64 }
	for _, tc := range []struct {
		route Route
		want  map[string]want
	}{
		{Route{Path: "/feed", N: 3}, map[string]want{"a": {1.0 + 1.2, 1.0 + 0.3 + 1.2}, "b": {1.5 + 0.6, 1.5 + 0.3 + 0.6}}},
		{Route{Path: "/naive", N: 12}, map[string]want{"a": {1.0 + 4.8, 6.5}, "b": {1.5 + 2.4, 4.4}}},
		{Route{Path: "/serial", N: 0, PerN: true}, map[string]want{"a": {1.0, 1.2}, "b": {1.5, 1.9}}},
		{Route{Path: "/serial", N: 3, PerN: true}, map[string]want{"a": {2.2, 2.4}, "b": {2.1, 2.5}}},
		{Route{Path: "/serial", N: 12, PerN: true}, map[string]want{"a": {5.8, 6.0}, "b": {3.9, 4.3}}},
	} {
		est, err := c.Estimates(tc.route)
		if err != nil {
			t.Fatalf("%s: %v", tc.route, err)
		}
		if len(est) != 2 || est[0].Host != "a" || est[1].Host != "b" {
			t.Fatalf("%s: hosts not in calibration order: %+v", tc.route, est)
		}
		for _, e := range est {
			w := tc.want[e.Host]
			if !near(e.NetworkOnlyMs, w.net) || !near(e.ProfiledMs, w.prof) {
				t.Errorf("%s on %s: network-only %v profiled %v, want %v %v", tc.route, e.Host, e.NetworkOnlyMs, e.ProfiledMs, w.net, w.prof)
			}
			if e.Route != tc.route.String() || e.N != tc.route.N {
				t.Errorf("%s on %s: route %q N %d", tc.route, e.Host, e.Route, e.N)
			}
		}
	}
}

// TestClientPathIsHealth pins the write-up's reading of the client path:
// the /health p50, never the connect time; an override (the held-out
// /health p50) replaces it in both models but not in the residual.
func TestClientPathIsHealth(t *testing.T) {
	c := testCalibration()
	est, _ := c.Estimates(Route{Path: "/feed", N: 3})
	if !near(est[0].ClientPathMs, 1.0) || !near(est[1].ClientPathMs, 1.5) {
		t.Fatalf("client paths %v %v, want the health p50s 1.0 1.5", est[0].ClientPathMs, est[1].ClientPathMs)
	}
	c.Hosts[1].ClientPathMs = 2.0 // held out: B's client path grew by 0.5
	est, _ = c.Estimates(Route{Path: "/feed", N: 3})
	b := est[1]
	if !near(b.ClientPathMs, 2.0) || !near(b.ResidualMs, 0.3) || !near(b.NetworkOnlyMs, 2.6) || !near(b.ProfiledMs, 2.9) {
		t.Errorf("held-out B: %+v", b)
	}
	// Profiled on the calibration itself reproduces the route p50 exactly.
	c = testCalibration()
	for _, r := range c.Routes {
		est, _ := c.Estimates(Route{Path: r.Path, N: r.NSerial, PerN: r.PerN})
		for _, e := range est {
			if !near(e.ProfiledMs, r.P50Ms[e.Host]) {
				t.Errorf("%s on %s: profiled %v, calibrated p50 %v", r.Path, e.Host, e.ProfiledMs, r.P50Ms[e.Host])
			}
		}
	}
}

func TestHeldOut(t *testing.T) {
	c := testCalibration()
	est, _ := c.Estimates(Route{Path: "/feed", N: 3})
	rows := HeldOut(est, map[string]float64{"a": 2.6})
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Model != ModelNetworkOnly || !near(rows[0].ErrorMs, 2.6-2.2) {
		t.Errorf("network-only row %+v", rows[0])
	}
	if rows[1].Model != ModelProfiled || !near(rows[1].ErrorMs, 2.6-2.5) {
		t.Errorf("profiled row %+v", rows[1])
	}
}

func TestParseRoute(t *testing.T) {
	c := testCalibration()
	for _, tc := range []struct {
		in, want string
		n        int
		err      string
	}{
		{in: "/feed", want: "/feed", n: 3},
		{in: "/feed?x=1&n=7", want: "/feed", n: 3}, // n only counts on per-N routes
		{in: "/serial?n=12", want: "/serial?n=12", n: 12},
		{in: "/serial?a=b&n=0", want: "/serial?n=0", n: 0},
		{in: "/serial", err: "needs the n query parameter"},
		{in: "/serial?n=-1", err: "not an integer in 0..1000"},
		{in: "/serial?n=1001", err: "not an integer in 0..1000"},
		{in: "/serial?n=two", err: "not an integer"},
		{in: "/health", err: "unknown route"},
	} {
		u, _ := url.Parse(tc.in)
		r, err := c.ParseRoute(u)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || r.String() != tc.want || r.N != tc.n {
			t.Errorf("%s: %v %q N=%d, want %q N=%d", tc.in, err, r, r.N, tc.want, tc.n)
		}
	}
	if r, err := c.RouteN("/serial", 6); err != nil || r.String() != "/serial?n=6" {
		t.Errorf("RouteN: %v %v", r, err)
	}
	if r, err := c.RouteN("/naive", 6); err != nil || r.N != 12 {
		t.Errorf("RouteN on a fixed route: %v %v", r, err)
	}
}

func TestValidate(t *testing.T) {
	c := testCalibration()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Calibration)
		want string
	}{
		{"no hosts", func(c *Calibration) { c.Hosts = nil }, "no hosts"},
		{"duplicate host", func(c *Calibration) { c.Hosts[1].Name = "a" }, "listed twice"},
		{"zero health", func(c *Calibration) { c.Hosts[0].HealthP50Ms = 0 }, "health_p50_ms is zero"},
		{"negative select", func(c *Calibration) { c.Hosts[0].Select1P50Ms = -1 }, "negative"},
		{"NaN client path", func(c *Calibration) { c.Hosts[0].ClientPathMs = math.NaN() }, "client_path_ms is NaN"},
		{"path", func(c *Calibration) { c.Routes[0].Path = "feed" }, "must start with /"},
		{"query in path", func(c *Calibration) { c.Routes[0].Path = "/feed?n=1" }, "no query"},
		{"duplicate route", func(c *Calibration) { c.Routes[1].Path = "/feed" }, "listed twice"},
		{"N too big", func(c *Calibration) { c.Routes[0].NSerial = 1001 }, "outside 0..1000"},
		{"missing host p50", func(c *Calibration) { delete(c.Routes[0].P50Ms, "b") }, "no p50 for host b"},
		{"extra host p50", func(c *Calibration) { c.Routes[0].P50Ms["c"] = 1 }, "unknown host"},
	} {
		c := testCalibration()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
