package workers

import (
	"math"
	"testing"
)

func TestChooserJSQ(t *testing.T) {
	c := NewChooser(1, TiesFirst)
	for _, tc := range []struct {
		in   []int
		want int
	}{
		{[]int{0, 0, 0}, 0},
		{[]int{1, 0, 0}, 1},
		{[]int{3, 2, 0}, 2},
		{[]int{2, 1, 1}, 1},
		{[]int{5, 7, 5, 4}, 3},
		{[]int{9}, 0},
	} {
		if got, err := c.Choose(RuleJSQ, tc.in); err != nil || got != tc.want {
			t.Errorf("jsq %v = %d (%v), want %d", tc.in, got, err, tc.want)
		}
	}
	// Random ties: only the least busy are chosen, evenly.
	r := NewChooser(7, TiesRandom)
	counts := make([]int, 4)
	const n = 8000
	for range n {
		i, _ := r.Choose(RuleJSQ, []int{1, 0, 3, 0})
		counts[i]++
	}
	if counts[0] != 0 || counts[2] != 0 {
		t.Fatalf("jsq chose a busier worker: %v", counts)
	}
	if math.Abs(float64(counts[1])/n-0.5) > 0.03 {
		t.Errorf("random ties uneven: %v", counts)
	}
	// Seeded: the same seed, the same choices.
	a, b := NewChooser(3, TiesRandom), NewChooser(3, TiesRandom)
	for range 100 {
		x, _ := a.Choose(RuleJSQ, []int{0, 0, 0})
		y, _ := b.Choose(RuleJSQ, []int{0, 0, 0})
		if x != y {
			t.Fatal("same seed, different ties")
		}
	}
}

func TestChooserRoundRobin(t *testing.T) {
	c := NewChooser(1, TiesRandom)
	var got []int
	for i := range 7 {
		j, _ := c.Choose(RuleRoundRobin, []int{i, 0, 100})
		got = append(got, j)
	}
	want := []int{0, 1, 2, 0, 1, 2, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("round robin %v, want %v", got, want)
		}
	}
}

func TestChooserP2C(t *testing.T) {
	for _, ties := range []Ties{TiesFirst, TiesRandom} {
		c := NewChooser(11, ties)
		counts := make([]int, 3)
		const n = 9000
		for range n {
			i, _ := c.Choose(RuleP2C, []int{0, 1, 2})
			counts[i]++
		}
		// The busiest worker loses every draw it is in; the idle one wins
		// every draw it is in (2/3 of them); the middle one 1/3.
		if counts[2] != 0 {
			t.Errorf("ties %s: p2c chose the busiest worker %d times", ties, counts[2])
		}
		if math.Abs(float64(counts[0])/n-2.0/3) > 0.03 {
			t.Errorf("ties %s: idle worker chosen %d of %d", ties, counts[0], n)
		}
		// Two workers: p2c is jsq.
		for _, in := range [][]int{{0, 1}, {3, 1}, {2, 2}} {
			i, _ := c.Choose(RuleP2C, in)
			if in[i] > in[1-i] {
				t.Errorf("p2c on %v chose %d", in, i)
			}
		}
		if i, _ := c.Choose(RuleP2C, []int{4}); i != 0 {
			t.Error("p2c with one worker")
		}
	}
}

func TestChooserErrors(t *testing.T) {
	c := NewChooser(1, "")
	if _, err := c.Choose(RuleJSQ, nil); err == nil {
		t.Error("no workers accepted")
	}
	if _, err := c.Choose("lifo", []int{0}); err == nil {
		t.Error("unknown rule accepted")
	}
	if _, err := ParseTies("last"); err == nil {
		t.Error("unknown ties accepted")
	}
}
