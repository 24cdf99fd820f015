package results

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var folderStart = time.Date(2026, 11, 29, 23, 59, 0, 0, time.FixedZone("CET", 3600))

// Every study's folder is named <UTC time>Z-<plan>, and its lock is taken
// before anything is written in it: a second writer is refused, in this
// process too, until Close; a folder of that name is not made twice.
func TestCreateNameAndLock(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rttlab-results")
	f, err := Create(out, KindWorkers, "my plan/x", folderStart)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "20261129T225900Z-my-plan-x"); f.Dir() != want {
		t.Errorf("folder %s, want %s", f.Dir(), want)
	}
	if pid := LockHolder(filepath.Join(f.Dir(), LockFile)); pid != os.Getpid() {
		t.Errorf("lock holder %d, want %d", pid, os.Getpid())
	}
	if _, err := Open(f.Dir(), KindWorkers, nil); !errors.Is(err, ErrLocked) {
		t.Errorf("open of a held folder: %v, want ErrLocked", err)
	}
	if _, err := Create(out, KindWorkers, "my plan/x", folderStart); err == nil || !strings.HasSuffix(err.Error(), "it already exists") {
		t.Errorf("second create: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Append("x.jsonl", []byte("{}\n")); err == nil {
		t.Error("append after Close succeeded")
	}
	g, err := Open(f.Dir(), KindWorkers, nil)
	if err != nil {
		t.Fatalf("open after Close: %v", err)
	}
	g.Close()
	if _, err := os.Stat(filepath.Join(f.Dir(), LockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after Close: %v", err)
	}
}

// The manifest is written whole or not at all, with the folder's kind;
// one of another kind is refused and leaves the old one in place.
func TestWriteManifestAtomic(t *testing.T) {
	f, err := Create(t.TempDir(), KindPlacement, "p", folderStart)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]any{"kind": KindPlacement, "format": Format, "plan": "p"}
	if err := f.WriteManifest(m); err != nil {
		t.Fatal(err)
	}
	if h, err := ReadHeader(f.Dir()); err != nil || h.Kind != KindPlacement || h.Format != Format {
		t.Errorf("header %+v, %v", h, err)
	}
	before, _ := os.ReadFile(f.Path(ManifestFile))
	if err := f.WriteManifest(map[string]any{"kind": KindWorkers}); err == nil {
		t.Error("a manifest of another kind was written")
	}
	if err := f.WriteManifest(struct{ Plan string }{"no kind"}); err == nil {
		t.Error("a manifest without the placement kind was written")
	}
	if after, _ := os.ReadFile(f.Path(ManifestFile)); string(after) != string(before) {
		t.Errorf("manifest changed by a refused write: %s", after)
	}
	if left, _ := filepath.Glob(filepath.Join(f.Dir(), ".manifest.json.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// The RTT study's manifests carry no kind.
	g, err := Create(t.TempDir(), KindRTT, "r", folderStart)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.WriteManifest(struct{ PlanName string }{"r"}); err != nil {
		t.Errorf("RTT manifest: %v", err)
	}
}

// JSON lines and CSV rows go through one synced append; a CSV file gets
// its header once; a summary is replaced whole.
func TestFolderAppends(t *testing.T) {
	f, err := Create(t.TempDir(), KindWorkers, "w", folderStart)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type line struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	if err := AppendLines(f, "a.jsonl", []line{{1, "<a>"}, {2, "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := AppendLines(f, "a.jsonl", []line{{3, "c"}}); err != nil {
		t.Fatal(err)
	}
	var got []line
	if _, err := ReadJSONLines(f.Path("a.jsonl"), "a.jsonl", MaxLine, false, func(_ int, b []byte) error {
		var l line
		got = append(got, l)
		return json.Unmarshal(b, &got[len(got)-1])
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].S != "<a>" || got[2].N != 3 {
		t.Errorf("lines %+v", got)
	}
	if err := AppendLines(f, "a.jsonl", []any{func() {}}); err == nil {
		t.Error("a value that does not marshal was appended")
	}
	hdr := []string{"a", "b"}
	for _, rows := range [][][]string{{{"1", "x,y"}}, {{"2", "z"}, {"3", ""}}} {
		if err := f.AppendRows("r.csv", hdr, rows); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(f.Path("r.csv")); string(b) != "a,b\n1,\"x,y\"\n2,z\n3,\n" {
		t.Errorf("r.csv = %q", b)
	}
	var rows [][]string
	if err := ReadCSV(f.Path("r.csv"), "r.csv", hdr, func(_ int, rec []string) error {
		rows = append(rows, append([]string(nil), rec...))
		return nil
	}); err != nil || len(rows) != 3 || rows[0][1] != "x,y" {
		t.Errorf("rows %q, %v", rows, err)
	}
	if err := ReadCSV(f.Path("r.csv"), "r.csv", []string{"a"}, func(int, []string) error { return nil }); err == nil || !strings.Contains(err.Error(), "r.csv:1: unexpected header") {
		t.Errorf("header mismatch: %v", err)
	}
	if err := f.WriteSummary(SummaryMDFile, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteSummary(SummaryMDFile, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if s, err := ReadSummaryMD(f.Dir()); err != nil || s != "new\n" {
		t.Errorf("summary %q, %v", s, err)
	}
}

// Open trims every file it is given of the cut last line an interrupted
// write leaves, and only once the study's check passed; a folder another
// study wrote is refused before anything.
func TestOpenTrimsCutLines(t *testing.T) {
	f, err := Create(t.TempDir(), KindWorkers, "w", folderStart)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteManifest(map[string]any{"kind": KindWorkers}); err != nil {
		t.Fatal(err)
	}
	dir := f.Dir()
	f.Close()
	cut := map[string]string{"a.jsonl": "{\"n\":1}\n{\"n\":", "r.csv": "a,b\n1,2\n3,"}
	for n, b := range cut {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	refuse := errors.New("not a folder of mine")
	if _, err := Open(dir, KindWorkers, func() error { return refuse }, "a.jsonl", "r.csv"); !errors.Is(err, refuse) {
		t.Fatalf("open with a failing check: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.jsonl")); string(b) != cut["a.jsonl"] {
		t.Errorf("a refused open changed a.jsonl: %q", b)
	}
	g, err := Open(dir, KindWorkers, nil, "a.jsonl", "r.csv", "missing.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for n, want := range map[string]string{"a.jsonl": "{\"n\":1}\n", "r.csv": "a,b\n1,2\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, n)); string(b) != want {
			t.Errorf("%s after open = %q, want %q", n, b, want)
		}
	}
	if err := AppendLines(g, "a.jsonl", []map[string]int{{"n": 2}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.jsonl")); string(b) != "{\"n\":1}\n{\"n\":2}\n" {
		t.Errorf("a.jsonl after append = %q", b)
	}
	if _, err := Open(dir, KindPlacement, nil); err == nil || !strings.Contains(err.Error(), "the folder holds a workers study, written by rttlab workers") {
		t.Errorf("open by another study: %v", err)
	}
}
