package report

import (
	"math"
	"slices"

	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
)

// ShaperStat sums up one side's shaper at one setting of one app, over
// the attempts that counted (done attempts).
type ShaperStat struct {
	App       string
	RTTms     float64
	Side      string
	Direction string
	Tasks     int
	Packets   uint64
	Drops     uint64
	TargetUs  float64
	// Medians over tasks of the per-task figures; HoldP99Us is the
	// largest task p99.
	HoldP50Us float64
	HoldP99Us float64
	LateP50Us float64
	LagP50Us  float64
	CPUCores  float64
	// ErrorUs = HoldP50Us - TargetUs: how far the realized one-way hold
	// is from the target at the median.
	ErrorUs float64
}

// AnalyzeShaper groups the rows of done attempts by app, setting and side.
func AnalyzeShaper(rows []raw.ShaperRow, done map[int]int) []ShaperStat {
	type key struct {
		app, side string
		rtt       float64
	}
	groups := map[key][]raw.ShaperRow{}
	var keys []key
	// A run killed between writing an attempt's shaper rows and marking
	// it done hands the same attempt number out again on resume: the
	// last rows of a (task, attempt, side) are the ones that counted.
	type rowKey struct {
		task, attempt int
		side          string
	}
	counted := raw.LastRows(rows, func(r raw.ShaperRow) rowKey { return rowKey{r.Task, r.Attempt, r.Side} },
		func(r raw.ShaperRow) bool { a, ok := done[r.Task]; return ok && a == r.Attempt })
	for _, r := range counted {
		k := key{r.App, r.Side, r.RTTms}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmpStr(a.app, b.app); c != 0 {
			return c
		}
		if a.rtt != b.rtt {
			return cmpCell("", "", a.rtt, "", "", b.rtt)
		}
		return cmpStr(a.side, b.side)
	})
	var out []ShaperStat
	for _, k := range keys {
		g := groups[k]
		st := ShaperStat{App: k.app, RTTms: k.rtt, Side: k.side, Direction: g[0].Direction, Tasks: len(g), TargetUs: g[0].TargetUs, HoldP99Us: math.NaN()}
		var p50, late, lag, cpu []float64
		for _, r := range g {
			st.Packets += r.Packets
			st.Drops += r.Drops
			p50 = append(p50, r.HoldP50Us)
			late = append(late, r.LateP50Us)
			lag = append(lag, r.LagP50Us)
			cpu = append(cpu, r.CPUCores)
			if math.IsNaN(st.HoldP99Us) || r.HoldP99Us > st.HoldP99Us {
				st.HoldP99Us = r.HoldP99Us
			}
		}
		st.HoldP50Us, st.LateP50Us, st.LagP50Us, st.CPUCores = stats.Median(p50), stats.Median(late), stats.Median(lag), stats.Median(cpu)
		st.ErrorUs = st.HoldP50Us - st.TargetUs
		out = append(out, st)
	}
	return out
}
