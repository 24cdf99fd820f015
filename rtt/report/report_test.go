package report

import (
	"bytes"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
	"github.com/rttlab/rttlab/workloads"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var testStart = time.Date(2026, 11, 29, 23, 59, 0, 0, time.UTC)

func mustNoErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type cellSpec struct {
	app, route string
	base       float64 // p50 at 0 ms, ms
	statements float64
	settings   []float64
	runs       int
	// unshaped runs (the shaper out of the path: 0.03 ms faster per
	// statement); a spec with them also has the wire's figures and
	// every request taken apart.
	unshaped int
}

// writeGoldenFolder builds a results folder from integer-nanosecond
// latencies drawn from a fixed PCG stream (no transcendental functions, so
// the data is the same on every platform): latency = base + statements ×
// setting + uniform noise in [0, 0.2) ms.
func writeGoldenFolder(t testing.TB, specs []cellSpec) string {
	t.Helper()
	f, err := raw.Create(t.TempDir(), "golden", testStart)
	mustNoErr(t, err)
	m := &raw.Manifest{
		PlanName: "golden", Seed: 20261129, Version: "v0.0.0-test", GitCommit: "0000000",
		Kernel: "6.1.0-test", Shaper: "nfqueue", ShaperReason: "kernel lacks sch_netem", Scope: "app-db",
		Start:   testStart,
		Skipped: map[string]string{"aimeos": "Packagist is unreachable from this host"},
		Notes:   []string{"synthetic data for the golden test"},
	}
	id := 0
	for _, c := range specs {
		m.Statements = append(m.Statements, raw.RouteStatements{App: c.app, Route: c.route, PerRequest: c.statements})
		for _, s := range c.settings {
			for run := 1; run <= c.runs; run++ {
				id++
				m.Tasks = append(m.Tasks, raw.Task{ID: id, App: c.app, Route: c.route, RTTms: s, Run: run})
			}
		}
	}
	for _, c := range specs { // after the shaped tasks: their draws stay the same
		for run := 1; run <= c.unshaped; run++ {
			id++
			m.Tasks = append(m.Tasks, raw.Task{ID: id, App: c.app, Route: c.route, Run: run, Unshaped: true})
		}
	}
	mustNoErr(t, f.WriteManifest(m))
	rng := rand.New(rand.NewPCG(1, 2))
	specOf := func(tk raw.Task) cellSpec {
		for _, c := range specs {
			if c.app == tk.App && c.route == tk.Route {
				return c
			}
		}
		t.Fatalf("no spec for %v", tk)
		return cellSpec{}
	}
	for _, tk := range m.Tasks {
		c := specOf(tk)
		var s []raw.Sample
		for i := range 22 {
			lat := c.base + c.statements*tk.RTTms + 0.2*rng.Float64()
			if tk.Unshaped {
				lat -= 0.03 * c.statements
			}
			x := raw.Sample{App: tk.App, Route: tk.Route, RTTms: tk.RTTms, Run: tk.Run, Unshaped: tk.Unshaped, Seq: i, Warmup: i < 2,
				LatencyNS: int64(lat * 1e6), Status: 200, Bytes: 2048}
			s = append(s, x)
		}
		attempt := 1
		switch {
		case tk.App == "go" && tk.Route == "/feed" && tk.RTTms == 1 && tk.Run == 2:
			s[7].Status = 503
			s[8].Status, s[8].Error = 0, "read: connection reset by peer"
			s[0].Status = 500 // a failed warmup
		case tk.App == "go" && tk.Route == "/feed-naive" && tk.RTTms == 0.5 && tk.Run == 3:
			mustNoErr(t, f.AppendSamples(tk.ID, 1, s[:5]))
			mustNoErr(t, f.MarkFailed(tk.ID, 1, "app container exited (code 137)"))
			attempt = 2
		case tk.App == "node" && tk.RTTms == 0.75 && tk.Run == 3:
			continue // never run: the study is incomplete
		}
		mustNoErr(t, f.AppendSamples(tk.ID, attempt, s))
		mustNoErr(t, f.MarkDone(tk.ID, attempt))
		if tk.App == "go" && !tk.Unshaped {
			mustNoErr(t, f.AppendShaper(goldenShaperRows(tk, attempt)))
		}
		if c.unshaped > 0 {
			mustNoErr(t, f.AppendWire(goldenWireRows(tk, attempt)))
			mustNoErr(t, f.AppendAnatomy(goldenAnatomy(tk, attempt, c, s)))
		}
	}
	var probes []raw.Probe
	for i, s := range []float64{0, 0.5, 1} {
		probes = append(probes, raw.Probe{App: "go", Kind: raw.ProbeICMP, RTTms: s, N: 50,
			MeanMs: []float64{0.07, 0.58, 1.14}[i], MedianMs: []float64{0.063, 0.571, 1.125}[i], MinMs: 0.04, MaxMs: 1.3, Failures: i % 2})
		for run := 1; run <= 5; run++ {
			med := 0.31 + s + 0.01*float64(run%3) + 0.004*float64(run)
			probes = append(probes, raw.Probe{App: "go", Kind: raw.ProbeSelect1, RTTms: s, Run: run, N: 200,
				MeanMs: med + 0.02, MedianMs: med, MinMs: med - 0.05, MaxMs: med + 0.9})
		}
	}
	probes = append(probes,
		raw.Probe{App: "go", Kind: raw.ProbeICMPTask, RTTms: 0, Task: 1, N: 5, MeanMs: 0.07, MedianMs: 0.07, MinMs: 0.06, MaxMs: 0.08},
		raw.Probe{App: "go", Kind: raw.ProbeICMPTask, RTTms: 0.5, Task: 7, N: 5, MeanMs: 0.58, MedianMs: 0.58, MinMs: 0.55, MaxMs: 0.6},
		raw.Probe{App: "go", Kind: raw.ProbeICMPTask, RTTms: 0.5, Task: 8, N: 5, MeanMs: 0.56, MedianMs: 0.56, MinMs: 0.55, MaxMs: 0.6},
	)
	mustNoErr(t, f.AppendProbes(probes))
	mustNoErr(t, f.Close())
	return f.Dir()
}

// goldenShaperRows is what the shaper reports for one go task: on target
// except the database side at 1 ms (12 µs late), plus a failed attempt
// with drops that must not count.
func goldenShaperRows(tk raw.Task, attempt int) []raw.ShaperRow {
	var rows []raw.ShaperRow
	if attempt == 2 {
		rows = append(rows, raw.ShaperRow{Task: tk.ID, Attempt: 1, App: tk.App, Route: tk.Route, RTTms: tk.RTTms, Side: "app", Direction: "ingress",
			TargetUs: tk.RTTms * 500, Packets: 90, Drops: 7, HoldP50Us: tk.RTTms*500 + 300, HoldP99Us: 900, HoldMaxUs: 950})
	}
	for i, side := range []string{"app", "db"} {
		target := tk.RTTms * 500
		hold := target + 2 + float64(tk.Run%3) + float64(i)
		if side == "db" && tk.RTTms == 1 {
			hold = target + 12
		}
		rows = append(rows, raw.ShaperRow{Task: tk.ID, Attempt: attempt, App: tk.App, Route: tk.Route, RTTms: tk.RTTms, Side: side,
			Direction: "ingress", TargetUs: target, Packets: 400 + uint64(tk.Run), Stamped: 400 + uint64(tk.Run), HoldP50Us: hold,
			HoldP99Us: hold + 40 + float64(tk.Run), HoldMaxUs: hold + 200, LateP50Us: 1.5, LateP99Us: 9, LagP50Us: 30, LagP99Us: 140,
			CPUCores: 0.21 + 0.01*float64(i), WallS: 1.2})
	}
	return rows
}

// goldenWireRows is what the captures saw of one go task: 0.02 ms one way
// through the shaper, 0.005 ms without it, plus half the setting; the
// database's side at 1 ms 0.03 ms late in run 1 (one task off), and one
// task at 0.5 ms with a full ring (incomplete).
func goldenWireRows(tk raw.Task, attempt int) []raw.WireRow {
	var rows []raw.WireRow
	for i, dir := range []string{workloads.DirAppToDB, workloads.DirDBToApp} {
		p50 := 0.02 + tk.RTTms/2 + 0.001*float64(tk.Run%3)
		if tk.Unshaped {
			p50 = 0.005
		}
		if dir == workloads.DirDBToApp && tk.RTTms == 1 && tk.Run == 1 {
			p50 += 0.03
		}
		r := raw.WireRow{Task: tk.ID, Attempt: attempt, App: tk.App, Route: tk.Route, RTTms: tk.RTTms, Unshaped: tk.Unshaped, Direction: dir,
			Sent: 200 + i, Matched: 200 + i, P50Ms: p50, P99Ms: p50 + 0.2, Requests: 22, Anatomized: 22}
		if tk.RTTms == 0.5 && tk.Run == 2 {
			r.Drops = 3
		}
		rows = append(rows, r)
	}
	return rows
}

// goldenAnatomy takes each measured request of a go task apart: per
// statement a round trip of 0.02 ms each way through the shaper (0.005
// without it) plus half the setting, 0.02 ms at the database; the load
// client 0.1 ms, the legs 0.02; the app the rest.
func goldenAnatomy(tk raw.Task, attempt int, c cellSpec, samples []raw.Sample) []raw.AnatomyRow {
	var out []raw.AnatomyRow
	oneWay := 0.02 + tk.RTTms/2
	if tk.Unshaped {
		oneWay = 0.005
	}
	for _, x := range samples {
		if x.Warmup {
			continue
		}
		lat := float64(x.LatencyNS) / 1e6
		ra := workloads.RequestAnatomy{Seq: x.Seq, LatencyMs: lat, ClientMs: 0.1, LegInMs: 0.01, LegOutMs: 0.01, RoundTrips: int(c.statements),
			WireOutMs: c.statements * oneWay, WireBackMs: c.statements * oneWay, DBMs: c.statements * 0.02}
		ra.AppPreMs = 0.05
		ra.AppPostMs = lat - ra.ClientMs - ra.LegInMs - ra.LegOutMs - ra.WireMs() - ra.DBMs - ra.AppPreMs
		out = append(out, raw.AnatomyRow{Task: tk.ID, Attempt: attempt, App: tk.App, Route: tk.Route, RTTms: tk.RTTms, Unshaped: tk.Unshaped,
			Run: tk.Run, Failed: x.Failed(), RequestAnatomy: ra.Rounded()})
	}
	return out
}

var goldenSpecs = []cellSpec{
	{app: "go", route: "/feed", base: 0.9, statements: 3, settings: []float64{0, 0.5, 1}, runs: 6, unshaped: 6},
	{app: "go", route: "/feed-naive", base: 1.2, statements: 12, settings: []float64{0, 0.5, 1}, runs: 6, unshaped: 6},
	{app: "node", route: "/feed", base: 1.4, statements: 3, settings: []float64{0, 0.75}, runs: 3},
}

func TestRenderGolden(t *testing.T) {
	dir := writeGoldenFolder(t, goldenSpecs)
	mustNoErr(t, Render(dir))
	for _, g := range []struct{ file, golden string }{
		{SummaryMDFile, "summary.golden.md"},
		{SummaryJSONFile, "summary.golden.json"},
		{RunsFile, "runs.golden.csv"},
	} {
		got, err := os.ReadFile(filepath.Join(dir, g.file))
		mustNoErr(t, err)
		checkGolden(t, g.file, got, filepath.Join("testdata", g.golden))
	}
	// Rendering again from the raw files gives the same bytes.
	before, _ := os.ReadFile(filepath.Join(dir, SummaryMDFile))
	mustNoErr(t, Render(dir))
	after, _ := os.ReadFile(filepath.Join(dir, SummaryMDFile))
	if !bytes.Equal(before, after) {
		t.Error("second Render changed summary.md")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// checkGolden compares got, named what, with the golden file gp, or
// rewrites gp with -update.
func checkGolden(t *testing.T, what string, got []byte, gp string) {
	t.Helper()
	if *update {
		mustNoErr(t, os.MkdirAll(filepath.Dir(gp), 0o755))
		mustNoErr(t, os.WriteFile(gp, got, 0o644))
		return
	}
	want, err := os.ReadFile(gp)
	mustNoErr(t, err)
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (go test ./results -update rewrites it; check the change first):\n%s",
			what, gp, firstDiff(string(got), string(want)))
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n got: " + a + "\nwant: " + b
		}
	}
	return "(no line differs)"
}

