package workers

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
