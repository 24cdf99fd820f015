package shaping

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// CalibrateOptions configure Calibrate.
type CalibrateOptions struct {
	// Echoes per ICMP measurement and their interval.
	Echoes   int
	Interval time.Duration
	// MaxRounds bounds the correction rounds per setting; a setting stops
	// early once its residual is within ToleranceUs.
	MaxRounds   int
	ToleranceUs float64
	// Row receives each setting's result as it is measured.
	Row func(CalibrationPoint)
}

func (o CalibrateOptions) withDefaults() CalibrateOptions {
	if o.Echoes <= 0 {
		o.Echoes = 200
	}
	if o.Interval <= 0 {
		o.Interval = 2 * time.Millisecond
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = 4
	}
	if o.ToleranceUs <= 0 {
		o.ToleranceUs = 10
	}
	return o
}

// Calibrate measures, for each non-zero setting, how far the ICMP RTT
// added over the 0 ms setting is from the setting, and corrects the
// one-way delay set on each side by half of that (both sides alike), in a
// few rounds. Each round measures 0 ms and the setting back to back, so a
// drift of the host's load affects both; the round whose residual is the
// smallest is kept. The offsets found are kept in
// sh.Offsets (SetRTT applies them) and returned for the manifest.
// Calibration only uses ICMP: SELECT 1 through PostgreSQL stays an
// independent check of the result.
func Calibrate(ctx context.Context, d runtime.Execer, sh *Shaping, app string, settingsMs []float64, o CalibrateOptions) ([]CalibrationPoint, error) {
	o = o.withDefaults()
	sh.Offsets = map[int64][2]time.Duration{}
	var out []CalibrationPoint
	for _, s := range settingsMs {
		if s <= 0 {
			continue
		}
		pt, err := calibrateSetting(ctx, d, sh, app, s, o)
		if err != nil {
			return out, err
		}
		out = append(out, pt)
		if o.Row != nil {
			o.Row(pt)
		}
	}
	return out, nil
}

// calibrateSetting calibrates setting s (ms) in at most o.MaxRounds
// rounds, keeps the offset of the round that came closest in sh.Offsets
// and returns the setting's calibration point.
func calibrateSetting(ctx context.Context, d runtime.Execer, sh *Shaping, app string, s float64, o CalibrateOptions) (CalibrationPoint, error) {
	rtt := netem.FromMs(s)
	pt := CalibrationPoint{App: app, RTTms: s, Probe: fmt.Sprintf("icmp %d echoes per measurement", o.Echoes)}
	var off time.Duration // per side, applied to both
	best, bestResid := time.Duration(0), math.Inf(1)
	for round := 1; round <= o.MaxRounds; round++ {
		sh.Offsets[rtt.Microseconds()] = [2]time.Duration{off, off}
		base, err := icmpMedianUs(ctx, d, sh, o, 0)
		if err != nil {
			return pt, err
		}
		at, err := icmpMedianUs(ctx, d, sh, o, rtt)
		if err != nil {
			return pt, err
		}
		resid := (at - base) - float64(rtt.Nanoseconds())/1e3
		pt.Rounds = round
		pt.BeforeUs = append(pt.BeforeUs, resid)
		if math.Abs(resid) < math.Abs(bestResid) {
			best, bestResid = off, resid
		}
		if math.Abs(resid) <= o.ToleranceUs || round == o.MaxRounds {
			break
		}
		off -= time.Duration(resid / 2 * 1e3)
		// A side can be held for no less than 0.
		appD, dbD := netem.SplitRTT(rtt)
		off = max(off, -min(appD, dbD))
	}
	// Keep the round that came closest (a side held for 0 changes
	// the shaper's cost, so the correction is not always linear).
	off, pt.ResidualUs = best, bestResid
	sh.Offsets[rtt.Microseconds()] = [2]time.Duration{off, off}
	pt.AppOffsetUs, pt.DBOffsetUs = float64(off.Nanoseconds())/1e3, float64(off.Nanoseconds())/1e3
	return pt, nil
}

// icmpMedianUs sets rtt and returns the median of o.Echoes ICMP echoes'
// RTT in µs; fewer than half of them coming back is an error.
func icmpMedianUs(ctx context.Context, d runtime.Execer, sh *Shaping, o CalibrateOptions, rtt time.Duration) (float64, error) {
	if err := sh.SetRTT(ctx, d, rtt); err != nil {
		return 0, err
	}
	pr, err := sh.Ping(ctx, d, o.Echoes, o.Interval)
	if err != nil {
		return 0, err
	}
	if pr.Received < o.Echoes/2 {
		return 0, fmt.Errorf("calibration at %v: %d of %d echoes came back", rtt, pr.Received, o.Echoes)
	}
	return float64(pr.Median.Nanoseconds()) / 1e3, nil
}

// OffsetsFrom turns a manifest's calibration of app back into SetRTT's
// offsets (a resumed run or a fresh stack reuses them).
func OffsetsFrom(points []CalibrationPoint, app string) map[int64][2]time.Duration {
	var m map[int64][2]time.Duration
	for _, p := range points {
		if p.App != app {
			continue
		}
		if m == nil {
			m = map[int64][2]time.Duration{}
		}
		m[netem.FromMs(p.RTTms).Microseconds()] = [2]time.Duration{time.Duration(p.AppOffsetUs * 1e3), time.Duration(p.DBOffsetUs * 1e3)}
	}
	return m
}

// CalibrationPoint is the calibration of one setting of one app's stack:
// the offset added to the one-way delay of each side, the residual
// (ICMP added - setting, µs) of the last round, and every round's.
type CalibrationPoint struct {
	App         string    `json:"app"`
	RTTms       float64   `json:"rtt_ms"`
	AppOffsetUs float64   `json:"app_offset_us"`
	DBOffsetUs  float64   `json:"db_offset_us"`
	Rounds      int       `json:"rounds"`
	ResidualUs  float64   `json:"residual_us"`
	BeforeUs    []float64 `json:"round_residuals_us"`
	Probe       string    `json:"probe"`
}
