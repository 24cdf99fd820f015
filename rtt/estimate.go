package rtt

import (
	"strconv"
	"strings"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/netem"
)

// What a run costs on a 2-core host, measured with the study's plans (the
// five framework rows, 1,200 tasks: 2,033 s of wall time for 1,429 s of
// requests): a stack's start, calibration and verification probes take
// about half a minute per app; a task adds about half a second of its own
// (setting the delay, the quick ICMP check, the captures, the load
// client's start, reading the shapers) to its requests; a request of a
// route costs about 2 ms plus, per statement, the round trip through the
// shaper (its floor and its pass, about 0.75 ms) and the RTT; a request
// of a mix (Redmine, Aimeos, a request_mix) about 60 ms.
const (
	estimatePerApp     = 30 * time.Second
	estimatePerTask    = 500 * time.Millisecond
	estimateRouteBase  = 2 * time.Millisecond
	estimateMixRequest = 60 * time.Millisecond
	estimateRoundTrip  = 750 * time.Microsecond // the shaped path's own share
)

// Estimate is a plan's expected wall time on a 2-core host, from its
// counts, the routes' statements and the settings; a route whose
// statements are not declared counts as 5. It is a guide for whether to
// start, printed before a run, not a measurement.
func (p *Plan) Estimate(all map[string]*apps.Meta) time.Duration {
	total := time.Duration(0)
	var meanRTT time.Duration
	for _, d := range p.DelaysMs {
		meanRTT += netem.FromMs(d)
	}
	if len(p.DelaysMs) > 0 {
		meanRTT /= time.Duration(len(p.DelaysMs))
	}
	for _, a := range p.Apps {
		total += estimatePerApp
		runs, requests, warmup := p.AppRuns(a)
		per := func(perRequest time.Duration) time.Duration {
			return time.Duration(len(p.DelaysMs)*runs+p.AppUnshapedRuns(a)) * (estimatePerTask + time.Duration(requests+warmup)*perRequest)
		}
		if a.Mix != "" || len(a.RequestMix) > 0 || len(a.Routes) == 0 {
			total += per(estimateMixRequest)
			continue
		}
		for _, r := range a.Routes {
			n := 5.0
			if t, err := apps.Resolve(all, a.Name); err == nil {
				if s := t.Meta.StatementsPerRequest(r); s >= 0 {
					n = s
				}
			}
			total += per(estimateRouteBase + time.Duration(n*float64(estimateRoundTrip+meanRTT)))
		}
	}
	return total
}

// EstimateText writes an estimate the way a person reads one: "about
// 4 min", "about 1 h 5 min", "under a minute".
func EstimateText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return "about " + strconv.Itoa(int(d.Round(time.Minute).Minutes())) + " min"
	}
	h := int(d / time.Hour)
	m := int((d % time.Hour).Round(time.Minute).Minutes())
	var b strings.Builder
	b.WriteString("about " + strconv.Itoa(h) + " h")
	if m > 0 {
		b.WriteString(" " + strconv.Itoa(m) + " min")
	}
	return b.String()
}
