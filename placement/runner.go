package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	labrt "github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/shaping"
	"github.com/rttlab/rttlab/orchestrator/stack"
	"github.com/rttlab/rttlab/results"
	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/workloads"
)

// PlaceSample is one measured request or probe call of the placement study.
type PlaceSample struct {
	// Task and Attempt name the attempt that measured the sample (see
	// tasks.go); only a done attempt's samples are data.
	Task      string  `json:"task,omitempty"`
	Attempt   int     `json:"attempt,omitempty"`
	Rep       int     `json:"rep"`
	Phase     string  `json:"phase"` // baseline, calibration, held-out, routed, sweep
	Kind      string  `json:"kind"`  // http, connect, select1
	Host      string  `json:"host,omitempty"`
	Route     string  `json:"route,omitempty"`
	Policy    string  `json:"policy,omitempty"`
	Seq       int     `json:"seq"`
	Warmup    bool    `json:"warmup,omitempty"`
	LatencyMs float64 `json:"latency_ms"`
	Status    int     `json:"status,omitempty"`
	Error     string  `json:"error,omitempty"`
	// UpstreamMs is the proxy's own timing of the upstream exchange
	// (routed phase), from its decision log.
	UpstreamMs float64 `json:"upstream_ms,omitempty"`
}

// LinkCheck is one node pair's added RTT as configured and as measured by
// ICMP (mean RTT at the setting minus at zero, both through the shaper).
type LinkCheck struct {
	Phase        string  `json:"phase"`
	A            string  `json:"a"`
	B            string  `json:"b"`
	ConfiguredMs float64 `json:"configured_ms"`
	ZeroMs       float64 `json:"icmp_zero_ms"`
	SettingMs    float64 `json:"icmp_setting_ms"`
	AddedMs      float64 `json:"icmp_added_ms"`
	Lost         int     `json:"lost"`
}

// Select1Check is a compute host's database link as verified by SELECT 1
// medians at zero and at the calibration setting.
type Select1Check struct {
	Host         string  `json:"host"`
	ConfiguredMs float64 `json:"configured_ms"`
	ZeroP50Ms    float64 `json:"zero_p50_ms"`
	SettingP50Ms float64 `json:"setting_p50_ms"`
	AddedMs      float64 `json:"added_ms"`
	// The wire's check of the same link during the same calls: the p50
	// round trip of the database's turns, taken from the host's and the
	// database's captures each on its own clock (so it holds where the
	// two run on two nodes), at zero (the baseline's calls) and at the
	// setting (the median over the first repetition's calibration
	// rounds of each round's p50); WireTrips of WireTurns measured (at
	// the setting). Zero trips: no wire figure.
	WireZeroP50Ms    float64 `json:"wire_zero_p50_ms"`
	WireSettingP50Ms float64 `json:"wire_setting_p50_ms"`
	WireAddedMs      float64 `json:"wire_added_ms"`
	WireTrips        int     `json:"wire_trips"`
	WireTurns        int     `json:"wire_turns"`
}

// wireSeen says whether the captures can see what the shapers of hook
// and backend hold: the userspace wire shaper holds packets on the
// bridge, between the two captures; an ingress or egress shaper inside
// a member's namespace, or kernel netem on its interface, holds them on
// the same side of that member's capture both ways, so the round trip
// the captures measure leaves the hold out.
func wireSeen(hook, backend string) bool {
	return (hook == "" || hook == netem.HookWire) && backend == netem.BackendUserspace
}

// wireWarning is the warning of a link whose wire check was not met:
// none measured, too few of the database's turns measured, or the added
// round trip off the configured RTT by more than WireToleranceMs. Empty
// where it was met, or where the shapers (hook, backend) are out of the
// captures' sight.
func (s Select1Check) wireWarning(hook, backend string) string {
	link := s.Host + "–" + NodeDB
	switch {
	case !wireSeen(hook, backend):
		return ""
	case s.WireTrips == 0:
		return fmt.Sprintf("wire check of %s: no turn of the database was seen in both captures: the link is not verified on the wire", link)
	case stats.Share(s.WireTrips, s.WireTurns) < 0.95:
		return fmt.Sprintf("wire check of %s: %d of %d turns of the database measured (fewer than 95%%)", link, s.WireTrips, s.WireTurns)
	}
	if d := s.WireAddedMs - s.ConfiguredMs; d > WireToleranceMs || d < -WireToleranceMs {
		return fmt.Sprintf("wire check of %s: the wire added %.3f ms per round trip for %.3f ms configured (off by %+.3f ms, tolerance ±%g ms)", link, s.WireAddedMs, s.ConfiguredMs, d, WireToleranceMs)
	}
	return ""
}

// WireToleranceMs is how far a link's added round trip on the wire may
// be from its configured RTT: the RTT study's one-way tolerance, both
// ways together.
const WireToleranceMs = 0.04

// wireTrips is what the wire showed of one host's link over the rounds
// of a phase: each round's p50, and the turns measured of all.
type wireTrips struct {
	P50s         []float64 // one per round with trips
	Trips, Turns int
}

// add is w with round's trips added.
func (w wireTrips) add(round workloads.RoundTrips) wireTrips {
	if round.Trips > 0 {
		w.P50s = append(w.P50s, round.P50Ms)
	}
	w.Trips, w.Turns = w.Trips+round.Trips, w.Turns+round.Turns
	return w
}

// PlaceRep is one repetition's calibration, held-out test and routed
// comparison.
type PlaceRep struct {
	Rep         int            `json:"rep"`
	Calibration Calibration    `json:"calibration"`
	HeldOutCal  Calibration    `json:"held_out_calibration"`
	Estimates   []Estimate     `json:"estimates"`
	Predicted   []PredictedRow `json:"predicted_crossovers"`
	HeldOut     []HeldOutRow   `json:"held_out"`
	Routed      RoutedSummary  `json:"routed"`
	// ProxyOverheadP50Ms is the median of (client latency − the proxy's
	// upstream time) over routed requests: what the proxy adds.
	ProxyOverheadP50Ms float64 `json:"proxy_overhead_p50_ms"`
	Decisions          int     `json:"decisions"`
	Unmatched          int     `json:"unmatched_decisions"`
}

