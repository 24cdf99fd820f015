package rtt

import (
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

// taskWire turns what the captures of one task attempt kept into the
// task's wire rows (per direction: the packets sent, paired with their
// arrival, and their one-way delay; and the round trips, each turn of
// the database measured on each capture's own clock) and its measured
// requests taken apart (the anatomy joins each request on the wire to
// the load client's result by the sequence number the request carries).
// oneClock says whether the app's and the database's captures share a
// clock (one host); where they do not, one-way delays mean nothing and
// only the round trips are kept.
func taskWire(t raw.Task, attempt int, caps shaping.TaskCaptures, rs []workloads.Result, oneClock bool) ([]raw.WireRow, []raw.AnatomyRow) {
	lat := make([]workloads.AnatomyLatency, len(rs))
	for i, r := range rs {
		lat[i] = workloads.AnatomyLatency{Seq: r.Seq, LatencyNS: r.LatencyNS}
	}
	an := workloads.Anatomize(caps.Flows, caps.Client, caps.App, caps.DB, lat)
	// A direction's figures in its row: the round trip's turns as the
	// packets sent, those measured as paired.
	type figures struct {
		dir string
		ow  workloads.OneWay
	}
	var dirs []figures
	if oneClock {
		dirs = append(dirs, figures{workloads.DirAppToDB, workloads.MatchOneWay(caps.App, caps.DB)},
			figures{workloads.DirDBToApp, workloads.MatchOneWay(caps.DB, caps.App)})
	}
	trips := workloads.MatchRoundTrips(caps.App, caps.DB)
	dirs = append(dirs, figures{workloads.DirRoundTrip, workloads.OneWay{Sent: trips.Turns, Matched: trips.Trips,
		Lost: trips.Turns - trips.Trips, P50Ms: trips.P50Ms, P99Ms: trips.P99Ms}})
	var rows []raw.WireRow
	for _, x := range dirs {
		rows = append(rows, raw.WireRow{Task: t.ID, Attempt: attempt, App: t.App, Route: t.Route, RTTms: t.RTTms, Unshaped: t.Unshaped,
			Direction: x.dir, Sent: x.ow.Sent, Matched: x.ow.Matched, Lost: x.ow.Lost, Ambiguous: x.ow.Ambiguous,
			P50Ms: x.ow.P50Ms, P99Ms: x.ow.P99Ms, Drops: caps.App.Drops + caps.DB.Drops + caps.Client.Drops,
			Truncated: caps.App.Truncated || caps.DB.Truncated || caps.Client.Truncated,
			Requests:  an.Found, Anatomized: len(an.Requests), Incomplete: an.Incomplete, Unassigned: an.Unassigned, Problem: an.Problem,
			Unpaired: an.Unpaired, Unmarked: an.Unmarked, NegativeClient: an.NegativeClient, Overlaps: an.Overlaps, Counted: true})
	}
	bySeq := make(map[int]workloads.Result, len(rs))
	for _, r := range rs {
		bySeq[r.Seq] = r
	}
	var anatomy []raw.AnatomyRow
	for _, ra := range an.Requests {
		r := bySeq[ra.Seq]
		if r.Warmup {
			continue
		}
		anatomy = append(anatomy, raw.AnatomyRow{Task: t.ID, Attempt: attempt, App: t.App, Route: t.Route, RTTms: t.RTTms,
			Unshaped: t.Unshaped, Run: t.Run, Failed: r.Failed(), RequestAnatomy: ra.Rounded()})
	}
	return rows, anatomy
}
