package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/rtt/raw"
)

// loadResultsGo loads a copy of the results folder in
// cmd/rttlab/testdata/results-go.
func loadResultsGo(t *testing.T) *raw.Data {
	t.Helper()
	src := filepath.Join("..", "..", "cmd", "rttlab", "testdata", "results-go")
	dir := filepath.Join(t.TempDir(), "f")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	d, err := raw.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The digest of a run fits in DigestMaxLines lines, has a line per (app,
// route) with the change at the largest setting, and says what the host
// could not verify once.
func TestDigest(t *testing.T) {
	d := loadResultsGo(t)
	s := Analyze(d, Options{})
	out := s.Digest("summary.md", "report.html")
	t.Logf("digest:\n%s", out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > DigestMaxLines {
		t.Errorf("%d lines", len(lines))
	}
	if !strings.HasPrefix(lines[0], "plan ") || !strings.Contains(out, "summary: summary.md\nreport:  report.html\n") {
		t.Errorf("digest:\n%s", out)
	}
	rows := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "  go /") {
			rows++
		}
	}
	if rows == 0 {
		t.Error("no row per route")
	}
	if n := strings.Count(out, "were not verified on this host"); n > 1 {
		t.Errorf("the host's verification said %d times", n)
	}
	// A setting the host could not verify is said once, with why.
	for i := range s.Cells {
		if s.Cells[i].HasBaseline {
			s.Cells[i].Unverified = []string{"select1 added +0.624 ms"}
		}
	}
	un := s.Digest("summary.md", "")
	if strings.Count(un, "were not verified on this host; e.g. go at 0.5 ms: select1 added +0.624 ms.") != 1 || !strings.Contains(un, "0.5 ms NOT verified") {
		t.Errorf("digest:\n%s", un)
	}
	// Many routes: the rows are cut to fit.
	for i := range 40 {
		c := s.Cells[len(s.Cells)-1]
		c.Route = "/r" + strings.Repeat("x", i)
		s.Cells = append(s.Cells, c)
	}
	many := strings.Split(strings.TrimSuffix(s.Digest("summary.md", ""), "\n"), "\n")
	if len(many) > DigestMaxLines || !strings.Contains(strings.Join(many, "\n"), "more in the summary") {
		t.Errorf("%d lines:\n%s", len(many), strings.Join(many, "\n"))
	}
}

// A run whose database and apps ran under emulation says so in its
// digest's second line and among its warnings; a native run says nothing.
func TestDigestSaysEmulatedTimingsMakeNoClaim(t *testing.T) {
	d := loadResultsGo(t)
	if out := Analyze(d, Options{}).Digest("summary.md", ""); strings.Contains(out, "emulation") {
		t.Errorf("a native run's digest speaks of emulation:\n%s", out)
	}
	d.Manifest.Platform, d.Manifest.Emulated = "linux/arm64", true
	s := Analyze(d, Options{})
	lines := strings.Split(s.Digest("summary.md", ""), "\n")
	if lines[1] != "platform linux/arm64 under emulation (qemu-user): timings make no claim about that platform's hardware" {
		t.Errorf("digest's second line %q", lines[1])
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "ran linux/arm64 under emulation (qemu-user) on this engine") {
		t.Errorf("warnings %q", s.Warnings)
	}
}

// The study's digest of a folder is the digest of its summary analyzed
// again, or of the summary the run rendered when that is given, and names
// the folder's summary.md (and report.html once there is one).
func TestStudyDigest(t *testing.T) {
	d := loadResultsGo(t)
	dir := d.Dir
	want := Analyze(d, Options{}).Digest(filepath.Join(dir, SummaryMDFile), "")
	got, err := Study{}.Digest(dir)
	if err != nil || got != want {
		t.Fatalf("digest from the folder:\n%s\nwant\n%s(err %v)", got, want, err)
	}
	rendered := Analyze(d, Options{})
	rendered.Plan = "as-rendered"
	got, err = Study{Rendered: rendered}.Digest(dir)
	if err != nil || !strings.HasPrefix(got, "plan as-rendered:") {
		t.Fatalf("digest of the rendered summary: %q, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ReportFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ = Study{}.Digest(dir)
	if !strings.HasSuffix(got, "report:  "+filepath.Join(dir, ReportFile)+"\n") {
		t.Fatalf("digest does not name the report:\n%s", got)
	}
}

// The study lists the manifest's tasks by number in its shuffled order,
// done as tasks.jsonl says (read here line by line).
func TestStudyTasks(t *testing.T) {
	d := loadResultsGo(t)
	tasks, err := Study{}.Tasks(d.Dir)
	if err != nil || len(tasks) != len(d.Manifest.Tasks) {
		t.Fatalf("%d tasks (%v), want %d", len(tasks), err, len(d.Manifest.Tasks))
	}
	b, err := os.ReadFile(filepath.Join(d.Dir, raw.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Task   int    `json:"task"`
			Status string `json:"status"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Status == raw.StatusDone {
			done[strconv.Itoa(r.Task)] = true
		}
	}
	n := 0
	for i, ts := range tasks {
		if want := strconv.Itoa(d.Manifest.Tasks[i].ID); ts.Name != want || ts.Done != done[want] {
			t.Errorf("task %d: %+v, want %s done %v", i, ts, want, done[want])
		}
		if ts.Done {
			n++
		}
	}
	if n == 0 || n != len(done) {
		t.Errorf("%d done, tasks.jsonl %d", n, len(done))
	}
}
