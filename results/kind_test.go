package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFolderKind(t *testing.T) {
	for _, c := range []struct{ manifest, kind, err string }{
		{`{"plan_name":"smoke"}`, KindStudy, ""},
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
