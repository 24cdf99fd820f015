package shaping

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rttlab/rttlab/netem"
)

// oneWayMethod is the JSON's account of how the one_way figures are made.
const oneWayMethod = "per setting, both agents capture the app<->database IPv4 packets on their container's interface (AF_PACKET, kernel stamps, CLOCK_REALTIME: one clock for both) while ICMP and SELECT 1 run; " +
	"each packet that left one side is paired with its arrival at the other by a key of its invariant bytes (addresses, protocol, IP id, transport header); " +
	"repeated keys that could pair wrongly are left out (ambiguous); delay = receiver's stamp - sender's; added_p50_ms against the 0 ms setting (the 0 ms row: against no shaper)"

// verifyOneWayJSON is one direction of a row's one-way check. Delays are
// null when no packet was paired; added_p50_ms also without a baseline.
type verifyOneWayJSON struct {
	Direction        string   `json:"direction"`
	Sent             int      `json:"sent"`
	Matched          int      `json:"matched"`
	MatchedShare     float64  `json:"matched_share"`
	Lost             int      `json:"lost"`
	Ambiguous        int      `json:"ambiguous"`
	OutsideWindow    int      `json:"outside_window"`
	P50Ms            *float64 `json:"p50_ms"`
	P90Ms            *float64 `json:"p90_ms"`
	P99Ms            *float64 `json:"p99_ms"`
	MinMs            *float64 `json:"min_ms"`
	MaxMs            *float64 `json:"max_ms"`
	AddedP50Ms       *float64 `json:"added_p50_ms"`
	CaptureTruncated bool     `json:"capture_truncated"`
	CaptureDrops     int      `json:"capture_drops"`
}

func oneWayJSON(dirs []OneWayDirection) []verifyOneWayJSON {
	out := []verifyOneWayJSON{}
	for _, d := range dirs {
		j := verifyOneWayJSON{Direction: d.Direction, Sent: d.Sent, Matched: d.Matched, MatchedShare: d.Share,
			Lost: d.Lost, Ambiguous: d.Ambiguous, OutsideWindow: d.Outside, CaptureTruncated: d.Truncated, CaptureDrops: d.Drops}
		if d.Matched > 0 {
			p50, p90, p99, lo, hi := d.P50Ms, d.P90Ms, d.P99Ms, d.MinMs, d.MaxMs
			j.P50Ms, j.P90Ms, j.P99Ms, j.MinMs, j.MaxMs = &p50, &p90, &p99, &lo, &hi
		}
		if d.HaveAdded {
			a := d.AddedP50Ms
			j.AddedP50Ms = &a
		}
		out = append(out, j)
	}
	return out
}

// verifySideJSON is one side's shaper figures of a row: the agent's own
// summary, flattened, with the side and hook it belongs to.
type verifySideJSON struct {
	Side string `json:"side"`
	Hook string `json:"hook"`
	netem.Summary
}

// verifyRowJSON is one setting of the document.
type verifyRowJSON struct {
	RTTms           float64          `json:"rtt_ms"`
	NoShaper        bool             `json:"no_shaper"`
	Baseline        string           `json:"baseline"`
	ICMPMeanMs      float64          `json:"icmp_mean_ms"`
	ICMPMedianMs    float64          `json:"icmp_median_ms"`
	ICMPReceived    int              `json:"icmp_received"`
	ICMPAddedMs     *float64         `json:"icmp_added_ms"`
	ICMPOut         *bool            `json:"icmp_out_of_tolerance"`
	Select1Ms       float64          `json:"select1_median_ms"`
	Select1ChangeMs *float64         `json:"select1_change_ms"`
	Select1CIMs     []float64        `json:"select1_change_ci_ms"`
	Select1RunsMs   []float64        `json:"select1_run_medians_ms"`
	Select1Out      *bool            `json:"select1_out_of_tolerance"`
	OutOfTolerance  *bool            `json:"out_of_tolerance"`
	Calibrated      bool             `json:"calibrated"`
	OffsetUs        *float64         `json:"calibration_offset_us"`
	Shaper          []verifySideJSON `json:"shaper"`
	// OneWay: per direction, what the two captures saw (empty without
	// --one-way).
	OneWay []verifyOneWayJSON `json:"one_way"`
}

