package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/rtt/raw"
)

// failuresData is one app and route at 0 and 1 ms, 6 runs of 100
// measured requests each; failed[rtt] requests of run 1 fail and
// retried[rtt] of run 2 were re-sent by the client.
func failuresData(failed, retried map[float64]int) *raw.Data {
	d := &raw.Data{Manifest: raw.Manifest{PlanName: "f", Seed: 3}, Done: map[int]int{}}
	id := 0
	for _, rtt := range []float64{0, 1} {
		for run := 1; run <= 6; run++ {
			id++
			d.Manifest.Tasks = append(d.Manifest.Tasks, raw.Task{ID: id, App: "go", Route: "/feed", RTTms: rtt, Run: run})
			d.Done[id] = 1
			for seq := range 100 {
				s := raw.Sample{Task: id, Attempt: 1, App: "go", Route: "/feed", RTTms: rtt, Run: run, Seq: seq,
					LatencyNS: int64((1 + 3*rtt + 0.001*float64(seq%7+run)) * 1e6), Status: 200}
				if run == 1 && seq < failed[rtt] {
					s.Status = 503
				}
				if run == 2 && seq < retried[rtt] {
					s.Retried = true
				}
				d.Samples = append(d.Samples, s)
			}
		}
	}
	return d
}

// A cell with more than 1% failed measured requests, or whose baseline
// has that many, makes no claim, like a cell with too few runs.
func TestFailedRequestsGate(t *testing.T) {
	cell := func(s *Summary, rtt float64) Cell {
		for _, c := range s.Cells {
			if c.RTTms == rtt {
				return c
			}
		}
		t.Fatalf("no cell at %v ms", rtt)
		return Cell{}
	}
	// 6 of 600 is exactly 1%: a claim. 7 of 600 is more: none.
	for _, c := range []struct {
		name            string
		failed          map[float64]int
		baseGate, gate  bool
		summaryContains string
	}{
		{"none", nil, false, false, ""},
		{"1% at 1 ms", map[float64]int{1: 6}, false, false, ""},
		{"over 1% at 1 ms", map[float64]int{1: 7}, false, true, "**Failed requests** (0 of 600 at 0 ms, 7 of 600 at 1 ms; at most 1% for a claim): no claim."},
		{"over 1% at 0 ms", map[float64]int{0: 7}, true, true, "**Failed requests** (7 of 600 at 0 ms, 0 of 600 at 1 ms; at most 1% for a claim): no claim."},
	} {
		s := Analyze(failuresData(c.failed, nil), Options{Resamples: 200})
		base, target := cell(s, 0), cell(s, 1)
		if base.TooManyFailures != c.baseGate || target.TooManyFailures != c.gate || target.NoClaim() != c.gate || target.LowN {
			t.Errorf("%s: baseline gate %v, target gate %v (no claim %v, low n %v); want %v, %v",
				c.name, base.TooManyFailures, target.TooManyFailures, target.NoClaim(), target.LowN, c.baseGate, c.gate)
		}
		md := string(s.Markdown())
		if c.summaryContains != "" && !strings.Contains(md, c.summaryContains) {
			t.Errorf("%s: summary.md lacks %q:\n%s", c.name, c.summaryContains, md)
		}
		if c.summaryContains == "" && strings.Contains(md, "**Failed requests**") {
			t.Errorf("%s: summary.md withholds a claim:\n%s", c.name, md)
		}
	}
	// compare carries the gate into its verdict.
	if v := verdict(CompareRow{TooManyFailures: true}); !strings.Contains(v, "failed requests, no claim") {
		t.Errorf("compare verdict %q", v)
	}
}

// Requests the HTTP client re-sent are counted per run, per cell and in
// the summaries.
func TestRetriedCounted(t *testing.T) {
	s := Analyze(failuresData(nil, map[float64]int{1: 4}), Options{Resamples: 200})
	var c Cell
	for _, x := range s.Cells {
		if x.RTTms == 1 {
			c = x
		}
	}
	if c.Retried != 4 {
		t.Fatalf("cell retried %d, want 4", c.Retried)
	}
	js, err := s.JSON()
	mustNoErr(t, err)
	var sum struct {
		Cells []struct {
			RTTms   float64 `json:"rtt_ms"`
			Retried int     `json:"retried"`
		} `json:"cells"`
	}
	mustNoErr(t, json.Unmarshal(js, &sum))
	if sum.Cells[1].RTTms != 1 || sum.Cells[1].Retried != 4 {
		t.Errorf("summary.json cells %+v", sum.Cells)
	}
	md := string(s.Markdown())
	if !strings.Contains(md, "| 0, 4 re-sent |") || !strings.Contains(md, "4 measured requests were re-sent by the HTTP client") {
		t.Errorf("summary.md does not count re-sent requests:\n%s", md)
	}
}

