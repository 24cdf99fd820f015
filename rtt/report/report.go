package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/results/plotkit"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/rtt/raw"
)

// The derived files of a results folder that Render writes beside the raw
// ones (besides report.html and the plots).
const (
	RunsFile        = "runs.csv"
	SummaryJSONFile = "summary.json"
	SummaryMDFile   = results.SummaryMDFile
)

// Render regenerates the derived files of the results folder dir from its
// raw files (manifest.json, tasks.jsonl, samples.jsonl, probes.csv) with
// the default options: runs.csv, summary.json, summary.md, the plots
// (plots/NAME.svg and plots/NAME.png, see Summary.Plots) and report.html.
// Everything is computed before anything is written, so a folder that
// fails to load (the error names the file and line) or to render leaves
// the earlier files untouched; each file is then written through a
// temporary file and a rename, report.html last. The same raw files
// always give the same bytes. `rttlab report DIR` and the end of every
// run call it.
func Render(dir string) error { return RenderWith(dir, Options{}) }

// RenderWith is Render with explicit options.
func RenderWith(dir string, o Options) error {
	_, err := RenderFiles(dir, o)
	return err
}

// RenderFiles is RenderWith that also returns the paths it wrote, the
// report last.
func RenderFiles(dir string, o Options) ([]string, error) {
	_, files, err := RenderSummary(dir, o)
	return files, err
}

// RenderSummary is RenderFiles that also returns the summary it rendered,
// so that a caller that prints from it (the end of a run) need not
// analyze the folder again.
func RenderSummary(dir string, o Options) (*Summary, []string, error) {
	d, err := raw.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("render %s: %w", dir, err)
	}
	s := Analyze(d, o)
	runs, err := s.RunsCSV()
	if err != nil {
		return nil, nil, fmt.Errorf("render %s: %w", dir, err)
	}
	js, err := s.JSON()
	if err != nil {
		return nil, nil, fmt.Errorf("render %s: %w", dir, err)
	}
	var plots []plotkit.PlotFile
	if !o.NoPlots {
		if plots, err = s.Plots(); err != nil {
			return nil, nil, fmt.Errorf("render %s: %w", dir, err)
		}
	}
	html, err := s.HTML(plots)
	if err != nil {
		return nil, nil, fmt.Errorf("render %s: %w", dir, err)
	}
	type file struct {
		dir, name string
		b         []byte
	}
	files := []file{{dir, RunsFile, runs}, {dir, SummaryJSONFile, js}, {dir, SummaryMDFile, s.Markdown()}}
	pdir := filepath.Join(dir, PlotsDir)
	keep := map[string]bool{}
	for _, p := range plots {
		files = append(files, file{pdir, p.Name + ".svg", p.SVG}, file{pdir, p.Name + ".png", p.PNG})
		keep[p.Name] = true
	}
	files = append(files, file{dir, ReportFile, html})
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("render %s: %w", dir, err)
	}
	// A plot that no longer has data must not linger from an earlier render.
	for _, n := range plotNames {
		if !keep[n] && !o.NoPlots {
			for _, ext := range []string{".svg", ".png"} {
				if err := os.Remove(filepath.Join(pdir, n+ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, nil, fmt.Errorf("render %s: remove stale plot: %w", dir, err)
				}
			}
		}
	}
	var written []string
	for _, f := range files {
		if err := results.WriteAtomic(f.dir, f.name, f.b); err != nil {
			return s, written, fmt.Errorf("render %s: %w", dir, err)
		}
		written = append(written, filepath.Join(f.dir, f.name))
	}
	return s, written, nil
}

// runsHeader is the header row of runs.csv.
var runsHeader = []string{"app", "route", "rtt_ms", "run", "n", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "failures", "unshaped"}

// RunsCSV returns runs.csv: one row per run, latencies in ms with six
// decimals (nanosecond resolution), empty when the run has no successful
// measured request.
func (s *Summary) RunsCSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(runsHeader); err != nil {
		return nil, fmt.Errorf("write %s: %w", RunsFile, err)
	}
	f := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return fmtFixed(v, 6)
	}
	for _, r := range s.Runs {
		rec := []string{r.App, r.Route, fmtSetting(r.RTTms), strconv.Itoa(r.Run), strconv.Itoa(r.N),
			f(r.P50), f(r.P90), f(r.P99), f(r.Mean), strconv.Itoa(r.Failures), strconv.FormatBool(r.Unshaped)}
		if err := w.Write(rec); err != nil {
			return nil, fmt.Errorf("write %s: %w", RunsFile, err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("write %s: %w", RunsFile, err)
	}
	return b.Bytes(), nil
}

// num marshals a float64 rounded to six decimals; NaN and infinities
// become null.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	v := float64(n)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	// The same rounding as runs.csv, then trailing zeros trimmed.
	s := fmtFixed(v, 6)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return []byte(s), nil
}

