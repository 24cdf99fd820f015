package rtt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/enginetest"
)

// TestIntegrationAimeosSkippedWithoutPackagist: here the Aimeos build
// fails fast with one clear line, and a plan that includes Aimeos reports
// it skipped with that reason instead of dropping it.
func TestIntegrationAimeosSkippedWithoutPackagist(t *testing.T) {
	rt := enginetest.Engine(t)
	b := enginetest.Builder(t, rt, "")
	ctx := context.Background()
	start := time.Now()
	_, err := b.Build(ctx, []string{"aimeos"})
	if err == nil {
		t.Skip("Packagist is reachable from this host: the Aimeos image built, so there is no skip path to test")
	}
	reason, ok := engine.SkipReason(err)
	if !ok || !strings.Contains(reason, "aimeos: needs network access to Packagist") {
		t.Fatalf("build error does not carry the clear line: %v", err)
	}
	t.Logf("aimeos build failed in %s: %s", time.Since(start).Round(time.Millisecond), reason)
	if _, err := b.Build(ctx, []string{"postgres", "agent", "go"}); err != nil {
		t.Fatal(err)
	}
	p := &Plan{Name: "skip-test", Seed: 3, DelaysMs: []float64{0}, Runs: 1, Requests: 2, Warmup: 1,
		Apps:      []PlanApp{{Name: "go", Routes: []string{"/feed"}}, {Name: "aimeos", Mix: "aimeos"}},
		ICMPCount: 2, SelectRuns: 1, SelectCalls: 2, TaskICMPCount: 1, TraceRequests: 2}
	p.Defaults()
	dir, err := Run(ctx, engine.NewLab(rt, ""), rt, b.Apps, RunOptions{Plan: p, OutDir: t.TempDir(), Skipped: map[string]string{"aimeos": reason}})
	if err != nil {
		t.Fatal(err)
	}
	d := loadFolder(t, dir)
	if d.Manifest.Skipped["aimeos"] != reason {
		t.Fatalf("manifest skipped = %v", d.Manifest.Skipped)
	}
	for _, tk := range d.Manifest.Tasks {
		if tk.App == "aimeos" {
			t.Fatalf("a skipped app has tasks: %+v", tk)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.Contains(string(md), "aimeos") || !strings.Contains(string(md), "needs network access to Packagist") {
		t.Fatalf("summary.md does not report aimeos skipped with its reason:\n%s", md)
	}
}
