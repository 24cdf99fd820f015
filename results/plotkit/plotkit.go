// Package plotkit is what every study's figures share: the palette,
// glyphs and series style, a series with its error bars, readable and
// logarithmic ticks, and a figure (one plot with its legend beside it, or
// a grid of panels) rendered to SVG and PNG with a font that ships inside
// gonum/plot, so the same data always give the same bytes.
package plotkit

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rttlab/rttlab/results/stats"
)

// PlotFile is one rendered plot: the same figure as SVG and PNG.
type PlotFile struct {
	// Name is the file name without extension (PlotLatency, ...).
	Name string
	// Title is the plot's title; Description says in one line what it
	// shows and how to read it.
	Title       string
	Description string
	SVG, PNG    []byte
}

// Figure geometry and resolution.
const (
	FigWidth  = 8 * vg.Inch
	FigHeight = 4.5 * vg.Inch
	PNGDPI    = 150
)

// Font is the typeface of every text: Liberation Sans ships inside
// gonum/plot, so no system font is needed, and it has the metrics of
// Arial, which the SVG names as its fallback.
var Font = font.Font{Typeface: "Liberation", Variant: "Sans"}

// palette is the Okabe–Ito colour-blind-safe palette (yellow darkened to
// stay readable on white), assigned to series in sorted order.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
	{0x9A, 0x86, 0x00, 0xff}, // dark yellow
}
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}
var (
	Grey     = color.RGBA{0x88, 0x88, 0x88, 0xff}
	GridGrey = color.RGBA{0xe8, 0xe8, 0xe8, 0xff}
	BandGrey = color.RGBA{0xe2, 0xe2, 0xe2, 0xff}
	Dashes   = []vg.Length{vg.Points(6), vg.Points(4)}
)

// SeriesColor is the colour of the i-th series in every rttlab figure.
func SeriesColor(i int) color.RGBA { return palette[i%len(palette)] }

// SeriesGlyph is the point shape of the i-th series in every rttlab
// figure, as SeriesColor is its colour.
func SeriesGlyph(i int) draw.GlyphDrawer { return glyphs[i%len(glyphs)] }

// Figure is a plot with its legend drawn to the right of it, or a grid of
// panels under one title.
type Figure struct {
	Name, Title, Desc string
	P                 *plot.Plot
	Legend            plot.Legend
	// Panels, when set, replace P: a grid of small plots.
	Panels [][]*plot.Plot
	W, H   vg.Length
}

// NewFigure returns a figure of one plot: its title, axis labels, the
// fonts with a 13 pt title, the grid and an empty legend.
func NewFigure(name, title, desc, xLabel, yLabel string) *Figure {
	p := newPlot(title, xLabel, yLabel, 13, 8)
	return &Figure{Name: name, Title: title, Desc: desc, P: p, Legend: NewLegend(), W: FigWidth, H: FigHeight}
}

// NewPanel returns one small plot of a grid of panels: its title, axis
// labels, the figure's fonts with an 11 pt title, and the grid.
func NewPanel(title, xLabel, yLabel string) *plot.Plot {
	return newPlot(title, xLabel, yLabel, 11, 4)
}

// newPlot is a plot with its title, axis labels, the figures' fonts with
// a titleSize title padded by titlePad points, and the grid.
func newPlot(title, xLabel, yLabel string, titleSize vg.Length, titlePad float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	StyleFonts(p, titleSize)
	p.Title.Padding = vg.Points(titlePad)
	p.Add(NewGrid())
	return p
}

// NewLegend returns the legend a figure draws beside its plot or panels:
// 10 pt text, entries from the top left, 24 pt thumbnails.
func NewLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(Font, 10)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(24)
	l.Padding = vg.Points(3)
	return l
}

// StyleFonts sets every text of p in Font: the title at titleSize, axis
// labels at 11 pt, tick labels and the legend at 10 pt; and labels the
// ticks with ReadableTicks.
func StyleFonts(p *plot.Plot, titleSize vg.Length) {
	p.Title.TextStyle.Font = font.From(Font, titleSize)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(Font, 11)
		a.Tick.Label.Font = font.From(Font, 10)
		a.Padding = vg.Points(4)
		a.Tick.Marker = plot.TickerFunc(ReadableTicks)
	}
	p.Legend.TextStyle.Font = font.From(Font, 10)
}

// NewGrid returns the thin light-grey grid behind every plot's data.
func NewGrid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = GridGrey, GridGrey
	g.Vertical.Width, g.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	return g
}

