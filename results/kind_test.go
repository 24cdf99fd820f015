package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFolderKind(t *testing.T) {
	for _, c := range []struct{ manifest, kind, err string }{
		{`{"plan_name":"smoke"}`, KindRTT, ""},
		{`{"kind":"placement"}`, KindPlacement, ""},
		{`{"kind":"workers","plan":{}}`, KindWorkers, ""},
		{`{"kind":"cooking"}`, "", `kind "cooking" is not a study rttlab knows`},
		{"{\n\"kind\": 3}", "", "manifest.json:2"},
		{"", "", "no manifest"},
	} {
		dir := t.TempDir()
		if c.manifest != "" {
			if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(c.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		k, err := FolderKind(dir)
		if c.err == "" && (err != nil || k != c.kind) {
			t.Errorf("%s: %q, %v; want %q", c.manifest, k, err, c.kind)
		}
		if c.err != "" && c.err != "no manifest" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %q, %v; want an error with %q", c.manifest, k, err, c.err)
		}
		if c.err == "no manifest" && err == nil {
			t.Errorf("no manifest: %q, want an error", k)
		}
	}
}

// A folder of a newer format is read by nothing here; a resume of a
// folder another study wrote is one line naming the command that
// continues it; a folder without a readable manifest is left to the
// study's own reader.
func TestFormatAndCheckResume(t *testing.T) {
	write := func(manifest string) string {
		dir := t.TempDir()
		if manifest != "" {
			if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	if h, err := ReadHeader(write(`{"kind":"placement"}`)); err != nil || h.Format != 1 {
		t.Errorf("no format: %+v %v, want format 1", h, err)
	}
	newer := write(`{"kind":"workers","format":2}`)
	if _, err := FolderKind(newer); err == nil || !strings.Contains(err.Error(), "written by a newer rttlab (results format 2") {
		t.Errorf("newer format: %v", err)
	}
	if err := CheckResume(newer, KindWorkers); err == nil || !strings.Contains(err.Error(), "newer rttlab") {
		t.Errorf("resume of a newer folder: %v", err)
	}
	for _, c := range []struct{ manifest, kind, want string }{
		{`{"plan_name":"smoke"}`, KindPlacement, "holds a rtt study, written by rttlab run; rttlab place --resume continues only its own: use rttlab run --resume"},
		{`{"kind":"placement"}`, KindWorkers, "use rttlab place --resume"},
		{`{"kind":"workers"}`, KindRTT, "use rttlab workers --resume"},
	} {
		err := CheckResume(write(c.manifest), c.kind)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s resumed as %s: %v, want one line with %q", c.manifest, c.kind, err, c.want)
		}
	}
	for _, c := range []struct{ manifest, kind string }{{`{"kind":"placement","format":1}`, KindPlacement}, {"", KindWorkers}, {"{", KindRTT}} {
		if err := CheckResume(write(c.manifest), c.kind); err != nil {
			t.Errorf("%q resumed as %s: %v", c.manifest, c.kind, err)
		}
	}
}