func itoa(i int) string { return fmtSetting(float64(i)) }

// The numbers behind the golden file, checked by reasoning: latencies are
// base + statements × setting + noise, so each change is close to the
// predicted change and the ratio close to the statement count.
func TestAnalyzeGoldenData(t *testing.T) {
	d, err := raw.Load(writeGoldenFolder(t, goldenSpecs))
	mustNoErr(t, err)
	s := Analyze(d, Options{})
	cells := map[string]Cell{}
	for _, c := range s.Cells {
		cells[CellKey(c.App, c.Route, c.RTTms)] = c
	}
	feed, naive := cells[CellKey("go", "/feed", 1)], cells[CellKey("go", "/feed-naive", 1)]
	for _, c := range []Cell{feed, naive} {
		if !c.HasBaseline || math.Abs(c.Change-c.Predicted) > 0.1 || math.Abs(c.Ratio-c.Statements) > 0.1 {
			t.Errorf("%s %s: change %v, predicted %v, ratio %v", c.App, c.Route, c.Change, c.Predicted, c.Ratio)
		}
		if c.LowN || c.NRuns != 6 || !(c.ChangeCI.Low <= c.Change && c.Change <= c.ChangeCI.High) ||
			!(c.CI.Low <= c.P50 && c.P50 <= c.CI.High) {
			t.Errorf("%s %s: %+v", c.App, c.Route, c)
		}
	}
	if !(naive.Change > feed.Change && feed.Change > 0) {
		t.Errorf("/feed-naive change %v should exceed /feed change %v > 0", naive.Change, feed.Change)
	}
	if feed.Failures != 2 || feed.WarmupFailures != 1 || feed.NRequests != 6*20-2 {
		t.Errorf("/feed at 1 ms: failures %d, warmup failures %d, requests %d", feed.Failures, feed.WarmupFailures, feed.NRequests)
	}
	node := cells[CellKey("node", "/feed", 0.75)]
	if !node.LowN || node.NRuns != 2 {
		t.Errorf("node /feed at 0.75 ms: LowN %v, runs %d", node.LowN, node.NRuns)
	}
	if s.TasksDone != s.TasksPlanned-1 {
		t.Errorf("tasks done %d of %d", s.TasksDone, s.TasksPlanned)
	}
	var sel ProbeStat
	for _, p := range s.Probes {
		if p.Kind == raw.ProbeSelect1 && p.RTTms == 1 {
			sel = p
		}
		if p.Kind == raw.ProbeICMP && p.RTTms == 1 && (!p.OutOfTolerance || math.Abs(p.Added-1.062) > 1e-9) {
			t.Errorf("icmp at 1 ms: %+v (added 1.062, out of tolerance)", p)
		}
		if p.Kind == raw.ProbeICMP && p.RTTms == 0.5 && p.OutOfTolerance {
			t.Errorf("icmp at 0.5 ms flagged: %+v", p)
		}
	}
	// Each SELECT 1 run median is 0.31 + setting + the same per-run offset,
	// so the change is exactly the setting up to rounding.
	if math.Abs(sel.Added-1) > 1e-9 || sel.OutOfTolerance || !sel.CI.Valid() {
		t.Errorf("select1 at 1 ms: %+v", sel)
	}
}