// Render draws the figure as SVG and PNG. A figure with neither a plot nor
// a panel is an error, and so is a panic of gonum/plot while drawing.
func (f *Figure) Render() (pf PlotFile, err error) {
	// gonum/plot panics on some invalid input (for example a non-finite
	// coordinate that slipped through); report it as an error instead.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("draw: %v", r)
		}
	}()
	if f.P == nil && (len(f.Panels) == 0 || len(f.Panels[0]) == 0) {
		return pf, errors.New("draw: the figure has no plot and no panels")
	}
	sc := vgsvg.New(f.W, f.H)
	f.Draw(draw.New(sc))
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return pf, fmt.Errorf("write svg: %w", err)
	}
	ic := vgimg.NewWith(vgimg.UseWH(f.W, f.H), vgimg.UseDPI(PNGDPI), vgimg.UseBackgroundColor(color.White))
	f.Draw(draw.New(ic))
	// Fastest compression: a plot is flat colour, which deflate packs
	// well at any level, and a run renders its plots at its end.
	var pb bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&pb, ic.Image()); err != nil {
		return pf, fmt.Errorf("write png: %w", err)
	}
	return PlotFile{Name: f.Name, Title: f.Title, Description: f.Desc, SVG: fixSVGFonts(sb.Bytes()), PNG: pb.Bytes()}, nil
}

// Draw draws the figure on a white background: its plot, or its panels
// under the title, with the legend, when it has entries, to the right.
func (f *Figure) Draw(dc draw.Canvas) {
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	lw := f.legendWidth(dc)
	if f.Panels != nil {
		f.drawPanels(dc, lw)
		return
	}
	f.P.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	if lw > 0 {
		// Start the legend level with the top of the data area.
		top := f.P.Title.TextStyle.Rectangle(f.P.Title.Text).Size().Y + f.P.Title.Padding + legendPad
		f.Legend.Draw(draw.Crop(dc, dc.Size().X-lw+legendPad, 0, 0, -top))
	}
}

// legendPad is the space on each side of a legend beside the plot.
var legendPad = vg.Points(10)

// legendWidth is the width the legend takes beside the plot with its
// padding, zero for a legend without entries.
func (f *Figure) legendWidth(dc draw.Canvas) vg.Length {
	lw := f.Legend.Rectangle(dc).Size().X
	if lw > 0 {
		lw += 2 * legendPad
	}
	return lw
}

// drawPanels draws the panels in a grid under the title, both centred on
// the width left of the legend (lw wide), the legend level with the top
// row.
func (f *Figure) drawPanels(dc draw.Canvas, lw vg.Length) {
	sty := text.Style{Color: color.Black, Font: font.From(Font, 13), XAlign: draw.XCenter, YAlign: draw.YTop,
		Handler: plot.DefaultTextHandler}
	titleH := sty.Rectangle(f.Title).Size().Y + vg.Points(12)
	area := draw.Crop(dc, 0, -lw, 0, 0)
	dc.FillText(sty, vg.Point{X: area.Center().X, Y: dc.Max.Y - vg.Points(6)}, f.Title)
	if lw > 0 {
		f.Legend.Draw(draw.Crop(dc, dc.Size().X-lw+legendPad, 0, 0, -titleH))
	}
	rows := len(f.Panels)
	cols := len(f.Panels[0])
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(14),
		PadTop: titleH, PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10)}
	canvases := plot.Align(f.Panels, tiles, area)
	for i := range f.Panels {
		for j, p := range f.Panels[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
}

// fixSVGFonts names fallbacks after Liberation Sans, so a viewer without
// it uses Arial (the same metrics) or another sans-serif font.
func fixSVGFonts(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte("font-family:Liberation Sans;"), []byte("font-family:Liberation Sans,Arial,Helvetica,sans-serif;"))
}

// XYErr is a series of points with asymmetric y errors.
type XYErr struct {
	plotter.XYs
	plotter.YErrors
}

func LineStyle(c color.Color, dashed bool) draw.LineStyle {
	ls := draw.LineStyle{Color: c, Width: vg.Points(1.6)}
	if dashed {
		ls.Dashes = Dashes
	}
	return ls
}

// LegendLine is a legend thumbnail of a line style that is not drawn in
// the plot itself.
type LegendLine struct{ draw.LineStyle }

func (l LegendLine) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.LineStyle, c.Min.X, y, c.Max.X, y)
}

