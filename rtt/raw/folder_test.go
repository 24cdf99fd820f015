package raw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

var testStart = time.Date(2026, 11, 29, 23, 59, 0, 0, time.UTC)

func testManifest() *Manifest {
	return &Manifest{
		PlanName: "smoke",
		Plan:     json.RawMessage(`{"runs":3,"delays":[0,0.5]}`),
		Seed:     42,
		Tasks: []Task{
			{ID: 1, App: "go", Route: "/feed", RTTms: 0.5, Run: 1},
			{ID: 2, App: "go", Route: "/feed", RTTms: 0, Run: 1},
			{ID: 3, App: "go", Route: "/feed", RTTms: 0.5, Run: 2},
		},
		Version: "v0.1.0", GitCommit: "abc1234", Kernel: "6.1.0-test",
		Shaper: "nfqueue", ShaperReason: "sch_netem missing", Scope: "app-db",
		Images:   map[string]string{"go": "sha256:1111"},
		HostCPUs: 2, HostCPUModel: "Test CPU", HostMemoryBytes: 24 << 30,
		Start:      testStart,
		Skipped:    map[string]string{"aimeos": "Packagist unreachable"},
		Statements: []RouteStatements{{App: "go", Route: "/feed", PerRequest: 3}},
	}
}

func taskSamples(t Task, lat ...float64) []Sample {
	var s []Sample
	for i, v := range lat {
		s = append(s, Sample{App: t.App, Route: t.Route, RTTms: t.RTTms, Run: t.Run, Seq: i,
			Warmup: i == 0, LatencyNS: ms(v), Status: 200, Bytes: 512})
	}
	return s
}

// ms is v milliseconds in nanoseconds.
func ms(v float64) int64 { return int64(math.Round(v * 1e6)) }

func mustNoErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mutateFile rewrites the file at p with mutate, or removes it when mutate
// is nil.
func mutateFile(t *testing.T, p string, mutate func([]byte) []byte) {
	t.Helper()
	if mutate == nil {
		mustNoErr(t, os.Remove(p))
		return
	}
	b, err := os.ReadFile(p)
	mustNoErr(t, err)
	mustNoErr(t, os.WriteFile(p, mutate(b), 0o644))
}

// newTestFolder makes a folder with task 1 done, task 2 half written (its
// samples on disk, never marked done) and a few probes.
func newTestFolder(t *testing.T) (*Folder, *Manifest) {
	t.Helper()
	f, err := Create(t.TempDir(), "smoke", testStart)
	mustNoErr(t, err)
	m := testManifest()
	mustNoErr(t, f.WriteManifest(m))
	mustNoErr(t, f.AppendSamples(1, 1, taskSamples(m.Tasks[0], 9, 2, 3, 4)))
	mustNoErr(t, f.MarkDone(1, 1))
	mustNoErr(t, f.AppendSamples(2, 1, taskSamples(m.Tasks[1], 9, 1, 1)))
	mustNoErr(t, f.AppendProbes([]Probe{
		{App: "go", Kind: ProbeICMP, RTTms: 0, N: 50, MeanMs: 0.063, MedianMs: 0.06, MinMs: 0.04, MaxMs: 0.2},
		{App: "go", Kind: ProbeSelect1, RTTms: 0.5, Run: 1, N: 200, MeanMs: 0.9, MedianMs: 0.85, MinMs: 0.7, MaxMs: 2.5, Failures: 1},
	}))
	return f, m
}

func TestCreateNamesFolder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rttlab-results")
	f, err := Create(out, "plans/my plan.yaml", testStart.In(time.FixedZone("X", 3600)))
	mustNoErr(t, err)
	defer f.Close()
	if want := filepath.Join(out, "20261129T235900Z-plans-my-plan.yaml"); f.Dir() != want {
		t.Errorf("Dir = %s, want %s", f.Dir(), want)
	}
	if _, err := Create(out, "plans/my plan.yaml", testStart); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second Create: err = %v, want 'already exists'", err)
	}
	// No manifest yet: Load names the missing file.
	if _, err := Load(f.Dir()); err == nil || !strings.Contains(err.Error(), results.ManifestFile) {
		t.Errorf("Load without manifest: err = %v, want it to name %s", err, results.ManifestFile)
	}
}

