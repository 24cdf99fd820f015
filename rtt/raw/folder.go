package raw

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

// Folder is the RTT study's results folder open for writing: the runner
// appends each task's samples, probes, shaper, wire and anatomy rows and
// marks its attempts in it, in the raw format that Load reads. It is a
// results.Folder: its lock held until Close, every append fsynced before
// it returns, and after a failed append the Folder refuses further
// appends (a partial line may be on disk); Open trims the partial line. Its methods are safe for concurrent use.
type Folder struct {
	*results.Folder
	state *Data
	// wireHeader is wire.csv's layout, read once (wireLayout).
	wireHeader []string
}

// rawFiles are the files of an RTT folder that the runner appends to;
// Open trims each of a cut last line.
var rawFiles = []string{SamplesFile, TasksFile, ProbesFile, ShaperFile, WireFile, AnatomyFile}

// Create makes a new results folder <outDir>/<UTC time>-<planName>/
// (results.Create; for example rttlab-results/20261129T235900Z-study/)
// with empty samples.jsonl and tasks.jsonl and a probes.csv holding only
// its header. It fails if the folder exists. The Folder holds the
// folder's lock until Close. Call WriteManifest before the first task.
func Create(outDir, planName string, now time.Time) (f *Folder, err error) {
	rf, err := results.Create(outDir, results.KindRTT, planName, now)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			rf.Close()
		}
	}()
	hdr, err := results.CSVRows(nil, [][]string{ProbeHeader}, "")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", ProbesFile, err)
	}
	initial := map[string][]byte{SamplesFile: nil, TasksFile: nil, ProbesFile: hdr}
	for _, n := range []string{SamplesFile, TasksFile, ProbesFile} {
		if err := rf.CreateFile(n, initial[n]); err != nil {
			return nil, fmt.Errorf("create results folder %s: %w", rf.Dir(), err)
		}
	}
	if err := results.SyncDir(rf.Dir()); err != nil {
		return nil, fmt.Errorf("create results folder %s: %w", rf.Dir(), err)
	}
	return &Folder{Folder: rf}, nil
}

// Open reopens an existing results folder to resume it
// (results.Open). It first takes the folder's lock, then loads and checks
// every file (Load); any malformed line other than an unterminated
// last line is an error and nothing is changed. An unterminated last
// line of samples.jsonl, tasks.jsonl, probes.csv, shaper.csv, wire.csv or
// anatomy.jsonl is what a crash mid-write leaves; it belongs to an
// attempt that was never marked done, and Open truncates it so new
// lines start clean. State returns what was loaded.
//
// While another Folder of dir is open, in this process or another,
// Open fails with a *results.LockedError (results.ErrLocked) and changes
// nothing. A lock file left by a process that died is no obstacle.
// Readers (Load, and rtt/report's Render) take no lock.
func Open(dir string) (f *Folder, err error) {
	var d *Data
	load := func() error {
		var err error
		if d, err = Load(dir); err != nil {
			return fmt.Errorf("open results folder: %w", err)
		}
		return nil
	}
	rf, err := results.Open(dir, results.KindRTT, load, rawFiles...)
	if errors.Is(err, fs.ErrNotExist) && d == nil {
		// No such folder: Load names what is missing.
		if lerr := load(); lerr != nil {
			return nil, lerr
		}
	}
	if err != nil {
		return nil, err
	}
	f = &Folder{Folder: rf, state: d}
	// The trim removed the cut line that un-did an attempt marked done:
	// a failed record keeps it undone for every later reader.
	if task, attempt := d.Undone(); task != 0 {
		if err := f.MarkFailed(task, attempt, "its last sample line was cut: the attempt runs again"); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// State returns the folder's contents as read by Open (nil after
// Create). Use Data.Pending and Data.NextAttempt to resume.
func (f *Folder) State() *Data { return f.state }

// WriteManifest writes manifest.json atomically (results.WriteManifest).
func (f *Folder) WriteManifest(m *Manifest) error {
	if err := CheckManifest(m); err != nil {
		return fmt.Errorf("write %s: %w", results.ManifestFile, err)
	}
	return f.Folder.WriteManifest(m)
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
	lines := make([]Sample, len(s))
	for i := range s {
		x := s[i]
		x.Task, x.Attempt = task, attempt
		if err := CheckSample(&x); err != nil {
			return fmt.Errorf("append samples of task %d: sample %d: %w", task, i, err)
		}
		lines[i] = x
	}
	return results.AppendLines(f.Folder, SamplesFile, lines)
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
	return results.AppendLines(f.Folder, TasksFile, []TaskRecord{r})
}

// AppendProbes appends rows to probes.csv and fsyncs.
func (f *Folder) AppendProbes(p []Probe) error {
	rows := make([][]string, len(p))
	for i := range p {
		if err := CheckProbe(&p[i]); err != nil {
			return fmt.Errorf("append probes: row %d: %w", i, err)
		}
		rows[i] = ProbeRecord(&p[i])
	}
	// Create wrote the header.
	return f.AppendRows(ProbesFile, nil, rows)
}

// AppendShaper appends rows to shaper.csv (created with its header on
// first use) and fsyncs.
func (f *Folder) AppendShaper(rows []ShaperRow) error {
	recs := make([][]string, len(rows))
	for i := range rows {
		recs[i] = rows[i].Record()
	}
	return f.AppendRows(ShaperFile, ShaperHeader, recs)
}

// AppendWire appends rows to wire.csv (created with its header on first
// use) and fsyncs.
func (f *Folder) AppendWire(rows []WireRow) error {
	if f.wireHeader == nil {
		header, err := wireLayout(f.Path(WireFile))
		if err != nil {
			return err
		}
		f.wireHeader = header
	}
	recs := make([][]string, len(rows))
	for i := range rows {
		recs[i] = rows[i].Record()[:len(f.wireHeader)]
	}
	return f.AppendRows(WireFile, f.wireHeader, recs)
}

// wireLayout is the header of the wire.csv at path: WireHeader for a new
// file, or the older layout a resumed folder's file was begun with (its
// rows go on in it, without the counts it has no columns for).
func wireLayout(path string) ([]string, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return WireHeader, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	first, err := bufio.NewReader(fh).ReadString('\n')
	if strings.TrimSpace(first) == strings.Join(wireHeaderV1, ",") {
		return wireHeaderV1, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return WireHeader, nil
}

// AppendAnatomy appends rows to anatomy.jsonl, one JSON line each, and
// fsyncs.
func (f *Folder) AppendAnatomy(rows []AnatomyRow) error {
	return results.AppendLines(f.Folder, AnatomyFile, rows)
}

// WriteTrace replaces the rows of the apps in rows in DIR/trace.json and
// writes the file atomically (results.WriteJSON); it needs no Folder.
func WriteTrace(dir string, rows []workloads.TraceRow) error {
	old, err := ReadTrace(dir)
	if err != nil {
		return err
	}
	apps := map[string]bool{}
	for _, r := range rows {
		apps[r.App] = true
	}
	var all []workloads.TraceRow
	for _, r := range old {
		if !apps[r.App] {
			all = append(all, r)
		}
	}
	all = append(all, rows...)
	slices.SortFunc(all, func(a, b workloads.TraceRow) int {
		if c := strings.Compare(a.App, b.App); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	return results.WriteJSON(dir, TraceFile, all)
}
