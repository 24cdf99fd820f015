package placement

import (
	"math"
	"strings"
	"testing"
)

func TestChoose(t *testing.T) {
	c := testCalibration()
	c.Hosts[0].ServiceTimeMs = 1.0 // a
	c.Hosts[1].ServiceTimeMs = 0.5 // b
	// Hand-computed estimates (see testCalibration):
	//                 network-only   profiled
	//   /serial n=0   a 1.0  b 1.5   a 1.2  b 1.9
	//   /serial n=3   a 2.2  b 2.1   a 2.4  b 2.5
	//   /serial n=12  a 5.8  b 3.9   a 6.0  b 4.3
	//   /feed         a 2.2  b 2.1   a 2.5  b 2.4
	for _, tc := range []struct {
		policy   Policy
		path     string
		n        int
		inFlight map[string]int
		want     string
		scores   [2]float64
	}{
		{PolicyUserFirst, "/serial", 12, nil, "a", [2]float64{1.0, 1.5}},
		{PolicyUserFirst, "/feed", 0, map[string]int{"a": 50}, "a", [2]float64{1.0, 1.5}},
		{PolicyNetworkOnly, "/serial", 0, nil, "a", [2]float64{1.0, 1.5}},
		{PolicyNetworkOnly, "/serial", 3, nil, "b", [2]float64{2.2, 2.1}},
		{PolicyNetworkOnly, "/serial", 12, nil, "b", [2]float64{5.8, 3.9}},
		// At n=3 the models disagree, as in the write-up's sweep.
		{PolicyProfiled, "/serial", 3, nil, "a", [2]float64{2.4, 2.5}},
		{PolicyProfiled, "/serial", 12, nil, "b", [2]float64{6.0, 4.3}},
		{PolicyProfiled, "/feed", 0, nil, "b", [2]float64{2.5, 2.4}},
		// Queue-aware with nothing in flight is profiled.
		{PolicyQueueAware, "/serial", 3, nil, "a", [2]float64{2.4, 2.5}},
		// One request in flight on a costs 1.0: 3.4 against 2.5.
		{PolicyQueueAware, "/serial", 3, map[string]int{"a": 1}, "b", [2]float64{3.4, 2.5}},
		// Four on b cost 2.0: 6.3 against 6.0.
		{PolicyQueueAware, "/serial", 12, map[string]int{"b": 4}, "a", [2]float64{6.0, 6.3}},
		// Three on b (5.8) against two on a (8.0).
		{PolicyQueueAware, "/serial", 12, map[string]int{"a": 2, "b": 3}, "b", [2]float64{8.0, 5.8}},
	} {
		r, err := c.RouteN(tc.path, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		est, _ := c.Estimates(r)
		d, err := Choose(tc.policy, r, est, tc.inFlight)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.policy, r, err)
		}
		if d.Host != tc.want || d.Policy != tc.policy || d.Route != r.String() {
			t.Errorf("%s %s in flight %v: chose %s, want %s", tc.policy, r, tc.inFlight, d.Host, tc.want)
		}
		for i, s := range d.Scores {
			if !near(s.ScoreMs, tc.scores[i]) || s.InFlight != tc.inFlight[s.Host] {
				t.Errorf("%s %s: score %+v, want %v", tc.policy, r, s, tc.scores[i])
			}
		}
	}
}

func TestChooseQueueAwareServiceFallback(t *testing.T) {
	// No measured service time: one request in flight costs the route's
	// profiled estimate on that host.
	c := testCalibration()
	r, _ := c.RouteN("/serial", 0)
	est, _ := c.Estimates(r)
	d, _ := Choose(PolicyQueueAware, r, est, map[string]int{"a": 1})
	if d.Host != "b" || !near(d.Scores[0].ServiceTimeMs, 1.2) || !near(d.Scores[0].ScoreMs, 2.4) || !near(d.Scores[1].ScoreMs, 1.9) {
		t.Errorf("%+v", d)
	}
}

func TestChooseTies(t *testing.T) {
	est := []Estimate{
		{Host: "x", Route: "/r", ClientPathMs: 1, NetworkOnlyMs: 2, ProfiledMs: 3},
		{Host: "y", Route: "/r", ClientPathMs: 1, NetworkOnlyMs: 2 - 1e-12, ProfiledMs: 3},
		{Host: "z", Route: "/r", ClientPathMs: 0.5, NetworkOnlyMs: 2.5, ProfiledMs: 2.9},
	}
	r := Route{Path: "/r"}
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{PolicyUserFirst, "z"},
		{PolicyNetworkOnly, "x"}, // y is lower only by float noise: a tie, first listed wins
		{PolicyProfiled, "z"},
	} {
		d, err := Choose(tc.p, r, est, nil)
		if err != nil || d.Host != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.p, d.Host, err, tc.want)
		}
	}
	// Reversing the order reverses the tie.
	d, _ := Choose(PolicyNetworkOnly, r, []Estimate{est[1], est[0]}, nil)
	if d.Host != "y" {
		t.Errorf("reversed tie chose %s", d.Host)
	}
	// An exact tie of all hosts goes to the first.
	d, _ = Choose(PolicyProfiled, r, []Estimate{est[0], est[1]}, nil)
	if d.Host != "x" {
		t.Errorf("exact tie chose %s", d.Host)
	}
}

func TestChooseErrors(t *testing.T) {
	r := Route{Path: "/r"}
	e := Estimate{Host: "x", Route: "/r", ProfiledMs: 1}
	for _, tc := range []struct {
		name string
		p    Policy
		est  []Estimate
		want string
	}{
		{"no estimates", PolicyProfiled, nil, "no estimates"},
		{"unknown policy", "fastest", []Estimate{e}, "unknown policy"},
		{"other route", PolicyProfiled, []Estimate{{Host: "x", Route: "/s"}}, "not /r"},
		{"host twice", PolicyProfiled, []Estimate{e, e}, "estimated twice"},
		{"NaN", PolicyProfiled, []Estimate{{Host: "x", Route: "/r", ProfiledMs: math.NaN()}}, "scores NaN"},
	} {
		if _, err := Choose(tc.p, r, tc.est, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, p := range Policies {
		if got, err := ParsePolicy(" " + strings.ToUpper(string(p)) + " "); err != nil || got != p {
			t.Errorf("%s: %v %v", p, got, err)
		}
	}
	if _, err := ParsePolicy("random"); err == nil || !strings.Contains(err.Error(), "user-first, network-only, profiled, queue-aware") {
		t.Errorf("unknown: %v", err)
	}
}
