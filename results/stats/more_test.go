package stats

import (
	"encoding/json"
	"math"
	"testing"
)

// A stream named the same with the same seed draws the same numbers; a
// stream of another name, or another seed, draws others.
func TestStreamRNG(t *testing.T) {
	draw := func(seed uint64, name string) [3]uint64 {
		r := StreamRNG(seed, name)
		return [3]uint64{r.Uint64(), r.Uint64(), r.Uint64()}
	}
	if draw(7, "tasks") != draw(7, "tasks") {
		t.Error("the same stream drew differently")
	}
	if draw(7, "tasks") == draw(7, "probes") || draw(7, "tasks") == draw(8, "tasks") {
		t.Error("another stream drew the same")
	}
	// FNV-1a's published values.
	if FNV64("") != 0xcbf29ce484222325 || FNV64("a") != 0xaf63dc4c8601ec8c {
		t.Errorf("FNV64: %x, %x", FNV64(""), FNV64("a"))
	}
}

// Num and CI write NaN as null and read it back; a CI says whether it
// excludes 0, and which side.
func TestNumAndCI(t *testing.T) {
	b, err := json.Marshal(CIOf(Interval{Low: math.NaN(), High: 2.5}))
	if err != nil || string(b) != `{"low":null,"high":2.5}` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var c CI
	if err := json.Unmarshal(b, &c); err != nil || !math.IsNaN(float64(c.Low)) || c.High != 2.5 || c.Valid() {
		t.Fatalf("unmarshal: %+v, %v", c, err)
	}
	if err := json.Unmarshal([]byte(`{"low":"x"}`), &c); err == nil {
		t.Error("a string read as a number")
	}
	for _, x := range []struct {
		c    CI
		want int
	}{{CI{1, 2}, 1}, {CI{-2, -1}, -1}, {CI{-1, 1}, 0}, {CI{Num(math.NaN()), 1}, 0}} {
		if got := x.c.Excludes0(); got != x.want {
			t.Errorf("%+v.Excludes0() = %d, want %d", x.c, got, x.want)
		}
	}
	if iv := (CI{1, 2}).Interval(); iv.Low != 1 || iv.High != 2 {
		t.Errorf("Interval = %+v", iv)
	}
}

// The failure gate's share, and the difference of two changes' interval.
func TestFailedFractionAndDiffChange(t *testing.T) {
	if FailedFraction(0, 0) != 0 || FailedFraction(1, 3) != 0.25 {
		t.Errorf("FailedFraction: %g, %g", FailedFraction(0, 0), FailedFraction(1, 3))
	}
	base, target := []float64{1, 1.1, 0.9, 1}, []float64{3, 3.1, 2.9, 3}
	iv := BootstrapDiffChangeCI(base, target, base, []float64{4, 4.1, 3.9, 4}, 2000, NewRNG(1, "diff"))
	if !iv.Valid() || iv.Low > 1 || iv.High < 1 || iv.Low < 0.5 || iv.High > 1.5 {
		t.Errorf("B's change exceeds A's by 1: %+v", iv)
	}
	if BootstrapDiffChangeCI(nil, target, base, target, 10, NewRNG(1, "x")).Valid() {
		t.Error("an interval of no runs")
	}
}
