package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rttlab/rttlab/results/plotkit"
	"github.com/rttlab/rttlab/rtt/raw"
)

// The plots of the fixed golden folder are byte-for-byte the stored SVGs;
// run go test ./results -run TestPlotsGolden -update after checking a
// change by eye (RTTLAB_PLOTS_OUT=DIR also writes the PNGs there).
func TestPlotsGolden(t *testing.T) {
	d, err := raw.Load(writeGoldenFolder(t, goldenSpecs))
	mustNoErr(t, err)
	plots, err := Analyze(d, Options{}).Plots()
	mustNoErr(t, err)
	var names []string
	for _, p := range plots {
		names = append(names, p.Name)
	}
	if got, want := strings.Join(names, ","), strings.Join(plotNames, ","); got != want {
		t.Fatalf("plots %s, want %s", got, want)
	}
	out := os.Getenv("RTTLAB_PLOTS_OUT")
	for _, p := range plots {
		if out != "" {
			mustNoErr(t, os.WriteFile(filepath.Join(out, p.Name+".png"), p.PNG, 0o644))
			mustNoErr(t, os.WriteFile(filepath.Join(out, p.Name+".svg"), p.SVG, 0o644))
		}
		img, err := png.Decode(bytes.NewReader(p.PNG))
		if err != nil {
			t.Errorf("%s.png: %v", p.Name, err)
		} else if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
			t.Errorf("%s.png is %dx%d px", p.Name, b.Dx(), b.Dy())
		}
		checkGolden(t, p.Name+".svg", p.SVG, filepath.Join("testdata", "plots", p.Name+".svg"))
	}
}

// BenchmarkPlots measures drawing every figure of the golden folder as
// SVG and PNG.
func BenchmarkPlots(b *testing.B) {
	d, err := raw.Load(writeGoldenFolder(b, goldenSpecs))
	if err != nil {
		b.Fatal(err)
	}
	s := Analyze(d, Options{})
	for b.Loop() {
		if _, err := s.Plots(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlotsSVGOnly is BenchmarkPlots without the PNG pass, to see
// where the time goes.
func BenchmarkPlotsSVGOnly(b *testing.B) {
	d, err := raw.Load(writeGoldenFolder(b, goldenSpecs))
	if err != nil {
		b.Fatal(err)
	}
	s := Analyze(d, Options{})
	for b.Loop() {
		for _, build := range []func() (*plotkit.Figure, error){s.latencyFigure, s.changeFigure, s.ratioFigure, s.verificationFigure, s.runsFigure} {
			f, err := build()
			if err != nil {
				b.Fatal(err)
			}
			sc := vgsvg.New(f.W, f.H)
			f.Draw(draw.New(sc))
		}
	}
}

// The strip plot shows the setting asked for, and refuses one the study
// does not have.
func TestStripSetting(t *testing.T) {
	d, err := raw.Load(writeGoldenFolder(t, goldenSpecs))
	mustNoErr(t, err)
	half := 0.5
	plots, err := Analyze(d, Options{StripRTTms: &half}).Plots()
	mustNoErr(t, err)
	var runs plotkit.PlotFile
	for _, p := range plots {
		if p.Name == PlotRuns {
			runs = p
		}
	}
	if runs.Name != PlotRuns || !strings.Contains(runs.Title, "at 0.5 ms") || !bytes.Contains(runs.SVG, []byte(">go /feed-naive</text>")) {
		t.Errorf("runs plot: %s %q", runs.Name, runs.Title)
	}
	bad := 0.3
	if _, err := Analyze(d, Options{StripRTTms: &bad}).Plots(); err == nil || !strings.Contains(err.Error(), "strip plot setting 0.3 ms: the study has settings 0, 0.5, 0.75, 1 ms") {
		t.Errorf("err = %v", err)
	}
}

// Names from the data are text, never markup, in the SVG and the page.
func TestReportEscapesNames(t *testing.T) {
	specs := []cellSpec{{app: "go", route: `/x?a=<b>&c="d"`, base: 1, statements: 2, settings: []float64{0, 1}, runs: 2}}
	d, err := raw.Load(writeGoldenFolder(t, specs))
	mustNoErr(t, err)
	s := Analyze(d, Options{})
	plots, err := s.Plots()
	mustNoErr(t, err)
	h, err := s.HTML(plots)
	mustNoErr(t, err)
	for _, p := range plots {
		if bytes.Contains(p.SVG, []byte("<b>")) {
			t.Errorf("%s.svg holds raw markup from a route name", p.Name)
		}
	}
	if bytes.Contains(h, []byte("<b>")) || !bytes.Contains(h, []byte("&lt;b&gt;")) {
		t.Error("report.html does not escape the route name")
	}
}
