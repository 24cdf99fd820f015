package results

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// stubStudy stands in for a study in this package's tests, which import
// none: each kind is registered as its study package registers it.
type stubStudy struct{ kind string }

func (s stubStudy) Kind() string                             { return s.kind }
func (stubStudy) Report(string, io.Writer) ([]string, error) { return nil, nil }
func (stubStudy) Compare(string, string) (string, error)     { return "", ErrNoCompare }
func (stubStudy) Tasks(string) ([]TaskState, error)          { return nil, nil }
func (stubStudy) Digest(string) (string, error)              { return "", nil }

func init() {
	for kind, writer := range map[string]string{KindWorkers: "rttlab workers", KindRTT: "rttlab run", KindPlacement: "rttlab place"} {
		Register(StudyKind{Kind: kind, Writer: writer, Study: stubStudy{kind}})
	}
}

// The registry finds each kind by name, lists them in the order the
// refusals name them, and refuses a kind no study registered in the
// line rttlab always gave; a kind registered twice is a programming
// error.
func TestRegistry(t *testing.T) {
	if k, ok := Lookup(KindPlacement); !ok || k.Writer != "rttlab place" || k.Study.Kind() != KindPlacement {
		t.Errorf("lookup placement: %+v, %v", k, ok)
	}
	if _, ok := Lookup("cooking"); ok {
		t.Error("an unregistered kind was found")
	}
	var kinds []string
	for _, k := range Registered() {
		kinds = append(kinds, k.Kind)
	}
	if len(kinds) != 3 || kinds[0] != KindRTT || kinds[1] != KindPlacement || kinds[2] != KindWorkers {
		t.Errorf("registered %v", kinds)
	}
	if w := Writer("cooking"); w != "an unknown study" {
		t.Errorf("writer of an unknown kind: %q", w)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"kind":"cooking"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, ManifestFile) + `: kind "cooking" is not a study rttlab knows (rtt, placement or workers)`
	if _, err := FolderKind(dir); err == nil || err.Error() != want {
		t.Errorf("unknown kind: %v\nwant %s", err, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("a kind registered twice was taken")
		}
	}()
	Register(StudyKind{Kind: KindRTT, Writer: "rttlab run", Study: stubStudy{KindRTT}})
}