func TestRoundTrip(t *testing.T) {
	f, m := newTestFolder(t)
	mustNoErr(t, f.Close())
	d, err := Load(f.Dir())
	mustNoErr(t, err)
	// MarshalIndent re-indents the raw plan; compare it compacted.
	var plan bytes.Buffer
	mustNoErr(t, json.Compact(&plan, d.Manifest.Plan))
	d.Manifest.Plan = plan.Bytes()
	if !reflect.DeepEqual(&d.Manifest, m) {
		t.Errorf("manifest round trip:\n got %+v\nwant %+v", d.Manifest, *m)
	}
	want := taskSamples(m.Tasks[0], 9, 2, 3, 4)
	for i := range want {
		want[i].Task, want[i].Attempt = 1, 1
	}
	if !reflect.DeepEqual(d.Samples, want) {
		t.Errorf("samples:\n got %+v\nwant %+v", d.Samples, want)
	}
	if d.Ignored != 3 {
		t.Errorf("Ignored = %d, want 3 (task 2 was never marked done)", d.Ignored)
	}
	if len(d.Probes) != 2 || d.Probes[1].MedianMs != 0.85 || d.Probes[1].Failures != 1 || d.Probes[0].MeanMs != 0.063 {
		t.Errorf("probes = %+v", d.Probes)
	}
	if got := d.Pending(); len(got) != 2 || got[0].ID != 2 || got[1].ID != 3 {
		t.Errorf("Pending = %v, want tasks 2 and 3", got)
	}
	if d.NextAttempt(1) != 2 || d.NextAttempt(2) != 2 || d.NextAttempt(3) != 1 {
		t.Errorf("NextAttempt = %d %d %d, want 2 2 1", d.NextAttempt(1), d.NextAttempt(2), d.NextAttempt(3))
	}
	entries, _ := os.ReadDir(f.Dir())
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestResumeRedoesHalfFinishedTask(t *testing.T) {
	f, m := newTestFolder(t)
	// A crash in the middle of the next write leaves an unterminated line.
	mustNoErr(t, f.Close())
	sp := filepath.Join(f.Dir(), SamplesFile)
	raw, err := os.ReadFile(sp)
	mustNoErr(t, err)
	mustNoErr(t, os.WriteFile(sp, append(raw, []byte(`{"task":3,"attempt":1,"app":"go","rou`)...), 0o644))

	d, err := Load(f.Dir())
	mustNoErr(t, err)
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "samples.jsonl:8: incomplete last line") {
		t.Errorf("Notes = %q, want the incomplete line 8 noted", d.Notes)
	}

	g, err := Open(f.Dir())
	mustNoErr(t, err)
	if after, _ := os.ReadFile(sp); !bytes.Equal(after, raw) {
		t.Errorf("Open did not trim the incomplete last line")
	}
	st := g.State()
	if st == nil || len(st.Pending()) != 2 {
		t.Fatalf("State after Open: %+v", st)
	}
	a := st.NextAttempt(2)
	mustNoErr(t, g.AppendSamples(2, a, taskSamples(m.Tasks[1], 9, 1.5, 1.5)))
	mustNoErr(t, g.MarkDone(2, a))
	// Task 3 fails once, then succeeds.
	mustNoErr(t, g.AppendSamples(3, st.NextAttempt(3), taskSamples(m.Tasks[2], 9, 7)))
	mustNoErr(t, g.MarkFailed(3, 1, "app container exited (code 137)"))
	mustNoErr(t, g.AppendSamples(3, 2, taskSamples(m.Tasks[2], 9, 3.5)))
	mustNoErr(t, g.MarkDone(3, 2))
	mustNoErr(t, g.Close())

	d, err = Load(f.Dir())
	mustNoErr(t, err)
	var got []float64
	perTask := map[int]int{}
	for _, s := range d.Samples {
		perTask[s.Task]++
		if !s.Warmup {
			got = append(got, float64(s.LatencyNS)/1e6)
		}
	}
	if !slices.Equal(got, []float64{2, 3, 4, 1.5, 1.5, 3.5}) {
		t.Errorf("measured latencies after resume = %v", got)
	}
	if !reflect.DeepEqual(perTask, map[int]int{1: 4, 2: 3, 3: 2}) {
		t.Errorf("samples per task = %v (no duplicates expected)", perTask)
	}
	if d.Ignored != 5 {
		t.Errorf("Ignored = %d, want 5 (task 2 attempt 1, task 3 attempt 1)", d.Ignored)
	}
	if len(d.Pending()) != 0 || d.Done[3] != 2 {
		t.Errorf("Pending = %v, Done = %v", d.Pending(), d.Done)
	}
	if len(d.Notes) != 0 {
		t.Errorf("Notes after a clean resume = %q", d.Notes)
	}
}

