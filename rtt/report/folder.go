package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

// folderTimeLayout names results folders, e.g. 20261129T235900Z.
const folderTimeLayout = "20060102T150405Z"

// Folder is an open results folder that the runner appends to. Its methods
// are safe for concurrent use. After a failed append the Folder refuses
// further appends (a partial line may be on disk); reopen it with Open,
// which trims the partial line. An open Folder holds the folder's lock
// (LockFile) until Close, so two runs never write one folder at once.
type Folder struct {
	dir   string
	state *Data
	lock  *os.File

	mu      sync.Mutex
	samples *os.File
	tasks   *os.File
	probes  *os.File
	broken  error
}

// Create makes a new results folder <outDir>/<UTC time>-<planName>/ (for
// example rttlab-results/20261129T235900Z-study/) with empty samples.jsonl
// and tasks.jsonl and a probes.csv holding only its header. Characters of
// planName outside [A-Za-z0-9._-] become '-'. It fails if the folder
// exists. The Folder holds the folder's lock until Close. Call
// WriteManifest before the first task.
func Create(outDir, planName string, now time.Time) (f *Folder, err error) {
	name := now.UTC().Format(folderTimeLayout) + "-" + sanitizeName(planName)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("create results folder: %w", err)
	}
	dir := filepath.Join(outDir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create results folder %s: it already exists", dir)
		}
		return nil, fmt.Errorf("create results folder: %w", err)
	}
	lock, err := results.LockFolder(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			results.UnlockFolder(lock)
		}
	}()
	var hdr bytes.Buffer
	w := csv.NewWriter(&hdr)
	if err := w.Write(probeHeader); err != nil {
		return nil, fmt.Errorf("create %s: %w", ProbesFile, err)
	}
	w.Flush()
	initial := map[string][]byte{SamplesFile: nil, TasksFile: nil, ProbesFile: hdr.Bytes()}
	for _, n := range []string{SamplesFile, TasksFile, ProbesFile} {
		if err := results.CreateSynced(filepath.Join(dir, n), initial[n]); err != nil {
			return nil, fmt.Errorf("create results folder %s: %w", dir, err)
		}
	}
	if err := results.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("create results folder %s: %w", dir, err)
	}
	f = &Folder{dir: dir, lock: lock}
	if err := f.openAppend(); err != nil {
		return nil, err
	}
	return f, nil
}

// Open reopens an existing results folder to resume it. It first loads and
// checks every file (see Load); any malformed line other than an
// unterminated last line is an error and nothing is changed. An
// unterminated last line of samples.jsonl, tasks.jsonl, probes.csv,
// shaper.csv, wire.csv or anatomy.jsonl is what a crash mid-write leaves;
// it belongs to an attempt that was never marked done, and Open truncates
// it so new lines start clean. State returns what was loaded.
//
// Open first takes the folder's lock, held until Close: while another
// Folder of dir is open, in this process or another, Open fails with a
// *LockedError (ErrLocked) and changes nothing. A lock file left by a
// process that died is no obstacle. Readers (Load, Render) take no lock.
func Open(dir string) (f *Folder, err error) {
	lock, err := results.LockFolder(dir)
	if errors.Is(err, fs.ErrNotExist) {
		// No such folder: Load names what is missing.
		if _, lerr := Load(dir); lerr != nil {
			return nil, fmt.Errorf("open results folder: %w", lerr)
		}
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			results.UnlockFolder(lock)
		}
	}()
	d, err := Load(dir)
	if err != nil {
		return nil, fmt.Errorf("open results folder: %w", err)
	}
	for _, n := range []string{SamplesFile, TasksFile, ProbesFile} {
		if err := results.TrimTo(filepath.Join(dir, n), d.complete[n]); err != nil {
			return nil, fmt.Errorf("open results folder %s: %w", dir, err)
		}
	}
	// The files appended per task that readers take to their last whole
	// line: a cut line would otherwise run into the next append.
	for _, n := range []string{ShaperFile, WireFile, AnatomyFile} {
		if err := results.TrimCutLine(filepath.Join(dir, n)); err != nil {
			return nil, fmt.Errorf("open results folder %s: %w", dir, err)
		}
	}
	f = &Folder{dir: dir, state: d, lock: lock}
	if err := f.openAppend(); err != nil {
		return nil, err
	}
	// The trim removed the cut line that un-did an attempt marked done:
	// a failed record keeps it undone for every later reader.
	if t := d.undone; t[0] != 0 {
		if err := f.MarkFailed(t[0], t[1], "its last sample line was cut: the attempt runs again"); err != nil {
			f.samples.Close()
			f.tasks.Close()
			f.probes.Close()
			return nil, err
		}
	}
	return f, nil
}

