package report

import (
	"bytes"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/rtt/raw"
)

// externalRef matches anything in HTML or CSS that would make a browser
// fetch: an address in src, href, srcset, action, xlink:href, poster or
// data attributes, a url(...) or an @import. Fragment links (#id) pass.
var externalRef = regexp.MustCompile(`(?i)((src|href|srcset|action|poster|data)\s*=\s*["']?\s*([a-z][a-z0-9+.-]*:|//))|url\(\s*['"]?\s*([a-z][a-z0-9+.-]*:|//)|@import`)

func TestExternalRefPattern(t *testing.T) {
	for _, bad := range []string{`<img src="https://x/y.png">`, `<a href='//cdn.example/x'>`, `<link href=http://x/a.css>`,
		`style="background:url( 'https://x/i.png')"`, `@import "a.css";`, `<image xlink:href="data:image/png;base64,AA">`} {
		if !externalRef.MatchString(bad) {
			t.Errorf("pattern misses %s", bad)
		}
	}
	for _, ok := range []string{`<a href="#summary">`, `<figure id="plot-latency">`} {
		if externalRef.MatchString(ok) {
			t.Errorf("pattern flags %s", ok)
		}
	}
}

func TestReportHTML(t *testing.T) {
	t.Parallel()
	dir := writeGoldenFolder(t, goldenSpecs)
	mustNoErr(t, Render(dir))
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	mustNoErr(t, err)
	h := string(b)
	text := html.UnescapeString(h)
	for _, s := range reportSections {
		if !strings.Contains(h, `<section id="`+s.ID+`">`+"\n<h2>"+s.Title+"</h2>") {
			t.Errorf("section %s (%s) missing", s.ID, s.Title)
		}
		if !strings.Contains(h, `<a href="#`+s.ID+`">`) {
			t.Errorf("no link to section %s", s.ID)
		}
	}
	want := []string{
		// the summary sentence of go /feed at 1 ms, in the study's words
		"go /feed: 0.90 ms unshaped, 1.01 ms at 0 ms, 4.02 ms at 1 ms. Change: +3.01 ms [2.95, 3.04], +335% [326, 342] of unshaped (predicted +3.00). Where it went: +3.00 = wire +3.00 (3.00 configured) + app +0.00 + database +0.00 + client +0.00.",
		// the overview: the verdict's three parts, the compact table, the
		// tables of where the time went, the baselines and the wire
		"wire (captured in both namespaces on every task): 0.5 ms incomplete, 1 ms off",
		`<table class="grid">`, `<th>go /feed</th>`, `<span class="wirepart">wire +3.00</span>`,
		`<h3>At 1 ms</h3>`, `<h3 id="baselines">`, `<h3 id="verification-wire">The wire</h3>`,
		"reported, not the verdict",
		`<h3 id="app-go">go</h3>`, `<h3 id="app-node">node</h3>`,
		`<td>/feed-naive</td>`, "(low n)",
		`<h3 id="warnings-lown">Low n</h3>`, "node /feed at 0.75 ms: 2 runs",
		`<h3 id="warnings-skipped">Skipped apps</h3>`, "<td>aimeos</td><td>Packagist is unreachable from this host</td>",
		`<h3 id="warnings-failures">Failed requests</h3>`, "<td>go /feed at 1 ms</td><td class=\"num\">2 of 120</td><td class=\"num\">1</td>",
		"app container exited (code 137)",
		`<td class="bad">out of tolerance</td>`, "1 probe value(s) out of tolerance",
		"<th>why this shaper</th><td>kernel lacks sch_netem</td>", "<th>seed</th><td>20261129</td>",
		"<th>scope</th><td>app-db</td>", "<th>rttlab version</th><td>v0.0.0-test (0000000)</td>",
		`<details id="task-order">`, "Task order (54 tasks, as run)", "synthetic data for the golden test",
	}
	for _, p := range plotNames {
		want = append(want, `<figure id="plot-`+p+`">`+"\n<svg ")
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	if m := externalRef.FindString(h); m != "" {
		t.Errorf("report.html refers outside itself: %q", m)
	}
	for _, bad := range []string{"http://", "https://", "<script", "<?xml"} {
		if strings.Contains(h, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	if n := strings.Count(h, "<svg "); n != len(plotNames) {
		t.Errorf("%d inline SVGs, want %d", n, len(plotNames))
	}
	for _, p := range plotNames {
		for _, ext := range []string{".svg", ".png"} {
			if fi, err := os.Stat(filepath.Join(dir, PlotsDir, p+ext)); err != nil || fi.Size() == 0 {
				t.Errorf("plots/%s%s: %v", p, ext, err)
			}
		}
	}
}

// The report written at the end of a run and one regenerated later from
// the raw files are the same bytes, plots included; a render of the same
// data in another folder is too.
func TestReportRegeneratesIdentically(t *testing.T) {
	t.Parallel()
	dir := writeGoldenFolder(t, goldenSpecs)
	mustNoErr(t, Render(dir))
	first := readDerived(t, dir)
	mustNoErr(t, Render(dir))
	if second := readDerived(t, dir); !equalFiles(t, first, second) {
		t.Error("a second render changed the report")
	}
	other := writeGoldenFolder(t, goldenSpecs)
	mustNoErr(t, Render(other))
	equalFiles(t, first, readDerived(t, other))
	for _, p := range plotNames {
		gold, err := os.ReadFile(filepath.Join("testdata", "plots", p+".svg"))
		mustNoErr(t, err)
		if !bytes.Equal(gold, first["plots/"+p+".svg"]) {
			t.Errorf("plots/%s.svg written by Render differs from the golden file", p)
		}
	}
}

func readDerived(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	names := []string{ReportFile, SummaryMDFile, SummaryJSONFile, RunsFile}
	for _, p := range plotNames {
		names = append(names, "plots/"+p+".svg", "plots/"+p+".png")
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		mustNoErr(t, err)
		out[n] = b
	}
	return out
}

func equalFiles(t *testing.T, a, b map[string][]byte) bool {
	t.Helper()
	ok := true
	for n, x := range a {
		if !bytes.Equal(x, b[n]) {
			t.Errorf("%s differs", n)
			ok = false
		}
	}
	return ok
}

// A broken raw file stops the render with the file and line, and leaves
// the earlier report and plots exactly as they were.
func TestRenderBadFolderWritesNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		mutate     func([]byte) []byte
		want       *regexp.Regexp
	}{
		{"missing manifest", results.ManifestFile, nil, regexp.MustCompile(`manifest\.json: no such file`)},
		{"missing samples", raw.SamplesFile, nil, regexp.MustCompile(`samples\.jsonl: no such file`)},
		{"truncated manifest", results.ManifestFile, func(b []byte) []byte { return b[:bytes.Index(b, []byte(`"tasks"`))] },
			regexp.MustCompile(`manifest\.json:4: not valid JSON: unexpected end of JSON input`)},
		{"bad middle sample", raw.SamplesFile, func(b []byte) []byte {
			lines := bytes.SplitAfter(b, []byte("\n"))
			lines[9] = []byte(`{"task":1,"attempt":1,"app":"go"` + "\n")
			return bytes.Join(lines, nil)
		}, regexp.MustCompile(`samples\.jsonl:10: not valid JSON: unexpected end of JSON input`)},
		{"bad probe row", raw.ProbesFile, func(b []byte) []byte {
			return bytes.Replace(b, []byte("go,select1,0,1,"), []byte("go,select1,zero,1,"), 1)
		}, regexp.MustCompile(`probes\.csv:3: column rtt_ms`)},
		{"bad task record", raw.TasksFile, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"status":"done"`), []byte(`"status":"ok"`), 1)
		}, regexp.MustCompile(`tasks\.jsonl:1: status "ok"`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := writeGoldenFolder(t, goldenSpecs[:1])
			mustNoErr(t, Render(dir))
			before := readDerived(t, dir)
			p := filepath.Join(dir, c.file)
			if c.mutate == nil {
				mustNoErr(t, os.Remove(p))
			} else {
				b, err := os.ReadFile(p)
				mustNoErr(t, err)
				mustNoErr(t, os.WriteFile(p, c.mutate(b), 0o644))
			}
			err := Render(dir)
			if err == nil || !c.want.MatchString(err.Error()) {
				t.Fatalf("err = %v, want it to match %s", err, c.want)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("err = %v does not name the folder", err)
			}
			equalFiles(t, before, readDerived(t, dir))
			for _, d := range []string{dir, filepath.Join(dir, PlotsDir)} {
				entries, _ := os.ReadDir(d)
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), ".") {
						t.Errorf("temporary file left: %s", e.Name())
					}
				}
			}
		})
	}
}

// A plot that loses its data is removed rather than left stale.
func TestRenderRemovesStalePlots(t *testing.T) {
	t.Parallel()
	dir := writeGoldenFolder(t, goldenSpecs[:1])
	mustNoErr(t, Render(dir))
	hdr := "app,kind,rtt_ms,run,task,n,mean_ms,median_ms,min_ms,max_ms,failures\n"
	mustNoErr(t, os.WriteFile(filepath.Join(dir, raw.ProbesFile), []byte(hdr), 0o644))
	mustNoErr(t, Render(dir))
	if _, err := os.Stat(filepath.Join(dir, PlotsDir, PlotVerification+".svg")); err == nil {
		t.Error("verification.svg left after its probes were removed")
	}
	h, err := os.ReadFile(filepath.Join(dir, ReportFile))
	mustNoErr(t, err)
	if bytes.Contains(h, []byte(`id="plot-verification"`)) || !bytes.Contains(h, []byte("No probes recorded.")) {
		t.Error("report still shows the verification plot")
	}
}

// Without its figures a render writes the summaries and the report as
// before, draws nothing and removes no figure an earlier render drew.
func TestRenderNoPlots(t *testing.T) {
	t.Parallel()
	dir := writeGoldenFolder(t, goldenSpecs[:1])
	_, files, err := RenderSummary(dir, Options{NoPlots: true})
	mustNoErr(t, err)
	for _, f := range files {
		if filepath.Dir(f) != dir {
			t.Errorf("%s written without figures", f)
		}
	}
	h, err := os.ReadFile(filepath.Join(dir, ReportFile))
	mustNoErr(t, err)
	if bytes.Contains(h, []byte(`id="plot-`)) {
		t.Error("the report shows a figure that was not drawn")
	}
	mustNoErr(t, Render(dir))
	before, err := os.ReadDir(filepath.Join(dir, PlotsDir))
	mustNoErr(t, err)
	_, _, err = RenderSummary(dir, Options{NoPlots: true})
	mustNoErr(t, err)
	after, err := os.ReadDir(filepath.Join(dir, PlotsDir))
	mustNoErr(t, err)
	if len(before) == 0 || len(after) != len(before) {
		t.Errorf("figures: %d before a render without them, %d after", len(before), len(after))
	}
}

// A writer's lock keeps no reader out: Render reads a folder that a run
// holds open.
func TestRenderWhileLocked(t *testing.T) {
	dir := writeGoldenFolder(t, goldenSpecs[:1])
	f, err := raw.Open(dir)
	mustNoErr(t, err)
	defer f.Close()
	mustNoErr(t, Render(dir))
}