type jsonInterval struct {
	Low  num `json:"low"`
	High num `json:"high"`
}

func jsonIv(iv stats.Interval) *jsonInterval {
	if !iv.Valid() {
		return nil
	}
	return &jsonInterval{num(iv.Low), num(iv.High)}
}

type jsonCell struct {
	App             string        `json:"app"`
	Route           string        `json:"route"`
	RTTms           num           `json:"rtt_ms"`
	NRuns           int           `json:"n_runs"`
	NRequests       int           `json:"n_requests"`
	Failures        int           `json:"failures"`
	WarmupFailures  int           `json:"warmup_failures"`
	Retried         int           `json:"retried"`
	P50             num           `json:"p50_ms"`
	CI              *jsonInterval `json:"ci_ms"`
	RunP50s         []num         `json:"run_p50s_ms"`
	Change          num           `json:"change_ms"`
	ChangeCI        *jsonInterval `json:"change_ci_ms"`
	ChangePercent   num           `json:"change_percent"`
	ChangePercentCI *jsonInterval `json:"change_percent_ci"`
	Ratio           num           `json:"ratio"`
	Verified        num           `json:"verified_rtt_ms"`
	RatioVerified   num           `json:"ratio_verified"`
	Unverified      []string      `json:"unverified"`
	Statements      num           `json:"statements_per_request"`
	Predicted       num           `json:"predicted_ms"`
	LowN            bool          `json:"low_n"`
	TooManyFailures bool          `json:"too_many_failures"`
	Warnings        []string      `json:"warnings"`
	// PercentOf names the baseline of change_percent: "unshaped" or "0 ms".
	PercentOf   string           `json:"percent_of"`
	UnshapedP50 num              `json:"unshaped_p50_ms"`
	Parts       *jsonParts       `json:"parts"`
	TakenApart  *jsonTakenApart  `json:"taken_apart"`
	Attribution *jsonAttribution `json:"attribution"`
}

// jsonTakenApart is how many of a cell's measured requests the anatomy
// took apart (TakenApart).
type jsonTakenApart struct {
	Requests int      `json:"requests"`
	Measured int      `json:"measured"`
	Share    num      `json:"share"`
	LeftOut  []string `json:"left_out"`
	// Counted: the folder counted the join by sequence number (the
	// fields below); older folders did not.
	Counted        bool `json:"counted"`
	Unpaired       int  `json:"unpaired"`
	NegativeClient int  `json:"negative_client"`
	Overlaps       int  `json:"overlaps"`
}

// jsonParts is where a cell's requests' time went (Parts).
type jsonParts struct {
	Requests   int `json:"requests"`
	Runs       int `json:"runs"`
	Latency    num `json:"latency_ms"`
	Client     num `json:"client_ms"`
	Legs       num `json:"legs_ms"`
	App        num `json:"app_ms"`
	Wire       num `json:"wire_ms"`
	DB         num `json:"db_ms"`
	RoundTrips num `json:"round_trips"`
}

// jsonAttribution is a cell's change against 0 ms, part by part.
type jsonAttribution struct {
	Total          num `json:"total_ms"`
	Wire           num `json:"wire_ms"`
	WireConfigured num `json:"wire_configured_ms"`
	WireTrips      num `json:"wire_round_trips_ms"`
	WireExcess     num `json:"wire_excess_ms"`
	PerTrip        num `json:"wire_per_trip_ratio"`
	TripsChange    num `json:"round_trips_change"`
	App            num `json:"app_ms"`
	DB             num `json:"db_ms"`
	Client         num `json:"client_ms"`
}