// Dir returns the folder's path.
func (f *Folder) Dir() string { return f.dir }

// State returns the folder's contents as read by Open (nil after Create).
// Use Data.Pending and Data.NextAttempt to resume.
func (f *Folder) State() *Data { return f.state }

func (f *Folder) openAppend() error {
	open := func(n string) (*os.File, error) {
		h, err := os.OpenFile(filepath.Join(f.dir, n), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, fmt.Errorf("open %s for append: %w", n, err)
		}
		return h, nil
	}
	var err error
	if f.samples, err = open(SamplesFile); err != nil {
		return err
	}
	if f.tasks, err = open(TasksFile); err != nil {
		f.samples.Close()
		return err
	}
	if f.probes, err = open(ProbesFile); err != nil {
		f.samples.Close()
		f.tasks.Close()
		return err
	}
	return nil
}

// Close closes the folder's files and releases its lock.
func (f *Folder) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, h := range []*os.File{f.samples, f.tasks, f.probes} {
		if h != nil {
			if err := h.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	f.samples, f.tasks, f.probes = nil, nil, nil
	if err := results.UnlockFolder(f.lock); err != nil {
		errs = append(errs, err)
	}
	f.lock = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close results folder %s: %w", f.dir, err)
	}
	return nil
}

// WriteManifest writes manifest.json atomically (temporary file, fsync,
// rename, fsync of the folder).
func (f *Folder) WriteManifest(m *Manifest) error {
	if err := checkManifest(m); err != nil {
		return fmt.Errorf("write %s: %w", results.ManifestFile, err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", results.ManifestFile, err)
	}
	return results.WriteAtomic(f.dir, results.ManifestFile, append(b, '\n'))
}

// AppendSamples appends the samples of one attempt of a task to
// samples.jsonl as JSON lines, in one write, and fsyncs. Task and Attempt
// of every sample are set from the arguments. Attempts count from 1; a
// task redone after a crash must use a new attempt number
// (Data.NextAttempt) so that the earlier partial samples stay ignored.
func (f *Folder) AppendSamples(task, attempt int, s []Sample) error {
	if attempt < 1 {
		return fmt.Errorf("append samples of task %d: attempt %d: attempts count from 1", task, attempt)
	}
	var buf bytes.Buffer
	for i := range s {
		x := s[i]
		x.Task, x.Attempt = task, attempt
		if err := checkSample(&x); err != nil {
			return fmt.Errorf("append samples of task %d: sample %d: %w", task, i, err)
		}
		b, err := json.Marshal(&x)
		if err != nil {
			return fmt.Errorf("append samples of task %d: %w", task, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return f.appendSynced(func() *os.File { return f.samples }, SamplesFile, buf.Bytes())
}

// MarkDone records in tasks.jsonl (fsynced) that the attempt of a task is
// complete. Call it only after AppendSamples for that attempt returned nil:
// Load counts a task's samples only once it is marked done.
func (f *Folder) MarkDone(task, attempt int) error {
	return f.mark(TaskRecord{Task: task, Attempt: attempt, Status: StatusDone})
}

// MarkFailed records in tasks.jsonl (fsynced) that the attempt of a task
// failed (for example the app container crashed); its samples are ignored
// and the failure is listed in the summary's warnings.
func (f *Folder) MarkFailed(task, attempt int, reason string) error {
	if reason == "" {
		reason = "unknown"
	}
	return f.mark(TaskRecord{Task: task, Attempt: attempt, Status: StatusFailed, Error: reason})
}

func (f *Folder) mark(r TaskRecord) error {
	if r.Attempt < 1 {
		return fmt.Errorf("mark task %d %s: attempt %d: attempts count from 1", r.Task, r.Status, r.Attempt)
	}
	r.Time = time.Now().UTC()
	b, err := json.Marshal(&r)
	if err != nil {
		return fmt.Errorf("mark task %d %s: %w", r.Task, r.Status, err)
	}
	return f.appendSynced(func() *os.File { return f.tasks }, TasksFile, append(b, '\n'))
}

// AppendProbes appends rows to probes.csv and fsyncs.
func (f *Folder) AppendProbes(p []Probe) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	for i := range p {
		if err := checkProbe(&p[i]); err != nil {
			return fmt.Errorf("append probes: row %d: %w", i, err)
		}
		if err := w.Write(probeRecord(&p[i])); err != nil {
			return fmt.Errorf("append probes: %w", err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("append probes: %w", err)
	}
	return f.appendSynced(func() *os.File { return f.probes }, ProbesFile, buf.Bytes())
}

func (f *Folder) appendSynced(file func() *os.File, name string, b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return fmt.Errorf("append to %s: an earlier append failed, reopen the folder: %w", name, f.broken)
	}
	h := file()
	if h == nil {
		return fmt.Errorf("append to %s: folder is closed", name)
	}
	if len(b) == 0 {
		return nil
	}
	if _, err := h.Write(b); err != nil {
		f.broken = err
		return fmt.Errorf("append to %s: %w", name, err)
	}
	if err := h.Sync(); err != nil {
		f.broken = err
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	return nil
}

// Data is the content of a results folder as read by Load.
type Data struct {
	Dir      string
	Manifest Manifest
	// Records holds every line of tasks.jsonl in file order.
	Records []TaskRecord
	// Done maps a task ID to the attempt whose samples count (the highest
	// attempt marked done).
	Done map[int]int
	// Samples holds the samples of done attempts only, in file order.
	Samples []Sample
	Probes  []Probe
	// Shaper is shaper.csv's rows (every attempt), when present.
	Shaper []ShaperRow
	// Trace is trace.json's rows, when present.
	Trace []workloads.TraceRow
	// Wire is wire.csv's rows of done attempts (the last of each attempt
	// and direction), when present.
	Wire []WireRow
	// Anatomy is anatomy.jsonl's requests of done attempts (the last of
	// each attempt and request), when present.
	Anatomy []AnatomyRow
	// Ignored counts samples of attempts that were never marked done.
	Ignored int
	// Notes lists tolerated defects (an incomplete last line after a
	// crash, a task marked done twice); the summary repeats them.
	Notes []string

	maxAttempt map[int]int
	complete   map[string]int64
	cut        map[string][]byte // an incomplete last line, by file
	// undone is the task and attempt undoCutAttempt un-did (0, 0: none);
	// Open records it as failed so that it stays undone after the trim.
	undone [2]int
}

// NextAttempt returns the attempt number to use for a (re)run of task: one
// more than any attempt seen in samples.jsonl or tasks.jsonl, 1 for a task
// never started.
func (d *Data) NextAttempt(task int) int { return d.maxAttempt[task] + 1 }

// IsDone reports whether task has an attempt marked done.
func (d *Data) IsDone(task int) bool { _, ok := d.Done[task]; return ok }

// Pending returns the manifest's tasks that are not done, in manifest
// (shuffled) order.
func (d *Data) Pending() []Task {
	var p []Task
	for _, t := range d.Manifest.Tasks {
		if !d.IsDone(t.ID) {
			p = append(p, t)
		}
	}
	return p
}

// Load reads a results folder: manifest.json, tasks.jsonl, samples.jsonl
// and probes.csv. It keeps only the samples of attempts marked done, so a
// task redone on resume never counts twice. A missing file or a malformed
// line is an error naming the file and line
// ("DIR/samples.jsonl:1234: unexpected end of JSON input"). The one
// exception is an unterminated last line of samples.jsonl, tasks.jsonl or
// probes.csv, which a crash mid-write leaves behind: it is ignored and
// noted in Data.Notes. Samples and task records that disagree with the
// manifest's task list are errors.
func Load(dir string) (*Data, error) {
	d := &Data{
		Dir:        dir,
		Done:       map[int]int{},
		maxAttempt: map[int]int{},
		complete:   map[string]int64{},
		cut:        map[string][]byte{},
	}
	tasks, err := d.readManifest()
	if err != nil {
		return nil, err
	}
	// tasks.jsonl first: which attempts are done.
	if err := d.readTaskRecords(tasks); err != nil {
		return nil, err
	}
	if err := d.readSamples(tasks); err != nil {
		return nil, err
	}
	d.undoCutAttempt()
	if err := d.readProbes(filepath.Join(dir, ProbesFile)); err != nil {
		return nil, err
	}
	if d.Shaper, err = LoadShaper(dir); err != nil {
		return nil, err
	}
	if d.Trace, err = ReadTrace(dir); err != nil {
		return nil, err
	}
	if err := d.readWire(); err != nil {
		return nil, err
	}
	return d, nil
}

// readWire reads wire.csv and anatomy.jsonl, keeping the rows of done
// attempts: a run killed after writing an attempt's rows and before
// marking it done hands the same attempt out again, so the last rows of
// an attempt are the ones that count.
func (d *Data) readWire() error {
	rows, err := LoadWire(d.Dir)
	if err != nil {
		return err
	}
	done := func(task, attempt int) bool { a, ok := d.Done[task]; return ok && a == attempt }
	type wkey struct {
		task, attempt int
		dir           string
	}
	last := map[wkey]int{}
	for i, r := range rows {
		last[wkey{r.Task, r.Attempt, r.Direction}] = i
	}
	for i, r := range rows {
		if done(r.Task, r.Attempt) && last[wkey{r.Task, r.Attempt, r.Direction}] == i {
			d.Wire = append(d.Wire, r)
		}
	}
	an, err := LoadAnatomy(d.Dir, done)
	if err != nil {
		return err
	}
	type akey struct{ task, attempt, seq int }
	at := map[akey]int{}
	for i, r := range an {
		at[akey{r.Task, r.Attempt, r.Seq}] = i
	}
	for i, r := range an {
		if at[akey{r.Task, r.Attempt, r.Seq}] == i {
			d.Anatomy = append(d.Anatomy, r)
		}
	}
	return nil
}

// readManifest reads and checks manifest.json into d.Manifest and returns
// its tasks by ID.
func (d *Data) readManifest() (map[int]Task, error) {
	mpath := filepath.Join(d.Dir, results.ManifestFile)
	mb, err := capped.ReadFile(mpath, "manifest", results.MaxManifest)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(mb, &d.Manifest); err != nil {
		return nil, fmt.Errorf("%s: %w", results.JSONErrPos(mpath, mb, err), results.JSONWords(err))
	}
	if err := checkManifest(&d.Manifest); err != nil {
		return nil, fmt.Errorf("%s: %w", mpath, err)
	}
	tasks := make(map[int]Task, len(d.Manifest.Tasks))
	for _, t := range d.Manifest.Tasks {
		tasks[t.ID] = t
	}
	return tasks, nil
}

// readTaskRecords reads tasks.jsonl into d.Records, d.Done and the highest
// attempts, and notes each task marked done more than once.
func (d *Data) readTaskRecords(tasks map[int]Task) error {
	tpath := filepath.Join(d.Dir, TasksFile)
	doneAttempts := map[int][]int{}
	// A failed record after a done one of the same attempt takes the done
	// back (Open writes one for an attempt whose samples were cut).
	undone := map[[2]int]bool{}
	err := d.readLines(tpath, TasksFile, func(line int, b []byte) error {
		var r TaskRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if r.Attempt < 1 {
			return fmt.Errorf("attempt %d: attempts count from 1", r.Attempt)
		}
		if r.Status != StatusDone && r.Status != StatusFailed {
			return fmt.Errorf("status %q: want %q or %q", r.Status, StatusDone, StatusFailed)
		}
		if _, ok := tasks[r.Task]; !ok {
			return fmt.Errorf("task %d is not in the manifest's task list", r.Task)
		}
		d.Records = append(d.Records, r)
		d.maxAttempt[r.Task] = max(d.maxAttempt[r.Task], r.Attempt)
		switch {
		case r.Status == StatusDone:
			doneAttempts[r.Task] = append(doneAttempts[r.Task], r.Attempt)
		case slices.Contains(doneAttempts[r.Task], r.Attempt):
			undone[[2]int{r.Task, r.Attempt}] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id, as := range doneAttempts {
		for _, a := range as {
			if !undone[[2]int{id, a}] {
				d.Done[id] = max(d.Done[id], a)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(doneAttempts)) {
		if a := doneAttempts[id]; len(a) > 1 {
			d.Notes = append(d.Notes, fmt.Sprintf("%s marked done %d times (attempts %s); only attempt %d counts",
				tasks[id], len(a), joinInts(a), d.Done[id]))
		}
	}
	return nil
}

// readSamples reads samples.jsonl, keeping the samples of done attempts
// in d.Samples and counting the others in d.Ignored; a request twice or a
// sample that disagrees with the manifest is an error.
func (d *Data) readSamples(tasks map[int]Task) error {
	spath := filepath.Join(d.Dir, SamplesFile)
	type reqKey struct{ task, attempt, seq int }
	firstLine := map[reqKey]int{}
	return d.readLines(spath, SamplesFile, func(line int, b []byte) error {
		var s Sample
		if err := json.Unmarshal(b, &s); err != nil {
			return results.JSONWords(err)
		}
		if err := checkSample(&s); err != nil {
			return err
		}
		k := reqKey{s.Task, s.Attempt, s.Seq}
		if first, ok := firstLine[k]; ok {
			return fmt.Errorf("task %d attempt %d request %d is here twice (first on line %d): each request has one line", s.Task, s.Attempt, s.Seq, first)
		}
		firstLine[k] = line
		t, ok := tasks[s.Task]
		if !ok {
			return fmt.Errorf("task %d is not in the manifest's task list", s.Task)
		}
		if t.App != s.App || t.Route != s.Route || t.RTTms != s.RTTms || t.Run != s.Run || t.Unshaped != s.Unshaped {
			st := Task{RTTms: s.RTTms, Unshaped: s.Unshaped}
			return fmt.Errorf("sample says %s %s %s run %d, the manifest has %s",
				s.App, s.Route, st.Setting(), s.Run, t)
		}
		d.maxAttempt[s.Task] = max(d.maxAttempt[s.Task], s.Attempt)
		if a, ok := d.Done[s.Task]; ok && a == s.Attempt {
			d.Samples = append(d.Samples, s)
		} else {
			d.Ignored++
		}
		return nil
	})
}

// cutSampleRE reads the task and, when the cut left it whole, the attempt
// at the start of a sample line that a crash cut short.
var cutSampleRE = regexp.MustCompile(`^\{"task":(\d+),(?:"attempt":(\d+),)?`)

// undoCutAttempt handles a samples.jsonl whose last line was cut although
// tasks.jsonl marks that line's attempt done (the file was cut after the
// task finished, by a full disk or a copy): the attempt lost a request, so
// it counts as not done, its samples are left out, and a resume runs the
// task again.
func (d *Data) undoCutAttempt() {
	m := cutSampleRE.FindSubmatch(d.cut[SamplesFile])
	if m == nil {
		return
	}
	task, _ := strconv.Atoi(string(m[1]))
	// Cut inside its attempt number, the line is the task's latest
	// attempt's: samples are written in order.
	attempt := d.maxAttempt[task]
	if len(m[2]) > 0 {
		attempt, _ = strconv.Atoi(string(m[2]))
	}
	if a, ok := d.Done[task]; !ok || a != attempt {
		return
	}
	delete(d.Done, task)
	d.undone = [2]int{task, attempt}
	kept := d.Samples[:0]
	for _, s := range d.Samples {
		if s.Task == task && s.Attempt == attempt {
			d.Ignored++
			continue
		}
		kept = append(kept, s)
	}
	d.Samples = kept
	d.Notes = append(d.Notes, fmt.Sprintf("%s: the cut last line is task %d attempt %d, which %s marks done: that attempt lost a request, so it counts as not done and its samples are left out (a resume runs the task again)",
		SamplesFile, task, attempt, TasksFile))
}

// readLines calls fn for each '\n'-terminated line of path with its 1-based
// line number. An unterminated last line is skipped and noted. The length
// of the complete part is kept for Open.
func (d *Data) readLines(path, name string, fn func(line int, b []byte) error) error {
	l, err := results.ReadJSONLines(path, name, results.MaxLine, false, fn)
	if err != nil {
		return err
	}
	if l.Cut != nil {
		d.cut[name] = l.Cut
		d.Notes = append(d.Notes, fmt.Sprintf("%s:%d: incomplete last line (%d bytes) ignored: a crash mid-write; its attempt is not done",
			name, l.Count+1, len(l.Cut)))
	}
	d.complete[name] = l.Complete
	return nil
}

func (d *Data) readProbes(path string) error {
	b, err := capped.ReadFile(path, ProbesFile, results.MaxFile)
	if err != nil {
		return err
	}
	complete := bytes.LastIndexByte(b, '\n') + 1
	if complete < len(b) {
		lines := bytes.Count(b[:complete], []byte{'\n'})
		d.Notes = append(d.Notes, fmt.Sprintf("%s:%d: incomplete last line (%d bytes) ignored: a crash mid-write",
			ProbesFile, lines+1, len(b)-complete))
	}
	d.complete[ProbesFile] = int64(complete)
	r := csv.NewReader(bytes.NewReader(b[:complete]))
	r.FieldsPerRecord = len(probeHeader)
	r.ReuseRecord = true
	hdr, err := r.Read()
	if err == io.EOF {
		return fmt.Errorf("%s:1: missing header", path)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !slices.Equal(hdr, probeHeader) {
		return fmt.Errorf("%s:1: header %q, want %q", path, strings.Join(hdr, ","), strings.Join(probeHeader, ","))
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			// csv.ParseError carries the file's line number.
			return fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		p, err := parseProbe(rec)
		if err == nil {
			err = checkProbe(&p)
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		d.Probes = append(d.Probes, p)
	}
}

func probeRecord(p *Probe) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []string{
		p.App, p.Kind, f(p.RTTms), strconv.Itoa(p.Run), strconv.Itoa(p.Task), strconv.Itoa(p.N),
		f(p.MeanMs), f(p.MedianMs), f(p.MinMs), f(p.MaxMs), strconv.Itoa(p.Failures),
	}
}

func parseProbe(rec []string) (Probe, error) {
	p := Probe{App: rec[0], Kind: rec[1]}
	floats := []*float64{&p.RTTms, &p.MeanMs, &p.MedianMs, &p.MinMs, &p.MaxMs}
	fcols := []int{2, 6, 7, 8, 9}
	for i, c := range fcols {
		v, err := strconv.ParseFloat(rec[c], 64)
		if err != nil {
			return p, fmt.Errorf("column %s: %w", probeHeader[c], err)
		}
		*floats[i] = v
	}
	ints := []*int{&p.Run, &p.Task, &p.N, &p.Failures}
	icols := []int{3, 4, 5, 10}
	for i, c := range icols {
		v, err := strconv.Atoi(rec[c])
		if err != nil {
			return p, fmt.Errorf("column %s: %w", probeHeader[c], err)
		}
		*ints[i] = v
	}
	return p, nil
}

func checkProbe(p *Probe) error {
	switch p.Kind {
	case ProbeICMP, ProbeICMPTask, ProbeSelect1, ProbeICMPUnshaped:
	default:
		return fmt.Errorf("probe kind %q: want %s, %s, %s or %s", p.Kind, ProbeICMP, ProbeICMPTask, ProbeSelect1, ProbeICMPUnshaped)
	}
	if p.RTTms < 0 || p.N < 0 || p.Failures < 0 || p.Failures > p.N {
		return fmt.Errorf("probe %s at %s ms: negative setting or counts, or failures > n", p.Kind, fmtSetting(p.RTTms))
	}
	return nil
}

func checkSample(s *Sample) error {
	switch {
	case s.Attempt < 1:
		return fmt.Errorf("attempt %d: attempts count from 1", s.Attempt)
	case s.App == "" || s.Route == "":
		return errors.New("app or route is empty")
	case s.RTTms < 0:
		return fmt.Errorf("negative setting %v ms", s.RTTms)
	case s.LatencyNS < 0:
		return fmt.Errorf("negative latency %d ns", s.LatencyNS)
	}
	return nil
}

func checkManifest(m *Manifest) error {
	if m.PlanName == "" {
		return errors.New("plan name is empty")
	}
	seen := make(map[int]bool, len(m.Tasks))
	for _, t := range m.Tasks {
		if seen[t.ID] {
			return fmt.Errorf("task ID %d appears twice in the task list", t.ID)
		}
		seen[t.ID] = true
		if t.App == "" || t.Route == "" || t.RTTms < 0 {
			return fmt.Errorf("%s: empty app or route, or negative setting", t)
		}
	}
	return nil
}

func sanitizeName(s string) string {
	if s == "" {
		return "plan"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, s)
}

func joinInts(a []int) string {
	s := make([]string, len(a))
	for i, v := range a {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}
