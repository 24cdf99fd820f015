package placement

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rttlab/rttlab/internal/capped"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/results/stats"
)

// IsPlacementFolder reports whether dir holds a placement study's results.
func IsPlacementFolder(dir string) bool {
	k, err := results.FolderKind(dir)
	return err == nil && k == results.KindPlacement
}

// ReadPlaceSamples reads a placement folder's samples.jsonl: every
// sample of a done attempt (a folder without a journal, of before, keeps
// all of them). The cut last line of an interrupted write is left out.
func ReadPlaceSamples(dir string) ([]PlaceSample, error) {
	j, err := results.ReadJournal(dir)
	if err != nil {
		return nil, err
	}
	journal := !j.Empty()
	var out []PlaceSample
	_, err = results.ReadJSONLines(filepath.Join(dir, SamplesFile), "samples", results.MaxLine, false, func(_ int, b []byte) error {
		var s PlaceSample
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return results.JSONWords(err)
		}
		if !journal || (s.Attempt > 0 && j.DoneAttempt(s.Task) == s.Attempt) {
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

func readPlaceResult(dir string) (*PlaceResult, error) {
	path := filepath.Join(dir, results.SummaryJSONFile)
	b, err := capped.ReadFile(path, "summary", results.MaxFile)
	if err != nil {
		return nil, err
	}
	var r PlaceResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if r.Plan == nil {
		return nil, fmt.Errorf("%s: no plan", path)
	}
	return &r, nil
}

// ReportPlacement recomputes a placement folder's statistics from its raw
// samples (calibration, held-out, routed, sweep and concurrency latencies)
// and rewrites summary.json, summary.md and the plots (plots/*.svg and
// .png). What is not in the samples (the ICMP link checks, the capacity
// searches, the generator's lag) is kept from summary.json. It returns the
// files written.
func ReportPlacement(dir string) ([]string, error) {
	res, err := readPlaceResult(dir)
	if err != nil {
		return nil, err
	}
	samples, err := ReadPlaceSamples(dir)
	if err != nil {
		return nil, err
	}
	if err := recomputePlace(res, samples); err != nil {
		return nil, err
	}
	files := []string{filepath.Join(dir, results.SummaryJSONFile), filepath.Join(dir, results.SummaryMDFile)}
	if err := results.WriteJSON(dir, results.SummaryJSONFile, res); err != nil {
		return nil, err
	}
	if err := results.WriteAtomic(dir, results.SummaryMDFile, []byte(PlaceMarkdown(res))); err != nil {
		return files, err
	}
	plots, err := WritePlacePlots(res, filepath.Join(dir, results.PlotsDir))
	return append(files, plots...), err
}

type sampleKey struct {
	rep                              int
	phase, kind, host, route, policy string
}

// medians of the successful measured samples per key.
func groupSamples(samples []PlaceSample) map[sampleKey][]float64 {
	out := map[sampleKey][]float64{}
	for _, s := range samples {
		if s.Warmup || s.Error != "" || (s.Kind == "http" && s.Status != 200) {
			continue
		}
		k := sampleKey{s.Rep, s.Phase, s.Kind, s.Host, s.Route, s.Policy}
		if s.Policy != "" {
			k.host = "" // through the proxy: grouped by policy, whatever host it chose
		}
		out[k] = append(out[k], s.LatencyMs)
	}
	return out
}

// recomputePlace rebuilds every repetition's calibrations, model rows and
// routed summary, and the sweep, from the samples, then the warnings.
func recomputePlace(res *PlaceResult, samples []PlaceSample) error {
	rc := &recomputer{samples: samples, g: groupSamples(samples)}
	for i := range res.Reps {
		if err := rc.rep(&res.Reps[i], res.Plan.Seed); err != nil {
			return err
		}
	}
	if len(res.Sweep) > 0 {
		if err := rc.sweep(res); err != nil {
			return err
		}
	}
	res.SweepPredicted = sweepPredicted(res)
	res.Warnings = nil
	(&Runner{res: res}).warn()
	return nil
}

// recomputer is a placement folder's samples, also grouped by key, as
// recomputePlace reads them.
type recomputer struct {
	samples []PlaceSample
	g       map[sampleKey][]float64
}

// med is the median of a key's samples, an error when it has none.
func (rc *recomputer) med(k sampleKey) (float64, error) {
	v := rc.g[k]
	if len(v) == 0 {
		return 0, fmt.Errorf("no samples for %+v", k)
	}
	return stats.Median(v), nil
}

// rep recomputes one repetition: its calibration, held-out calibration,
// estimates, held-out rows, predicted crossovers and routed summary.
func (rc *recomputer) rep(rep *PlaceRep, seed uint64) error {
	if err := rc.rebuild(rep.Rep, &rep.Calibration, "calibration", false); err != nil {
		return err
	}
	ho := rep.Calibration
	ho.Hosts = slices.Clone(rep.Calibration.Hosts)
	if err := rc.rebuild(rep.Rep, &ho, "held-out", true); err != nil {
		return err
	}
	rep.HeldOutCal = ho
	rep.Estimates, rep.HeldOut, rep.Predicted = nil, nil, nil
	for _, route := range ho.Routes {
		if route.PerN {
			continue
		}
		hoP50 := map[string]float64{}
		for _, h := range ho.Hosts {
			if v, err := rc.med(sampleKey{rep.Rep, "held-out", "http", h.Name, route.Path, ""}); err == nil {
				hoP50[h.Name] = v
			}
		}
		if err := rep.addRouteModels(ho, route.Path, hoP50); err != nil {
			return err
		}
	}
	var routed []Sample
	for _, s := range rc.samples {
		if s.Rep == rep.Rep && s.Phase == "routed" {
			routed = append(routed, Sample{Policy: Policy(s.Policy), Route: s.Route, Host: s.Host, LatencyMs: s.LatencyMs,
				Failed: s.Error != "" || s.Status != 200, Warmup: s.Warmup})
		}
	}
	rep.Routed = SummarizeRouted(routed, seed^uint64(rep.Rep), 0)
	return nil
}

// rebuild sets a phase's host medians (connect and /health, as the client
// path when heldOut; SELECT 1 from the calibration otherwise) and, for the
// calibration, every route's p50 per host.
func (rc *recomputer) rebuild(rep int, c *Calibration, phase string, heldOut bool) error {
	for j := range c.Hosts {
		h := &c.Hosts[j]
		var err error
		if h.ConnectP50Ms, err = rc.med(sampleKey{rep, phase, "connect", h.Name, "", ""}); err != nil {
			return err
		}
		hp, err := rc.med(sampleKey{rep, phase, "http", h.Name, healthPath(rc.samples, rep, phase, h.Name, c), ""})
		if err != nil {
			return err
		}
		if heldOut {
			h.ClientPathMs = hp
		} else {
			h.HealthP50Ms = hp
			if h.Select1P50Ms, err = rc.med(sampleKey{rep, "calibration", "select1", h.Name, "", ""}); err != nil {
				return err
			}
		}
	}
	if heldOut {
		return nil
	}
	for j := range c.Routes {
		route := &c.Routes[j]
		for _, h := range c.Hosts {
			v, err := rc.med(sampleKey{rep, phase, "http", h.Name, requestPath(*route, 0), ""})
			if err != nil {
				return err
			}
			route.P50Ms[h.Name] = v
		}
	}
	return nil
}

// sweep rebuilds the sweep points and the measured crossover from the
// sweep samples per N and host.
func (rc *recomputer) sweep(res *PlaceResult) error {
	a, b := map[int][]float64{}, map[int][]float64{}
	for k, v := range rc.g {
		if k.phase != "sweep" {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(k.route[strings.IndexByte(k.route, '=')+1:], "%d", &n); err != nil {
			return fmt.Errorf("sweep sample route %q: no n", k.route)
		}
		if k.host == NodeA {
			a[n] = v
		} else {
			b[n] = v
		}
	}
	res.Sweep = Sweep(a, b, res.Plan.Seed, 0)
	res.Measured = nil
	if mc, err := MeasureCrossover(res.Sweep); err == nil {
		res.Measured = &mc
	}
	return nil
}

// healthPath is the app's health path as sampled: the one http route of
// the phase that is neither a calibrated route nor the per-N route.
func healthPath(samples []PlaceSample, rep int, phase, host string, c *Calibration) string {
	for _, s := range samples {
		if s.Rep != rep || s.Phase != phase || s.Kind != "http" || s.Host != host {
			continue
		}
		if _, ok := c.RouteCalibration(strings.SplitN(s.Route, "?", 2)[0]); !ok {
			return s.Route
		}
	}
	return ""
}

// ComparePlacement puts the routed p50s and the sweep of two placement
// folders side by side, with a percentile-bootstrap 95% interval of the
// difference of medians (B − A).
func ComparePlacement(dirA, dirB string) (string, error) {
	ra, errA := readPlaceResult(dirA)
	_, errB := readPlaceResult(dirB)
	if err := errors.Join(errA, errB); err != nil {
		return "", err
	}
	sa, errA := ReadPlaceSamples(dirA)
	sb, errB := ReadPlaceSamples(dirB)
	if err := errors.Join(errA, errB); err != nil {
		return "", err
	}
	ga, gb := groupSamples(sa), groupSamples(sb)
	var b strings.Builder
	fmt.Fprintf(&b, "# Placement: %s (A) vs %s (B)\n\nRouted comparison, repetition 1; B − A with a 95%% percentile-bootstrap interval (10,000 resamples, seed %d).\n\n| route | policy | A p50 ms | B p50 ms | B − A | 95%% CI |\n|---|---|---|---|---|---|\n", dirA, dirB, ra.Plan.Seed)
	row := func(label1, label2 string, ka, kb sampleKey) {
		va, vb := ga[ka], gb[kb]
		if len(va) == 0 || len(vb) == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | – | only in one folder |\n", label1, label2, p50s(va), p50s(vb))
			return
		}
		iv := stats.BootstrapChangeCI(va, vb, stats.Resamples, stats.NewRNG(ra.Plan.Seed, "placement-compare\x00"+label1+"\x00"+label2))
		fmt.Fprintf(&b, "| %s | %s | %.3f | %.3f | %+.3f | [%.3f, %.3f] |\n", label1, label2, stats.Median(va), stats.Median(vb), stats.Median(vb)-stats.Median(va), iv.Low, iv.High)
	}
	for _, pol := range ra.Plan.Policies {
		for _, rt := range ra.Plan.Routes {
			row(rt, pol, sampleKey{1, "routed", "http", "", rt, pol}, sampleKey{1, "routed", "http", "", rt, pol})
		}
	}
	b.WriteString("\nSerial sweep, per N and host.\n\n| N | host | A p50 ms | B p50 ms | B − A | 95% CI |\n|---|---|---|---|---|---|\n")
	var sweep []sampleKey
	for k := range ga {
		if k.phase == "sweep" {
			sweep = append(sweep, k)
		}
	}
	slices.SortFunc(sweep, func(x, y sampleKey) int {
		if c := len(x.route) - len(y.route); c != 0 {
			return c
		}
		return strings.Compare(x.route+x.host, y.route+y.host)
	})
	for _, k := range sweep {
		row(k.route, k.host, k, k)
	}
	return b.String(), nil
}

func p50s(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", stats.Median(v))
}