func TestMalformedMiddleLine(t *testing.T) {
	f, _ := newTestFolder(t)
	mustNoErr(t, f.Close())
	sp := filepath.Join(f.Dir(), SamplesFile)
	raw, _ := os.ReadFile(sp)
	lines := strings.SplitAfter(string(raw), "\n")
	lines[2] = lines[2][:20] + "\n" // line 3 cut short, then more lines
	bad := []byte(strings.Join(lines, ""))
	mustNoErr(t, os.WriteFile(sp, bad, 0o644))

	_, err := Load(f.Dir())
	want := SamplesFile + ":3: not valid JSON: unexpected end of JSON input"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("Load: err = %v, want suffix %q", err, want)
	}
	if _, err := Open(f.Dir()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open: err = %v, want %q", err, want)
	}
	if after, _ := os.ReadFile(sp); !bytes.Equal(after, bad) {
		t.Error("Open changed a folder it refused")
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	cases := []struct {
		name   string
		file   string
		mutate func(b []byte) []byte
		want   string
	}{
		{"missing tasks", TasksFile, nil, TasksFile},
		{"bad status", TasksFile, func(b []byte) []byte {
			return append(b, []byte(`{"task":2,"attempt":1,"status":"maybe"}`+"\n")...)
		}, TasksFile + `:2: status "maybe"`},
		{"unknown task", SamplesFile, func(b []byte) []byte {
			return append(b, []byte(`{"task":99,"attempt":1,"app":"go","route":"/feed","rtt_ms":0,"run":1,"latency_ns":1,"status":200}`+"\n")...)
		}, SamplesFile + ":8: task 99 is not in the manifest"},
		{"sample disagrees with manifest", SamplesFile, func(b []byte) []byte {
			return append(b, []byte(`{"task":3,"attempt":1,"app":"go","route":"/feed","rtt_ms":1,"run":2,"latency_ns":1,"status":200}`+"\n")...)
		}, SamplesFile + ":8: sample says go /feed at 1 ms run 2"},
		{"empty line", SamplesFile, func(b []byte) []byte { return append([]byte("\n"), b...) }, SamplesFile + ":1: empty line"},
		{"bad probe number", ProbesFile, func(b []byte) []byte { return append(b, []byte("go,icmp,0.5,0,0,50,x,1,1,1,0\n")...) },
			ProbesFile + ":4: column mean_ms"},
		{"bad probe kind", ProbesFile, func(b []byte) []byte { return append(b, []byte("go,tcp,0.5,0,0,50,1,1,1,1,0\n")...) },
			ProbesFile + `:4: probe kind "tcp"`},
		{"short probe row", ProbesFile, func(b []byte) []byte { return append(b, []byte("go,icmp,0.5\n")...) },
			"record on line 4: wrong number of fields"},
		{"bad manifest", results.ManifestFile, func(b []byte) []byte { return b[:len(b)/2] }, ": unexpected end of JSON input"},
		{"manifest seed a string", results.ManifestFile, func(b []byte) []byte {
			return regexp.MustCompile(`"seed": ?[0-9]+`).ReplaceAll(b, []byte(`"seed":"one"`))
		}, `seed: a JSON string where a non-negative whole number belongs`},
		{"duplicated sample", SamplesFile, func(b []byte) []byte {
			first := b[:bytes.IndexByte(b, '\n')+1]
			return append(b, first...)
		}, SamplesFile + ":8: task 1 attempt 1 request 0 is here twice (first on line 1)"},
		{"endless line", SamplesFile, func(b []byte) []byte { return append(b, make([]byte, 2<<20)...) }, SamplesFile + ":8: line too long"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _ := newTestFolder(t)
			mustNoErr(t, f.Close())
			p := filepath.Join(f.Dir(), c.file)
			mutateFile(t, p, c.mutate)
			_, err := Load(f.Dir())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestAppendChecks(t *testing.T) {
	f, m := newTestFolder(t)
	defer f.Close()
	if err := f.AppendSamples(3, 0, taskSamples(m.Tasks[2], 1)); err == nil {
		t.Error("attempt 0 accepted")
	}
	if err := f.MarkDone(3, 0); err == nil {
		t.Error("MarkDone with attempt 0 accepted")
	}
	if err := f.AppendProbes([]Probe{{App: "go", Kind: "ping"}}); err == nil {
		t.Error("unknown probe kind accepted")
	}
	bad := *m
	bad.Tasks = append(slices.Clone(m.Tasks), m.Tasks[0])
	if err := f.WriteManifest(&bad); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("duplicate task ID: err = %v", err)
	}
	mustNoErr(t, f.Close())
	if err := f.MarkDone(3, 1); err == nil {
		t.Error("MarkDone after Close accepted")
	}
}

// A crash while marking a task done or appending probes leaves an
// unterminated line too: the task is not done, and Open trims both files.
func TestIncompleteTaskAndProbeLines(t *testing.T) {
	f, _ := newTestFolder(t)
	mustNoErr(t, f.Close())
	tp, pp := filepath.Join(f.Dir(), TasksFile), filepath.Join(f.Dir(), ProbesFile)
	traw, _ := os.ReadFile(tp)
	praw, _ := os.ReadFile(pp)
	// A complete JSON object without its newline is still incomplete.
	mustNoErr(t, os.WriteFile(tp, append(slices.Clone(traw), []byte(`{"task":2,"attempt":1,"status":"done","time":"2026-11-30T00:00:00Z"}`)...), 0o644))
	mustNoErr(t, os.WriteFile(pp, append(slices.Clone(praw), []byte("go,icmp,0.5,0,0,50,0.5")...), 0o644))
	d, err := Load(f.Dir())
	mustNoErr(t, err)
	if d.IsDone(2) || len(d.Probes) != 2 || len(d.Notes) != 2 {
		t.Errorf("IsDone(2) = %v, probes %d, notes %q", d.IsDone(2), len(d.Probes), d.Notes)
	}
	g, err := Open(f.Dir())
	mustNoErr(t, err)
	mustNoErr(t, g.AppendProbes([]Probe{{App: "go", Kind: ProbeICMP, RTTms: 0.5, N: 50, MeanMs: 0.56}}))
	mustNoErr(t, g.MarkDone(2, g.State().NextAttempt(2)))
	mustNoErr(t, g.Close())
	d, err = Load(f.Dir())
	mustNoErr(t, err)
	if len(d.Notes) != 0 || len(d.Probes) != 3 || d.Done[2] != 2 {
		t.Errorf("after Open and appends: notes %q, probes %d, done %v", d.Notes, len(d.Probes), d.Done)
	}
}

// A samples file cut after its attempt was marked done (a full disk, a
// copy cut short) loses that attempt: it counts as not done, its samples
// are left out and named in a note, and a resume runs the task again.
func TestCutSamplesOfADoneAttempt(t *testing.T) {
	f, m := newTestFolder(t)
	mustNoErr(t, f.AppendSamples(3, 1, taskSamples(m.Tasks[2], 9, 5, 6)))
	mustNoErr(t, f.MarkDone(3, 1))
	mustNoErr(t, f.Close())
	sp := filepath.Join(f.Dir(), SamplesFile)
	raw, err := os.ReadFile(sp)
	mustNoErr(t, err)
	mustNoErr(t, os.WriteFile(sp, raw[:len(raw)-20], 0o644))

	d, err := Load(f.Dir())
	mustNoErr(t, err)
	if d.IsDone(3) || !d.IsDone(1) || len(d.Done) != 1 {
		t.Errorf("Done = %v, want task 1 only (task 3 lost a request)", d.Done)
	}
	for _, s := range d.Samples {
		if s.Task == 3 {
			t.Errorf("a sample of the cut attempt was kept: %+v", s)
		}
	}
	if d.Ignored != 3+2 {
		t.Errorf("Ignored = %d, want 5 (task 2's three, task 3's two complete lines)", d.Ignored)
	}
	if len(d.Notes) != 2 || !strings.Contains(d.Notes[1], "task 3 attempt 1, which tasks.jsonl marks done") {
		t.Errorf("Notes = %q", d.Notes)
	}
	if p := d.Pending(); len(p) != 2 || p[1].ID != 3 || d.NextAttempt(3) != 2 {
		t.Errorf("Pending %v, next attempt %d: want tasks 2 and 3, attempt 2", p, d.NextAttempt(3))
	}
	// A resume that stops before it reaches task 3 (Open trims the cut
	// line) leaves the attempt undone for the next reader too.
	g, err := Open(f.Dir())
	mustNoErr(t, err)
	mustNoErr(t, g.Close())
	if d, err = Load(f.Dir()); err != nil || d.IsDone(3) || d.NextAttempt(3) != 2 {
		t.Fatalf("after a resume that did not reach it: done %v, next attempt %d, %v", d.IsDone(3), d.NextAttempt(3), err)
	}
	// The resumed attempt counts; the cut one stays out.
	g, err = Open(f.Dir())
	mustNoErr(t, err)
	mustNoErr(t, g.AppendSamples(3, 2, taskSamples(m.Tasks[2], 9, 7, 8)))
	mustNoErr(t, g.MarkDone(3, 2))
	mustNoErr(t, g.Close())
	d, err = Load(f.Dir())
	mustNoErr(t, err)
	if d.Done[3] != 2 {
		t.Errorf("after the resume Done[3] = %d, want 2", d.Done[3])
	}
}

// A line cut inside its attempt number is the task's latest attempt's.
func TestCutInsideTheAttemptNumber(t *testing.T) {
	f, m := newTestFolder(t)
	mustNoErr(t, f.AppendSamples(3, 1, taskSamples(m.Tasks[2], 9, 5)))
	mustNoErr(t, f.MarkDone(3, 1))
	mustNoErr(t, f.Close())
	sp := filepath.Join(f.Dir(), SamplesFile)
	raw, err := os.ReadFile(sp)
	mustNoErr(t, err)
	mustNoErr(t, os.WriteFile(sp, append(raw, []byte(`{"task":3,"attempt":1`)...), 0o644))
	d, err := Load(f.Dir())
	mustNoErr(t, err)
	if d.IsDone(3) {
		t.Errorf("task 3 still done after a line of its attempt was cut")
	}
}

// The wire's, the anatomy's and the shaper's files, cut mid-line by a
// crash, are trimmed on resume so the next attempt's rows start clean;
// only the rows of done attempts count.
func TestResumeTrimsCutWireRows(t *testing.T) {
	f, m := newTestFolder(t)
	tk := m.Tasks[1]
	wire := WireRow{Task: tk.ID, Attempt: 1, App: tk.App, Route: tk.Route, RTTms: tk.RTTms, Direction: workloads.DirAppToDB, Sent: 10, Matched: 10, P50Ms: 0.3}
	an := AnatomyRow{Task: tk.ID, Attempt: 1, App: tk.App, Route: tk.Route, RTTms: tk.RTTms, RequestAnatomy: workloads.RequestAnatomy{Seq: 1, LatencyMs: 2}}
	mustNoErr(t, f.AppendWire([]WireRow{wire}))
	mustNoErr(t, f.AppendAnatomy([]AnatomyRow{an}))
	mustNoErr(t, f.AppendShaper([]ShaperRow{{Task: tk.ID, Attempt: 1, App: tk.App, Route: tk.Route, RTTms: tk.RTTms, Side: "app"}}))
	mustNoErr(t, f.Close())
	for _, n := range []string{WireFile, AnatomyFile, ShaperFile} {
		p := filepath.Join(f.Dir(), n)
		b, err := os.ReadFile(p)
		mustNoErr(t, err)
		mustNoErr(t, os.WriteFile(p, append(b, []byte(`2,1,go,/fe`)...), 0o644))
	}
	g, err := Open(f.Dir())
	mustNoErr(t, err)
	a := g.State().NextAttempt(tk.ID)
	wire.Attempt, an.Attempt = a, a
	mustNoErr(t, g.AppendWire([]WireRow{wire}))
	mustNoErr(t, g.AppendAnatomy([]AnatomyRow{an}))
	mustNoErr(t, g.AppendSamples(tk.ID, a, taskSamples(tk, 9, 1.5)))
	mustNoErr(t, g.MarkDone(tk.ID, a))
	mustNoErr(t, g.Close())
	d, err := Load(f.Dir())
	mustNoErr(t, err)
	if len(d.Wire) != 1 || d.Wire[0].Attempt != a || len(d.Anatomy) != 1 || d.Anatomy[0].Attempt != a {
		t.Errorf("after the resume: wire %+v, anatomy %+v", d.Wire, d.Anatomy)
	}
	if _, err := LoadShaper(f.Dir()); err != nil {
		t.Errorf("shaper.csv after the resume: %v", err)
	}
}

// The committed RTT folder (cmd/rttlab/testdata/results-go), with the
// cut lines of a crash mid-write in its raw files, opens for a resume:
// the cut lines trimmed, its state read, a second writer refused, and
// the next append starting on a clean line.
func TestOpenCommitted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results-go")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "cmd", "rttlab", "testdata", "results-go"))); err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, n := range []string{SamplesFile, TasksFile, ProbesFile} {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		sizes[n] = fi.Size()
		h, err := os.OpenFile(filepath.Join(dir, n), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		h.WriteString(`{"task":999,"cut`)
		h.Close()
	}
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.State() == nil || len(f.State().Samples) == 0 {
		t.Fatal("no state read")
	}
	for n, size := range sizes {
		if fi, _ := os.Stat(filepath.Join(dir, n)); fi.Size() != size {
			t.Errorf("%s: %d bytes after open, want %d", n, fi.Size(), size)
		}
	}
	if _, err := Open(dir); !errors.Is(err, results.ErrLocked) {
		t.Errorf("second writer: %v", err)
	}
	task := f.State().Manifest.Tasks[0]
	if err := f.MarkFailed(task.ID, f.State().NextAttempt(task.ID), "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err != nil {
		t.Errorf("load after an append: %v", err)
	}
}

// wire.csv keeps how each task's requests were joined by their sequence
// number; a folder begun before those columns existed is read (its rows
// not Counted) and resumed in its own layout.
func TestWireJoinCounts(t *testing.T) {
	f, m := newTestFolder(t)
	tk := m.Tasks[2]
	row := WireRow{Task: tk.ID, Attempt: 1, App: tk.App, Route: tk.Route, RTTms: tk.RTTms, Direction: workloads.DirAppToDB,
		Requests: 10, Anatomized: 8, Unpaired: 1, Unmarked: 2, NegativeClient: 1, Overlaps: 3, Counted: true}
	mustNoErr(t, f.AppendWire([]WireRow{row}))
	mustNoErr(t, f.AppendSamples(tk.ID, 1, taskSamples(tk, 9, 1.5)))
	mustNoErr(t, f.MarkDone(tk.ID, 1))
	mustNoErr(t, f.Close())
	d, err := Load(f.Dir())
	mustNoErr(t, err)
	if len(d.Wire) != 1 || d.Wire[0] != row {
		t.Errorf("read back %+v, want %+v", d.Wire, row)
	}

	old, m := newTestFolder(t)
	tk = m.Tasks[2]
	v1 := strings.Join(wireHeaderV1, ",") + "\n" + fmt.Sprintf("%d,1,%s,%s,%g,false,db->app,10,10,0,0,0.3000,0.4000,0,false,5,5,0,0,\n", tk.ID, tk.App, tk.Route, tk.RTTms)
	mustNoErr(t, os.WriteFile(old.Path(WireFile), []byte(v1), 0o644))
	row.Task, row.Attempt = tk.ID, 1
	row.App, row.Route, row.RTTms = tk.App, tk.Route, tk.RTTms
	mustNoErr(t, old.AppendWire([]WireRow{row}))
	mustNoErr(t, old.AppendSamples(tk.ID, 1, taskSamples(tk, 9, 1.5)))
	mustNoErr(t, old.MarkDone(tk.ID, 1))
	mustNoErr(t, old.Close())
	b, err := os.ReadFile(old.Path(WireFile))
	mustNoErr(t, err)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 3 || strings.Count(lines[2], ",") != len(wireHeaderV1)-1 {
		t.Fatalf("the resumed folder's wire.csv left its layout:\n%s", b)
	}
	d, err = Load(old.Dir())
	mustNoErr(t, err)
	if len(d.Wire) != 2 || d.Wire[0].Counted || d.Wire[1].Counted || d.Wire[1].Anatomized != 8 || d.Wire[1].Unpaired != 0 {
		t.Errorf("an older folder's rows: %+v", d.Wire)
	}
}