// Adding an app leaves every other cell's numbers, intervals included,
// unchanged: each cell has its own generator.
func TestCellsIndependentOfOtherApps(t *testing.T) {
	one, err := raw.Load(writeGoldenFolder(t, goldenSpecs[:1]))
	mustNoErr(t, err)
	// The same go /feed data must come first in the stream, so keep go
	// /feed first and add the others after it. "axum" sorts before "go":
	// were the cells' intervals drawn from one stream in cell order, its
	// cells would use up draws before go's and change go's intervals.
	specs := append([]cellSpec{goldenSpecs[0], {app: "axum", route: "/feed", base: 0.7, statements: 3, settings: []float64{0, 0.5, 1}, runs: 6}},
		goldenSpecs[1:]...)
	all, err := raw.Load(writeGoldenFolder(t, specs))
	mustNoErr(t, err)
	// Few resamples: with 10,000 the tails of a 6-run median land on the
	// same order statistics whatever the stream, and any stream would pass.
	o := Options{Resamples: 25}
	a, b := Analyze(one, o), Analyze(all, o)
	if b.Cells[0].App != "axum" {
		t.Fatalf("first cell is %s, want axum", b.Cells[0].App)
	}
	for _, c := range a.Cells {
		var found bool
		for _, x := range b.Cells {
			if x.App == c.App && x.Route == c.Route && x.RTTms == c.RTTms {
				found = true
				if x.P50 != c.P50 || x.CI != c.CI || !sameFloat(x.Change, c.Change) || !sameIv(x.ChangeCI, c.ChangeCI) {
					t.Errorf("%s %s at %v changed when apps were added:\n%+v\n%+v", c.App, c.Route, c.RTTms, c, x)
				}
			}
		}
		if !found {
			t.Errorf("cell %s %s at %v missing", c.App, c.Route, c.RTTms)
		}
	}
}

