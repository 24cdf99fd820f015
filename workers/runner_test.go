package workers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

func TestOpenLoopArgs(t *testing.T) {
	got := strings.Join(openLoopArgs(workloads.OpenLoopOptions{
		BaseURL: "http://front:8080", Rate: 12.5, Count: 30, Warmup: 5, Seed: 7, Timeout: 10 * time.Second, NewConnPerRequest: true,
		CopyHeaders: []string{"X-A", "X-B"}, Header: map[string]string{"X-Rttlab-Policy": "jsq", "A": "1"},
		Requests: workloads.PathRequests("/work?cpu_ms=5&queries=1"),
	}), " ")
	want := "/usr/local/bin/rttlab agent openloop --url http://front:8080 --rate 12.5 --count 30 --warmup 5 --seed 7 --timeout 10s --new-conn --copy-header X-A --copy-header X-B --header A: 1 --header X-Rttlab-Policy: jsq --path /work?cpu_ms=5&queries=1"
	if got != want {
		t.Errorf("args\n got %s\nwant %s", got, want)
	}
}

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
