package raw

import (
	"errors"
	"fmt"
	"strconv"
)

// ShaperFile holds what the shaper did during each load task, per side.
const ShaperFile = "shaper.csv"

// ShaperRow is one side's shaper during one attempt of a load task: the
// packets it held, the drops, and the realized one-way hold per packet
// (release - the packet's arrival in the kernel) against the target.
type ShaperRow struct {
	Task      int
	Attempt   int
	App       string
	Route     string
	RTTms     float64
	Side      string // the shaped container's role: app or db
	Direction string // ingress (packets from the peer) or egress (to it)
	TargetUs  float64
	Packets   uint64
	Stamped   uint64 // packets held from the kernel's receive stamp
	Drops     uint64
	HoldP50Us float64
	HoldP99Us float64
	HoldMaxUs float64
	LateP50Us float64 // release - due
	LateP99Us float64
	LagP50Us  float64 // kernel receive stamp -> read by the shaper
	LagP99Us  float64
	CPUCores  float64 // the agent's CPU time / the task's wall time
	WallS     float64
}

// ShaperHeader is the header row of shaper.csv.
var ShaperHeader = []string{"task", "attempt", "app", "route", "rtt_ms", "side", "direction", "target_us", "packets", "stamped", "drops",
	"hold_p50_us", "hold_p99_us", "hold_max_us", "late_p50_us", "late_p99_us", "read_lag_p50_us", "read_lag_p99_us", "cpu_cores", "wall_s"}

// Record is r as a row of shaper.csv (ShaperHeader).
func (r *ShaperRow) Record() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return []string{strconv.Itoa(r.Task), strconv.Itoa(r.Attempt), r.App, r.Route, fmtMs(r.RTTms), r.Side, r.Direction,
		f(r.TargetUs), u(r.Packets), u(r.Stamped), u(r.Drops), f(r.HoldP50Us), f(r.HoldP99Us), f(r.HoldMaxUs),
		f(r.LateP50Us), f(r.LateP99Us), f(r.LagP50Us), f(r.LagP99Us), f(r.CPUCores), f(r.WallS)}
}

func parseShaperRow(rec []string) (ShaperRow, error) {
	var r ShaperRow
	if len(rec) != len(ShaperHeader) {
		return r, fmt.Errorf("%d fields, want %d", len(rec), len(ShaperHeader))
	}
	var errs []error
	i := func(s string) int { v, err := strconv.Atoi(s); errs = append(errs, err); return v }
	u := func(s string) uint64 { v, err := strconv.ParseUint(s, 10, 64); errs = append(errs, err); return v }
	f := func(s string) float64 { v, err := strconv.ParseFloat(s, 64); errs = append(errs, err); return v }
	r = ShaperRow{Task: i(rec[0]), Attempt: i(rec[1]), App: rec[2], Route: rec[3], RTTms: f(rec[4]), Side: rec[5], Direction: rec[6],
		TargetUs: f(rec[7]), Packets: u(rec[8]), Stamped: u(rec[9]), Drops: u(rec[10]), HoldP50Us: f(rec[11]), HoldP99Us: f(rec[12]),
		HoldMaxUs: f(rec[13]), LateP50Us: f(rec[14]), LateP99Us: f(rec[15]), LagP50Us: f(rec[16]), LagP99Us: f(rec[17]),
		CPUCores: f(rec[18]), WallS: f(rec[19])}
	return r, errors.Join(errs...)
}
