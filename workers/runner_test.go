package workers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results"
)

func TestJSONLinesSurviveATornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := results.AppendJSONLine(path, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := results.AppendJSONLine(path, map[string]int{"a": 2}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"a":3`) // killed mid-write
	f.Close()
	var lines []string
	if err := readJSONLines(path, func(b []byte) error { lines = append(lines, strings.TrimSpace(string(b))); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(lines, " ") != `{"a":1} {"a":2}` {
		t.Errorf("lines %q", lines)
	}
	if err := readJSONLines(filepath.Join(t.TempDir(), "none.jsonl"), func([]byte) error { return nil }); err != nil {
		t.Errorf("a missing file is an empty one: %v", err)
	}
}
