package raw

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

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
	// WireMissing lists the done tasks without wire figures (of every
	// app where the manifest says the run checked the wire, else of the
	// apps that have some): wire.csv cut short or lost, so their settings
	// cannot be verified by the wire.
	WireMissing []int
	// Ignored counts samples of attempts that were never marked done.
	Ignored int
	// Notes lists tolerated defects (an incomplete last line after a
	// crash, a task marked done twice); the summary repeats them.
	Notes []string

	maxAttempt map[int]int
	cut        map[string][]byte // an incomplete last line, by file
	// undone is the task and attempt undoCutAttempt un-did (0, 0: none).
	undone [2]int
}

// Undone is the task and attempt whose done mark the reader took back
// (0, 0: none): samples.jsonl's cut last line is of that attempt. The
// writer that trims the cut line records the attempt failed, so that it
// stays undone for every later reader.
func (d *Data) Undone() (task, attempt int) { return d.undone[0], d.undone[1] }

// NextAttempt returns the attempt number to use for a (re)run of task: one
// more than any attempt seen in samples.jsonl or tasks.jsonl, 1 for a task
// never started.
func (d *Data) NextAttempt(task int) int { return d.maxAttempt[task] + 1 }

// IsDone reports whether task has an attempt marked done.
func (d *Data) IsDone(task int) bool { _, ok := d.Done[task]; return ok }

// HasTrace reports whether the folder's trace covers app.
func (d *Data) HasTrace(app string) bool {
	for _, r := range d.Trace {
		if r.App == app {
			return true
		}
	}
	return false
}

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
// and probes.csv, and shaper.csv, trace.json, wire.csv and anatomy.jsonl
// where the run wrote them. It keeps only the samples of attempts marked done, so a task redone on
// resume never counts twice. A missing file of the first four or a
// malformed line is an error naming the file and line
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
	if err := d.readProbes(); err != nil {
		return nil, err
	}
	if d.Shaper, err = LoadShaper(dir); err != nil {
		return nil, err
	}
	if d.Trace, err = ReadTrace(dir); err != nil {
		return nil, err
	}
	if err := d.readWire(tasks); err != nil {
		return nil, err
	}
	return d, nil
}

// readWire reads wire.csv and anatomy.jsonl, keeping the rows of done
// attempts: a run killed after writing an attempt's rows and before
// marking it done hands the same attempt out again, so the last rows of
// an attempt are the ones that count. Rows of tasks the manifest does
// not have, done tasks without wire rows and tasks taken apart whose
// requests anatomy.jsonl lacks are left out and said in Notes.
func (d *Data) readWire(tasks map[int]Task) error {
	rows, err := LoadWire(d.Dir)
	if err != nil {
		return err
	}
	var unknown []int
	known := func(task int) bool {
		if _, ok := tasks[task]; ok {
			return true
		}
		if !slices.Contains(unknown, task) {
			unknown = append(unknown, task)
		}
		return false
	}
	done := func(task, attempt int) bool { a, ok := d.Done[task]; return known(task) && ok && a == attempt }
	type wkey struct {
		task, attempt int
		dir           string
	}
	d.Wire = LastRows(rows, func(r WireRow) wkey { return wkey{r.Task, r.Attempt, r.Direction} },
		func(r WireRow) bool { return done(r.Task, r.Attempt) })
	an, err := LoadAnatomy(d.Dir, done)
	if err != nil {
		return err
	}
	type akey struct{ task, attempt, seq int }
	d.Anatomy = LastRows(an, func(r AnatomyRow) akey { return akey{r.Task, r.Attempt, r.Seq} },
		func(AnatomyRow) bool { return true })
	d.noteWireGaps(tasks, unknown)
	return nil
}

// LoadWire reads wire.csv; a folder without one (written before the wire
// was checked on every task) has no rows. An unterminated last line (a
// crash mid-write) is ignored.
func LoadWire(dir string) ([]WireRow, error) {
	return loadRows(dir, WireFile, WireHeader, parseWireRow, wireHeaderV1)
}