func sameFloat(a, b float64) bool     { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
func sameIv(a, b stats.Interval) bool { return sameFloat(a.Low, b.Low) && sameFloat(a.High, b.High) }

func TestStudyLine(t *testing.T) {
	c := Cell{App: "go", Route: "/feed", RTTms: 0.75, NRuns: 20, P50: 3.40, HasBaseline: true, BaselineP50: 0.91,
		BaselineRuns: 20, Change: 2.49, ChangeCI: stats.Interval{Low: 2.29, High: 2.63}, Percent: 273.6, PercentCI: stats.Interval{Low: 249.6, High: 290.2},
		HasStatements: true, Statements: 3, Predicted: 2.25}
	want := "go /feed: 0.91 ms at 0 ms, 3.40 ms at 0.75 ms. Change: +2.49 ms [2.29, 2.63], +274% [250, 290] (predicted +2.25)."
	if got := studyLine(&c, Options{}.withDefaults()); got != want {
		t.Errorf("study line\n got %s\nwant %s", got, want)
	}
	c.LowN, c.BaselineRuns, c.NRuns = true, 3, 2
	c.Change, c.ChangeCI, c.Percent, c.PercentCI = -0.001, stats.Interval{Low: -0.3, High: 0.0001}, -0.1, stats.Interval{Low: -30.2, High: 0.01}
	want = "go /feed: 0.91 ms at 0 ms, 3.40 ms at 0.75 ms. Change: +0.00 ms [-0.30, 0.00], +0% [-30, 0] (predicted +2.25). **Low n** (3 runs at 0 ms, 2 at 0.75 ms; 6 needed): no claim."
	if got := studyLine(&c, Options{}.withDefaults()); got != want {
		t.Errorf("low-n study line\n got %s\nwant %s", got, want)
	}
}
