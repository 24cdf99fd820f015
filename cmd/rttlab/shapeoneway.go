package main

import (
	"fmt"
	"strings"

	"github.com/rttlab/rttlab/orchestrator/shaping"
)

// oneWayMethod is the JSON's account of how the one_way figures are made.
const oneWayMethod = "per setting, both agents capture the app<->database IPv4 packets on their container's interface (AF_PACKET, kernel stamps, CLOCK_REALTIME: one clock for both) while ICMP and SELECT 1 run; " +
	"each packet that left one side is paired with its arrival at the other by a key of its invariant bytes (addresses, protocol, IP id, transport header); " +
	"repeated keys that could pair wrongly are left out (ambiguous); delay = receiver's stamp - sender's; added_p50_ms against the 0 ms setting (the 0 ms row: against no shaper)"

// verifyOneWayJSON is one direction of a row's one-way check. Delays are
// null when no packet was paired; added_p50_ms also without a baseline.
type verifyOneWayJSON struct {
	Direction        string   `json:"direction"`
	Sent             int      `json:"sent"`
	Matched          int      `json:"matched"`
	MatchedShare     float64  `json:"matched_share"`
	Lost             int      `json:"lost"`
	Ambiguous        int      `json:"ambiguous"`
	OutsideWindow    int      `json:"outside_window"`
	P50Ms            *float64 `json:"p50_ms"`
	P90Ms            *float64 `json:"p90_ms"`
	P99Ms            *float64 `json:"p99_ms"`
	MinMs            *float64 `json:"min_ms"`
	MaxMs            *float64 `json:"max_ms"`
	AddedP50Ms       *float64 `json:"added_p50_ms"`
	CaptureTruncated bool     `json:"capture_truncated"`
	CaptureDrops     int      `json:"capture_drops"`
}

func oneWayJSON(dirs []shaping.OneWayDirection) []verifyOneWayJSON {
	out := []verifyOneWayJSON{}
	for _, d := range dirs {
		j := verifyOneWayJSON{Direction: d.Direction, Sent: d.Sent, Matched: d.Matched, MatchedShare: d.Share,
			Lost: d.Lost, Ambiguous: d.Ambiguous, OutsideWindow: d.Outside, CaptureTruncated: d.Truncated, CaptureDrops: d.Drops}
		if d.Matched > 0 {
			p50, p90, p99, lo, hi := d.P50Ms, d.P90Ms, d.P99Ms, d.MinMs, d.MaxMs
			j.P50Ms, j.P90Ms, j.P99Ms, j.MinMs, j.MaxMs = &p50, &p90, &p99, &lo, &hi
		}
		if d.HaveAdded {
			a := d.AddedP50Ms
			j.AddedP50Ms = &a
		}
		out = append(out, j)
	}
	return out
}

// oneWayLine is the table's line under a row: per direction the p50
// one-way delay, its change against the baseline, the p99 and the share
// of packets paired ("" without captures).
func oneWayLine(r shaping.ShapeRow) string {
	var parts []string
	for _, d := range r.OneWay {
		if d.Matched == 0 {
			parts = append(parts, fmt.Sprintf("%s none of %d paired", d.Direction, d.Sent))
			continue
		}
		added := "-"
		if d.HaveAdded {
			added = fmt.Sprintf("%+.3f", d.AddedP50Ms)
		}
		p := fmt.Sprintf("%s p50 %.3f (%s) p99 %.3f, %.1f%% of %d paired", d.Direction, d.P50Ms, added, d.P99Ms, 100*d.Share, d.Sent)
		var notes []string
		if d.Ambiguous > 0 {
			notes = append(notes, fmt.Sprintf("%d ambiguous", d.Ambiguous))
		}
		if d.Drops > 0 {
			notes = append(notes, fmt.Sprintf("%d dropped by the captures", d.Drops))
		}
		if d.Truncated {
			notes = append(notes, "capture cap hit")
		}
		if len(notes) > 0 {
			p += " (" + strings.Join(notes, ", ") + ")"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return "           one-way on the wire (ms): " + strings.Join(parts, "; ")
}
