package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/raw"
)

// editLines rewrites the file name of dir, keeping the lines keep says.
func editLines(t *testing.T, dir, name string, keep func(line string) bool, add ...string) {
	t.Helper()
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	mustNoErr(t, err)
	var out []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l != "" && keep(l) {
			out = append(out, l)
		}
	}
	mustNoErr(t, os.WriteFile(p, []byte(strings.Join(append(out, add...), "")), 0o644))
}

// verdictOf is the wire's verdict on app at rtt.
func verdictOf(s *Summary, app string, rtt float64) (WireVerdict, bool) {
	for _, v := range s.WireVerdicts {
		if v.App == app && v.RTTms == rtt {
			return v, true
		}
	}
	return WireVerdict{}, false
}

// A results folder whose wire.csv or anatomy.jsonl is cut, lost, or
// holds rows of tasks the manifest does not have: the report says which
// and how many, renders the rest, and never turns the missing figures
// into a verified setting.
func TestReportOfBrokenWireFiles(t *testing.T) {
	goSpecs := goldenSpecs[:1]
	firstAt := func(d *raw.Data, rtt float64) int {
		for _, tk := range d.Manifest.Tasks {
			if tk.RTTms == rtt && !tk.Unshaped {
				return tk.ID
			}
		}
		t.Fatalf("no task at %g ms", rtt)
		return 0
	}
	t.Run("cut", func(t *testing.T) {
		dir := writeGoldenFolder(t, goSpecs)
		d, err := raw.Load(dir)
		mustNoErr(t, err)
		if v, _ := verdictOf(Analyze(d, Options{}), "go", 0.5); v.Status != WireIncomplete {
			t.Fatalf("the golden folder's 0.5 ms: %s, want incomplete (its full ring)", v.Status)
		}
		lost := firstAt(d, 1)
		editLines(t, dir, raw.WireFile, func(l string) bool { return !strings.HasPrefix(l, itoa(lost)+",") })
		d, err = raw.Load(dir)
		mustNoErr(t, err)
		s := Analyze(d, Options{})
		v, _ := verdictOf(s, "go", 1)
		if v.Status == WireVerified || !strings.Contains(v.Why, "1 done task(s) have no wire figures") {
			t.Errorf("1 ms with a task's wire rows cut: %s (%s)", v.Status, v.Why)
		}
		if !strings.Contains(strings.Join(d.Notes, "\n"), "wire.csv: 1 done task(s) have no rows (task "+itoa(lost)+")") {
			t.Errorf("notes: %q", d.Notes)
		}
		mustNoErr(t, Render(dir))
		md, err := os.ReadFile(filepath.Join(dir, SummaryMDFile))
		mustNoErr(t, err)
		if !strings.Contains(string(md), "have no wire figures") || !strings.Contains(string(md), "| go | 0 ms | app->db |") {
			t.Errorf("the summary does not say it, or lost the rest:\n%s", md)
		}
	})
	t.Run("unknown tasks", func(t *testing.T) {
		dir := writeGoldenFolder(t, goSpecs)
		editLines(t, dir, raw.WireFile, func(string) bool { return true },
			"999,1,go,/feed,1,false,app->db,10,10,0,0,0.5200,0.6200,0,false,5,5,0,0,,0,0,0,0\n")
		editLines(t, dir, raw.AnatomyFile, func(string) bool { return true }, `{"task":998,"attempt":1,"app":"go","route":"/feed","rtt_ms":1,"run":1,"seq":1,"latency_ms":1}`+"\n")
		d, err := raw.Load(dir)
		mustNoErr(t, err)
		if n := strings.Join(d.Notes, "\n"); !strings.Contains(n, "rows of 2 task(s) the manifest does not have (task 998, 999): left out") {
			t.Errorf("notes: %q", d.Notes)
		}
		for _, r := range d.Wire {
			if r.Task == 999 {
				t.Error("a row of an unknown task was read")
			}
		}
	})
	t.Run("anatomy lost", func(t *testing.T) {
		dir := writeGoldenFolder(t, goSpecs)
		mustNoErr(t, os.Remove(filepath.Join(dir, raw.AnatomyFile)))
		d, err := raw.Load(dir)
		mustNoErr(t, err)
		if n := strings.Join(d.Notes, "\n"); !strings.Contains(n, "anatomy.jsonl: no request of 24 task(s) that wire.csv says were taken apart") {
			t.Errorf("notes: %q", d.Notes)
		}
		s := Analyze(d, Options{})
		for _, c := range s.Cells {
			if c.HasAttribution {
				t.Errorf("%s at %g ms: where the time went, from no request", c.Route, c.RTTms)
			}
		}
	})
	t.Run("wire.csv lost", func(t *testing.T) {
		dir := writeGoldenFolder(t, goSpecs)
		mustNoErr(t, os.Remove(filepath.Join(dir, raw.WireFile)))
		mp := filepath.Join(dir, results.ManifestFile)
		b, err := os.ReadFile(mp)
		mustNoErr(t, err)
		var m map[string]any
		mustNoErr(t, json.Unmarshal(b, &m))
		m["wire_checked"] = true
		b, err = json.Marshal(m)
		mustNoErr(t, err)
		mustNoErr(t, os.WriteFile(mp, b, 0o644))
		d, err := raw.Load(dir)
		mustNoErr(t, err)
		s := Analyze(d, Options{})
		for _, rtt := range []float64{0.5, 1} {
			v, ok := verdictOf(s, "go", rtt)
			if !ok || v.Status != WireNoData {
				t.Errorf("%g ms without wire.csv: %+v, want no data", rtt, v)
			}
		}
		for _, c := range s.Cells {
			if c.RTTms > 0 && len(c.Unverified) == 0 {
				t.Errorf("%s at %g ms verified without its wire figures", c.Route, c.RTTms)
			}
		}
		mustNoErr(t, Render(dir))
		md, err := os.ReadFile(filepath.Join(dir, SummaryMDFile))
		mustNoErr(t, err)
		checkGolden(t, "summary.md of a folder that lost its wire.csv", md, filepath.Join("testdata", "nowire.golden.md"))
	})
}
