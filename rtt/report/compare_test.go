package report

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/raw"
)

// writeCompareFolder writes a complete study: for each spec, every
// setting and run, 2 warmup and 20 measured requests with latency
// base + statements × setting + uniform noise in [0, 0.2) ms from
// PCG(noise, 7), in whole nanoseconds, plus shiftNS(task) nanoseconds.
func writeCompareFolder(t *testing.T, seed, noise uint64, settings []float64, runs int, specs []cellSpec, shiftNS func(raw.Task) int64) string {
	t.Helper()
	f, err := raw.Create(t.TempDir(), "cmp", testStart)
	mustNoErr(t, err)
	m := &raw.Manifest{PlanName: "cmp", Seed: seed, Shaper: "nfqueue", Version: "v0.0.0-test", Start: testStart}
	id := 0
	for _, c := range specs {
		m.Statements = append(m.Statements, raw.RouteStatements{App: c.app, Route: c.route, PerRequest: c.statements})
		for _, s := range settings {
			for run := 1; run <= runs; run++ {
				id++
				m.Tasks = append(m.Tasks, raw.Task{ID: id, App: c.app, Route: c.route, RTTms: s, Run: run})
			}
		}
	}
	mustNoErr(t, f.WriteManifest(m))
	rng := rand.New(rand.NewPCG(noise, 7))
	for i, tk := range m.Tasks {
		c := specs[(i)/(len(settings)*runs)]
		var s []raw.Sample
		for seq := range 22 {
			ns := int64((c.base + c.statements*tk.RTTms + 0.2*rng.Float64()) * 1e6)
			if shiftNS != nil {
				ns += shiftNS(tk)
			}
			s = append(s, raw.Sample{App: tk.App, Route: tk.Route, RTTms: tk.RTTms, Run: tk.Run, Seq: seq, Warmup: seq < 2,
				LatencyNS: ns, Status: 200})
		}
		mustNoErr(t, f.AppendSamples(tk.ID, 1, s))
		mustNoErr(t, f.MarkDone(tk.ID, 1))
	}
	mustNoErr(t, f.Close())
	return f.Dir()
}

var cmpSettings = []float64{0, 0.5, 1}

// Reasoning check: B is A with every target run (setting > 0) 0.25 ms
// slower, the baselines identical, so every difference of changes is
// exactly 0.25 ms and its interval holds it.
func TestCompareShiftedTargets(t *testing.T) {
	t.Parallel()
	specs := goldenSpecs[:2]
	const c = 250_000 // ns
	a := writeCompareFolder(t, 11, 1, cmpSettings, 8, specs, nil)
	b := writeCompareFolder(t, 12, 1, cmpSettings, 8, specs, func(tk raw.Task) int64 {
		if tk.RTTms > 0 {
			return c
		}
		return 0
	})
	cmp, err := Compare(a, b, Options{})
	mustNoErr(t, err)
	if len(cmp.Rows) != 6 || len(cmp.OnlyA)+len(cmp.OnlyB) != 0 {
		t.Fatalf("rows %d, only A %v, only B %v", len(cmp.Rows), cmp.OnlyA, cmp.OnlyB)
	}
	for _, r := range cmp.Rows {
		if r.RTTms == 0 {
			if r.HasDiff || r.A.P50 != r.B.P50 {
				t.Errorf("%s %s at 0 ms: %+v", r.App, r.Route, r)
			}
			continue
		}
		if !r.HasDiff || math.Abs(r.DiffChange-0.25) > 1e-12 {
			t.Errorf("%s %s at %v ms: difference %v, want 0.25", r.App, r.Route, r.RTTms, r.DiffChange)
		}
		if !(r.DiffCI.Low <= 0.25 && 0.25 <= r.DiffCI.High) || r.DiffCI.High-r.DiffCI.Low > 0.2 {
			t.Errorf("%s %s at %v ms: CI %v", r.App, r.Route, r.RTTms, r.DiffCI)
		}
	}
	// Comparing a folder with itself: every difference is 0.
	self, err := Compare(a, a, Options{})
	mustNoErr(t, err)
	for _, r := range self.Rows {
		if r.HasDiff && (r.DiffChange != 0 || !(r.DiffCI.Low <= 0 && 0 <= r.DiffCI.High)) {
			t.Errorf("self-compare %s %s at %v: %v %v", r.App, r.Route, r.RTTms, r.DiffChange, r.DiffCI)
		}
	}
}

