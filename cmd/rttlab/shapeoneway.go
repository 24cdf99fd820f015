package main

import (
	"fmt"
	"strings"

	"github.com/rttlab/rttlab/orchestrator/shaping"
)

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
