package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

// wireTasks makes the wire rows of n tasks of go /feed at one setting,
// both directions, each task's one-way p50 from p50(run) (NaN: nothing
// paired), and lets edit change a row.
func wireTasks(first int, rtt float64, n int, p50 func(run int) float64, edit func(run int, r *raw.WireRow)) []raw.WireRow {
	var rows []raw.WireRow
	for run := range n {
		for _, dir := range []string{workloads.DirAppToDB, workloads.DirDBToApp} {
			v := p50(run)
			r := raw.WireRow{Task: first + run, App: "go", Route: "/feed", RTTms: rtt, Direction: dir, Sent: 100, Matched: 100, P50Ms: v, P99Ms: v + 0.1}
			if math.IsNaN(v) {
				r.Matched = 0
			}
			if edit != nil {
				edit(run, &r)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func flat(v float64) func(int) float64 { return func(int) float64 { return v } }

// verdictAt is the verdict of go at rtt among vs.
func verdictAt(t *testing.T, vs []WireVerdict, rtt float64) WireVerdict {
	t.Helper()
	for _, v := range vs {
		if v.App == "go" && v.RTTms == rtt {
			return v
		}
	}
	t.Fatalf("no verdict of go at %g ms among %+v", rtt, vs)
	return WireVerdict{}
}

// Every status of the wire's verdict is reached by its own condition,
// and only by it: each case would fail if its condition were dropped or
// another status won.
func TestWireVerdictPaths(t *testing.T) {
	ref := wireTasks(0, 0, 10, flat(0.02), nil)
	cases := []struct {
		name                       string
		rows                       []raw.WireRow
		status                     string
		why                        string // a part of Why
		tasks, passing, incomplete int
	}{
		{name: "verified", rows: wireTasks(100, 1, 10, flat(0.52), nil),
			status: WireVerified, tasks: 10, passing: 10},
		{name: "one task of twenty off still verified", rows: wireTasks(100, 1, 20, func(run int) float64 {
			if run == 3 {
				return 0.60
			}
			return 0.52
		}, nil), status: WireVerified, tasks: 20, passing: 19},
		{name: "median off", rows: wireTasks(100, 1, 10, flat(0.60), nil),
			status: WireOff, why: "one-way added 0.580 ms for 0.500", tasks: 10},
		{name: "too few packets paired", rows: wireTasks(100, 1, 10, flat(0.52), func(_ int, r *raw.WireRow) { r.Matched = 90 }),
			status: WireOff, why: "90.0% of packets paired", tasks: 10},
		{name: "too few tasks pass on their own", rows: wireTasks(100, 1, 10, func(run int) float64 {
			if run < 2 {
				return 0.60
			}
			return 0.52
		}, nil), status: WireOff, why: "8 of 10 tasks passed on their own", tasks: 10, passing: 8},
		{name: "a task's captures missed packets", rows: wireTasks(100, 1, 10, flat(0.52), func(run int, r *raw.WireRow) {
			if run == 4 {
				r.Drops = 2
			}
		}), status: WireIncomplete, why: "1 of 10 tasks' captures missed packets", tasks: 9, passing: 9, incomplete: 1},
		{name: "a capture hit its packet cap", rows: wireTasks(100, 1, 10, flat(0.52), func(run int, r *raw.WireRow) {
			r.Truncated = run == 0
		}), status: WireIncomplete, why: "1 of 10 tasks' captures missed packets", tasks: 9, passing: 9, incomplete: 1},
		{name: "every capture missed packets", rows: wireTasks(100, 1, 3, flat(0.52), func(_ int, r *raw.WireRow) { r.Drops = 1 }),
			status: WireIncomplete, why: "every capture missed packets (3 tasks)", incomplete: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, vs := analyzeWire(append(append([]raw.WireRow{}, ref...), c.rows...), Options{})
			if r := verdictAt(t, vs, 0); r.Status != WireReference {
				t.Errorf("0 ms: %s, want %s", r.Status, WireReference)
			}
			v := verdictAt(t, vs, 1)
			if v.Status != c.status || !strings.Contains(v.Why, c.why) || (c.status == WireVerified) != (v.Why == "") {
				t.Errorf("status %q why %q, want %q with %q", v.Status, v.Why, c.status, c.why)
			}
			if v.Tasks != c.tasks || v.Passing != c.passing || v.Incomplete != c.incomplete {
				t.Errorf("tasks %d passing %d incomplete %d, want %d, %d, %d", v.Tasks, v.Passing, v.Incomplete, c.tasks, c.passing, c.incomplete)
			}
		})
	}
}

// A setting without a valid 0 ms reference has no data, never verified:
// no 0 ms tasks, 0 ms tasks that paired nothing (a NaN baseline, which
// every comparison with it let pass), or 0 ms captures all incomplete.
func TestWireVerdictNeedsAValidReference(t *testing.T) {
	shaped := wireTasks(100, 1, 6, flat(0.52), nil)
	cases := []struct {
		name string
		ref  []raw.WireRow
		why  string
	}{
		{"no 0 ms tasks", nil, "no 0 ms tasks to measure against"},
		{"0 ms paired nothing", wireTasks(0, 0, 6, flat(math.NaN()), nil), "no valid 0 ms reference: the 0 ms tasks paired no packet (6 tasks)"},
		{"0 ms captures incomplete", wireTasks(0, 0, 6, flat(0.02), func(_ int, r *raw.WireRow) { r.Drops = 5 }),
			"no valid 0 ms reference: every 0 ms task's captures missed packets (6 tasks)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stats, vs := analyzeWire(append(append([]raw.WireRow{}, c.ref...), shaped...), Options{})
			v := verdictAt(t, vs, 1)
			if v.Status != WireNoData || !strings.Contains(v.Why, c.why) {
				t.Errorf("status %q why %q, want %q with %q", v.Status, v.Why, WireNoData, c.why)
			}
			if v.Passing != 0 {
				t.Errorf("%d tasks passing without a reference", v.Passing)
			}
			for _, st := range stats {
				if st.RTTms == 1 && st.HasAdded {
					t.Errorf("%s: an added delay (%g ms) without a reference", st.Direction, st.AddedMs)
				}
			}
		})
	}
}

// The summary and the digest show each status a setting can have, with
// why, and the probes' part names the settings no probe checked even
// where the wire judged them.
func TestWireVerdictsRendered(t *testing.T) {
	s := &Summary{}
	rows := wireTasks(0, 0, 6, flat(0.02), nil)
	rows = append(rows, wireTasks(100, 0.25, 6, flat(0.145), nil)...)
	rows = append(rows, wireTasks(200, 0.5, 6, flat(0.40), nil)...)
	rows = append(rows, wireTasks(300, 1, 6, flat(0.52), func(run int, r *raw.WireRow) { r.Drops = btoi(run == 1) })...)
	s.Wire, s.WireVerdicts = analyzeWire(rows, Options{})
	for _, r := range []float64{0, 0.25, 0.5, 1} {
		s.Cells = append(s.Cells, Cell{App: "go", Route: "/feed", RTTms: r})
	}
	s.Probes = []ProbeStat{{App: "go", Kind: raw.ProbeICMP, RTTms: 0.25, HasBaseline: true, Added: 0.25}, {App: "go", Kind: raw.ProbeICMP, RTTms: 0, HasBaseline: true}}
	var b strings.Builder
	s.wireMarkdown(&b)
	md := b.String()
	for _, w := range []string{"| go | 0.25 ms | app->db | 6 | 600 | 100.0% | 0.145 | 0.245 | +0.125 | 0.125 | 6 of 6 | verified |",
		"| **off** ⚠ |", "| 6 (1 incomplete) |", "**incomplete** ⚠",
		"- go at 0.5 ms: off (app->db one-way added 0.380 ms for 0.250",
		"- go at 1 ms: incomplete (1 of 6 tasks' captures missed packets, left out of the figures)"} {
		if !strings.Contains(md, w) {
			t.Errorf("the wire's section lacks %q:\n%s", w, md)
		}
	}
	var d digest
	s.digestWire(&d)
	s.digestProbes(&d)
	out := strings.Join(d.lines, "\n")
	for _, w := range []string{"0.25 ms verified, 0.5 ms off, 1 ms incomplete", "not probed: go at 0.5 ms, go at 1 ms"} {
		if !strings.Contains(out, w) {
			t.Errorf("the digest lacks %q:\n%s", w, out)
		}
	}
	b.Reset()
	s.probesMarkdown(&b, Options{ToleranceMs: 0.05})
	if !strings.Contains(b.String(), "Not probed (no ICMP or SELECT 1 probe of the setting): go at 0.5 ms, go at 1 ms.") {
		t.Errorf("the probes' section does not name the settings without a probe:\n%s", b.String())
	}
}

// The digest's probe values line up with its settings: a kind without a
// value at a setting shows "–" there.
func TestDigestProbesLineUp(t *testing.T) {
	s := &Summary{Probes: []ProbeStat{
		{App: "go", Kind: raw.ProbeICMP, RTTms: 0.5, HasBaseline: true, Added: 0.5},
		{App: "go", Kind: raw.ProbeICMP, RTTms: 1, HasBaseline: true, Added: 1},
		{App: "go", Kind: raw.ProbeSelect1, RTTms: 1, HasBaseline: true, Added: 1.06},
	}}
	var d digest
	s.digestProbes(&d)
	want := "probes (reported, not the verdict) at 0.5/1 ms: ICMP added +0.50/+1.00 ms; SELECT 1 added –/+1.06 ms"
	if got := strings.Join(d.lines, "\n"); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A cell's requests taken apart are counted against its measured ones,
// and each cause of the rest is said: a task whose requests could not be
// joined, requests a capture missed an event of, or nothing known.
func TestTakenApart(t *testing.T) {
	row := func(problem string, incomplete int) raw.WireRow {
		return raw.WireRow{Direction: workloads.DirAppToDB, Problem: problem, Incomplete: incomplete}
	}
	all := takenApartOf(300, 300, []raw.WireRow{row("", 0), row("", 0), row("", 0)})
	if all.Share() != 1 || len(all.LeftOut) != 0 {
		t.Errorf("every request taken apart: %+v", all)
	}
	some := takenApartOf(195, 300, []raw.WireRow{row("", 0), row("101 requests on the wire, 100 sent by the client", 0), row("", 5)})
	want := []string{"1 of 3 tasks' requests could not be joined to the client's (e.g. 101 requests on the wire, 100 sent by the client)", "5 requests with an event a capture missed"}
	if some.Share() != 0.65 || strings.Join(some.LeftOut, "|") != strings.Join(want, "|") {
		t.Errorf("got %+v, want 195 of 300 with %q", some, want)
	}
	joined := takenApartOf(96, 100, []raw.WireRow{{Direction: workloads.DirAppToDB, Counted: true, Unpaired: 3, NegativeClient: 1, Overlaps: 4}})
	want = []string{"3 requests no request on the wire was joined to by its sequence number", "1 requests whose client time came out negative"}
	if !joined.Counted || joined.Overlaps != 4 || strings.Join(joined.LeftOut, "|") != strings.Join(want, "|") {
		t.Errorf("the join's counts: got %+v, want %q", joined, want)
	}
	if some.Counted {
		t.Error("rows without the join's counts read as counted")
	}
	unknown := takenApartOf(290, 300, []raw.WireRow{row("", 0)})
	if len(unknown.LeftOut) != 1 || unknown.LeftOut[0] != "10 requests not found on the wire" {
		t.Errorf("left out without a known cause: %q", unknown.LeftOut)
	}
	if !math.IsNaN(takenApartOf(0, 0, nil).Share()) {
		t.Error("a share of nothing measured")
	}
	s := &Summary{Cells: []Cell{{App: "go", Route: "/feed", RTTms: 1, HasAttribution: true, TakenApart: some}}}
	var b strings.Builder
	s.anatomyMarkdown(&b)
	for _, w := range []string{"| 65.0% |", "- go /feed: 105 of 300 measured requests left out: 1 of 3 tasks' requests could not be joined"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("the anatomy's section lacks %q:\n%s", w, b.String())
		}
	}
	var d digest
	s.digestAnatomy(&d)
	s.Cells = append(s.Cells, Cell{App: "go", Route: "/feed", RTTms: 0, TakenApart: joined})
	s.Cells[0].TakenApart.Counted = true
	s.digestAnatomy(&d)
	want = []string{"requests taken apart on the wire: 195 of 300 measured (65.0%)",
		"requests taken apart on the wire: 291 of 400 measured (72.8%), each joined to its latency by its sequence number; 3 not joined, 1 left out for a negative client time; 4 overlaps"}
	if strings.Join(d.lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("digest lines:\n%s\nwant\n%s", strings.Join(d.lines, "\n"), strings.Join(want, "\n"))
	}
}

// tripRows are the round-trip rows of n tasks at rtt, each trip's p50
// from p50(run).
func tripRows(first int, rtt float64, n int, p50 func(run int) float64) []raw.WireRow {
	var rows []raw.WireRow
	for run := range n {
		v := p50(run)
		rows = append(rows, raw.WireRow{Task: first + run, App: "go", Route: "/feed", RTTms: rtt, Direction: workloads.DirRoundTrip,
			Sent: 50, Matched: 50, P50Ms: v, P99Ms: v + 0.1})
	}
	return rows
}

// The round trip is held to the whole RTT within the two directions'
// tolerances together: verified with the one-way rows when it adds the
// setting, off when it adds too little, and on its own where no one-way
// row was kept (captures on two hosts).
func TestWireVerdictRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name    string
		oneWay  bool
		trip    float64 // added round trip of every task, ms
		status  string
		why     string
		passing int
	}{
		{"with one-way, agrees", true, 1.03, WireVerified, "", 10},
		{"with one-way, round trip off", true, 1.06, WireOff, "app->db->app round trip added 1.060 ms for 1.000", 0},
		{"alone, verified", false, 0.97, WireVerified, "", 10},
		{"alone, off", false, 0.5, WireOff, "round trip added 0.500 ms for 1.000", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := tripRows(0, 0, 10, flat(0.04))
			rows = append(rows, tripRows(100, 1, 10, flat(0.04+c.trip))...)
			if c.oneWay {
				rows = append(rows, wireTasks(0, 0, 10, flat(0.02), nil)...)
				rows = append(rows, wireTasks(100, 1, 10, flat(0.52), nil)...)
			}
			s := &Summary{}
			s.Wire, s.WireVerdicts = analyzeWire(rows, Options{})
			v := verdictAt(t, s.WireVerdicts, 1)
			if v.Status != c.status || !strings.Contains(v.Why, c.why) || v.Passing != c.passing {
				t.Errorf("verdict %+v; want %s with %q, %d passing", v, c.status, c.why, c.passing)
			}
			// The digest names what was judged: the one-way figures
			// where the captures shared a clock, the round trip alone
			// where they did not.
			var d digest
			s.digestWire(&d)
			line := strings.Join(d.lines, "\n")
			want := fmt.Sprintf("; one-way added within ±0.02 ms of half the RTT in %d%% of 10 tasks", c.passing*10)
			if !c.oneWay {
				want = fmt.Sprintf("; no one-way figure (app and database on two hosts, no shared clock): round trip added within ±0.04 ms of the RTT in %d%% of 10 tasks", c.passing*10)
			}
			if !strings.Contains(line, want) {
				t.Errorf("digest %q lacks %q", line, want)
			}
		})
	}
}