// Two fixed folders: B's go /feed pays 3.5 ms per ms of RTT instead of 3
// (as a shaper that overshoots would), so its change at 1 ms grows by
// about 0.5 ms; /feed-naive is the same study with other noise.
func TestCompareGolden(t *testing.T) {
	t.Parallel()
	a := writeCompareFolder(t, 11, 1, cmpSettings, 8, goldenSpecs[:2], nil)
	b := writeCompareFolder(t, 12, 2, cmpSettings, 8, goldenSpecs[:2], func(tk raw.Task) int64 {
		if tk.Route == "/feed" {
			return int64(tk.RTTms * 500_000)
		}
		return 0
	})
	cmp, err := Compare(a, b, Options{})
	mustNoErr(t, err)
	pinned := map[string][3]float64{ // difference, CI low, CI high
		CellKey("go", "/feed", 0.5):       {0.27487625, 0.23094805, 0.29676370625},
		CellKey("go", "/feed", 1):         {0.5040775, 0.45783159375, 0.5391995},
		CellKey("go", "/feed-naive", 0.5): {-0.027841, -0.05661066875, 0.0107609375},
		CellKey("go", "/feed-naive", 1):   {-0.0178945, -0.043759875, 0.01440233125},
	}
	for _, r := range cmp.Rows {
		want, ok := pinned[CellKey(r.App, r.Route, r.RTTms)]
		if !ok {
			continue
		}
		got := [3]float64{r.DiffChange, r.DiffCI.Low, r.DiffCI.High}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-9 {
				t.Errorf("%s %s at %v ms: difference and CI %v, pinned %v", r.App, r.Route, r.RTTms, got, want)
				break
			}
		}
		delete(pinned, CellKey(r.App, r.Route, r.RTTms))
	}
	if len(pinned) > 0 {
		t.Errorf("rows missing: %v", pinned)
	}
	cmp.DirA, cmp.DirB = "A", "B"
	got := cmp.Markdown()
	checkGolden(t, "compare markdown", got, filepath.Join("testdata", "compare.golden.md"))
}

func TestCompareRefusesMismatchedFolders(t *testing.T) {
	t.Parallel()
	a := writeCompareFolder(t, 1, 1, []float64{0, 0.5, 1}, 2, goldenSpecs[:1], nil)
	b := writeCompareFolder(t, 1, 1, []float64{0, 0.25, 0.5}, 2, goldenSpecs[:1], nil)
	_, err := Compare(a, b, Options{})
	want := "compare: the folders have different settings: A has 0, 0.5, 1 ms; B has 0, 0.25, 0.5 ms"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	node := writeCompareFolder(t, 1, 1, []float64{0, 0.5, 1}, 2, goldenSpecs[2:], nil)
	_, err = Compare(a, node, Options{})
	want = "compare: no common cell with data: A has go /feed; B has node /feed"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	_, err = Compare(a, filepath.Join(t.TempDir(), "nothing"), Options{})
	if err == nil || !strings.Contains(err.Error(), "folder B") || !strings.Contains(err.Error(), results.ManifestFile) {
		t.Errorf("err = %v, want folder B and %s named", err, results.ManifestFile)
	}
}

func TestCompareListsCellsInOneFolder(t *testing.T) {
	t.Parallel()
	a := writeCompareFolder(t, 1, 1, cmpSettings, 2, goldenSpecs[:2], nil)
	b := writeCompareFolder(t, 2, 1, cmpSettings, 2, []cellSpec{goldenSpecs[0], goldenSpecs[2]}, nil)
	cmp, err := Compare(a, b, Options{})
	mustNoErr(t, err)
	if got := strings.Join(cmp.OnlyA, "; "); got != "go /feed-naive at 0 ms; go /feed-naive at 0.5 ms; go /feed-naive at 1 ms" {
		t.Errorf("only in A: %s", got)
	}
	if got := strings.Join(cmp.OnlyB, "; "); got != "node /feed at 0 ms; node /feed at 0.5 ms; node /feed at 1 ms" {
		t.Errorf("only in B: %s", got)
	}
	if len(cmp.Rows) != 3 || !cmp.Rows[1].LowN {
		t.Errorf("rows %+v", cmp.Rows)
	}
	md := string(cmp.Markdown())
	for _, w := range []string{"- only in A: go /feed-naive at 1 ms", "- only in B: node /feed at 0 ms", "low n, no claim", "| seed | 1 | 2 |"} {
		if !strings.Contains(md, w) {
			t.Errorf("markdown lacks %q:\n%s", w, md)
		}
	}
	// An interval that includes 0 shows no measurable difference; it does
	// not show that there is none.
	if strings.Contains(md, "shows no difference") || !strings.Contains(md, "no measurable difference") {
		t.Errorf("the note on \"~\" claims more than the interval shows:\n%s", md)
	}
}
