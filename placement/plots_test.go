package placement

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/results/stats"
)

// plotResult is a placement result with data for every figure: a sweep
// with a per-N route calibrated on a and b, a routed comparison and a
// concurrency phase.
func plotResult(t *testing.T) *PlaceResult {
	t.Helper()
	p, ok := BuiltinPlan("placement-smoke")
	if !ok {
		t.Fatal("no built-in plan placement-smoke")
	}
	cal := Calibration{
		Hosts:  []HostCalibration{{Name: "a", HealthP50Ms: 1, Select1P50Ms: 0.6}, {Name: "b", HealthP50Ms: 1.2, Select1P50Ms: 0.45}},
		Routes: []RouteCalibration{{Path: "/serial", PerN: true, P50Ms: map[string]float64{"a": 1.1, "b": 1.3}}},
	}
	return &PlaceResult{Plan: p,
		Reps: []PlaceRep{{Rep: 1, HeldOutCal: cal, Routed: RoutedSummary{Cells: []PolicyRoute{
			{Policy: PolicyUserFirst, Route: "/feed", P50Ms: 9, P50CI: stats.CI{Low: 8.5, High: 9.5}},
			{Policy: PolicyProfiled, Route: "/feed", P50Ms: 8, P50CI: stats.CI{Low: 7.5, High: 8.5}}}}}},
		Sweep:       []SweepPoint{{N: 0, AP50Ms: 1.1, BP50Ms: 1.3}, {N: 12, AP50Ms: 9, BP50Ms: 7}},
		Concurrency: []ConcurrencyRow{{Fraction: 0.7, Policy: "user-first", Route: "all", P50Ms: 20, P99Ms: 200}, {Fraction: 0.3, Policy: "user-first", Route: "all", P50Ms: 10, P99Ms: 50}},
	}
}

// Every figure is written as an SVG and a PNG, in report order, and each
// file is what its name says.
func TestWritePlacePlots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plots")
	files, err := WritePlacePlots(plotResult(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := []string{PlotPlaceSweep + ".svg", PlotPlaceSweep + ".png", PlotPlaceRouted + ".svg", PlotPlaceRouted + ".png",
		PlotPlaceConcurrency + ".svg", PlotPlaceConcurrency + ".png"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".svg":
			if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("<?xml")) || !bytes.Contains(b, []byte("<svg")) {
				t.Errorf("%s is not an SVG: %.80q", f, b)
			}
		case ".png":
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if r := img.Bounds(); r.Dx() != 1200 || r.Dy() != 675 {
				t.Errorf("%s is %dx%d, want 1200x675 (8×4.5 in at 150 dpi)", f, r.Dx(), r.Dy())
			}
		}
	}
	sweep, _ := os.ReadFile(filepath.Join(dir, PlotPlaceSweep+".svg"))
	for _, want := range []string{"measured a", "measured b", "network-only model, a", "profiled model, b"} {
		if !bytes.Contains(sweep, []byte(">"+want+"<")) {
			t.Errorf("the sweep's legend lacks %q", want)
		}
	}
}

