package plotkit

import (
	"bytes"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rttlab/rttlab/results/stats"
)

// figure is a figure with two series, one with error bars, and a legend
// entry each.
func figure(t *testing.T) *Figure {
	t.Helper()
	f := NewFigure("test", "A test figure", "Two series.", "x (ms)", "y (ms)")
	for i, dashed := range []bool{false, true} {
		pts := plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2 + float64(i)}, {X: 2, Y: 2.5}}
		ci := []stats.Interval{{Low: 0.8, High: 1.2}, stats.NoInterval(), {Low: 2, High: 3}}
		th, err := PlotSeries(f.P, pts, ci, StandardSeries(i, dashed))
		if err != nil {
			t.Fatal(err)
		}
		f.Legend.Add("series "+string(rune('a'+i)), th...)
	}
	f.Legend.Add("a guide", LegendLine{LineStyle: LineStyle(Grey, true)})
	return f
}

// checkFiles checks that pf holds an SVG in Liberation Sans with its
// fallbacks and a PNG of w×h pixels.
func checkFiles(t *testing.T, pf PlotFile, w, h int) {
	t.Helper()
	svg := bytes.TrimSpace(pf.SVG)
	if !bytes.HasPrefix(svg, []byte("<?xml")) && !bytes.HasPrefix(svg, []byte("<svg")) {
		t.Errorf("%s: the SVG starts %.40q", pf.Name, svg)
	}
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.HasSuffix(svg, []byte("</svg>")) {
		t.Errorf("%s: no whole <svg> element", pf.Name)
	}
	if !bytes.Contains(svg, []byte("font-family:Liberation Sans,Arial,Helvetica,sans-serif;")) || bytes.Contains(svg, []byte("font-family:Liberation Sans;")) {
		t.Errorf("%s: the SVG's fonts have no fallbacks", pf.Name)
	}
	img, err := png.Decode(bytes.NewReader(pf.PNG))
	if err != nil {
		t.Fatalf("%s: the PNG: %v", pf.Name, err)
	}
	if r := img.Bounds(); r.Dx() != w || r.Dy() != h {
		t.Errorf("%s: the PNG is %dx%d, want %dx%d", pf.Name, r.Dx(), r.Dy(), w, h)
	}
	// The background is white, not transparent.
	if r, g, b, a := img.At(0, 0).RGBA(); r != 0xffff || g != 0xffff || b != 0xffff || a != 0xffff {
		t.Errorf("%s: the corner is %v", pf.Name, img.At(0, 0))
	}
}

// A figure renders as an SVG and a PNG of its size at PNGDPI, with its
// title, legend and labels in the SVG, and the same bytes every time.
func TestRenderFigure(t *testing.T) {
	pf, err := figure(t).Render()
	if err != nil {
		t.Fatal(err)
	}
	if pf.Name != "test" || pf.Title != "A test figure" || pf.Description != "Two series." {
		t.Errorf("plot file %q %q %q", pf.Name, pf.Title, pf.Description)
	}
	checkFiles(t, pf, 1200, 675)
	for _, want := range []string{">A test figure<", ">series a<", ">series b<", ">a guide<", ">x (ms)<", ">y (ms)<"} {
		if !bytes.Contains(pf.SVG, []byte(want)) {
			t.Errorf("the SVG lacks %s", want)
		}
	}
	again, err := figure(t).Render()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pf.SVG, again.SVG) || !bytes.Equal(pf.PNG, again.PNG) {
		t.Error("two renders of the same figure differ")
	}
}