// PredictedRow is one model's predicted crossover in N between A and B.
type PredictedRow struct {
	Route     string    `json:"route"`
	Model     Model     `json:"model"`
	Crossover Crossover `json:"crossover"`
}

// addRouteModels appends one route's estimates (from the held-out
// calibration ho), its held-out rows against hoP50 (per host) and each
// model's predicted crossover.
func (rep *PlaceRep) addRouteModels(ho Calibration, path string, hoP50 map[string]float64) error {
	rt, _ := ho.RouteN(path, 0)
	est, err := ho.Estimates(rt)
	if err != nil {
		return err
	}
	rep.Estimates = append(rep.Estimates, est...)
	rep.HeldOut = append(rep.HeldOut, HeldOut(est, hoP50)...)
	for _, m := range Models {
		if c, err := PredictedCrossover(est[0], est[1], m); err == nil {
			rep.Predicted = append(rep.Predicted, PredictedRow{Route: path, Model: m, Crossover: c})
		}
	}
	return nil
}

// PlaceResult is the study's summary (summary.json).
type PlaceResult struct {
	Kind            string             `json:"kind"` // "placement"
	Plan            *Plan              `json:"plan"`
	RunID           string             `json:"run_id"`
	Backend         string             `json:"backend"`
	KeepAlive       bool               `json:"keep_alive"`
	Started         time.Time          `json:"started"`
	Finished        time.Time          `json:"finished"`
	Links           []LinkCheck        `json:"links"`
	Select1         []Select1Check     `json:"select1"`
	Reps            []PlaceRep         `json:"reps"`
	Sweep           []SweepPoint       `json:"sweep"`
	Measured        *MeasuredCrossover `json:"measured_crossover,omitempty"`
	SweepPredicted  []PredictedRow     `json:"sweep_predicted"`
	Capacity        []HostCapacity     `json:"capacity,omitempty"`
	ConcurrencyConn string             `json:"concurrency_conn,omitempty"`
	// LinkCalibration: per phase, the ICMP-driven corrections of the
	// one-way delays (unless the plan says calibrate: off).
	LinkCalibration []LinkCalibration `json:"link_calibration,omitempty"`
	Concurrency     []ConcurrencyRow  `json:"concurrency,omitempty"`
	// Shaper: what each node's shaper did in each measured round of the
	// calibration and held-out phases (userspace backend; the kernel's
	// netem keeps no such statistics).
	Shaper []PlaceShaperRound `json:"shaper,omitempty"`
	// ClusterNodes is, per study node, the cluster node it ran on as the
	// runtime read it back ("n1, n2" when a fresh stack of a retry or a
	// resume put it elsewhere); none on one host (Docker).
	ClusterNodes map[string]string `json:"cluster_nodes,omitempty"`
	Warnings     []string          `json:"warnings"`
}

// PlaceShaperRound is one node's shaper statistics over one round of a
// phase's direct measurements.
type PlaceShaperRound struct {
	Rep       int           `json:"rep"`
	Phase     string        `json:"phase"`
	Node      string        `json:"node"`
	Direction string        `json:"direction"`
	Summary   netem.Summary `json:"summary"`
}

// Engine is what the manifest records of the engine the nodes run on:
// its versions and the IDs of the images started.
type Engine interface {
	engine.Engine
	ImageID(ctx context.Context, ref string) (string, error)
}

// Runner runs the phases and writes the results folder.
type Runner struct {
	// Runtime runs the study's nodes and agents; Engine reports the
	// engine and the images for the manifest.
	Runtime labrt.Runtime
	Engine  Engine
	Session *Session
	Dir     string
	Version string
	// Fresh, when set, starts a fresh session for the retry of a failed
	// task (the failed one's stack removed); nil: no retry.
	Fresh func(ctx context.Context) (*Session, error)
	// NoPlots ends the run with its summaries but without drawing the
	// figures (the fake runs' tests under the race detector, as the RTT
	// study's report.Options.NoPlots).
	NoPlots bool
	journal *results.Journal
	// sbuf holds the running attempt's samples until its end (flush).
	sbuf    bytes.Buffer
	werr    error // the first write error of the samples
	task    string
	attempt int
	rng     *rand.Rand
	res     *PlaceResult
	zeroSel map[string][]float64 // the baseline's SELECT 1 at zero
	// zeroWire is what the wire showed of each host's link during the
	// baseline's SELECT 1 calls.
	zeroWire map[string]workloads.RoundTrips
	// links are the one-way delays each phase applies (calibration:
	// false, held-out: true) once calibrated in the repetition.
	links map[bool]map[[2]string]float64
}

// writeManifest writes manifest.json: the plan, the engine, the host, the
// images and the nodes' addresses.
func (r *Runner) writeManifest(ctx context.Context) error {
	p := r.Session.Plan
	info, err := r.Engine.EngineInfo(ctx)
	if err != nil {
		return err
	}
	// The images pin the app's, PostgreSQL's and the agent's versions.
	images := map[string]string{}
	for name, ref := range map[string]string{p.App: r.Session.Stack.Image(r.Session.Stack.Target.Meta.Name), "postgres": r.Session.Stack.Image("postgres"), "agent": stack.AgentImage} {
		if id, err := r.Engine.ImageID(ctx, ref); err == nil {
			images[name] = id
		}
	}
	m := map[string]any{"kind": results.KindPlacement, "format": results.Format, "plan": p, "run_id": r.Session.Stack.RunID, "seed": p.Seed,
		"version": r.Version, "started": r.res.Started, "backend": r.res.Backend, "hook": r.Session.Shaping.Agents[NodeA].Info.Direction,
		"floor_ms": p.FloorMs, "engine_version": info.Version, "engine_api_version": info.APIVersion, "kernel": info.Kernel,
		"host_cpu_model": engine.CPUModel(), "host_cpus": runtime.NumCPU(), "images": images,
		"nodes": r.nodeIPs(), "links_configured": p.Links, "held_out": p.HeldOut}
	if cn := r.Session.clusterNodes(); cn != nil {
		m["cluster_nodes"] = cn
	}
	return results.WriteManifest(r.Dir, results.KindPlacement, m)
}

