package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/workers"
)

// report regenerates a workers results folder from its raw files, from
// any working folder, and refuses one with no run done, writing nothing.
func TestReportWorkersFolder(t *testing.T) {
	plan, ok := workers.BuiltinPlan(workers.PlanWorkersSmoke, workers.DefaultLimits(runtime.NumCPU()))
	if !ok {
		t.Fatal("no workers-smoke plan")
	}
	dir := t.TempDir()
	m := workers.Manifest{Kind: "workers", Plan: plan, PlanFile: plan.Name, Seed: plan.Seed, App: "rails"}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := execLine(context.Background(), "report", dir)
	if code != 1 || !strings.Contains(errs, "runs.jsonl holds no run done") {
		t.Fatalf("no runs: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.md")); err == nil {
		t.Fatal("a report of no runs wrote summary.md")
	}
	var lines []byte
	for i, tk := range plan.Tasks() {
		run := workers.Run{Cell: tk.Cell(), Run: tk.Run, Rate: 50, Workers: []string{"1", "2"}}
		for j := 0; j < 40; j++ {
			w := []string{"1", "2"}[j%2]
			start := int64(j) * 2_000_000
			run.Records = append(run.Records, workers.Record{Worker: w, StartNS: start, EndNS: start + 1_000_000, LatencyNS: int64(1_000_000 + 10_000*(i%7) + 1000*j)})
		}
		l, _ := json.Marshal(workers.RunLine{Task: tk, Run: run})
		lines = append(append(lines, l...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "runs.jsonl"), lines, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	code, out, errs := execLine(context.Background(), "report", dir)
	if code != 0 || !strings.Contains(out, "wrote "+filepath.Join(dir, "summary.md")) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil || !strings.Contains(string(md), "Worker scheduling: "+plan.Name) {
		t.Fatalf("summary.md: %v\n%s", err, md)
	}
}