type jsonWire struct {
	App        string `json:"app"`
	RTTms      num    `json:"rtt_ms"`
	Unshaped   bool   `json:"unshaped"`
	Direction  string `json:"direction"`
	Tasks      int    `json:"tasks"`
	Incomplete int    `json:"incomplete"`
	Sent       int    `json:"packets"`
	Matched    int    `json:"paired"`
	P50        num    `json:"one_way_p50_ms"`
	P99        num    `json:"one_way_p99_ms"`
	Added      num    `json:"added_ms"`
	Target     num    `json:"target_ms"`
	Passing    int    `json:"passing_tasks"`
}

type jsonWireVerdict struct {
	App     string `json:"app"`
	RTTms   num    `json:"rtt_ms"`
	Status  string `json:"status"`
	Why     string `json:"why"`
	Tasks   int    `json:"tasks"`
	Passing int    `json:"passing_tasks"`
	// Incomplete counts the tasks whose captures missed packets.
	Incomplete int `json:"incomplete_tasks"`
}

type jsonProbe struct {
	App            string        `json:"app"`
	Kind           string        `json:"kind"`
	RTTms          num           `json:"rtt_ms"`
	Rows           int           `json:"rows"`
	N              int           `json:"n"`
	Failures       int           `json:"failures"`
	Value          num           `json:"value_ms"`
	Added          num           `json:"added_ms"`
	CI             *jsonInterval `json:"added_ci_ms"`
	OutOfTolerance bool          `json:"out_of_tolerance"`
}

type jsonShaper struct {
	App       string `json:"app"`
	RTTms     num    `json:"rtt_ms"`
	Side      string `json:"side"`
	Direction string `json:"hook"`
	Tasks     int    `json:"tasks"`
	Packets   uint64 `json:"packets"`
	Drops     uint64 `json:"drops"`
	TargetUs  num    `json:"target_us"`
	HoldP50Us num    `json:"hold_p50_us"`
	ErrorUs   num    `json:"error_us"`
	HoldP99Us num    `json:"hold_p99_us"`
	LateP50Us num    `json:"late_p50_us"`
	LagP50Us  num    `json:"read_lag_p50_us"`
	CPUCores  num    `json:"cpu_cores"`
}

type jsonSummary struct {
	Plan              string            `json:"plan"`
	Seed              uint64            `json:"seed"`
	Confidence        num               `json:"confidence"`
	CIMethod          string            `json:"ci_method"`
	ChangeCIMethod    string            `json:"change_ci_method"`
	PercentileMethod  string            `json:"percentile_method"`
	MinRuns           int               `json:"min_runs_for_claim"`
	MaxFailed         num               `json:"max_failed_fraction_for_claim"`
	ToleranceMs       num               `json:"probe_tolerance_ms"`
	TasksPlanned      int               `json:"tasks_planned"`
	TasksDone         int               `json:"tasks_done"`
	Cells             []jsonCell        `json:"cells"`
	Probes            []jsonProbe       `json:"probes"`
	Shaper            []jsonShaper      `json:"shaper"`
	ShaperToleranceUs num               `json:"shaper_tolerance_us"`
	Sensitivity       []jsonSensitivity `json:"sensitivity"`
	Skipped           map[string]string `json:"skipped"`
	Warnings          []string          `json:"warnings"`
	AnatomyMethod     string            `json:"anatomy_method"`
	Unshaped          []jsonCell        `json:"unshaped"`
	WireToleranceMs   num               `json:"wire_tolerance_ms"`
	WireMinPaired     num               `json:"wire_min_paired"`
	Wire              []jsonWire        `json:"wire"`
	WireVerdicts      []jsonWireVerdict `json:"wire_verdicts"`
}

type jsonSensitivity struct {
	App            string        `json:"app"`
	Route          string        `json:"route"`
	Settings       []num         `json:"settings_ms"`
	Slope          num           `json:"slope_ms_per_ms"`
	SlopeCI        *jsonInterval `json:"slope_ci"`
	Intercept      num           `json:"intercept_ms"`
	PredictedSlope num           `json:"predicted_slope"`
	Residuals      []num         `json:"residuals_ms"`
}

const changeCIMethod = "change = median of target run p50s - median of 0 ms run p50s; percentile bootstrap resampling baseline and target runs independently"