// noteNodes adds the session's cluster nodes to the result's: a study
// node a fresh stack started elsewhere lists each node it ran on.
func (r *Runner) noteNodes() {
	for n, on := range r.Session.clusterNodes() {
		if r.res.ClusterNodes == nil {
			r.res.ClusterNodes = map[string]string{}
		}
		switch had := r.res.ClusterNodes[n]; {
		case had == "":
			r.res.ClusterNodes[n] = on
		case !slices.Contains(strings.Split(had, ", "), on):
			r.res.ClusterNodes[n] = had + ", " + on
		}
	}
}

// baseline measures SELECT 1 from a and b at zero added delay (through
// the shaper), with the wire's round trips of each, and writes the
// samples.
func (r *Runner) baseline(ctx context.Context) (map[string][]float64, map[string]workloads.RoundTrips, error) {
	p := r.Session.Plan
	// Baseline: SELECT 1 at zero (through the shaper); the ICMP link
	// checks measure their zero right before each check.
	r.Session.say("baseline: SELECT 1 from a and b at zero added delay")
	if err := r.Session.SetLinks(ctx, r.Runtime, nil); err != nil {
		return nil, nil, err
	}
	zeroSel, zeroWire := map[string][]float64{}, map[string]workloads.RoundTrips{}
	for _, h := range []string{NodeA, NodeB} {
		ms, trips, err := r.Session.Select1Wire(ctx, r.Runtime, h, p.Select1Warmup, p.Select1Calls)
		if err != nil {
			return nil, nil, err
		}
		zeroSel[h], zeroWire[h] = ms, trips
		r.emit(0, "baseline", "select1", h, "", "", zeroSel[h], nil)
	}
	return zeroSel, zeroWire, nil
}

// finish stamps the end, adds the warnings and writes summary.json,
// summary.md and the plots (none with NoPlots).
func (r *Runner) finish() error {
	r.res.Finished = time.Now().UTC()
	r.warn()
	if err := r.writeJSON(results.SummaryJSONFile, r.res); err != nil {
		return err
	}
	if err := results.WriteAtomic(r.Dir, results.SummaryMDFile, []byte(PlaceMarkdown(r.res))); err != nil {
		return err
	}
	if r.NoPlots {
		return nil
	}
	_, err := WritePlacePlots(r.res, filepath.Join(r.Dir, results.PlotsDir))
	return err
}

func (r *Runner) nodeIPs() map[string]string {
	out := map[string]string{}
	for n, m := range r.Session.Nodes {
		out[n] = m.IP
	}
	return out
}

// writeJSON replaces the folder's summary name with v, indented, at once.
func (r *Runner) writeJSON(name string, v any) error { return results.WriteJSON(r.Dir, name, v) }

// emit writes probe latencies (ms) or load results as samples.
func (r *Runner) emit(rep int, phase, kind, host, route, policy string, ms []float64, rs []workloads.Result) {
	for i, v := range ms {
		r.write(PlaceSample{Rep: rep, Phase: phase, Kind: kind, Host: host, Route: route, Policy: policy, Seq: i, LatencyMs: v})
	}
	for _, x := range rs {
		r.write(PlaceSample{Rep: rep, Phase: phase, Kind: kind, Host: host, Route: route, Policy: policy, Seq: x.Seq, Warmup: x.Warmup,
			LatencyMs: float64(x.LatencyNS) / 1e6, Status: x.Status, Error: x.Error})
	}
}

// write appends one sample, stamped with the running task's attempt, to
// samples.jsonl's buffer; the first error is kept for the task's end
// (syncSamples), which fails the attempt with it.
func (r *Runner) write(s PlaceSample) {
	s.Task, s.Attempt = r.task, r.attempt
	b, err := json.Marshal(s)
	if err == nil {
		r.sbuf.Write(append(b, '\n'))
	}
	if err != nil && r.werr == nil {
		r.werr = fmt.Errorf("samples.jsonl: %w", err)
	}
}

// pairs lists the unordered node pairs.
func pairs() [][2]string {
	var out [][2]string
	for i, a := range PlaceNodes {
		for _, b := range PlaceNodes[i+1:] {
			out = append(out, [2]string{a, b})
		}
	}
	return out
}

func (r *Runner) pingAll(ctx context.Context) (map[[2]string]float64, error) {
	out := map[[2]string]float64{}
	for _, pr := range pairs() {
		m, _, err := r.Session.Ping(ctx, r.Runtime, pr[0], pr[1], r.Session.Plan.ICMPCount)
		if err != nil {
			return nil, err
		}
		out[pr] = m
	}
	return out, nil
}

// checkLinks records, for every node pair, the ICMP RTT at the phase's
// links against zero measured right before, every link at zero (a
// baseline taken minutes earlier would carry the drift of the host's
// speed).
func (r *Runner) checkLinks(ctx context.Context, phase string, heldOut bool) error {
	ow := r.Session.Plan.OneWayMs(heldOut)
	if err := r.Session.SetLinks(ctx, r.Runtime, nil); err != nil {
		return err
	}
	zero, err := r.pingAll(ctx)
	if err != nil {
		return err
	}
	if err := r.Session.SetLinks(ctx, r.Runtime, r.links[heldOut]); err != nil {
		return err
	}
	for _, pr := range pairs() {
		m, lost, err := r.Session.Ping(ctx, r.Runtime, pr[0], pr[1], r.Session.Plan.ICMPCount)
		if err != nil {
			return err
		}
		conf := ow[[2]string{pr[0], pr[1]}] + ow[[2]string{pr[1], pr[0]}]
		r.res.Links = append(r.res.Links, LinkCheck{Phase: phase, A: pr[0], B: pr[1], ConfiguredMs: conf, ZeroMs: zero[pr], SettingMs: m, AddedMs: m - zero[pr], Lost: lost})
	}
	return nil
}

