package rtt

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/results"
)

// The results folder knows its plan; a folder whose manifest holds no
// plan is refused by name.
func TestFakeFolderPlan(t *testing.T) {
	fakelab.OnEach(t, func(t *testing.T, l *fakelab.Lab) {
		p := fakePlan()
		dir := runFake(t, l, p)
		got, err := FolderPlan(dir)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(p)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Fatalf("plan %s, want %s", b, a)
		}
		if _, err := FolderPlan(t.TempDir()); err == nil {
			t.Error("FolderPlan of an empty folder")
		}
		m := filepath.Join(dir, results.ManifestFile)
		data, _ := os.ReadFile(m)
		var raw map[string]any
		json.Unmarshal(data, &raw)
		raw["plan"] = "not a plan"
		data, _ = json.Marshal(raw)
		os.WriteFile(m, data, 0o644)
		if _, err := FolderPlan(dir); err == nil || !strings.Contains(err.Error(), "manifest plan") {
			t.Errorf("bad plan: %v", err)
		}
	})
}

func TestLoadPlan(t *testing.T) {
	if p, err := LoadPlan("smoke"); err != nil || p.Name != "smoke" {
		t.Fatalf("smoke: %v", err)
	}
	if _, err := LoadPlan(filepath.Join(t.TempDir(), "nope.yaml")); err == nil || !strings.Contains(err.Error(), "neither a built-in plan") {
		t.Errorf("missing: %v", err)
	}
	if _, err := LoadPlan(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a folder: give a regular file") {
		t.Errorf("a folder: %v", err)
	}
	f := filepath.Join(t.TempDir(), "mine.yaml")
	os.WriteFile(f, []byte("delays_ms: [0, 1]\nruns: 2\nrequests: 5\napps: [{name: go, routes: [/feed]}]\n"), 0o644)
	if p, err := LoadPlan(f); err != nil || p.Name != "mine" || p.Shaper != "auto" {
		t.Errorf("file: %+v %v", p, err)
	}
}

// The wire hook's defaults: the userspace shaper gets the floor and no
// calibration; kernel netem neither; a plan's floor_ms wins and is bounded.
func TestPlanFloorAndCalibrationDefaults(t *testing.T) {
	p := &Plan{Calibrate: "auto"}
	if got := p.Floor("userspace"); got != 300*time.Microsecond {
		t.Errorf("userspace floor %v", got)
	}
	if got := p.Floor("kernel"); got != 0 {
		t.Errorf("kernel floor %v", got)
	}
	if p.Calibrates("userspace") || p.Calibrates("kernel") {
		t.Error("auto calibrates the wire hook or kernel netem")
	}
	p.Hook = "ingress"
	if !p.Calibrates("userspace") {
		t.Error("auto does not calibrate the ingress hook")
	}
	zero := 0.0
	p.FloorMs = &zero
	if got := p.Floor("userspace"); got != 0 {
		t.Errorf("floor_ms 0 gives %v", got)
	}
	for _, bad := range []float64{-0.1, 11, math.NaN()} {
		q := fakePlan()
		q.FloorMs = &bad
		if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "floor_ms") {
			t.Errorf("floor_ms %v: %v", bad, err)
		}
	}
}
