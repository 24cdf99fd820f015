package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/workloads"
)

// ShapeVerifyOptions configure VerifyShaping.
type ShapeVerifyOptions struct {
	DelaysMs    []float64
	ICMPCount   int
	Interval    time.Duration
	SelectRuns  int
	SelectCalls int
	ToleranceMs float64
	Seed        uint64
	// Row receives each row as it is measured.
	Row func(ShapeRow)
}

// ShapeRow is one setting of `rttlab shape verify`.
type ShapeRow struct {
	RTTms       float64
	NoShaper    bool // the reference row: no rule, no qdisc
	ICMP        workloads.PingResult
	AddedMs     float64 // ICMP median minus the 0 ms setting's
	Select1Ms   float64 // median of the run medians
	Select1Diff float64 // against the 0 ms setting
	Select1CI   results.Interval
	Select1Runs []float64
	// ICMPFlag and Select1Flag: |added - configured| > tolerance for the
	// ICMP median and the SELECT 1 change; Flag is either.
	ICMPFlag     bool
	Select1Flag  bool
	Flag         bool
	HaveBaseline bool
	// Sides is what each side's shaper did while this row was measured
	// (none for the kernel backend and the no-shaper row).
	Sides []ShaperDelta
}

// VerifyShaping measures, for each setting, the ICMP RTT from the app's
// namespace to the database and the SELECT 1 latency, against the 0 ms
// setting (which goes through the shaper too). A first row measures the
// path with the shaper cleared, so the shaper's own cost at 0 ms shows.
func VerifyShaping(ctx context.Context, d Containers, sh *Shaping, o ShapeVerifyOptions) ([]ShapeRow, error) {
	if o.Interval == 0 {
		o.Interval = 10 * time.Millisecond
	}
	var rows []ShapeRow
	measure := func(r ShapeRow) (ShapeRow, error) {
		before, err := sh.Snapshot(ctx, d)
		if err != nil {
			return r, err
		}
		pr, err := sh.Ping(ctx, d, o.ICMPCount, o.Interval)
		if err != nil {
			return r, err
		}
		r.ICMP = pr
		runs, err := sh.SelectOne(ctx, d, o.SelectRuns, o.SelectCalls)
		if err != nil {
			return r, err
		}
		for _, run := range runs {
			r.Select1Runs = append(r.Select1Runs, ms(run.Median))
		}
		r.Select1Ms = results.Median(r.Select1Runs)
		if !r.NoShaper {
			after, err := sh.Snapshot(ctx, d)
			if err != nil {
				return r, err
			}
			if r.Sides, err = ShaperDeltas(before, after); err != nil {
				return r, err
			}
		}
		return r, nil
	}
	if err := sh.Clear(ctx, d); err != nil {
		return nil, err
	}
	ref, err := measure(ShapeRow{NoShaper: true})
	if err != nil {
		return nil, err
	}
	rows = append(rows, ref)
	if o.Row != nil {
		o.Row(ref)
	}
	var base *ShapeRow
	ordered := append([]float64{0}, o.DelaysMs...)
	for i, rtt := range ordered {
		if i > 0 && rtt == 0 {
			continue
		}
		if err := sh.SetRTT(ctx, d, msDuration(rtt)); err != nil {
			return rows, err
		}
		r, err := measure(ShapeRow{RTTms: rtt})
		if err != nil {
			return rows, err
		}
		if base == nil {
			b := r
			base = &b
			// The shaper's own cost at 0 ms, against no shaper.
			r.AddedMs = ms(r.ICMP.Median) - ms(ref.ICMP.Median)
			r.Select1Diff = r.Select1Ms - ref.Select1Ms
			r.Select1CI = results.BootstrapChangeCI(ref.Select1Runs, r.Select1Runs, 10000, results.NewRNG(o.Seed, "shape/0-vs-none"))
		} else {
			r.HaveBaseline = true
			r.AddedMs = ms(r.ICMP.Median) - ms(base.ICMP.Median)
			r.Select1Diff = r.Select1Ms - base.Select1Ms
			r.Select1CI = results.BootstrapChangeCI(base.Select1Runs, r.Select1Runs, 10000, results.NewRNG(o.Seed, fmt.Sprintf("shape/%g", rtt)))
			out := func(v float64) bool { return v-rtt > o.ToleranceMs+1e-9 || v-rtt < -o.ToleranceMs-1e-9 }
			r.ICMPFlag, r.Select1Flag = out(r.AddedMs), out(r.Select1Diff)
			r.Flag = r.ICMPFlag || r.Select1Flag
		}
		rows = append(rows, r)
		if o.Row != nil {
			o.Row(r)
		}
	}
	return rows, nil
}