// measure runs warmup+n requests of path on a host directly and returns the
// measured latencies of the successful ones (ms) and the failures.
func (r *Runner) measure(ctx context.Context, rep int, phase, host, path string, warmup, n int) ([]float64, int, error) {
	paths := make([]string, warmup+n)
	for i := range paths {
		paths[i] = path
	}
	// With the proxy's connection per request, direct requests open one
	// too, so that the models' client path and residuals and the held-out
	// p50s pay what a routed request pays.
	rs, err := r.Session.Load(ctx, r.Runtime, r.Session.hostURL(host), paths, warmup, !r.Session.Plan.Pools())
	if err != nil {
		return nil, 0, err
	}
	r.emit(rep, phase, "http", host, path, "", nil, rs)
	var ms []float64
	fails := 0
	for _, x := range rs {
		if x.Warmup {
			continue
		}
		if x.Failed() {
			fails++
			continue
		}
		ms = append(ms, float64(x.LatencyNS)/1e6)
	}
	if len(ms) == 0 {
		return nil, fails, fmt.Errorf("%s %s on %s: every request failed (%d)", phase, path, host, fails)
	}
	return ms, fails, nil
}

// calPaths are the routes measured in calibration: the plan's, plus the
// per-N route at n=0 when there is a sweep.
func (r *Runner) calRoutes() []RouteCalibration {
	p, t := r.Session.Plan, r.Session.Stack.Target
	var out []RouteCalibration
	for _, path := range p.Routes {
		rm, _ := routeMeta(t.Meta, path)
		out = append(out, RouteCalibration{Path: path, NSerial: rm.Statements, P50Ms: map[string]float64{}})
	}
	if rm, ok := perNRoute(t.Meta); ok && (len(p.SweepN) > 0 || len(p.RoutedN) > 0) && !slices.Contains(p.Routes, rm.Path) {
		out = append(out, RouteCalibration{Path: rm.Path, PerN: true, NSerial: 0, P50Ms: map[string]float64{}})
	}
	return out
}

func requestPath(rc RouteCalibration, n int) string {
	if rc.PerN {
		return fmt.Sprintf("%s?%s=%d", rc.Path, NParam, n)
	}
	return rc.Path
}

// phaseBlock is one (host, path) measurement of a phase.
type phaseBlock struct{ host, path string }

// phaseSamples gathers one phase's samples over the rounds.
type phaseSamples struct {
	connect map[string][]float64
	http    map[phaseBlock][]float64
	select1 map[string][]float64
	wire    map[string]wireTrips // the wire's round trips during select1
}

// phaseRound is one phase's share of a round: its repetition and phase,
// the routes, and the round's requests per block and SELECT 1 calls per
// host (n and sel), each after its warmup.
type phaseRound struct {
	rep            int
	phase          string
	paths          []string
	warmup, n      int
	selWarmup, sel int
}

// measureRound measures one phase's share of a round on both hosts:
// connect, /health and each route (the blocks in a seeded random order),
// and SELECT 1 when the phase is the calibration.
func (r *Runner) measureRound(ctx context.Context, pr phaseRound, into *phaseSamples) error {
	rep, phase := pr.rep, pr.phase
	before, err := r.Session.Shaping.Snapshot(ctx, r.Runtime)
	if err != nil {
		return err
	}
	if err := r.measureBlocks(ctx, pr, into); err != nil {
		return err
	}
	after, err := r.Session.Shaping.Snapshot(ctx, r.Runtime)
	if err != nil {
		return err
	}
	deltas, err := shaping.ShaperDeltas(before, after)
	if err != nil {
		return err
	}
	for _, d := range deltas {
		r.res.Shaper = append(r.res.Shaper, PlaceShaperRound{Rep: rep, Phase: phase, Node: d.Role, Direction: d.Direction, Summary: d.Summary})
	}
	return nil
}

// measureBlocks is one round's measurements of a phase: connect, every
// (host, route) block in seeded order, and SELECT 1 from each host.
func (r *Runner) measureBlocks(ctx context.Context, pr phaseRound, into *phaseSamples) error {
	rep, phase, paths, warmup, n, selWarmup, sel := pr.rep, pr.phase, pr.paths, pr.warmup, pr.n, pr.selWarmup, pr.sel
	var blocks []phaseBlock
	for _, h := range []string{NodeA, NodeB} {
		c, err := r.Session.Connect(ctx, r.Runtime, h, warmup, n)
		if err != nil {
			return err
		}
		r.emit(rep, phase, "connect", h, "", "", c, nil)
		into.connect[h] = append(into.connect[h], c...)
		for _, p := range paths {
			blocks = append(blocks, phaseBlock{h, p})
		}
	}
	r.rng.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
	for _, b := range blocks {
		ms, _, err := r.measure(ctx, rep, phase, b.host, b.path, warmup, n)
		if err != nil {
			return err
		}
		into.http[b] = append(into.http[b], ms...)
	}
	if sel == 0 {
		return nil
	}
	for _, h := range []string{NodeA, NodeB} {
		// The wire is checked in the first repetition, whose SELECT 1
		// checks the summary reports; later ones measure without
		// captures.
		var s []float64
		var trips workloads.RoundTrips
		var err error
		if rep == 1 {
			s, trips, err = r.Session.Select1Wire(ctx, r.Runtime, h, selWarmup, sel)
		} else {
			s, err = r.Session.Select1(ctx, r.Runtime, h, selWarmup, sel)
		}
		if err != nil {
			return err
		}
		r.emit(rep, phase, "select1", h, "", "", s, nil)
		into.select1[h] = append(into.select1[h], s...)
		into.wire[h] = into.wire[h].add(trips)
	}
	return nil
}

