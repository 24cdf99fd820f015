package netem

import (
	"encoding/json"
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: 1 ns to 10 s at 3 significant digits (a 375 µs value
// lands in a 256 ns bucket).
const (
	histMax  = int64(10e9)
	histSigs = 3
)

// Hist is a histogram of durations in nanoseconds (an HdrHistogram) whose
// JSON form lists only the non-zero buckets, so that the agent can hand a
// cumulative histogram to rttlab after every task and the shaping
// package can subtract two of them to get one task's figures.
type Hist struct {
	h *hdrhistogram.Histogram
}

// NewHist returns an empty histogram.
func NewHist() *Hist { return &Hist{h: hdrhistogram.New(1, histMax, histSigs)} }

// Record adds one value; values below 0 count as 0, above 10 s as 10 s.
func (h *Hist) Record(ns int64) {
	_ = h.h.RecordValue(min(max(ns, 0), histMax))
}

// Count is the number of recorded values.
func (h *Hist) Count() int64 {
	if h == nil || h.h == nil {
		return 0
	}
	return h.h.TotalCount()
}

// Quantile returns the value at quantile q (0..1), 0 when empty. Values
// are the highest equivalent value of their bucket, as HdrHistogram
// reports them.
func (h *Hist) Quantile(q float64) int64 {
	if h.Count() == 0 {
		return 0
	}
	return h.h.ValueAtQuantile(q * 100)
}

// Mean of the recorded values, 0 when empty.
func (h *Hist) Mean() float64 {
	if h.Count() == 0 {
		return 0
	}
	return h.h.Mean()
}

// Max recorded value, 0 when empty.
func (h *Hist) Max() int64 {
	if h.Count() == 0 {
		return 0
	}
	return h.h.Max()
}

// Clone returns an independent copy.
func (h *Hist) Clone() *Hist {
	if h == nil || h.h == nil {
		return NewHist()
	}
	return &Hist{h: hdrhistogram.Import(h.h.Export())}
}

// Sub returns h minus prev, bucket by bucket: the values recorded since
// prev was taken from the same cumulative histogram. It refuses a prev
// with more values in some bucket (not an earlier snapshot of h).
func (h *Hist) Sub(prev *Hist) (*Hist, error) {
	a := h.Clone().h.Export()
	if prev != nil && prev.h != nil {
		b := prev.h.Export()
		if len(b.Counts) > len(a.Counts) {
			return nil, fmt.Errorf("histogram: snapshot has %d buckets, later one %d", len(b.Counts), len(a.Counts))
		}
		for i, c := range b.Counts {
			if c > a.Counts[i] {
				return nil, fmt.Errorf("histogram: bucket %d holds %d, fewer than the earlier snapshot's %d: not a later snapshot of the same histogram", i, a.Counts[i], c)
			}
			a.Counts[i] -= c
		}
	}
	return &Hist{h: hdrhistogram.Import(a)}, nil
}

// Merge adds o's values to h.
func (h *Hist) Merge(o *Hist) {
	if o == nil || o.h == nil {
		return
	}
	h.h.Merge(o.h)
}

type histJSON struct {
	Buckets [][2]int64 `json:"buckets"` // [bucket index, count] of non-zero buckets
}

// MarshalJSON writes the non-zero buckets.
func (h *Hist) MarshalJSON() ([]byte, error) {
	var j histJSON
	if h != nil && h.h != nil {
		for i, c := range h.h.Export().Counts {
			if c != 0 {
				j.Buckets = append(j.Buckets, [2]int64{int64(i), c})
			}
		}
	}
	if j.Buckets == nil {
		j.Buckets = [][2]int64{}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (h *Hist) UnmarshalJSON(b []byte) error {
	var j histJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	fresh := hdrhistogram.New(1, histMax, histSigs).Export()
	for _, bc := range j.Buckets {
		if bc[0] < 0 || int(bc[0]) >= len(fresh.Counts) || bc[1] < 0 {
			return fmt.Errorf("histogram: bucket %d count %d out of range", bc[0], bc[1])
		}
		fresh.Counts[bc[0]] = bc[1]
	}
	h.h = hdrhistogram.Import(fresh)
	return nil
}