// LogTicks labels 1, 2 and 5 times each power of ten inside [min, max]
// (with minor ticks at the other integers times the power), so a log axis
// is readable at every decade.
func LogTicks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	if !(min > 0) || !(max > min) {
		return ticks
	}
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		pow := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * pow
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', 6, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// ReadableTicks are gonum's default ticks, labelled with as many decimals
// as the tick spacing needs (the default labels can repeat a value when
// the range is narrow, e.g. 25, 25, 25 for 24.98 to 25.02).
func ReadableTicks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	var major []float64
	for _, t := range ticks {
		if !t.IsMinor() {
			major = append(major, t.Value)
		}
	}
	step := math.Inf(1)
	for i := 1; i < len(major); i++ {
		step = math.Min(step, major[i]-major[i-1])
	}
	d := 0
	if !math.IsInf(step, 1) && step > 0 {
		for ; d < 9; d++ {
			ok := true
			for _, v := range major {
				r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', d, 64), 64)
				if math.Abs(r-v) > step*1e-6 {
					ok = false
					break
				}
			}
			if ok {
				break
			}
		}
	}
	for i := range ticks {
		if !ticks[i].IsMinor() {
			ticks[i].Label = tickLabel(ticks[i].Value, d)
		}
	}
	return ticks
}

// SeriesStyle is how PlotSeries draws one series.
type SeriesStyle struct {
	Color color.Color
	// Line is the line through the points (drawn for two or more).
	Line draw.LineStyle
	// ErrWidth and CapWidth are the error bars' line and cap widths.
	ErrWidth, CapWidth vg.Length
	// Radius and Glyph draw the points.
	Radius vg.Length
	Glyph  draw.GlyphDrawer
	// ClampErrors draws no negative half of a bar when an interval
	// misses its point (a median beside a resampled interval).
	ClampErrors bool
}

// StandardSeries is the style of the idx-th series of the RTT report's
// figures, which the other studies' figures share: its colour and glyph, a
// 1.6 pt line (dashed when asked), 1 pt error bars with 6 pt caps, and
// 3.2 pt points.
func StandardSeries(idx int, dashed bool) SeriesStyle {
	col := SeriesColor(idx)
	return SeriesStyle{Color: col, Line: LineStyle(col, dashed), ErrWidth: vg.Points(1), CapWidth: vg.Points(6),
		Radius: vg.Points(3.2), Glyph: SeriesGlyph(idx)}
}

// PlotSeries adds one series to p: a line through pts (two or more), an
// error bar at each point whose interval in ci is valid, and the points.
// It returns what a legend shows for the series; nothing for no points.
func PlotSeries(p *plot.Plot, pts plotter.XYs, ci []stats.Interval, st SeriesStyle) ([]plot.Thumbnailer, error) {
	if len(pts) == 0 {
		return nil, nil
	}
	var thumbs []plot.Thumbnailer
	if len(pts) > 1 {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.LineStyle = st.Line
		p.Add(l)
		thumbs = append(thumbs, l)
	}
	if eb := errorBars(pts, ci, st.ClampErrors); len(eb.XYs) > 0 {
		e, err := plotter.NewYErrorBars(eb)
		if err != nil {
			return nil, err
		}
		e.LineStyle = draw.LineStyle{Color: st.Color, Width: st.ErrWidth}
		e.CapWidth = st.CapWidth
		p.Add(e)
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: st.Color, Radius: st.Radius, Shape: st.Glyph}
	p.Add(sc)
	return append(thumbs, sc), nil
}

// errorBars returns the points of pts whose interval in ci is valid, each
// with the distances from it to its interval's ends; clamp drops the
// negative half of a bar whose interval misses its point.
func errorBars(pts plotter.XYs, ci []stats.Interval, clamp bool) XYErr {
	var eb XYErr
	for i, pt := range pts {
		if i < len(ci) && ci[i].Valid() {
			lo, hi := pt.Y-ci[i].Low, ci[i].High-pt.Y
			if clamp {
				lo, hi = max(lo, 0), max(hi, 0)
			}
			eb.XYs = append(eb.XYs, pt)
			eb.YErrors = append(eb.YErrors, struct{ Low, High float64 }{lo, hi})
		}
	}
	return eb
}

// tickLabel writes a tick's value with d decimals, "-0" as "0".
func tickLabel(v float64, d int) string {
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

// RenderEach builds each figure from v, in order, and renders it; a
// builder's nil figure (one without data) is left out.
func RenderEach[T any](v T, builders ...func(T) (*Figure, error)) ([]PlotFile, error) {
	var out []PlotFile
	for _, build := range builders {
		f, err := build(v)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		pf, err := f.Render()
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.Name, err)
		}
		out = append(out, pf)
	}
	return out, nil
}

// WriteFiles writes each plot as NAME.svg and NAME.png in dir, creating
// dir, and returns the paths written, in order: a plot's SVG, then its PNG.
func WriteFiles(dir string, plots []PlotFile) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots folder: %w", err)
	}
	var paths []string
	for _, p := range plots {
		for _, f := range []struct {
			ext string
			b   []byte
		}{{".svg", p.SVG}, {".png", p.PNG}} {
			path := filepath.Join(dir, p.Name+f.ext)
			if err := os.WriteFile(path, f.b, 0o644); err != nil {
				return paths, fmt.Errorf("write plot: %w", err)
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}