// phaseName names a phase in samples, checks and progress lines.
func phaseName(heldOut bool) string {
	if heldOut {
		return "held-out"
	}
	return "calibration"
}

// share splits total over rounds: round i's part (the first rounds take
// the remainder).
func share(total, rounds, i int) int {
	n := total / rounds
	if i < total%rounds {
		n++
	}
	return n
}

// measurePhases measures the calibration and the held-out phase in
// interleaved rounds: each round applies the two phases' links in a
// seeded order and measures each with its share of the requests, so a
// drift of the host's speed falls on both phases and both hosts alike.
// Warmup requests (and SELECT 1 warmup calls) precede every block of the
// first round and at most 3 the later ones (each block is a fresh load
// client).
// check, when set, runs right after each phase's links are first applied.
func (r *Runner) measurePhases(ctx context.Context, rep int, paths []string, check func(heldOut bool) error) (cal, ho *phaseSamples, err error) {
	p := r.Session.Plan
	newSamples := func() *phaseSamples {
		return &phaseSamples{connect: map[string][]float64{}, http: map[phaseBlock][]float64{}, select1: map[string][]float64{}, wire: map[string]wireTrips{}}
	}
	cal, ho = newSamples(), newSamples()
	r.links = map[bool]map[[2]string]float64{}
	for round := 0; round < p.Rounds; round++ {
		order := []bool{false, true}
		r.rng.Shuffle(2, func(i, j int) { order[i], order[j] = order[j], order[i] })
		warmup, selWarmup := p.Warmup, p.Select1Warmup
		if round > 0 {
			warmup, selWarmup = min(p.Warmup, 3), min(p.Select1Warmup, 3)
		}
		for _, heldOut := range order {
			phase, into, sel := phaseName(heldOut), cal, share(p.Select1Calls, p.Rounds, round)
			if heldOut {
				into, sel = ho, 0
			}
			r.Session.say("rep %d/%d round %d/%d: %s (%s)", rep, p.Repeat, round+1, p.Rounds, phase, map[bool]string{false: "links as configured", true: heldOutText(p)}[heldOut])
			if err := r.setPhaseLinks(ctx, fmt.Sprintf("rep %d %s", rep, phase), heldOut); err != nil {
				return nil, nil, err
			}
			if round == 0 && check != nil {
				if err := check(heldOut); err != nil {
					return nil, nil, err
				}
			}
			pr := phaseRound{rep: rep, phase: phase, paths: paths, warmup: warmup, n: share(p.Requests, p.Rounds, round), selWarmup: selWarmup, sel: sel}
			if err := r.measureRound(ctx, pr, into); err != nil {
				return nil, nil, err
			}
		}
	}
	return cal, ho, nil
}

// hostCalibrations turns a phase's samples into its host and route
// calibration (medians over every round).
func hostCalibrations(s *phaseSamples, health string, routes []RouteCalibration) map[string]*HostCalibration {
	hosts := map[string]*HostCalibration{}
	for _, h := range []string{NodeA, NodeB} {
		hc := &HostCalibration{Name: h, ConnectP50Ms: stats.Median(s.connect[h]), HealthP50Ms: stats.Median(s.http[phaseBlock{h, health}])}
		if v := s.select1[h]; len(v) > 0 {
			hc.Select1P50Ms = stats.Median(v)
		}
		hosts[h] = hc
		for i := range routes {
			routes[i].P50Ms[h] = stats.Median(s.http[phaseBlock{h, requestPath(routes[i], 0)}])
		}
	}
	return hosts
}

// rep runs one repetition: calibration and held-out test in interleaved
// rounds, the models' rows, and the routed comparison through the proxy.
func (r *Runner) rep(ctx context.Context, rep int, zeroSel map[string][]float64) (PlaceRep, error) {
	pr := &placeRep{r: r, n: rep, out: PlaceRep{Rep: rep}}
	err := pr.run(ctx, zeroSel)
	return pr.out, err
}

// placeRep is one repetition in progress: its runner, its number and the
// PlaceRep its phases fill.
type placeRep struct {
	r   *Runner
	n   int
	out PlaceRep
}

// run runs the repetition's phases in order, stopping at the first error.
func (pr *placeRep) run(ctx context.Context, zeroSel map[string][]float64) error {
	// 1-3. Calibration without the held-out change and the held-out
	// test, measured in interleaved rounds.
	routes := pr.r.calRoutes()
	calS, hoS, err := pr.measurePhases(ctx, routes)
	if err != nil {
		return err
	}
	if err := pr.calibrate(calS, routes, zeroSel); err != nil {
		return err
	}
	ho, err := pr.heldOut(ctx, hoS, routes)
	if err != nil {
		return err
	}
	// 4. The routed comparison through the proxy.
	return pr.routed(ctx, ho)
}

// measurePhases measures the calibration and the held-out phase over the
// health path and the routes; the first repetition checks each phase's
// links by ICMP when they are first applied.
func (pr *placeRep) measurePhases(ctx context.Context, routes []RouteCalibration) (cal, ho *phaseSamples, err error) {
	r, p, rep := pr.r, pr.r.Session.Plan, pr.n
	r.Session.say("rep %d/%d: calibration (links as configured) and held-out test (%s) in %d interleaved rounds: connect, %s and %d routes on a and b, %d+%d requests each in all",
		rep, p.Repeat, heldOutText(p), p.Rounds, r.Session.Stack.Target.Meta.Health, len(p.Routes), p.Warmup, p.Requests)
	paths := []string{r.Session.Stack.Target.Meta.Health}
	for _, rc := range routes {
		paths = append(paths, requestPath(rc, 0))
	}
	var check func(bool) error
	if rep == 1 {
		// The links as verified by ICMP, right after each phase's links
		// are first applied.
		check = func(heldOut bool) error {
			return r.checkLinks(ctx, phaseName(heldOut), heldOut)
		}
	}
	return r.measurePhases(ctx, rep, paths, check)
}