// The digest's round-trip note: at the largest setting with a round
// trip, the median added round trip beside the sum of the two one-way
// added figures, and the share of turns measured; none without round
// trips.
func TestTripsNote(t *testing.T) {
	w := func(app string, rtt float64, dir string, added float64) WireStat {
		return WireStat{App: app, RTTms: rtt, Direction: dir, HasAdded: true, AddedMs: added, Sent: 10, Matched: 9}
	}
	s := &Summary{Wire: []WireStat{
		w("go", 0.5, workloads.DirRoundTrip, 0.6),
		w("go", 1, workloads.DirAppToDB, 0.5), w("go", 1, workloads.DirDBToApp, 0.51), w("go", 1, workloads.DirRoundTrip, 1.02),
		w("node", 1, workloads.DirRoundTrip, 1.04),
	}}
	want := "; per round trip (each capture on its own clock, no clock shared): added 1.030 ms at 1 ms (the two one-way: 1.010), 90.0% of the database's turns measured"
	if got := s.tripsNote(); got != want {
		t.Errorf("note %q\nwant %q", got, want)
	}
	if got := (&Summary{Wire: []WireStat{w("go", 1, workloads.DirAppToDB, 0.5)}}).tripsNote(); got != "" {
		t.Errorf("no round trips: %q", got)
	}
}