// verifyJSON is the document of `rttlab shape verify --json`.
type verifyJSON struct {
	Backend     string          `json:"backend"`
	Why         string          `json:"why"`
	Scope       string          `json:"scope"`
	FloorMs     float64         `json:"floor_ms"`
	ToleranceMs float64         `json:"tolerance_ms"`
	ICMPCount   int             `json:"icmp_count"`
	SelectRuns  int             `json:"select1_runs"`
	SelectCalls int             `json:"select1_calls"`
	Seed        uint64          `json:"seed"`
	CIMethod    string          `json:"ci_method"`
	Rows        []verifyRowJSON `json:"rows"`
	Flagged     int             `json:"flagged"`
	// Calibration: the offsets applied per setting, when calibrated. The
	// calibration tunes the ICMP added RTT, so a calibrated row's ICMP
	// flag is not an independent check; SELECT 1's is.
	Calibration []CalibrationPoint `json:"calibration"`
	// OneWayMethod says how the one_way figures of the rows were made
	// ("" without --one-way).
	OneWayMethod string `json:"one_way_method"`
}

// WriteVerifyJSON writes the document of `rttlab shape verify --json`:
// the shaper and the options o the rows were measured with, each row with
// its flags against the tolerance, what each side's shaper did and, with
// o.OneWay, the one-way check per direction, and the calibration applied
// (cal, none when the shaper was not calibrated).
func WriteVerifyJSON(w io.Writer, sh *Shaping, o ShapeVerifyOptions, rows []ShapeRow, cal []CalibrationPoint) error {
	if cal == nil {
		cal = []CalibrationPoint{}
	}
	doc := verifyJSON{Calibration: cal, Backend: sh.Backend, Why: sh.Why, Scope: sh.Scope, FloorMs: netem.Ms(sh.Floor), ToleranceMs: o.ToleranceMs, ICMPCount: o.ICMPCount,
		SelectRuns: o.SelectRuns, SelectCalls: o.SelectCalls, Seed: o.Seed,
		CIMethod: "percentile bootstrap (10000 resamples) of the difference of medians of the run medians, resampling both settings' runs independently",
		Rows:     []verifyRowJSON{}}
	if o.OneWay {
		doc.OneWayMethod = oneWayMethod
	}
	for _, r := range rows {
		jr := verifyRowJSON{RTTms: r.RTTms, NoShaper: r.NoShaper, ICMPMeanMs: netem.Ms(r.ICMP.Mean), ICMPMedianMs: netem.Ms(r.ICMP.Median),
			ICMPReceived: r.ICMP.Received, Select1Ms: r.Select1Ms, Select1RunsMs: r.Select1Runs,
			Shaper: []verifySideJSON{}}
		if r.HaveBaseline {
			// Flags are evaluated against the 0 ms setting only; the 0 ms
			// row (against no shaper) has none.
			jr.ICMPOut, jr.Select1Out, jr.OutOfTolerance = &r.ICMPFlag, &r.Select1Flag, &r.Flag
		}
		for _, c := range cal {
			if c.RTTms == r.RTTms && !r.NoShaper {
				off := c.AppOffsetUs
				jr.Calibrated, jr.OffsetUs = true, &off
			}
		}
		if !r.NoShaper {
			a, c := r.AddedMs, r.Select1Diff
			jr.ICMPAddedMs, jr.Select1ChangeMs = &a, &c
			jr.Select1CIMs = []float64{r.Select1CI.Low, r.Select1CI.High}
			jr.Baseline = "0 ms setting"
			if !r.HaveBaseline {
				jr.Baseline = "no shaper"
			}
		}
		if r.Flag {
			doc.Flagged++
		}
		for _, sd := range r.Sides {
			jr.Shaper = append(jr.Shaper, verifySideJSON{Side: sd.Role, Hook: sd.Direction, Summary: sd.Summary})
		}
		jr.OneWay = oneWayJSON(r.OneWay)
		doc.Rows = append(doc.Rows, jr)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