// calibrate sets the repetition's calibration from the calibration
// phase's samples (filling routes' p50s) and validates it; the first
// repetition also records the SELECT 1 checks against zeroSel.
func (pr *placeRep) calibrate(calS *phaseSamples, routes []RouteCalibration, zeroSel map[string][]float64) error {
	r, p := pr.r, pr.r.Session.Plan
	hosts := hostCalibrations(calS, r.Session.Stack.Target.Meta.Health, routes)
	if pr.n == 1 {
		for _, h := range []string{NodeA, NodeB} {
			z := stats.Median(zeroSel[h])
			c := Select1Check{Host: h, ConfiguredMs: p.LinkRTTMs(h, NodeDB), ZeroP50Ms: z, SettingP50Ms: hosts[h].Select1P50Ms, AddedMs: hosts[h].Select1P50Ms - z}
			// A wire figure needs trips at zero and at the setting (a
			// folder whose baseline ran without captures has none).
			if zw, sw := r.zeroWire[h], calS.wire[h]; zw.Trips > 0 && len(sw.P50s) > 0 {
				c.WireZeroP50Ms, c.WireSettingP50Ms = zw.P50Ms, stats.Median(sw.P50s)
				c.WireAddedMs = c.WireSettingP50Ms - c.WireZeroP50Ms
				c.WireTrips, c.WireTurns = sw.Trips, sw.Turns
			}
			r.res.Select1 = append(r.res.Select1, c)
		}
	}
	cal := Calibration{Hosts: []HostCalibration{*hosts[NodeA], *hosts[NodeB]}, Routes: routes}
	if err := cal.Validate(); err != nil {
		return fmt.Errorf("calibration: %w", err)
	}
	pr.out.Calibration = cal
	return nil
}

// heldOut applies the held-out links (the routed comparison and what
// follows run with them), builds the held-out calibration (the
// calibration with the held-out connect and client path) and adds each
// route's estimates, held-out rows and predicted crossovers.
func (pr *placeRep) heldOut(ctx context.Context, hoS *phaseSamples, routes []RouteCalibration) (Calibration, error) {
	r, cal := pr.r, pr.out.Calibration
	hoRoutes := make([]RouteCalibration, len(routes))
	for i, rc := range routes {
		hoRoutes[i] = rc
		hoRoutes[i].P50Ms = map[string]float64{}
	}
	hoHosts := hostCalibrations(hoS, r.Session.Stack.Target.Meta.Health, hoRoutes)
	// The routed comparison and what follows run with the held-out change.
	if err := r.Session.SetLinks(ctx, r.Runtime, r.links[true]); err != nil {
		return Calibration{}, err
	}
	ho := cal
	ho.Hosts = slices.Clone(cal.Hosts)
	for i := range ho.Hosts {
		h := hoHosts[ho.Hosts[i].Name]
		ho.Hosts[i].ConnectP50Ms = h.ConnectP50Ms
		ho.Hosts[i].ClientPathMs = h.HealthP50Ms
	}
	pr.out.HeldOutCal = ho
	for i, rc := range routes {
		if rc.PerN {
			continue
		}
		if err := pr.out.addRouteModels(ho, rc.Path, hoRoutes[i].P50Ms); err != nil {
			return Calibration{}, err
		}
	}
	return ho, nil
}

// routedReq is one request of the routed comparison: its policy and route.
type routedReq struct{ policy, route string }

// routedCells are the routed comparison's (policy, route) cells: every
// plan route, then the per-N route at each routed_n, under each policy.
func routedCells(p *Plan, m *apps.Meta) []routedReq {
	var routes []string
	routes = append(routes, p.Routes...)
	if rm, ok := perNRoute(m); ok {
		for _, n := range p.RoutedN {
			routes = append(routes, Route{Path: rm.Path, N: n, PerN: true}.String())
		}
	}
	var cells []routedReq
	for _, pol := range p.Policies {
		for _, rt := range routes {
			cells = append(cells, routedReq{pol, rt})
		}
	}
	return cells
}

// routed runs the routed comparison through a proxy calibrated with ho:
// every (policy, route) cell's warmup and measured requests, each group in
// a seeded random order, on one client connection; then it appends the
// proxy's decisions and records the samples.
func (pr *placeRep) routed(ctx context.Context, ho Calibration) error {
	r, p, rep := pr.r, pr.r.Session.Plan, pr.n
	keep := p.Pools()
	conn := "keep-alive pools per upstream"
	if !keep {
		conn = "a new upstream connection per request"
	}
	cells := routedCells(p, r.Session.Stack.Target.Meta)
	r.Session.say("rep %d/%d: routed comparison through the proxy (%s): %d policies × %d routes, %d+%d requests each, interleaved", rep, p.Repeat, conn, len(p.Policies), len(cells)/len(p.Policies), p.RoutedWarmup, p.RoutedRequests)
	cfg := Config{
		Upstreams:         []Upstream{{Name: NodeA, URL: r.Session.hostURL(NodeA)}, {Name: NodeB, URL: r.Session.hostURL(NodeB)}},
		Calibration:       ho,
		DefaultPolicy:     PolicyUserFirst,
		DisableKeepAlives: !keep,
	}
	if err := r.Session.StartProxy(ctx, r.Runtime, cfg); err != nil {
		return err
	}
	order := append(shuffled(cells, p.RoutedWarmup, r.rng), shuffled(cells, p.RoutedRequests, r.rng)...)
	routed := make([]string, len(order))
	for i, c := range order {
		sep := "?"
		if strings.Contains(c.route, "?") {
			sep = "&"
		}
		routed[i] = c.route + sep + QueryPolicy + "=" + c.policy
	}
	rs, lerr := r.Session.Load(ctx, r.Runtime, fmt.Sprintf("http://127.0.0.1:%d", proxyPort), routed, p.RoutedWarmup*len(cells), false)
	recs, derr := r.Session.StopProxy(ctx, r.Runtime)
	if lerr != nil {
		return lerr
	}
	if derr != nil {
		return derr
	}
	if err := r.appendDecisions(rep, recs); err != nil {
		return err
	}
	pr.out.Decisions = len(recs)
	pr.recordRouted(order, rs, recs)
	return nil
}