// JSON returns summary.json: every cell with its run count, request
// count, p50 and CI, change and change CI, ratio, predicted change and
// warnings, plus the probe summary, the CI method text and the seed.
// Numbers are rounded to six decimals; undefined values are null.
func (s *Summary) JSON() ([]byte, error) {
	o := s.Options.withDefaults()
	js := jsonSummary{
		Plan: s.Plan, Seed: s.Seed, Confidence: stats.Confidence,
		CIMethod: o.CIMethod(), ChangeCIMethod: changeCIMethod, PercentileMethod: stats.PercentileMethod,
		MinRuns: o.MinRuns, MaxFailed: num(o.MaxFailedFraction), ToleranceMs: num(o.ToleranceMs),
		TasksPlanned: s.TasksPlanned, TasksDone: s.TasksDone,
		Cells: []jsonCell{}, Probes: []jsonProbe{}, Shaper: []jsonShaper{}, ShaperToleranceUs: num(o.ShaperToleranceUs),
		Skipped: map[string]string{}, Warnings: []string{}, Sensitivity: []jsonSensitivity{},
		AnatomyMethod: AnatomyMethod, Unshaped: []jsonCell{}, WireToleranceMs: num(WireToleranceMs), WireMinPaired: num(WireMinMatched),
		Wire: []jsonWire{}, WireVerdicts: []jsonWireVerdict{},
	}
	for _, c := range s.Unshaped {
		js.Unshaped = append(js.Unshaped, jsonCellOf(c))
	}
	for _, w := range s.Wire {
		jw := jsonWire{App: w.App, RTTms: num(w.RTTms), Unshaped: w.Unshaped, Direction: w.Direction, Tasks: w.Tasks, Incomplete: w.Incomplete,
			Sent: w.Sent, Matched: w.Matched, P50: num(w.P50Ms), P99: num(w.P99Ms), Added: num(math.NaN()), Target: num(w.TargetMs), Passing: w.Passing}
		if w.HasAdded {
			jw.Added = num(w.AddedMs)
		}
		js.Wire = append(js.Wire, jw)
	}
	for _, v := range s.WireVerdicts {
		js.WireVerdicts = append(js.WireVerdicts, jsonWireVerdict{App: v.App, RTTms: num(v.RTTms), Status: v.Status, Why: v.Why, Tasks: v.Tasks, Passing: v.Passing, Incomplete: v.Incomplete})
	}
	for _, f := range s.Sensitivity {
		js.Sensitivity = append(js.Sensitivity, jsonSensitivityOf(f))
	}
	for _, st := range s.Shaper {
		js.Shaper = append(js.Shaper, jsonShaper{App: st.App, RTTms: num(st.RTTms), Side: st.Side, Direction: st.Direction, Tasks: st.Tasks,
			Packets: st.Packets, Drops: st.Drops, TargetUs: num(st.TargetUs), HoldP50Us: num(st.HoldP50Us), ErrorUs: num(st.ErrorUs),
			HoldP99Us: num(st.HoldP99Us), LateP50Us: num(st.LateP50Us), LagP50Us: num(st.LagP50Us), CPUCores: num(st.CPUCores)})
	}
	for k, v := range s.Manifest.Skipped {
		js.Skipped[k] = v
	}
	js.Warnings = append(js.Warnings, s.Warnings...)
	for _, c := range s.Cells {
		js.Cells = append(js.Cells, jsonCellOf(c))
	}
	for _, p := range s.Probes {
		js.Probes = append(js.Probes, jsonProbe{
			App: p.App, Kind: p.Kind, RTTms: num(p.RTTms), Rows: p.Rows, N: p.N, Failures: p.Failures,
			Value: num(p.Value), Added: num(p.Added), CI: jsonIv(p.CI), OutOfTolerance: p.OutOfTolerance,
		})
	}
	b, err := json.MarshalIndent(&js, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", SummaryJSONFile, err)
	}
	return append(b, '\n'), nil
}

// jsonSensitivityOf is one sensitivity as summary.json writes it; the
// predicted slope is null without statements.
func jsonSensitivityOf(f Sensitivity) jsonSensitivity {
	jf := jsonSensitivity{App: f.App, Route: f.Route, Slope: num(f.Slope), SlopeCI: jsonIv(f.SlopeCI), Intercept: num(f.Intercept),
		PredictedSlope: num(math.NaN()), Settings: []num{}, Residuals: []num{}}
	if f.HasPredicted {
		jf.PredictedSlope = num(f.PredictedSlope)
	}
	for i := range f.Settings {
		jf.Settings = append(jf.Settings, num(f.Settings[i]))
		jf.Residuals = append(jf.Residuals, num(f.Residuals[i]))
	}
	return jf
}

