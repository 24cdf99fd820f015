package raw

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/workloads"
)

// Files of what the wire showed during each task.
const (
	// WireFile holds, per task attempt and direction, what the captures
	// of the app's and the database's namespaces showed on the wire.
	WireFile = "wire.csv"
	// AnatomyFile holds every measured request of every task taken apart.
	AnatomyFile = "anatomy.jsonl"
)

// WireRow is one direction of the app↔database wire during one attempt
// of a task, from two captures on one clock (kernel stamps): the packets
// one side sent while the other captured, those paired with their
// arrival, and the one-way delay of the paired ones. The task's anatomy
// (how many requests were found and taken apart) is repeated on both
// directions' rows.
type WireRow struct {
	Task      int
	Attempt   int
	App       string
	Route     string
	RTTms     float64
	Unshaped  bool
	Direction string
	Sent      int
	Matched   int
	Lost      int
	Ambiguous int
	P50Ms     float64
	P99Ms     float64
	// Drops counts packets the kernel could not hand to either capture
	// (its ring was full); Truncated: a capture hit its packet cap.
	// Either makes the task's wire figures incomplete.
	Drops     int
	Truncated bool
	// The anatomy of the task's requests: found on the wire, taken
	// apart (complete), missing an event, round trips outside every
	// request, and why none could be taken apart ("" when they could).
	Requests   int
	Anatomized int
	Incomplete int
	Unassigned int
	Problem    string
	// How the requests were joined to the load client's by the sequence
	// number each carries (workloads.Anatomy): the client's requests no
	// request on the wire was joined to, requests on the wire joined to
	// none, joined requests left out for a negative client time, and the
	// exchanges that ran beside the requests' own round trips. A row of a
	// folder written before they were counted has Counted false.
	Unpaired       int
	Unmarked       int
	NegativeClient int
	Overlaps       int
	Counted        bool
}

// Share is Matched / Sent (0 when nothing was sent).
func (r *WireRow) Share() float64 {
	return stats.Share(r.Matched, r.Sent)
}

// Complete says whether the captures kept every packet of the task.
func (r *WireRow) Complete() bool { return r.Drops == 0 && !r.Truncated }

// WireHeader is the header row of wire.csv; wireHeaderV1 that of folders
// written before requests were joined by their sequence number, which
// are still read and resumed (their rows keep that layout).
var (
	wireHeaderV1 = []string{"task", "attempt", "app", "route", "rtt_ms", "unshaped", "direction", "sent", "matched", "lost", "ambiguous",
		"p50_ms", "p99_ms", "drops", "truncated", "requests", "anatomized", "incomplete", "unassigned", "problem"}
	wireHeaderV2 = append(slices.Clone(wireHeaderV1), "unpaired", "unmarked", "negative_client", "overlaps")
	WireHeader   = wireHeaderV2
)

// Record is r as a row of wire.csv (WireHeader).
func (r *WireRow) Record() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	i := strconv.Itoa
	return []string{i(r.Task), i(r.Attempt), r.App, r.Route, fmtMs(r.RTTms), strconv.FormatBool(r.Unshaped), r.Direction,
		i(r.Sent), i(r.Matched), i(r.Lost), i(r.Ambiguous), f(r.P50Ms), f(r.P99Ms), i(r.Drops), strconv.FormatBool(r.Truncated),
		i(r.Requests), i(r.Anatomized), i(r.Incomplete), i(r.Unassigned), r.Problem,
		i(r.Unpaired), i(r.Unmarked), i(r.NegativeClient), i(r.Overlaps)}
}

func parseWireRow(rec []string) (WireRow, error) {
	var r WireRow
	if len(rec) != len(WireHeader) && len(rec) != len(wireHeaderV1) {
		return r, fmt.Errorf("%d fields, want %d", len(rec), len(WireHeader))
	}
	var errs []error
	i := func(s string) int { v, err := strconv.Atoi(s); errs = append(errs, err); return v }
	f := func(s string) float64 { v, err := strconv.ParseFloat(s, 64); errs = append(errs, err); return v }
	b := func(s string) bool { v, err := strconv.ParseBool(s); errs = append(errs, err); return v }
	r = WireRow{Task: i(rec[0]), Attempt: i(rec[1]), App: rec[2], Route: rec[3], RTTms: f(rec[4]), Unshaped: b(rec[5]), Direction: rec[6],
		Sent: i(rec[7]), Matched: i(rec[8]), Lost: i(rec[9]), Ambiguous: i(rec[10]), P50Ms: f(rec[11]), P99Ms: f(rec[12]),
		Drops: i(rec[13]), Truncated: b(rec[14]), Requests: i(rec[15]), Anatomized: i(rec[16]), Incomplete: i(rec[17]),
		Unassigned: i(rec[18]), Problem: rec[19]}
	if len(rec) == len(WireHeader) {
		r.Unpaired, r.Unmarked, r.NegativeClient, r.Overlaps, r.Counted = i(rec[20]), i(rec[21]), i(rec[22]), i(rec[23]), true
	}
	return r, errors.Join(errs...)
}

// AnatomyRow is one line of anatomy.jsonl: a measured request of a task
// attempt, taken apart.
type AnatomyRow struct {
	Task     int     `json:"task"`
	Attempt  int     `json:"attempt"`
	App      string  `json:"app"`
	Route    string  `json:"route"`
	RTTms    float64 `json:"rtt_ms"`
	Unshaped bool    `json:"unshaped,omitempty"`
	Run      int     `json:"run"`
	// Failed: the request failed (the load client's status or error);
	// such requests stay out of the analysis as they do of the latency
	// percentiles.
	Failed bool `json:"failed,omitempty"`
	workloads.RequestAnatomy
}