// The same result always gives the same SVG bytes.
func TestPlacePlotsDeterministic(t *testing.T) {
	a, err := PlacePlots(plotResult(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := PlacePlots(plotResult(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("%d and %d figures, want 3", len(a), len(b))
	}
	for i := range a {
		if !bytes.Equal(a[i].SVG, b[i].SVG) {
			t.Errorf("%s: two renders differ", a[i].Name)
		}
		if a[i].Title == "" || a[i].Description == "" {
			t.Errorf("%s has no title or description", a[i].Name)
		}
	}
}

// A result without data has no figures, and a figure without data is left
// out while the others are drawn.
func TestPlacePlotsWithoutData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plots")
	files, err := WritePlacePlots(&PlaceResult{}, dir)
	if err != nil || len(files) != 0 {
		t.Errorf("an empty result wrote %v: %v", files, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the plots folder: %v", err)
	}
	r := plotResult(t)
	r.Sweep, r.Concurrency = nil, nil
	r.Reps[0].HeldOutCal = Calibration{}
	plots, err := PlacePlots(r)
	if err != nil || len(plots) != 1 || plots[0].Name != PlotPlaceRouted {
		t.Errorf("routed only: %d figures, %v", len(plots), err)
	}
	// A sweep without repetitions, or without a per-N route, has no model
	// lines but is still drawn.
	r = plotResult(t)
	r.Reps = nil
	if plots, err := PlacePlots(r); err != nil || len(plots) != 2 || bytes.Contains(plots[0].SVG, []byte("model,")) {
		t.Errorf("no repetitions: %d figures, %v", len(plots), err)
	}
	r = plotResult(t)
	r.Reps[0].HeldOutCal.Routes[0].PerN = false
	if plots, err := PlacePlots(r); err != nil || len(plots) != 3 || bytes.Contains(plots[0].SVG, []byte("model,")) {
		t.Errorf("no per-N route: %d figures, %v", len(plots), err)
	}
}

// A value gonum cannot draw ends the figures with an error that names the
// figure instead of a panic.
func TestPlacePlotsInvalidData(t *testing.T) {
	r := plotResult(t)
	r.Sweep[1].AP50Ms = math.Inf(1)
	if _, err := PlacePlots(r); err == nil || !strings.Contains(err.Error(), PlotPlaceSweep) {
		t.Errorf("an infinite sweep point: %v", err)
	}
	r = plotResult(t)
	r.Concurrency[0].P99Ms = stats.Num(math.NaN())
	if _, err := PlacePlots(r); err == nil || !strings.Contains(err.Error(), PlotPlaceConcurrency) {
		t.Errorf("a NaN p99: %v", err)
	}
	r = plotResult(t)
	r.Reps[0].Routed.Cells[0].P50Ms = stats.Num(math.Inf(1))
	if _, err := PlacePlots(r); err == nil || !strings.Contains(err.Error(), PlotPlaceRouted) {
		t.Errorf("an infinite routed p50: %v", err)
	}
	// A folder that cannot be made is an error, not a panic.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePlacePlots(plotResult(t), filepath.Join(file, "plots")); err == nil {
		t.Error("plots under a file: no error")
	}
}

// The routed figure has a column per route and a legend entry per policy,
// whatever order the cells come in.
func TestRoutedPlotColumns(t *testing.T) {
	cells := []PolicyRoute{
		{Policy: PolicyUserFirst, Route: "/feed", P50Ms: 9, P50CI: stats.CI{Low: 8.5, High: 9.5}},
		{Policy: PolicyProfiled, Route: "/serial?n=3", P50Ms: 4, P50CI: stats.CI{Low: 3.5, High: 4.5}},
		{Policy: PolicyProfiled, Route: "/feed", P50Ms: 8, P50CI: stats.CI{Low: 7.5, High: 8.5}},
		{Policy: PolicyUserFirst, Route: "/serial?n=3", P50Ms: stats.Num(math.NaN())},
	}
	f, err := routedPlot(&PlaceResult{Reps: []PlaceRep{{Rep: 1, Routed: RoutedSummary{Cells: cells}}}})
	if err != nil || f == nil {
		t.Fatalf("%v %v", f, err)
	}
	p := f.P
	var labels []string
	for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if !slices.Equal(labels, []string{"/feed", "/serial?n=3"}) || p.X.Min != -0.5 || p.X.Max != 1.5 {
		t.Errorf("columns %v on [%v, %v]", labels, p.X.Min, p.X.Max)
	}
	pf, err := f.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range []string{"user-first", "profiled"} {
		if n := strings.Count(string(pf.SVG), ">"+pol+"<"); n != 1 {
			t.Errorf("legend entries for %s: %d", pol, n)
		}
	}
}