// jsonCellOf is one cell as summary.json writes it; statements and the
// verified RTT are null when unknown.
func jsonCellOf(c Cell) jsonCell {
	jc := jsonCell{
		App: c.App, Route: c.Route, RTTms: num(c.RTTms), NRuns: c.NRuns, NRequests: c.NRequests,
		Failures: c.Failures, WarmupFailures: c.WarmupFailures, Retried: c.Retried,
		P50: num(c.P50), CI: jsonIv(c.CI), RunP50s: []num{},
		Change: num(c.Change), ChangeCI: jsonIv(c.ChangeCI), ChangePercent: num(c.Percent), ChangePercentCI: jsonIv(c.PercentCI), Ratio: num(c.Ratio),
		Verified: num(math.NaN()), RatioVerified: num(c.RatioVerified), Unverified: append([]string{}, c.Unverified...),
		Statements: num(math.NaN()), Predicted: num(c.Predicted), LowN: c.LowN, TooManyFailures: c.TooManyFailures, Warnings: []string{},
	}
	if c.HasStatements {
		jc.Statements = num(c.Statements)
	}
	if c.HasVerified {
		jc.Verified = num(c.Verified)
	}
	for _, v := range c.P50s {
		jc.RunP50s = append(jc.RunP50s, num(v))
	}
	jc.Warnings = append(jc.Warnings, c.Warnings...)
	jc.PercentOf, jc.UnshapedP50 = "0 ms", num(c.UnshapedP50)
	if c.PercentOfUnshaped {
		jc.PercentOf = "unshaped"
	}
	if c.HasParts {
		p := c.Parts
		jc.Parts = &jsonParts{Requests: p.Requests, Runs: p.Runs, Latency: num(p.Latency), Client: num(p.Client), Legs: num(p.Legs), App: num(p.App),
			Wire: num(p.Wire), DB: num(p.DB), RoundTrips: num(p.RoundTrips)}
	}
	if t := c.TakenApart; t.Measured > 0 {
		jc.TakenApart = &jsonTakenApart{Requests: t.N, Measured: t.Measured, Share: num(t.Share()), LeftOut: append([]string{}, t.LeftOut...),
			Counted: t.Counted, Unpaired: t.Unpaired, NegativeClient: t.NegativeClient, Overlaps: t.Overlaps}
	}
	if c.HasAttribution {
		a := c.Attribution
		jc.Attribution = &jsonAttribution{Total: num(a.Total), Wire: num(a.Wire()), WireConfigured: num(a.WireConfigured), WireTrips: num(a.WireTrips),
			WireExcess: num(a.WireExcess), PerTrip: num(a.PerTrip()), TripsChange: num(a.TripsChange), App: num(a.App), DB: num(a.DB), Client: num(a.Outside)}
	}
	return jc
}

// Markdown returns summary.md: a header naming n, the CI method and the
// seed; one study-style line per app, route and non-zero setting, e.g.
//
//	go /feed: 0.91 ms at 0 ms, 3.40 ms at 0.75 ms. Change: +2.49 ms [2.29, 2.63] (predicted +2.25).
//
// then a table per app with every setting, the verification probes and
// the warnings.
func (s *Summary) Markdown() []byte {
	o := s.Options.withDefaults()
	var b strings.Builder
	fmt.Fprintf(&b, "# rttlab summary: plan %s\n\n", s.Plan)
	runsPerCell, reqPerRun := s.sizes()
	fmt.Fprintf(&b, "n: %s runs per cell, %s measured requests per run (%d of %d tasks done). 95%% CI: %s; change CIs resample the 0 ms and target runs independently. Seed: %d.\n\n",
		intRange(runsPerCell), intRange(reqPerRun), s.TasksDone, s.TasksPlanned, o.CIMethod(), s.Seed)
	s.contextMarkdown(&b)
	fmt.Fprintf(&b, "%s\n\n", methodLine(o))
	s.resultsMarkdown(&b, o)
	s.anatomyMarkdown(&b)
	s.baselinesMarkdown(&b)
	s.seedMarkdown(&b)
	s.tablesMarkdown(&b, o)
	s.wireMarkdown(&b)
	s.shaperMarkdown(&b, o)
	s.traceMarkdown(&b)
	s.probesMarkdown(&b, o)
	b.WriteString(sensitivityMarkdown(s.Sensitivity))
	s.warningsMarkdown(&b)
	return []byte(b.String())
}