// recordRouted joins the client's results with the proxy's decisions,
// writes them as samples and sets the routed summary and the proxy's
// overhead.
func (pr *placeRep) recordRouted(order []routedReq, rs []workloads.Result, recs []DecisionRecord) {
	r, p, rep := pr.r, pr.r.Session.Plan, pr.n
	var samples []Sample
	var overhead []float64
	for i, x := range rs {
		c := order[i]
		s := Sample{Policy: Policy(c.policy), Route: c.route, LatencyMs: float64(x.LatencyNS) / 1e6, Failed: x.Failed(), Warmup: x.Warmup}
		ps := PlaceSample{Rep: rep, Phase: "routed", Kind: "http", Route: c.route, Policy: c.policy, Seq: x.Seq, Warmup: x.Warmup, LatencyMs: s.LatencyMs, Status: x.Status, Error: x.Error}
		// Closed loop on one connection: the proxy's i-th decision is
		// the client's i-th request; check that before joining.
		if i < len(recs) && recs[i].Route == c.route && string(recs[i].Policy) == c.policy {
			s.Host, ps.Host, ps.UpstreamMs = recs[i].Host, recs[i].Host, recs[i].UpstreamMs
			if !x.Warmup && !x.Failed() {
				overhead = append(overhead, s.LatencyMs-recs[i].UpstreamMs)
			}
		} else {
			pr.out.Unmatched++
		}
		samples = append(samples, s)
		r.write(ps)
	}
	pr.out.Routed = SummarizeRouted(samples, p.Seed^uint64(rep), 0)
	if len(overhead) > 0 {
		pr.out.ProxyOverheadP50Ms = stats.Median(overhead)
	}
}

// setPhaseLinks applies the plan's links (with the held-out additions when
// heldOut), calibrated against ICMP unless the plan says calibrate: off.
func (r *Runner) setPhaseLinks(ctx context.Context, phase string, heldOut bool) error {
	if applied, ok := r.links[heldOut]; ok {
		return r.Session.SetLinks(ctx, r.Runtime, applied)
	}
	want := r.Session.Plan.OneWayMs(heldOut)
	if r.Session.Plan.Calibrate == "off" {
		r.links[heldOut] = want
		return r.Session.SetLinks(ctx, r.Runtime, want)
	}
	// The links the held-out change leaves alone keep the delays the other
	// phase calibrated: only what the change touches is calibrated again,
	// so that the two phases differ by the change alone (a link calibrated
	// twice lands on two delays, and the model would see the difference
	// as error).
	var fixed map[[2]string]float64
	if other, ok := r.links[!heldOut]; ok {
		otherWant := r.Session.Plan.OneWayMs(!heldOut)
		fixed = map[[2]string]float64{}
		for _, pr := range pairs() {
			back := [2]string{pr[1], pr[0]}
			if want[pr] == otherWant[pr] && want[back] == otherWant[back] {
				fixed[pr], fixed[back] = other[pr], other[back]
			}
		}
	}
	r.Session.say("  calibrating the link delays against ICMP (%s)", phase)
	applied, err := r.calibrateLinks(ctx, phase, want, fixed)
	r.links[heldOut] = applied
	return err
}

