package shaping

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/results/stats"
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
	// OneWay captures the app<->database packets in both agents while
	// each setting is measured and pairs them per direction (see
	// OneWayDirection), on CaptureIface (default eth0), keeping at most
	// CaptureMaxPackets per capture (default DefaultCaptureMaxPackets).
	OneWay            bool
	CaptureIface      string
	CaptureMaxPackets int
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
	Select1CI   stats.Interval
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
	// OneWay is what the wire showed per direction (app->db, db->app)
	// while this row was measured; none without ShapeVerifyOptions.OneWay.
	OneWay []OneWayDirection
}

// VerifyShaping measures, for each setting, the ICMP RTT from the app's
// namespace to the database and the SELECT 1 latency, against the 0 ms
// setting (which goes through the shaper too). A first row measures the
// path with the shaper cleared, so the shaper's own cost at 0 ms shows.
// With o.OneWay each row also carries the one-way delays the two
// captures saw.
func VerifyShaping(ctx context.Context, d runtime.Execer, sh *Shaping, o ShapeVerifyOptions) ([]ShapeRow, error) {
	o.defaults()
	var rows []ShapeRow
	emit := func(r ShapeRow) {
		rows = append(rows, r)
		if o.Row != nil {
			o.Row(r)
		}
	}
	if err := sh.Clear(ctx, d); err != nil {
		return nil, err
	}
	ref, err := measureShapeRow(ctx, d, sh, o, ShapeRow{NoShaper: true})
	if err != nil {
		return nil, err
	}
	emit(ref)
	var base *ShapeRow
	ordered := append([]float64{0}, o.DelaysMs...)
	for i, rtt := range ordered {
		if i > 0 && rtt == 0 {
			continue
		}
		if err := sh.SetRTT(ctx, d, netem.FromMs(rtt)); err != nil {
			return rows, err
		}
		r, err := measureShapeRow(ctx, d, sh, o, ShapeRow{RTTms: rtt})
		if err != nil {
			return rows, err
		}
		if base == nil {
			b := r
			base = &b
			// The shaper's own cost at 0 ms, against no shaper.
			compareShapeRow(&r, ref, stats.NewRNG(o.Seed, "shape/0-vs-none"))
		} else {
			r.HaveBaseline = true
			compareShapeRow(&r, *base, stats.NewRNG(o.Seed, fmt.Sprintf("shape/%g", rtt)))
			out := func(v float64) bool { return v-rtt > o.ToleranceMs+1e-9 || v-rtt < -o.ToleranceMs-1e-9 }
			r.ICMPFlag, r.Select1Flag = out(r.AddedMs), out(r.Select1Diff)
			r.Flag = r.ICMPFlag || r.Select1Flag
		}
		emit(r)
	}
	return rows, nil
}

func (o *ShapeVerifyOptions) defaults() {
	if o.Interval == 0 {
		o.Interval = 10 * time.Millisecond
	}
	if o.CaptureIface == "" {
		o.CaptureIface = DefaultCaptureIface
	}
	if o.CaptureMaxPackets <= 0 {
		o.CaptureMaxPackets = DefaultCaptureMaxPackets
	}
}

// compareShapeRow fills in r's changes against base.
func compareShapeRow(r *ShapeRow, base ShapeRow, rng *rand.Rand) {
	r.AddedMs = netem.Ms(r.ICMP.Median) - netem.Ms(base.ICMP.Median)
	r.Select1Diff = r.Select1Ms - base.Select1Ms
	r.Select1CI = stats.BootstrapChangeCI(base.Select1Runs, r.Select1Runs, 10000, rng)
	addOneWayBaseline(r, base)
}

// measureShapeRow measures one setting: ICMP, SELECT 1, what the shaper
// did (but for the no-shaper row) and, with o.OneWay, what the two
// captures saw meanwhile.
func measureShapeRow(ctx context.Context, d runtime.Execer, sh *Shaping, o ShapeVerifyOptions, r ShapeRow) (ShapeRow, error) {
	before, err := sh.Snapshot(ctx, d)
	if err != nil {
		return r, err
	}
	var capture *PairCapture
	if o.OneWay {
		if capture, err = sh.StartPairCapture(ctx, d, "app", "db", o.CaptureIface, o.CaptureMaxPackets); err != nil {
			return r, err
		}
		defer capture.Abort()
	}
	if r.ICMP, err = sh.Ping(ctx, d, o.ICMPCount, o.Interval); err != nil {
		return r, err
	}
	runs, err := sh.SelectOne(ctx, d, o.SelectRuns, o.SelectCalls)
	if err != nil {
		return r, err
	}
	for _, run := range runs {
		r.Select1Runs = append(r.Select1Runs, netem.Ms(run.Median))
	}
	r.Select1Ms = stats.Median(r.Select1Runs)
	if capture != nil {
		if r.OneWay, err = capture.oneWay(); err != nil {
			return r, err
		}
	}
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