// samples.jsonl keeps the re-sent flag; lines written before it existed
// still load.
func TestSampleRetriedOnDisk(t *testing.T) {
	f, err := raw.Create(t.TempDir(), "r", testStart)
	mustNoErr(t, err)
	mustNoErr(t, f.WriteManifest(&raw.Manifest{PlanName: "r", Tasks: []raw.Task{{ID: 1, App: "go", Route: "/feed", Run: 1}}}))
	mustNoErr(t, f.AppendSamples(1, 1, []raw.Sample{
		{Task: 1, Attempt: 1, App: "go", Route: "/feed", Run: 1, Seq: 0, LatencyNS: 5, Status: 200, Retried: true},
		{Task: 1, Attempt: 1, App: "go", Route: "/feed", Run: 1, Seq: 1, LatencyNS: 5, Status: 200},
	}))
	mustNoErr(t, f.MarkDone(1, 1))
	mustNoErr(t, f.Close())
	b, err := os.ReadFile(filepath.Join(f.Dir(), raw.SamplesFile))
	mustNoErr(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if !strings.Contains(lines[0], `"retried":true`) || strings.Contains(lines[1], "retried") {
		t.Fatalf("samples.jsonl:\n%s", b)
	}
	d, err := raw.Load(f.Dir())
	mustNoErr(t, err)
	if len(d.Samples) != 2 || !d.Samples[0].Retried || d.Samples[1].Retried {
		t.Fatalf("loaded %+v", d.Samples)
	}
}

// runsData is go /feed with runs[rtt] runs at each setting, 20 requests
// each.
func runsData(runs map[float64]int) *raw.Data {
	d := &raw.Data{Manifest: raw.Manifest{PlanName: "n", Seed: 5}, Done: map[int]int{}}
	id := 0
	for _, rtt := range []float64{0, 1} {
		for run := 1; run <= runs[rtt]; run++ {
			id++
			d.Manifest.Tasks = append(d.Manifest.Tasks, raw.Task{ID: id, App: "go", Route: "/feed", RTTms: rtt, Run: run})
			d.Done[id] = 1
			for seq := range 20 {
				d.Samples = append(d.Samples, raw.Sample{Task: id, Attempt: 1, App: "go", Route: "/feed", RTTms: rtt, Run: run, Seq: seq,
					LatencyNS: int64((1 + 3*rtt + 0.01*float64(seq%5+run)) * 1e6), Status: 200})
			}
		}
	}
	return d
}

// Exactly at the boundary: 5 runs (one fewer than the 6 a claim needs) is
// low n, in the cell or in its baseline; 6 is not.
func TestLowNBoundary(t *testing.T) {
	for _, c := range []struct {
		base, target   int
		baseLow, low   bool
		summaryHasLowN bool
	}{
		{6, 6, false, false, false},
		{6, 5, false, true, true},
		{5, 6, true, true, true},
	} {
		s := Analyze(runsData(map[float64]int{0: c.base, 1: c.target}), Options{Resamples: 200})
		if len(s.Cells) != 2 {
			t.Fatalf("%d cells", len(s.Cells))
		}
		b, x := s.Cells[0], s.Cells[1]
		if b.NRuns != c.base || x.NRuns != c.target || b.LowN != c.baseLow || x.LowN != c.low || x.NoClaim() != c.low {
			t.Errorf("%d/%d runs: baseline low n %v, target low n %v; want %v, %v", c.base, c.target, b.LowN, x.LowN, c.baseLow, c.low)
		}
		if got := strings.Contains(string(s.Markdown()), "**Low n**"); got != c.summaryHasLowN {
			t.Errorf("%d/%d runs: summary.md low-n line %v, want %v", c.base, c.target, got, c.summaryHasLowN)
		}
	}
}
