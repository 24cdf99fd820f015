package stats

import (
	"math"
	"strconv"
)

// Num is a float64 that marshals to JSON as null when it is NaN or
// infinite (a p50 of no samples, an undefined interval end), as the
// placement and worker summaries write their figures.
type Num float64

// MarshalJSON writes the number, or null.
func (n Num) MarshalJSON() ([]byte, error) {
	v := float64(n)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON reads a number, or null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*n = Num(v)
	return nil
}

// CI is a 95% confidence interval in milliseconds; both ends are NaN
// (null in JSON) when undefined.
type CI struct {
	Low  Num `json:"low"`
	High Num `json:"high"`
}

// CIOf is iv as a CI, its undefined ends null in JSON.
func CIOf(iv Interval) CI { return CI{Num(iv.Low), Num(iv.High)} }

// Interval is c as an Interval.
func (c CI) Interval() Interval { return Interval{Low: float64(c.Low), High: float64(c.High)} }

// Valid reports whether both ends are numbers.
func (c CI) Valid() bool { return c.Interval().Valid() }

// Excludes0 returns +1 when the interval lies above 0, −1 when it lies
// below, and 0 when it contains 0 or is undefined.
func (c CI) Excludes0() int {
	switch {
	case !c.Valid():
		return 0
	case c.Low > 0:
		return 1
	case c.High < 0:
		return -1
	}
	return 0
}