// A grid of panels renders under one title, with a missing panel left
// blank and a legend beside the panels when it has entries.
func TestRenderPanels(t *testing.T) {
	a := NewPanel("left panel", "load", "ms")
	b := NewPanel("right panel", "load", "ms")
	th, err := PlotSeries(a, plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 3}}, nil, StandardSeries(0, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PlotSeries(b, plotter.XYs{{X: 0.5, Y: 2}}, []stats.Interval{{Low: 1, High: 4}}, StandardSeries(0, false)); err != nil {
		t.Fatal(err)
	}
	if a.Title.Text != "left panel" || a.X.Label.Text != "load" || a.Y.Label.Text != "ms" || a.Title.TextStyle.Font.Size != 11 {
		t.Errorf("panel %q %q %q at %v pt", a.Title.Text, a.X.Label.Text, a.Y.Label.Text, a.Title.TextStyle.Font.Size)
	}
	for _, legend := range []bool{false, true} {
		f := &Figure{Name: "panels", Title: "Panels", Desc: "A grid.", W: 6 * vg.Inch, H: 4 * vg.Inch,
			Panels: [][]*plot.Plot{{a, b}, {nil, a}}}
		if legend {
			f.Legend = NewLegend()
			f.Legend.Add("a policy", th...)
		}
		pf, err := f.Render()
		if err != nil {
			t.Fatal(err)
		}
		checkFiles(t, pf, 900, 600)
		if n := bytes.Count(pf.SVG, []byte(">left panel<")); n != 2 {
			t.Errorf("the left panel is drawn %d times, want 2", n)
		}
		if got := bytes.Contains(pf.SVG, []byte(">a policy<")); got != legend {
			t.Errorf("legend drawn: %v, want %v", got, legend)
		}
	}
}

