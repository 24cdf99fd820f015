package results

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The plots of the fixed golden folder are byte-for-byte the stored SVGs;
// run go test ./results -run TestPlotsGolden -update after checking a
// change by eye (RTTLAB_PLOTS_OUT=DIR also writes the PNGs there).
func TestPlotsGolden(t *testing.T) {
	d, err := Load(writeGoldenFolder(t, goldenSpecs))
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
		gp := filepath.Join("testdata", "plots", p.Name+".svg")
		if *update {
			mustNoErr(t, os.MkdirAll(filepath.Dir(gp), 0o755))
			mustNoErr(t, os.WriteFile(gp, p.SVG, 0o644))
			continue
		}
		want, err := os.ReadFile(gp)
		mustNoErr(t, err)
		if !bytes.Equal(p.SVG, want) {
			t.Errorf("%s.svg differs from %s:\n%s", p.Name, gp, firstDiff(string(p.SVG), string(want)))
		}
	}
}
