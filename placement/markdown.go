package placement

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/results/stats"
)

// PlaceMarkdown renders the placement study's summary: links as configured
// and verified, calibration, the held-out table, the routed comparison, the
// serial sweep with crossovers, and the warnings.
func PlaceMarkdown(r *PlaceResult) string {
	var b strings.Builder
	p := r.Plan
	fmt.Fprintf(&b, "# Placement study: %s\n\n", p.Name)
	fmt.Fprintf(&b, "App **%s** on compute hosts a and b%s; PostgreSQL on db; load client and routing proxy on client. Run %s, seed %d, shaper %s, proxy upstream connections: %s. %s → %s.\n\n",
		p.App, cpuLimits(p), r.RunID, p.Seed, r.Backend, map[bool]string{true: "keep-alive pools", false: "new per request"}[r.KeepAlive], r.Started.Format("2006-01-02 15:04:05"), r.Finished.Format("15:04:05"))
	b.WriteString(clusterNodesLine(r))
	if p.Emulated {
		fmt.Fprintf(&b, "> The database and the app ran %s under emulation (qemu-user): these timings make no claim about that platform's hardware.\n\n", p.Platform)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("## ⚠ Warnings\n\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
		b.WriteString("\n")
	}
	writeLinks(&b, r)
	for _, rep := range r.Reps {
		writeRep(&b, rep)
	}
	writeCrossoverSpread(&b, r)
	writeSweep(&b, r)
	writeConcurrency(&b, r)
	return b.String()
}

// clusterNodesLine says where each study node ran, when the plan pinned
// any to a cluster node or they ran on more than one; "" otherwise (one
// host, or a cluster's one node).
func clusterNodesLine(r *PlaceResult) string {
	p := r.Plan
	seen := map[string]bool{}
	for _, v := range r.ClusterNodes {
		for _, on := range strings.Split(v, ", ") {
			seen[on] = true
		}
	}
	if len(p.Nodes) == 0 && len(seen) < 2 {
		return ""
	}
	var parts []string
	for _, n := range PlaceNodes {
		on, pin := r.ClusterNodes[n], p.Nodes[n]
		switch {
		case on == "" && pin != "":
			parts = append(parts, fmt.Sprintf("%s pinned to %s (not read back)", n, pin))
		case on == "":
			parts = append(parts, n+" on an unrecorded node")
		case pin != "" && on != pin:
			parts = append(parts, fmt.Sprintf("%s on %s (pinned to %s)", n, on, pin))
		default:
			parts = append(parts, n+" on "+on)
		}
	}
	how := "as the cluster placed them"
	if len(p.Nodes) > 0 {
		how = "pinned by the plan's nodes"
		if len(p.Nodes) < len(PlaceNodes) {
			how = "pinned by the plan's nodes where it names them"
		}
	}
	return fmt.Sprintf("Cluster nodes (%s): %s.\n\n", how, strings.Join(parts, ", "))
}

// cpuLimits says which compute hosts run on a CPU quota ("" for none).
func cpuLimits(p *Plan) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(p.CPUs)) {
		parts = append(parts, fmt.Sprintf("%s on %g CPU", n, p.CPUs[n]))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// writeLinks writes the links as configured and verified (ICMP, link
// calibration rounds, SELECT 1) and the shapers' record.
func writeLinks(b *strings.Builder, r *PlaceResult) {
	p := r.Plan
	b.WriteString("## Links: configured and verified\n\nAdded RTT per node pair: ICMP at the phase's links minus ICMP with every link at zero, measured right before it, both through the shaper.\n\n| phase | pair | configured ms | ICMP at 0 | ICMP at setting | added | lost |\n|---|---|---|---|---|---|---|\n")
	for _, l := range r.Links {
		fmt.Fprintf(b, "| %s | %s–%s | %.3f | %.3f | %.3f | %.3f | %d |\n", l.Phase, l.A, l.B, l.ConfiguredMs, l.ZeroMs, l.SettingMs, l.AddedMs, l.Lost)
	}
	for _, lc := range r.LinkCalibration {
		fmt.Fprintf(b, "\nLink calibration (%s), ICMP residual (configured − added, ms) per round:", lc.Phase)
		for i, rd := range lc.Rounds {
			fmt.Fprintf(b, " round %d:", i+1)
			for _, k := range slices.Sorted(maps.Keys(rd)) {
				fmt.Fprintf(b, " %s %+.3f", k, rd[k])
			}
			b.WriteString(";")
		}
		fmt.Fprintf(b, " kept round %d, one-way delays applied:", lc.Kept+1)
		for _, k := range slices.Sorted(maps.Keys(lc.OneWay)) {
			if lc.OneWay[k] > 0 {
				fmt.Fprintf(b, " %s %.3f ms", k, lc.OneWay[k])
			}
		}
		b.WriteString(".\n")
	}
	b.WriteString("\n| host | db link configured ms | SELECT 1 p50 at 0 | at setting | added | wire round trip p50 at 0 | at setting | added | turns measured |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Select1 {
		fmt.Fprintf(b, "| %s | %.3f | %.3f | %.3f | %.3f | %s |\n", s.Host, s.ConfiguredMs, s.ZeroP50Ms, s.SettingP50Ms, s.AddedMs, s.wireCells())
	}
	if len(r.Select1) > 0 {
		if wireSeen(p.Hook, r.Backend) {
			fmt.Fprintf(b, "\nThe wire round trip is each turn of the database (a query from the host, the database's first packet back) in the host's and the database's captures, (host in − host out) − (db out − db in), each difference on one capture's own clock, so it needs no clock shared between nodes: at 0 the p50 of the baseline's SELECT 1 calls, at the setting the median over the first repetition's calibration rounds of each round's p50. It verifies a link within ±%g ms of its configured RTT.\n", WireToleranceMs)
		} else {
			fmt.Fprintf(b, "\nNo wire round trip: the shapers (%s backend, hook %s) hold packets inside a node's namespace, on the same side of its capture both ways, where the captures cannot see the hold.\n", r.Backend, cmp.Or(p.Hook, netem.HookWire))
		}
	}
	if ph := ShaperPhases(r.Shaper); len(ph) > 0 {
		fmt.Fprintf(b, "\nThe shapers during the direct measurements (all rounds of each phase; floor %.3f ms added to every one-way delay). Read lag: kernel receive stamp to the shaper's read, its own pass; a pass above the floor absorbs that much of a delay.\n\n| phase | node | hook | rounds | packets | hold p50 µs | read lag p50 µs | read lag p99 µs | late p99 µs | drops | overtook |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", p.FloorMs)
		for _, s := range ph {
			fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %d | %d |\n", s.Phase, s.Node, s.Direction, s.Rounds, s.Packets, s.HoldP50Us, s.ReadLagP50Us, s.ReadLagP99Us, s.LateP99Us, s.Drops, s.Overtook)
		}
	}
}

// writeRep writes one repetition: calibration, held-out test, predicted
// crossovers and the routed comparison.
func writeRep(b *strings.Builder, rep PlaceRep) {
	fmt.Fprintf(b, "\n## Repetition %d\n\n### Calibration (no held-out change)\n\n| host | connect p50 | /health p50 | SELECT 1 p50 |", rep.Rep)
	routes := rep.Calibration.Routes
	for _, rc := range routes {
		fmt.Fprintf(b, " %s p50 (N=%d) | residual |", requestPath(rc, 0), rc.NSerial)
	}
	b.WriteString("\n|---|---|---|---|" + strings.Repeat("---|---|", len(routes)) + "\n")
	for _, h := range rep.Calibration.Hosts {
		fmt.Fprintf(b, "| %s | %.3f | %.3f | %.3f |", h.Name, h.ConnectP50Ms, h.HealthP50Ms, h.Select1P50Ms)
		for _, rc := range routes {
			res, _ := rep.Calibration.Residual(h.Name, rc.Path)
			fmt.Fprintf(b, " %.3f | %.3f |", rc.P50Ms[h.Name], res)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nAfter the held-out change the client paths (/health p50) are:")
	for _, h := range rep.HeldOutCal.Hosts {
		fmt.Fprintf(b, " %s %.3f ms;", h.Name, h.ClientPathMs)
	}
	b.WriteString("\n\n### Held-out test: estimate vs measured p50 (ms)\n\n| route | host | model | estimate | held-out p50 | error |\n|---|---|---|---|---|---|\n")
	for _, h := range rep.HeldOut {
		fmt.Fprintf(b, "| %s | %s | %s | %.3f | %.3f | %+.3f |\n", h.Route, h.Host, h.Model, h.EstimateMs, h.HeldOutP50Ms, h.ErrorMs)
	}
	if len(rep.Predicted) > 0 {
		b.WriteString("\nPredicted crossover in N (A vs B, each route's residual):")
		for _, pc := range rep.Predicted {
			fmt.Fprintf(b, " %s %s: %s;", pc.Route, pc.Model, pc.Crossover)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "\n### Routed comparison through the proxy\n\n%s\n\n| route | policy | n | failed | p50 ms | 95%% CI | p99 ms | chosen hosts |\n|---|---|---|---|---|---|---|---|\n", rep.Routed.Method)
	for _, c := range rep.Routed.Cells {
		var hs []string
		for _, h := range c.Hosts {
			hs = append(hs, fmt.Sprintf("%s %.0f%%", h.Host, 100*h.Share))
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %s | %s | %s | %s |\n", c.Route, c.Policy, c.N, c.Failures, num(c.P50Ms), ci(c.P50CI), num(c.P99Ms), strings.Join(hs, ", "))
	}
	b.WriteString("\n| route | policy | against | p50 change ms | 95% CI | verdict |\n|---|---|---|---|---|---|\n")
	for _, d := range rep.Routed.Diffs {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", d.Route, d.Policy, d.Base, num(d.DiffMs), ci(d.CI), d.Verdict)
	}
	writeByCallCount(b, rep.Routed)
	fmt.Fprintf(b, "\nThe proxy's own added latency (client latency − its upstream time), median: %.3f ms over the routed requests; %d decisions logged.\n", rep.ProxyOverheadP50Ms, rep.Decisions)
}

// callCountTable is the routed comparison of the per-N route by call
// count: the routes in order of N, the policies and the differences.
type callCountTable struct {
	routes []string
	pols   []Policy
	pairs  [][2]Policy
	p50    map[string]map[Policy]stats.Num
	diffs  map[string]map[[2]Policy]PolicyDiff
}

// callCount is the N of a per-N route's request ("/serial?n=3": 3).
func callCount(rt string) int {
	_, n, _ := strings.Cut(rt, "?"+NParam+"=")
	v, _ := strconv.Atoi(n)
	return v
}

// newCallCountTable gathers the per-N cells and differences of rs.
func newCallCountTable(rs RoutedSummary) callCountTable {
	t := callCountTable{p50: map[string]map[Policy]stats.Num{}, diffs: map[string]map[[2]Policy]PolicyDiff{}}
	for _, c := range rs.Cells {
		if _, n, ok := strings.Cut(c.Route, "?"+NParam+"="); !ok || n == "" {
			continue
		}
		if t.p50[c.Route] == nil {
			t.routes = append(t.routes, c.Route)
			t.p50[c.Route] = map[Policy]stats.Num{}
		}
		if !slices.Contains(t.pols, c.Policy) {
			t.pols = append(t.pols, c.Policy)
		}
		t.p50[c.Route][c.Policy] = c.P50Ms
	}
	slices.SortStableFunc(t.routes, func(x, y string) int { return cmp.Compare(callCount(x), callCount(y)) })
	for _, d := range rs.Diffs {
		if t.p50[d.Route] == nil {
			continue
		}
		k := [2]Policy{d.Policy, d.Base}
		if t.diffs[d.Route] == nil {
			t.diffs[d.Route] = map[[2]Policy]PolicyDiff{}
		}
		t.diffs[d.Route][k] = d
		if !slices.Contains(t.pairs, k) {
			t.pairs = append(t.pairs, k)
		}
	}
	return t
}

// writeByCallCount writes the routed comparison of the per-N route as one
// row per call count: each policy's p50, and each difference with its
// interval (every policy against user-first, profiled against
// network-only), as in the routed tables above.
func writeByCallCount(b *strings.Builder, rs RoutedSummary) {
	t := newCallCountTable(rs)
	if len(t.routes) == 0 {
		return
	}
	path, _, _ := strings.Cut(t.routes[0], "?")
	fmt.Fprintf(b, "\n### Routed by call count (%s?%s=N)\n\np50 ms per policy; differences in ms with their 95%% CI (negative: the first policy is faster).\n\n| N |", path, NParam)
	for _, pol := range t.pols {
		fmt.Fprintf(b, " %s |", pol)
	}
	for _, k := range t.pairs {
		fmt.Fprintf(b, " %s − %s |", k[0], k[1])
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(t.pols)+len(t.pairs)) + "\n")
	for _, rt := range t.routes {
		fmt.Fprintf(b, "| %d |", callCount(rt))
		for _, pol := range t.pols {
			v, ok := t.p50[rt][pol]
			if !ok {
				v = stats.Num(math.NaN())
			}
			fmt.Fprintf(b, " %s |", num(v))
		}
		for _, k := range t.pairs {
			if d, ok := t.diffs[rt][k]; ok {
				fmt.Fprintf(b, " %s %s |", num(d.DiffMs), ci(d.CI))
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
}

// writeCrossoverSpread writes how far the predicted crossover moves across
// repetitions (only with more than one).
func writeCrossoverSpread(b *strings.Builder, r *PlaceResult) {
	if len(r.Reps) > 1 {
		b.WriteString("\n## How far the predicted crossover moves across repetitions\n\n| route | model | per repetition | spread |\n|---|---|---|---|\n")
		type key struct {
			route string
			model Model
		}
		var keys []key
		vals := map[key][]Crossover{}
		for _, rep := range r.Reps {
			for _, pc := range rep.Predicted {
				k := key{pc.Route, pc.Model}
				if _, ok := vals[k]; !ok {
					keys = append(keys, k)
				}
				vals[k] = append(vals[k], pc.Crossover)
			}
		}
		for _, k := range keys {
			var parts []string
			lo, hi, never := math.Inf(1), math.Inf(-1), 0
			for _, c := range vals[k] {
				parts = append(parts, c.String())
				if c.Never {
					never++
					continue
				}
				lo, hi = math.Min(lo, c.N), math.Max(hi, c.N)
			}
			spread := "–"
			switch {
			case never == len(vals[k]):
				spread = "never crosses"
			case never > 0:
				spread = fmt.Sprintf("crosses in %d of %d; %.2f–%.2f", len(vals[k])-never, len(vals[k]), lo, hi)
			default:
				spread = fmt.Sprintf("%.2f (%.2f–%.2f)", hi-lo, lo, hi)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", k.route, k.model, strings.Join(parts, "; "), spread)
		}
	}
}

// writeSweep writes the serial sweep with the measured and predicted
// crossovers.
func writeSweep(b *strings.Builder, r *PlaceResult) {
	if len(r.Sweep) > 0 {
		b.WriteString("\n## Serial sweep (direct, held-out change in place)\n\n| N | a p50 ms | b p50 ms | a − b | 95% CI | n a/b |\n|---|---|---|---|---|---|\n")
		for _, s := range r.Sweep {
			fmt.Fprintf(b, "| %d | %.3f | %.3f | %+.3f | %s | %d/%d |\n", s.N, s.AP50Ms, s.BP50Ms, s.DiffMs, ci(s.DiffCI), s.NA, s.NB)
		}
		if r.Measured != nil {
			fmt.Fprintf(b, "\nMeasured crossover: %s\n", r.Measured.String("a", "b"))
		}
		for _, pc := range r.SweepPredicted {
			fmt.Fprintf(b, "\nPredicted by %s: %s", pc.Model, pc.Crossover)
		}
		b.WriteString("\n")
	}
}

// writeConcurrency writes the open-loop phase: capacity and the rows per
// load, policy and route.
func writeConcurrency(b *strings.Builder, r *PlaceResult) {
	if len(r.Concurrency) > 0 {
		fmt.Fprintf(b, "\n## Concurrency: open-loop Poisson arrivals through the proxy\n\nLatency from each request's scheduled send time (no coordinated omission); %s. Capacity for the routed mix:", r.ConcurrencyConn)
		for _, c := range r.Capacity {
			fmt.Fprintf(b, " %s %.0f/s (service time %.2f ms);", c.Host, c.Capacity.Rate, c.ServiceMs)
		}
		b.WriteString("\n\n| load | rate /s | policy | route | n | failed | p50 ms | p99 ms | chosen hosts | generator lag p99 ms | max in flight |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range r.Concurrency {
			var hs []string
			for _, h := range []string{NodeA, NodeB} {
				if v, ok := c.Hosts[h]; ok {
					hs = append(hs, fmt.Sprintf("%s %.0f%%", h, 100*v))
				}
			}
			lag, inflight := "", ""
			if c.Route == "all" {
				lag, inflight = fmt.Sprintf("%.3f", c.LagP99Ms), fmt.Sprint(c.MaxInFlight)
			}
			fmt.Fprintf(b, "| %.0f%% | %.0f | %s | %s | %d | %d | %s | %s | %s | %s | %s |\n", 100*c.Fraction, c.Rate, c.Policy, c.Route, c.N, c.Failures, num(c.P50Ms), num(c.P99Ms), strings.Join(hs, ", "), lag, inflight)
		}
	}
}

func num(n stats.Num) string {
	if math.IsNaN(float64(n)) {
		return "–"
	}
	return fmt.Sprintf("%.3f", float64(n))
}

func ci(c stats.CI) string {
	if !c.Valid() {
		return "–"
	}
	return fmt.Sprintf("[%.3f, %.3f]", float64(c.Low), float64(c.High))
}

// wireCells are the wire's cells of a SELECT 1 check's row: the round
// trip at zero, at the setting, added, and the turns measured; dashes
// where no trip was measured (a folder from before the wire check, or
// shapers the captures cannot see).
func (s Select1Check) wireCells() string {
	if s.WireTrips == 0 {
		return "– | – | – | –"
	}
	return fmt.Sprintf("%.3f | %.3f | %.3f | %d of %d", s.WireZeroP50Ms, s.WireSettingP50Ms, s.WireAddedMs, s.WireTrips, s.WireTurns)
}