// A figure without data renders (empty axes), and one with neither a
// plot nor panels is an error.
func TestRenderEmpty(t *testing.T) {
	pf, err := NewFigure("empty", "No data", "", "x", "y").Render()
	if err != nil {
		t.Fatalf("a figure without data: %v", err)
	}
	checkFiles(t, pf, 1200, 675)
	for _, f := range []*Figure{
		{Name: "none", W: FigWidth, H: FigHeight},
		{Name: "no rows", Panels: [][]*plot.Plot{}, W: FigWidth, H: FigHeight},
		{Name: "no columns", Panels: [][]*plot.Plot{{}}, W: FigWidth, H: FigHeight},
	} {
		if _, err := f.Render(); err == nil || !strings.Contains(err.Error(), "no plot and no panels") {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
	// A series without points draws nothing and shows nothing in a
	// legend.
	p := NewPanel("", "", "")
	if th, err := PlotSeries(p, nil, nil, StandardSeries(0, false)); err != nil || th != nil || !math.IsInf(p.X.Min, 1) || !math.IsInf(p.Y.Max, -1) {
		t.Errorf("no points: %v %v, axes [%v, %v] × [%v, %v]", th, err, p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
	}
}

// panicker is a plotter that panics as gonum/plot does on input it
// cannot draw.
type panicker struct{}

func (panicker) Plot(draw.Canvas, *plot.Plot) { panic("plotter: invalid input") }

// The recover guard turns a panic while drawing into an error.
func TestRenderRecoversPanic(t *testing.T) {
	f := NewFigure("bad", "Bad", "", "x", "y")
	f.P.Add(panicker{})
	pf, err := f.Render()
	if err == nil || !strings.Contains(err.Error(), "draw: plotter: invalid input") {
		t.Errorf("a panic while drawing: %v", err)
	}
	if pf.SVG != nil || pf.PNG != nil {
		t.Error("a failed render returned files")
	}
	// A panel that panics is caught as well.
	p := NewPanel("bad", "x", "y")
	p.Add(panicker{})
	if _, err := (&Figure{Name: "bad panels", Panels: [][]*plot.Plot{{p}}, W: FigWidth, H: FigHeight}).Render(); err == nil {
		t.Error("a panicking panel: no error")
	}
}

// Every text is in Liberation Sans, the grid is thin and light grey, and
// series keep their colour and glyph, cycling past the palette.
func TestStyleHelpers(t *testing.T) {
	p := plot.New()
	StyleFonts(p, 13)
	if p.Title.TextStyle.Font.Size != 13 || p.X.Label.TextStyle.Font.Size != 11 || p.Y.Tick.Label.Font.Size != 10 || p.Legend.TextStyle.Font.Size != 10 {
		t.Errorf("sizes: title %v, label %v, ticks %v, legend %v", p.Title.TextStyle.Font.Size, p.X.Label.TextStyle.Font.Size,
			p.Y.Tick.Label.Font.Size, p.Legend.TextStyle.Font.Size)
	}
	for _, fnt := range []vg.Length{p.Title.TextStyle.Font.Size, p.X.Tick.Label.Font.Size} {
		if fnt == 0 {
			t.Error("a font without size")
		}
	}
	if p.Title.TextStyle.Font.Typeface != Font.Typeface || p.Y.Label.TextStyle.Font.Variant != "Sans" {
		t.Errorf("font %+v", p.Title.TextStyle.Font)
	}
	if ticks := p.X.Tick.Marker.Ticks(24.98, 25.02); !slices.ContainsFunc(ticks, func(tk plot.Tick) bool { return tk.Label == "25.00" }) {
		t.Errorf("the axes do not use ReadableTicks: %v", ticks)
	}
	g := NewGrid()
	if g.Vertical.Color != GridGrey || g.Horizontal.Color != GridGrey || g.Vertical.Width != vg.Points(0.5) || g.Horizontal.Width != vg.Points(0.5) {
		t.Errorf("grid %+v %+v", g.Vertical, g.Horizontal)
	}
	l := NewLegend()
	if !l.Top || !l.Left || l.ThumbnailWidth != vg.Points(24) || l.TextStyle.Font.Size != 10 {
		t.Errorf("legend %+v", l)
	}
	if SeriesColor(0) == SeriesColor(1) || SeriesColor(0) != SeriesColor(len(palette)) {
		t.Error("series colours do not cycle through the palette")
	}
	if SeriesGlyph(1) != SeriesGlyph(1+len(glyphs)) {
		t.Error("series glyphs do not cycle")
	}
	solid, dashed := LineStyle(color.Black, false), LineStyle(color.Black, true)
	if solid.Dashes != nil || !slices.Equal(dashed.Dashes, Dashes) || solid.Width != vg.Points(1.6) {
		t.Errorf("line styles %+v %+v", solid, dashed)
	}
	st := StandardSeries(2, true)
	if st.Color != SeriesColor(2) || st.Glyph != SeriesGlyph(2) || st.Line.Dashes == nil || st.ClampErrors {
		t.Errorf("standard series %+v", st)
	}
}

// PlotSeries draws a line for two or more points, error bars at valid
// intervals only (clamped when asked), and the points; it returns the
// legend thumbnails and refuses values gonum cannot draw.
func TestPlotSeries(t *testing.T) {
	p := plot.New()
	th, err := PlotSeries(p, plotter.XYs{{X: 1, Y: 5}}, []stats.Interval{stats.NoInterval()}, StandardSeries(0, false))
	if err != nil || len(th) != 1 || p.X.Min != 1 || p.X.Max != 1 || p.Y.Min != 5 || p.Y.Max != 5 {
		t.Errorf("one point without interval: %d thumbnails, %v, y on [%v, %v]", len(th), err, p.Y.Min, p.Y.Max)
	}
	p = plot.New()
	pts := plotter.XYs{{X: 1, Y: 5}, {X: 2, Y: 3}, {X: 3, Y: 4}}
	ci := []stats.Interval{{Low: 4, High: 7}, {Low: 3.5, High: 4}}
	th, err = PlotSeries(p, pts, ci, StandardSeries(1, false))
	if err != nil || len(th) != 2 || p.Y.Max != 7 || p.X.Max != 3 {
		t.Fatalf("three points: %d thumbnails, %v, y on [%v, %v]", len(th), err, p.Y.Min, p.Y.Max)
	}
	// The second interval misses its point: clamped, its low half is 0;
	// the third point has no interval.
	for _, c := range []struct {
		clamp bool
		want  []struct{ Low, High float64 }
	}{
		{false, []struct{ Low, High float64 }{{1, 2}, {-0.5, 1}}},
		{true, []struct{ Low, High float64 }{{1, 2}, {0, 1}}},
	} {
		eb := errorBars(pts, ci, c.clamp)
		if !slices.Equal(eb.XYs, pts[:2]) || !slices.Equal(eb.YErrors, plotter.YErrors(c.want)) {
			t.Errorf("clamp %v: bars at %v, %v; want %v", c.clamp, eb.XYs, eb.YErrors, c.want)
		}
	}
	for _, pts := range []plotter.XYs{{{X: 1, Y: math.NaN()}}, {{X: 1, Y: 1}, {X: 2, Y: math.Inf(1)}}} {
		if _, err := PlotSeries(plot.New(), pts, nil, StandardSeries(0, false)); err == nil {
			t.Errorf("%v: no error", pts)
		}
	}
	if _, err := PlotSeries(plot.New(), plotter.XYs{{X: 1, Y: 1}}, []stats.Interval{{Low: math.Inf(-1), High: 2}}, StandardSeries(0, false)); err == nil {
		t.Error("an infinite error bar: no error")
	}
}

// Log ticks label 1, 2 and 5 of each decade, and nothing for a range a
// log axis cannot show.
func TestLogTicks(t *testing.T) {
	var labels []string
	minor := 0
	for _, tk := range LogTicks(0.5, 25) {
		if tk.IsMinor() {
			minor++
		} else {
			labels = append(labels, tk.Label)
		}
	}
	if !slices.Equal(labels, []string{"0.5", "1", "2", "5", "10", "20"}) || minor != 10 {
		t.Errorf("labels %v, %d minor ticks", labels, minor)
	}
	for _, r := range [][2]float64{{0, 10}, {-1, 10}, {5, 5}, {10, 1}, {math.NaN(), 1}} {
		if ticks := LogTicks(r[0], r[1]); len(ticks) != 0 {
			t.Errorf("LogTicks(%v, %v) = %v", r[0], r[1], ticks)
		}
	}
}

// Readable ticks have as many decimals as their spacing needs, and no
// "-0".
func TestReadableTicks(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		want     []string
	}{
		{24.98, 25.02, []string{"24.98", "25.00", "25.02"}},
		{0, 100, []string{"0", "50", "100"}},
		{-1, 1, []string{"-1", "0", "1"}},
		{-0.1, 0.1, []string{"-0.1", "0.0", "0.1"}},
	} {
		var labels []string
		for _, tk := range ReadableTicks(c.min, c.max) {
			if !tk.IsMinor() {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, c.want) {
			t.Errorf("ReadableTicks(%v, %v) = %v, want %v", c.min, c.max, labels, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		d    int
		want string
	}{{-0.0001, 0, "0"}, {-0.004, 2, "0.00"}, {-0.5, 1, "-0.5"}, {3, 0, "3"}} {
		if got := tickLabel(c.v, c.d); got != c.want {
			t.Errorf("tickLabel(%v, %d) = %q, want %q", c.v, c.d, got, c.want)
		}
	}
}

// WriteFiles writes a plot's SVG then its PNG under dir, creating it, and
// says which file it could not write.
func TestWriteFiles(t *testing.T) {
	pf, err := figure(t).Render()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "a", "plots")
	paths, err := WriteFiles(dir, []PlotFile{pf, {Name: "other", SVG: []byte("<svg/>"), PNG: []byte("png")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"test.svg", "test.png", "other.svg", "other.png"}
	for i, p := range paths {
		if filepath.Dir(p) != dir || i >= len(want) || filepath.Base(p) != want[i] {
			t.Errorf("paths %v, want %v in %s", paths, want, dir)
			break
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "test.png")); err != nil || !bytes.Equal(b, pf.PNG) {
		t.Errorf("test.png: %v", err)
	}
	if paths, err := WriteFiles(t.TempDir(), nil); err != nil || paths != nil {
		t.Errorf("no plots: %v %v", paths, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFiles(filepath.Join(file, "plots"), []PlotFile{pf}); err == nil || !strings.Contains(err.Error(), "plots folder") {
		t.Errorf("a folder under a file: %v", err)
	}
	// A plot whose file cannot be written: the paths written before it
	// come back with the error.
	dir = t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "test.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths, err = WriteFiles(dir, []PlotFile{pf})
	if err == nil || !strings.Contains(err.Error(), "write plot") || len(paths) != 1 {
		t.Errorf("an unwritable PNG: %v %v", paths, err)
	}
}