// sizes are the runs of each cell with data and the measured requests of
// each run with data.
func (s *Summary) sizes() (runsPerCell, reqPerRun []int) {
	for _, c := range s.Cells {
		if c.NRuns > 0 {
			runsPerCell = append(runsPerCell, c.NRuns)
		}
	}
	for _, r := range s.Runs {
		if r.N > 0 {
			reqPerRun = append(reqPerRun, r.N)
		}
	}
	return runsPerCell, reqPerRun
}

// contextMarkdown writes the shaper, scope, kernel and version in one
// line.
func (s *Summary) contextMarkdown(b *strings.Builder) {
	var ctx []string
	m := &s.Manifest
	if m.Shaper != "" {
		sh := "Shaper: " + m.Shaper
		if m.ShaperReason != "" {
			sh += " (" + m.ShaperReason + ")"
		}
		ctx = append(ctx, sh+".")
	}
	if m.Scope != "" {
		ctx = append(ctx, "Scope: "+m.Scope+".")
	}
	if m.Kernel != "" {
		ctx = append(ctx, "Kernel: "+m.Kernel+".")
	}
	if m.Version != "" {
		v := "rttlab " + m.Version
		if m.GitCommit != "" {
			v += " (" + m.GitCommit + ")"
		}
		ctx = append(ctx, v+".")
	}
	if len(ctx) > 0 {
		b.WriteString(strings.Join(ctx, " ") + "\n\n")
	}
}

// resultsMarkdown writes one study line per cell with a non-zero setting.
func (s *Summary) resultsMarkdown(b *strings.Builder, o Options) {
	b.WriteString("## Results\n\n")
	lines := 0
	for _, c := range s.Cells {
		if c.RTTms == 0 {
			continue
		}
		b.WriteString(studyLine(&c, o) + "\n\n")
		lines++
	}
	if lines == 0 {
		b.WriteString("No cell with a non-zero setting has data.\n\n")
	}

}

// tablesMarkdown writes each app's table of cells and the legend of the
// unverified mark.
func (s *Summary) tablesMarkdown(b *strings.Builder, o Options) {
	var apps []string
	for _, c := range s.Cells {
		if len(apps) == 0 || apps[len(apps)-1] != c.App {
			apps = append(apps, c.App)
		}
	}
	for _, app := range apps {
		fmt.Fprintf(b, "## %s\n\n", app)
		b.WriteString("| route | setting | runs | p50 (ms) | 95% CI | change (ms) | change CI | change % [CI] | ratio | verified RTT (ms) | ratio (verified) | predicted (ms) | failures |\n")
		b.WriteString("| --- | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, c := range s.Cells {
			if c.App != app {
				continue
			}
			runs := strconv.Itoa(c.NRuns)
			if c.LowN {
				runs += " (low n)"
			}
			pred := dash
			if c.HasStatements && c.RTTms > 0 {
				pred = fmtSigned(c.Predicted, 3)
			}
			change, pct, ratio, ver, ratioVer := dash, dash, dash, dash, dash
			if c.HasBaseline {
				change = fmtSigned(c.Change, 3)
				pct = fmtPercent(c.Percent, c.PercentCI)
				ratio = fmtFixed(c.Ratio, 2)
				ratioVer = fmtFixed(c.RatioVerified, 2)
			}
			if c.HasVerified {
				ver = fmtSigned(c.Verified, 3)
			}
			setting := fmtSetting(c.RTTms) + " ms"
			if len(c.Unverified) > 0 {
				setting += " " + unverifiedMark
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				mdEscape(c.Route), setting, runs, fmtFixed(c.P50, 3), fmtIv(c.CI, 3), change, fmtIv(c.ChangeCI, 3), pct,
				ratio, ver, ratioVer, pred, failuresCell(&c, o))
		}
		b.WriteString("\n")
	}
	if len(s.unverifiedCells()) > 0 {
		fmt.Fprintf(b, "%s: the setting's delay was not verified: where the folder has the wire's figures, the wire was off or incomplete (see The wire); else a probe is out of tolerance (±%s ms), the shaper's hold was off its target (±%s µs), it dropped packets, or the setting was not probed. Ratio (verified) divides the change by the SELECT 1 change measured at that setting instead of the configured RTT.\n\n",
			unverifiedMark, fmtSetting(o.ToleranceMs), fmtSetting(o.ShaperToleranceUs))
	}

}

