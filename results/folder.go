package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The files every study's folder may hold, by the name all of them use.
const (
	// SummaryJSONFile is a study's summary, derived from its raw files.
	SummaryJSONFile = "summary.json"
	// PlotsDir is the folder of a study's figures.
	PlotsDir = "plots"
)

// FolderTimeLayout is the time at the start of every results folder's
// name, in UTC: 20261129T235900Z-<plan>. Folders of earlier rttlabs
// carry other layouts (the worker study's local 20261129T235900-<plan>,
// the placement study's 20261129-235900-<plan>-<run id>); nothing reads a
// folder's name, so they are read and resumed as any other.
const FolderTimeLayout = "20060102T150405Z"

// FolderName is the name of a new results folder of plan started at now.
// Characters of plan outside [A-Za-z0-9._-] become '-'.
func FolderName(plan string, now time.Time) string {
	return now.UTC().Format(FolderTimeLayout) + "-" + SafeName(plan)
}

// SafeName is s with every character outside [A-Za-z0-9._-] replaced by
// '-' ("plan" when s is empty): a name any file system takes.
func SafeName(s string) string {
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

// Folder is a results folder open for writing: it holds the folder's
// lock (LockFile) until Close, so two processes never write one folder.
// Its appends are safe for concurrent use. After a failed append the
// Folder refuses further appends (part of a line may be on disk): Open
// the folder again, which trims it.
type Folder struct {
	dir  string
	kind string
	lock *os.File

	mu     sync.Mutex
	broken error
}

// Create makes the results folder <outDir>/FolderName(plan, now) of a
// study of kind and takes its lock before anything is written in it. It
// fails when the folder exists. The manifest follows with WriteManifest
// once the study knows what it runs on.
func Create(outDir, kind, plan string, now time.Time) (f *Folder, err error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("create results folder: %w", err)
	}
	dir := filepath.Join(outDir, FolderName(plan, now))
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create results folder %s: it already exists", dir)
		}
		return nil, fmt.Errorf("create results folder: %w", err)
	}
	lock, err := LockFolder(dir)
	if err != nil {
		return nil, err
	}
	if err := SyncDir(outDir); err != nil {
		UnlockFolder(lock)
		return nil, fmt.Errorf("create results folder %s: %w", dir, err)
	}
	return &Folder{dir: dir, kind: kind, lock: lock}, nil
}

// Open opens the results folder dir of a study of kind to resume it. It
// first takes the folder's lock (a *LockedError while another process,
// or another Folder of this one, writes it), then runs check, the
// study's reading of the folder (nil: none), and only when check passes
// trims each of files (names in dir; a missing one is left alone) of the
// cut last line an interrupted write leaves, as every reader of the
// folder leaves it out, so that new lines start clean. A folder of
// another study or of a newer rttlab is refused first (CheckResume).
func Open(dir, kind string, check func() error, files ...string) (f *Folder, err error) {
	if err := CheckResume(dir, kind); err != nil {
		return nil, err
	}
	lock, err := LockFolder(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			UnlockFolder(lock)
		}
	}()
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	for _, n := range files {
		if err := TrimCutLine(filepath.Join(dir, n)); err != nil {
			return nil, fmt.Errorf("open results folder %s: %w", dir, err)
		}
	}
	return &Folder{dir: dir, kind: kind, lock: lock}, nil
}

// Dir is the folder's path.
func (f *Folder) Dir() string { return f.dir }

// Path is the path of the folder's file name.
func (f *Folder) Path(name string) string { return filepath.Join(f.dir, name) }

// Close releases the folder's lock; later appends are refused.
func (f *Folder) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lock == nil {
		return nil
	}
	err := UnlockFolder(f.lock)
	f.lock = nil
	if err != nil {
		return fmt.Errorf("close results folder %s: %w", f.dir, err)
	}
	return nil
}

// WriteManifest writes the folder's manifest (WriteManifest).
func (f *Folder) WriteManifest(m any) error { return WriteManifest(f.dir, f.kind, m) }

// WriteManifest replaces dir's manifest.json with m, indented, at once
// (WriteAtomic): a reader finds the old manifest or the new one whole,
// never a folder with half of one. m's header must say kind (none: the
// RTT study, as its manifests always have) and this rttlab's format.
func WriteManifest(dir, kind string, m any) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", ManifestFile, err)
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("write %s: %w", ManifestFile, err)
	}
	if h.Kind == "" {
		h.Kind = KindRTT
	}
	if h.Kind != kind {
		return fmt.Errorf("write %s: its kind is %q, the folder's %q", ManifestFile, h.Kind, kind)
	}
	if h.Format > Format {
		return fmt.Errorf("write %s: format %d, this rttlab writes %d", ManifestFile, h.Format, Format)
	}
	return WriteAtomic(dir, ManifestFile, append(b, '\n'))
}

// CreateFile writes b to the folder's new file name, synced; it fails
// when the file exists.
func (f *Folder) CreateFile(name string, b []byte) error {
	if err := CreateSynced(f.Path(name), b); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	return nil
}

// Append appends b to the folder's file name (made if missing) and
// fsyncs it (AppendSynced). A failed append breaks the Folder.
func (f *Folder) Append(name string, b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return fmt.Errorf("append to %s: an earlier append failed, reopen the folder: %w", name, f.broken)
	}
	if f.lock == nil {
		return fmt.Errorf("append to %s: folder is closed", name)
	}
	if err := AppendSynced(f.Path(name), b); err != nil {
		f.broken = err
		return err
	}
	return nil
}

// AppendLines appends vs to the folder's file name, one JSON line each,
// with one fsync; nothing is written when one does not marshal.
func AppendLines[T any](f *Folder, name string, vs []T) error {
	b, err := jsonLines(vs)
	if err != nil {
		return fmt.Errorf("append to %s: %w", name, err)
	}
	return f.Append(name, b)
}

// AppendRows appends rows to the folder's CSV file name, with header
// first when the file is missing or empty, and one fsync.
func (f *Folder) AppendRows(name string, header []string, rows [][]string) error {
	b, err := CSVRows(header, rows, f.Path(name))
	if err != nil {
		return fmt.Errorf("append to %s: %w", name, err)
	}
	return f.Append(name, b)
}

// CSVRows is rows as CSV, with header first when the file at path is
// missing or empty (header nil: never).
func CSVRows(header []string, rows [][]string, path string) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if header != nil {
		if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Size() == 0) {
			if err := w.Write(header); err != nil {
				return nil, err
			}
		}
	}
	if err := w.WriteAll(rows); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteSummary replaces the folder's file name (a summary, derived from
// the raw files) with b at once (WriteAtomic).
func (f *Folder) WriteSummary(name string, b []byte) error { return WriteAtomic(f.dir, name, b) }

// AppendSynced appends b to path (made if missing) and fsyncs it before
// it returns: every raw file of a results folder is written so, and a
// line on disk stays there through a crash. It is the one append of
// every study.
func AppendSynced(path string, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	name := filepath.Base(path)
	h, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append to %s: %w", name, err)
	}
	if _, err := h.Write(b); err != nil {
		h.Close()
		return fmt.Errorf("append to %s: %w", name, err)
	}
	if err := h.Sync(); err != nil {
		h.Close()
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	if err := h.Close(); err != nil {
		return fmt.Errorf("append to %s: %w", name, err)
	}
	return nil
}

func jsonLines[T any](vs []T) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}