// LoadAnatomy reads the rows of anatomy.jsonl whose (task, attempt) keep
// says counts; a folder without the file has none. An unterminated last
// line (a crash mid-write) is ignored; a malformed line is an error
// naming it.
func LoadAnatomy(dir string, keep func(task, attempt int) bool) ([]AnatomyRow, error) {
	var out []AnatomyRow
	_, err := results.ReadJSONLines(filepath.Join(dir, AnatomyFile), AnatomyFile, results.MaxLine, true, func(_ int, b []byte) error {
		var row AnatomyRow
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		if keep(row.Task, row.Attempt) {
			out = append(out, row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LastRows keeps the rows that keep accepts, each only where it is the
// last row of its key: a run killed after writing an attempt's rows and
// before marking it done hands the same attempt out again, so the last
// rows of a (task, attempt, ...) are the ones that count.
func LastRows[R any, K comparable](rows []R, key func(R) K, keep func(R) bool) []R {
	last := map[K]int{}
	for i, r := range rows {
		last[key(r)] = i
	}
	var out []R
	for i, r := range rows {
		if keep(r) && last[key(r)] == i {
			out = append(out, r)
		}
	}
	return out
}

// noteWireGaps says in Notes which wire rows and requests were left out,
// and lists the done tasks without wire figures of the apps that have
// some in the folder.
func (d *Data) noteWireGaps(tasks map[int]Task, unknown []int) {
	eg := func(ids []int) string {
		slices.Sort(ids)
		s := make([]string, 0, 3)
		for _, id := range ids[:min(3, len(ids))] {
			s = append(s, strconv.Itoa(id))
		}
		return strings.Join(s, ", ")
	}
	if len(unknown) > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("wire.csv or anatomy.jsonl: rows of %d task(s) the manifest does not have (task %s): left out", len(unknown), eg(unknown)))
	}
	if len(d.Wire) == 0 && !d.Manifest.WireChecked {
		return
	}
	hasWire, anatomized, hasAnatomy, appHas := map[int]bool{}, map[int]bool{}, map[int]bool{}, map[string]bool{}
	for _, r := range d.Wire {
		hasWire[r.Task], appHas[r.App] = true, true
		anatomized[r.Task] = anatomized[r.Task] || r.Anatomized > 0
	}
	for _, r := range d.Anatomy {
		hasAnatomy[r.Task] = true
	}
	var lost []int
	for id := range d.Done {
		if !hasWire[id] && (d.Manifest.WireChecked || appHas[tasks[id].App]) {
			d.WireMissing = append(d.WireMissing, id)
		} else if anatomized[id] && !hasAnatomy[id] {
			lost = append(lost, id)
		}
	}
	slices.Sort(d.WireMissing)
	if n := len(d.WireMissing); n > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("wire.csv: %d done task(s) have no rows (task %s): cut short or lost; their settings are not verified by the wire", n, eg(slices.Clone(d.WireMissing))))
	}
	if len(lost) > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("anatomy.jsonl: no request of %d task(s) that wire.csv says were taken apart (task %s): cut short or lost; left out of where the time went", len(lost), eg(lost)))
	}
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
	if err := CheckManifest(&d.Manifest); err != nil {
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
	doneAttempts := map[int][]int{}
	// A failed record after a done one of the same attempt takes the done
	// back (Open writes one for an attempt whose samples were cut).
	undone := map[[2]int]bool{}
	err := d.readLines(TasksFile, func(line int, b []byte) error {
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
	type reqKey struct{ task, attempt, seq int }
	firstLine := map[reqKey]int{}
	return d.readLines(SamplesFile, func(line int, b []byte) error {
		var s Sample
		if err := json.Unmarshal(b, &s); err != nil {
			return results.JSONWords(err)
		}
		if err := CheckSample(&s); err != nil {
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

// readLines calls fn for each '\n'-terminated line of the folder's file
// name with its 1-based line number. An unterminated last line is skipped
// and noted.
func (d *Data) readLines(name string, fn func(line int, b []byte) error) error {
	l, err := results.ReadJSONLines(filepath.Join(d.Dir, name), name, results.MaxLine, false, fn)
	if err != nil {
		return err
	}
	if l.Cut != nil {
		d.cut[name] = l.Cut
		d.Notes = append(d.Notes, fmt.Sprintf("%s:%d: incomplete last line (%d bytes) ignored: a crash mid-write; its attempt is not done",
			name, l.Count+1, len(l.Cut)))
	}
	return nil
}

// readProbes reads probes.csv, which every run writes with its header,
// into d.Probes; an unterminated last line is skipped and noted.
func (d *Data) readProbes() error {
	path := filepath.Join(d.Dir, ProbesFile)
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
	r := csv.NewReader(bytes.NewReader(b[:complete]))
	r.FieldsPerRecord = len(ProbeHeader)
	r.ReuseRecord = true
	hdr, err := r.Read()
	if err == io.EOF {
		return fmt.Errorf("%s:1: missing header", path)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !slices.Equal(hdr, ProbeHeader) {
		return fmt.Errorf("%s:1: header %q, want %q", path, strings.Join(hdr, ","), strings.Join(ProbeHeader, ","))
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
			err = CheckProbe(&p)
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		d.Probes = append(d.Probes, p)
	}
}

// LoadShaper reads shaper.csv; a folder without one (written before the
// shaper reported on itself) has no rows. An unterminated last line (a
// crash mid-write) is ignored.
func LoadShaper(dir string) ([]ShaperRow, error) {
	return loadRows(dir, ShaperFile, ShaperHeader, parseShaperRow)
}

// ReadTrace reads DIR/trace.json; a folder without one has no trace.
func ReadTrace(dir string) ([]workloads.TraceRow, error) {
	p := filepath.Join(dir, TraceFile)
	b, err := capped.ReadFile(p, TraceFile, results.MaxFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rows []workloads.TraceRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("%s: %w", results.JSONErrPos(p, b, err), results.JSONWords(err))
	}
	return rows, nil
}

func joinInts(a []int) string {
	s := make([]string, len(a))
	for i, v := range a {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}

// loadRows reads the CSV file name of dir, whose first line is header,
// through parse; a folder without the file has no rows. An unterminated
// last line (a crash mid-write) is ignored.
func loadRows[T any](dir, name string, header []string, parse func([]string) (T, error), older ...[]string) ([]T, error) {
	var out []T
	err := results.ReadCSV(filepath.Join(dir, name), name, header, func(_ int, rec []string) error {
		row, err := parse(rec)
		out = append(out, row)
		return err
	}, older...)
	if err != nil {
		return nil, err
	}
	return out, nil
}