// probesMarkdown writes the verification probes' table.
func (s *Summary) probesMarkdown(b *strings.Builder, o Options) {
	b.WriteString("## Verification probes\n\n")
	if len(s.Probes) == 0 {
		b.WriteString("No probes recorded.\n\n")
	} else {
		fmt.Fprintf(b, "icmp: ICMP median RTT of the setting's check; icmp-task: median of the medians of the quick checks before each task; select1: median of the run medians of SELECT 1. Added = value - value at 0 ms (select1: 95%% CI by percentile bootstrap over the run medians). Tolerance: |added - setting| <= %s ms.\n\n",
			fmtSetting(o.ToleranceMs))
		b.WriteString("| app | probe | setting | rows | n | lost/failed | value (ms) | added (ms) | 95% CI | check |\n")
		b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n")
		for _, p := range s.Probes {
			added, check := dash, dash
			if p.HasBaseline {
				added = fmtSigned(p.Added, 3)
				check = "ok"
				if p.OutOfTolerance {
					check = "**out of tolerance**"
				}
			}
			fmt.Fprintf(b, "| %s | %s | %s ms | %d | %d | %d | %s | %s | %s | %s |\n",
				mdEscape(p.App), p.Kind, fmtSetting(p.RTTms), p.Rows, p.N, p.Failures, fmtFixed(p.Value, 3), added, fmtIv(p.CI, 3), check)
		}
		b.WriteString("\n")
	}
	if miss := s.notProbed(); len(miss) > 0 {
		fmt.Fprintf(b, "Not probed (no ICMP or SELECT 1 probe of the setting): %s.\n\n", strings.Join(miss, ", "))
	}
}

// warningsMarkdown writes the warnings and the manifest's notes.
func (s *Summary) warningsMarkdown(b *strings.Builder) {
	m := &s.Manifest
	b.WriteString("## Warnings\n\n")
	if len(s.Warnings) == 0 {
		b.WriteString("None.\n")
	}
	for _, w := range s.Warnings {
		b.WriteString("- " + w + "\n")
	}
	if len(m.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range m.Notes {
			b.WriteString("- " + n + "\n")
		}
	}
}

// fmtPercent writes a relative change and its interval: +32% [29, 35].
func fmtPercent(v float64, iv stats.Interval) string {
	if math.IsNaN(v) {
		return dash
	}
	r := func(x float64) float64 { return math.Round(x) + 0 } // + 0: no "-0"
	out := fmt.Sprintf("%+.0f%%", r(v))
	if iv.Valid() {
		out += fmt.Sprintf(" [%.0f, %.0f]", r(iv.Low), r(iv.High))
	}
	return out
}

// studyLine writes the line for a non-zero setting in the study's words.
func studyLine(c *Cell, o Options) string {
	head := c.App + " " + c.Route + ": "
	if c.NRuns == 0 {
		return head + "no successful runs at " + fmtSetting(c.RTTms) + " ms."
	}
	at := fmtFixed(c.P50, 2) + " ms at " + fmtSetting(c.RTTms) + " ms."
	if !c.HasBaseline {
		return head + at + " No 0 ms baseline, so no change."
	}
	line := head
	if c.HasUnshaped {
		line += fmtFixed(c.UnshapedP50, 2) + " ms unshaped, "
	}
	line += fmtFixed(c.BaselineP50, 2) + " ms at 0 ms, " + at +
		" Change: " + fmtSigned(c.Change, 2) + " ms " + fmtIv(c.ChangeCI, 2) + ", " + fmtPercent(c.Percent, c.PercentCI)
	if c.PercentOfUnshaped {
		line += " of unshaped"
	}
	if c.HasStatements {
		line += " (predicted " + fmtSigned(c.Predicted, 2) + ")"
	}
	line += "."
	if c.HasAttribution {
		line += " Where it went: " + AttributionLine(c) + "."
	}
	if c.HasVerified && c.HasBaseline {
		line += " Ratio " + fmtFixed(c.Ratio, 2) + " to the configured RTT, " + fmtFixed(c.RatioVerified, 2) +
			" to the verified one (SELECT 1 " + fmtSigned(c.Verified, 3) + " ms)."
	}
	if len(c.Unverified) > 0 {
		line += " " + unverifiedMark + " **Setting not verified** (" + strings.Join(c.Unverified, "; ") + ")."
	}
	if c.LowN {
		line += fmt.Sprintf(" **Low n** (%d runs at 0 ms, %d at %s ms; %d needed): no claim.",
			c.BaselineRuns, c.NRuns, fmtSetting(c.RTTms), o.MinRuns)
	}
	if c.TooManyFailures {
		line += fmt.Sprintf(" **Failed requests** (%d of %d at 0 ms, %d of %d at %s ms; at most %s for a claim): no claim.",
			c.BaselineFailures, c.BaselineFailures+c.BaselineRequests, c.Failures, c.Failures+c.NRequests,
			fmtSetting(c.RTTms), o.maxFailedPercent())
	}
	return line
}