func heldOutText(p *Plan) string {
	var parts []string
	for _, o := range p.HeldOut {
		parts = append(parts, fmt.Sprintf("+%g ms one-way %s→%s", o.Ms, o.From, o.To))
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}

func (r *Runner) appendDecisions(rep int, recs []DecisionRecord) error {
	type line struct {
		Task    string `json:"task"`
		Attempt int    `json:"attempt"`
		Rep     int    `json:"rep"`
		DecisionRecord
	}
	lines := make([]line, len(recs))
	for i, d := range recs {
		lines[i] = line{r.task, r.attempt, rep, d}
	}
	return results.AppendJSONLines(filepath.Join(r.Dir, DecisionsFile), lines)
}

// sweep measures the per-N route on both hosts directly, with the held-out
// change in place, (N, host) blocks in a seeded random order.
func (r *Runner) sweep(ctx context.Context) error {
	p := r.Session.Plan
	rm, _ := perNRoute(r.Session.Stack.Target.Meta)
	r.Session.say("serial sweep: %s?n=N for N in %v on a and b directly, %d+%d requests each", rm.Path, p.SweepN, p.SweepWarmup, p.SweepRequests)
	type block struct {
		n    int
		host string
	}
	var blocks []block
	for _, n := range p.SweepN {
		blocks = append(blocks, block{n, NodeA}, block{n, NodeB})
	}
	r.rng.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
	a, b := map[int][]float64{}, map[int][]float64{}
	for i, bl := range blocks {
		r.Session.say("  sweep %d/%d: n=%d on %s", i+1, len(blocks), bl.n, bl.host)
		ms, _, err := r.measure(ctx, 0, "sweep", bl.host, fmt.Sprintf("%s?%s=%d", rm.Path, NParam, bl.n), p.SweepWarmup, p.SweepRequests)
		if err != nil {
			return err
		}
		if bl.host == NodeA {
			a[bl.n] = ms
		} else {
			b[bl.n] = ms
		}
	}
	r.res.Sweep = Sweep(a, b, p.Seed, 0)
	if mc, err := MeasureCrossover(r.res.Sweep); err == nil {
		r.res.Measured = &mc
	}
	r.res.SweepPredicted = sweepPredicted(r.res)
	return nil
}

// sweepPredicted is each model's predicted crossover for the per-N route,
// from the last repetition's held-out calibration.
func sweepPredicted(res *PlaceResult) []PredictedRow {
	n := len(res.Reps)
	if n == 0 {
		return nil
	}
	ho := res.Reps[n-1].HeldOutCal
	path, ok := perNRouteOf(ho)
	if !ok {
		return nil
	}
	rt, err := ho.RouteN(path, 0)
	if err != nil {
		return nil
	}
	est, err := ho.Estimates(rt)
	if err != nil {
		return nil
	}
	var out []PredictedRow
	for _, m := range Models {
		if c, err := PredictedCrossover(est[0], est[1], m); err == nil {
			out = append(out, PredictedRow{Route: path, Model: m, Crossover: c})
		}
	}
	return out
}

// warn adds the statistics' caveats: low n, failures, unverified links,
// a load generator that fell behind its schedule.
func (r *Runner) warn() {
	res := r.res
	for _, c := range res.Concurrency {
		tot := c.N + c.Failures
		if tot > 0 && float64(c.Failures)/float64(tot) > 0.01 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("concurrency %.0f%% %s %s: %d of %d requests failed: no claim", 100*c.Fraction, c.Policy, c.Route, c.Failures, tot))
		}
		if c.Warning != "" {
			res.Warnings = append(res.Warnings, fmt.Sprintf("concurrency %.0f%% %s: load generator: %s", 100*c.Fraction, c.Policy, c.Warning))
		}
	}
	for _, l := range res.Links {
		if d := l.AddedMs - l.ConfiguredMs; d > 0.05 || d < -0.05 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("link %s–%s (%s): ICMP added %.3f ms for %.3f ms configured (off by %+.3f ms)", l.A, l.B, l.Phase, l.AddedMs, l.ConfiguredMs, d))
		}
		if l.Lost > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("link %s–%s (%s): %d ICMP echoes lost", l.A, l.B, l.Phase, l.Lost))
		}
	}
	floorUs := 1000 * res.Plan.FloorMs
	for _, p := range ShaperPhases(res.Shaper) {
		if p.ReadLagP50Us > floorUs {
			res.Warnings = append(res.Warnings, fmt.Sprintf("shaper on %s (%s): its pass (read lag p50 %.0f µs) exceeds the floor (%.0f µs), so up to %.0f µs of each one-way delay it holds is absorbed: raise floor_ms", p.Node, p.Phase, p.ReadLagP50Us, floorUs, p.ReadLagP50Us-floorUs))
		}
		if p.Drops > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("shaper on %s (%s): %d packets dropped", p.Node, p.Phase, p.Drops))
		}
	}
	for _, s := range res.Select1 {
		if d := s.AddedMs - s.ConfiguredMs; d > 0.05 || d < -0.05 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("SELECT 1 from %s: added %.3f ms for %.3f ms configured (off by %+.3f ms)", s.Host, s.AddedMs, s.ConfiguredMs, d))
		}
		if w := s.wireWarning(res.Plan.Hook, res.Backend); w != "" {
			res.Warnings = append(res.Warnings, w)
		}
	}
	for _, rep := range res.Reps {
		for _, c := range rep.Routed.Cells {
			tot := c.N + c.Failures
			if tot > 0 && float64(c.Failures)/float64(tot) > 0.01 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("rep %d %s %s: %d of %d requests failed: no claim", rep.Rep, c.Policy, c.Route, c.Failures, tot))
			}
			if c.N < 30 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("rep %d %s %s: n=%d is low; its interval is wide", rep.Rep, c.Policy, c.Route, c.N))
			}
		}
		if rep.Unmatched > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("rep %d: %d routed requests could not be matched with a proxy decision", rep.Rep, rep.Unmatched))
		}
	}
}

// PlaceShaperPhase is one node's shaper over all rounds of a phase (all
// repetitions): packet, drop and overtaking counts summed, the rounds'
// median hold and read-lag p50s, and their highest read-lag and lateness
// p99s.
type PlaceShaperPhase struct {
	Phase, Node, Direction                string
	Rounds                                int
	Packets, Drops, Overtook              uint64
	HoldP50Us, ReadLagP50Us, ReadLagP99Us float64
	LateP99Us                             float64
}

// ShaperPhases aggregates the per-round shaper records by (phase, node),
// in the order they first appear.
func ShaperPhases(rounds []PlaceShaperRound) []PlaceShaperPhase {
	var out []PlaceShaperPhase
	var holds, lags [][]float64 // per entry of out: the rounds' p50s
	idx := map[[2]string]int{}
	for _, r := range rounds {
		k := [2]string{r.Phase, r.Node}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, PlaceShaperPhase{Phase: r.Phase, Node: r.Node, Direction: r.Direction})
			holds, lags = append(holds, nil), append(lags, nil)
		}
		p, s := &out[i], r.Summary
		p.Rounds++
		p.Packets += s.Packets
		p.Drops += s.Drops
		p.Overtook += s.Overtook
		p.ReadLagP99Us = max(p.ReadLagP99Us, s.ReadLagP99)
		p.LateP99Us = max(p.LateP99Us, s.LateP99Us)
		holds[i] = append(holds[i], s.HoldP50Us)
		lags[i] = append(lags[i], s.ReadLagP50)
	}
	for i := range out {
		out[i].HoldP50Us = stats.Median(holds[i])
		out[i].ReadLagP50Us = stats.Median(lags[i])
	}
	return out
}
