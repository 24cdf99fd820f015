package workers

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func TestWritePlots(t *testing.T) {
	s := Analyze(study(6), Options{Seed: 3, Resamples: 300})
	dir := filepath.Join(t.TempDir(), "plots")
	paths, err := s.WritePlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{PlotLatency + ".svg", PlotLatency + ".png", PlotCollisions + ".svg", PlotCollisions + ".png"}
	if len(paths) != len(want) {
		t.Fatalf("wrote %v", paths)
	}
	for i, p := range paths {
		if filepath.Base(p) != want[i] {
			t.Errorf("file %d is %s, want %s", i, filepath.Base(p), want[i])
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(p) {
		case ".svg":
			if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("<?xml")) || !strings.Contains(string(b), "proxy:jsq") || !strings.Contains(string(b), "2x2 · cpu-heavy · 1 ms RTT") {
				t.Errorf("%s does not look like the figure", p)
			}
		case ".png":
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if r := img.Bounds(); r.Dx() < 600 || r.Dy() < 400 {
				t.Errorf("%s is %dx%d", p, r.Dx(), r.Dy())
			}
		}
	}
	if plots, err := (&Summary{}).Plots(); err != nil || plots != nil {
		t.Errorf("empty summary: %v %v", plots, err)
	}
}

// Each figure is a grid of a column per configuration and a row per (mix,
// RTT), the policy legend beside it with one entry per policy.
func TestPlotsLayout(t *testing.T) {
	s := Analyze(study(6), Options{Seed: 3, Resamples: 300})
	plots, err := s.Plots()
	if err != nil {
		t.Fatal(err)
	}
	if len(plots) != 2 || plots[0].Name != PlotLatency || plots[1].Name != PlotCollisions {
		t.Fatalf("%d figures", len(plots))
	}
	a := s.axes()
	for _, pf := range plots {
		if pf.Title == "" || pf.Description == "" {
			t.Errorf("%s has no title or description", pf.Name)
		}
		for _, pol := range a.policies {
			if n := strings.Count(string(pf.SVG), ">"+pol+"<"); n != 1 {
				t.Errorf("%s: %d legend entries for %s", pf.Name, n, pol)
			}
		}
		img, err := png.Decode(bytes.NewReader(pf.PNG))
		if err != nil {
			t.Fatal(err)
		}
		// 150 dpi: at least 6 in of panels and 1.9 in of legend wide, 2.6 in
		// a row and 0.5 in of title high.
		w, h := 150*max(3.3*float64(len(a.layouts)), 6)+150*1.9, 150*(2.6*float64(len(a.rows))+0.5)
		if r := img.Bounds(); math.Abs(float64(r.Dx())-w) > 1 || math.Abs(float64(r.Dy())-h) > 1 {
			t.Errorf("%s is %dx%d, want %.0fx%.0f", pf.Name, r.Dx(), r.Dy(), w, h)
		}
	}
	// The folder cannot be made under a file: an error, no panic.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WritePlots(filepath.Join(file, "plots")); err == nil {
		t.Error("plots under a file: no error")
	}
}

// A latency axis too narrow for two log ticks falls back to plain ticks.
func TestLogTicksFallback(t *testing.T) {
	labelled := func(ticks []plot.Tick) int {
		n := 0
		for _, tk := range ticks {
			if tk.Label != "" {
				n++
			}
		}
		return n
	}
	if n := labelled(logTicks(1, 100)); n != 7 {
		t.Errorf("1 to 100 ms: %d labels, want 7 (1, 2, 5, 10, 20, 50, 100)", n)
	}
	if n := labelled(logTicks(21, 29)); n < 2 {
		t.Errorf("21 to 29 ms: %d labels", n)
	}
	if ticks := logTicks(0, 10); len(ticks) != 0 {
		t.Errorf("a range from 0: %v", ticks)
	}
}