// methodLine says how p50s are made and when no claim is made.
func methodLine(o Options) string {
	return fmt.Sprintf("p50 = median of run-level p50s; percentiles by %s. Failed requests are counted, not timed. Fewer than %d runs, or more than %s failed measured requests, in a cell or its 0 ms baseline: numbers shown, no claim. Predicted = round trips per request × RTT: the traced round trips on the wire (a mix's weighted by its shares) when the folder has a trace, else the app's declared statements.",
		stats.PercentileMethod, o.MinRuns, o.maxFailedPercent())
}

// failuresCell is the failures column: the count, marked when it is too
// many for a claim.
func failuresCell(c *Cell, o Options) string {
	s := strconv.Itoa(c.Failures)
	if stats.FailedFraction(c.Failures, c.NRequests) > o.MaxFailedFraction {
		s += " (> " + o.maxFailedPercent() + ")"
	}
	if c.Retried > 0 {
		s += fmt.Sprintf(", %d re-sent", c.Retried)
	}
	return s
}

const dash = "–"

// unverifiedMark marks a cell whose setting failed verification.
const unverifiedMark = "⚠"

func (s *Summary) unverifiedCells() []Cell {
	var out []Cell
	for _, c := range s.Cells {
		if len(c.Unverified) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// shaperMarkdown writes the shaper's own figures per app, setting and side.
func (s *Summary) shaperMarkdown(b *strings.Builder, o Options) {
	if len(s.Shaper) == 0 {
		return
	}
	b.WriteString("## Shaper\n\n")
	b.WriteString("What the shaper did during the tasks counted as data, per side (shaper.csv). Hold = release - the packet's arrival (the kernel's receive stamp on ingress, the shaper's read on egress); target = the one-way delay set on that side (at 0 ms the hold is the shaper's own floor, which every setting pays, and is not flagged); medians over tasks of the per-task p50, the largest task p99; CPU = the agent's CPU time / the task's wall time.\n\n")
	b.WriteString("| app | setting | side | hook | tasks | packets | drops | target (µs) | hold p50 (µs) | error (µs) | hold p99 (µs) | late p50 (µs) | read lag p50 (µs) | CPU (cores) |\n")
	b.WriteString("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, st := range s.Shaper {
		errUs := fmtSigned(st.ErrorUs, 1)
		if (st.TargetUs > 0 && math.Abs(st.ErrorUs) > o.ShaperToleranceUs+1e-9) || st.Drops > 0 {
			errUs += " " + unverifiedMark
		}
		fmt.Fprintf(b, "| %s | %s ms | %s | %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			st.App, fmtSetting(st.RTTms), st.Side, st.Direction, st.Tasks, st.Packets, st.Drops, fmtFixed(st.TargetUs, 1),
			fmtFixed(st.HoldP50Us, 1), errUs, fmtFixed(st.HoldP99Us, 1), fmtFixed(st.LateP50Us, 1), fmtFixed(st.LagP50Us, 1), fmtFixed(st.CPUCores, 3))
	}
	b.WriteString("\n")
}

// fmtFixed formats v with d decimals; NaN becomes a dash and -0 becomes 0.
func fmtFixed(v float64, d int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dash
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

// fmtSigned is fmtFixed with a leading '+' for non-negative values.
func fmtSigned(v float64, d int) string {
	s := fmtFixed(v, d)
	if s != dash && !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

func fmtIv(iv stats.Interval, d int) string {
	if !iv.Valid() {
		return dash
	}
	return "[" + fmtFixed(iv.Low, d) + ", " + fmtFixed(iv.High, d) + "]"
}

func intRange(v []int) string {
	if len(v) == 0 {
		return "0"
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return strconv.Itoa(lo) + "–" + strconv.Itoa(hi)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
