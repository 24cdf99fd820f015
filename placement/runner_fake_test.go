package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/engine/enginefake"
	"github.com/rttlab/rttlab/orchestrator/fakelab"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// smallPlan is placement-smoke for app with fewer requests: every phase
// runs, in a second.
func smallPlan(t *testing.T, app string) *Plan {
	t.Helper()
	p, _ := BuiltinPlan("placement-smoke")
	p.App = app
	p.Warmup, p.Requests, p.Rounds = 2, 8, 2
	p.Select1Warmup, p.Select1Calls = 2, 10
	p.RoutedWarmup, p.RoutedRequests = 2, 6
	p.SweepN, p.SweepWarmup, p.SweepRequests = []int{0, 1, 6}, 2, 6
	p.ConcurrencyRates, p.ConcurrencyRequests = []float64{0.5}, 20
	p.ICMPCount = 5
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// startLab starts the placement session of p on a fresh lab and tells the
// lab the nodes' addresses; the stack is removed when the test ends, and
// the test fails if anything is left.
func startLab(t *testing.T, p *Plan, d fakelab.Double) (*placeLab, *Session) {
	t.Helper()
	l := newPlaceLab(t, p.App, d)
	ps, err := StartPlacement(context.Background(), l.Runtime(), p, l.target(t, p), engine.Platform{}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ps.Stack.Remove(context.Background(), l.Runtime()); err != nil {
			t.Error(err)
		}
		l.RequireEmpty(t)
	})
	l.mu.Lock()
	for n, m := range ps.Nodes {
		l.ips[n] = m.IP
	}
	l.mu.Unlock()
	return l, ps
}

func within(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// The whole study on the model network: the links, SELECT 1 and the
// held-out test measure what the plan configured, the proxy's decisions
// join the client's requests one to one, the sweep finds the crossover
// the geometry puts between N=1 and N=6, and the folder holds every file
// a report needs and re-renders.
func TestPlacementRunOnAFakeEngine(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		p := smallPlan(t, "go")
		l, ps := startLab(t, p, d)
		var progress []string
		ps.Progress = func(s string) { progress = append(progress, s) }
		dir := t.TempDir()
		r := &Runner{Runtime: l.Runtime(), Engine: l, Session: ps, Dir: dir, Version: "test"}
		res, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if u := l.NotAnswered(); len(u) > 0 {
			t.Errorf("commands nobody answered: %v", u)
		}

		// ICMP adds the configured RTT on every pair, in both phases.
		if len(res.Links) != 2*len(pairs()) {
			t.Errorf("%d link checks, want %d", len(res.Links), 2*len(pairs()))
		}
		for _, c := range res.Links {
			if !within(c.AddedMs, c.ConfiguredMs, 0.001) || c.Lost != 0 {
				t.Errorf("link %s %s–%s: added %.4f, configured %.4f, lost %d", c.Phase, c.A, c.B, c.AddedMs, c.ConfiguredMs, c.Lost)
			}
		}
		for _, s := range res.Select1 {
			if !within(s.AddedMs, s.ConfiguredMs, 0.005) {
				t.Errorf("SELECT 1 from %s: added %.4f, configured %.4f", s.Host, s.AddedMs, s.ConfiguredMs)
			}
			// The wire's round trips, from two captures whose clocks are 5 s
			// apart, add what the link adds.
			if !within(s.WireAddedMs, s.ConfiguredMs, 0.001) || s.WireTrips == 0 || s.WireTrips != s.WireTurns || !within(s.WireZeroP50Ms, 2*fakeHop.Seconds()*1e3, 0.001) {
				t.Errorf("wire check of %s: %+v", s.Host, s)
			}
		}
		for _, w := range res.Warnings {
			if strings.Contains(w, "wire check") {
				t.Errorf("warning on a met wire check: %s", w)
			}
		}

		if len(res.Reps) != 1 {
			t.Fatalf("%d repetitions", len(res.Reps))
		}
		rep := res.Reps[0]
		// The profiled model predicts the held-out p50s exactly: the lab's
		// latencies are a client path, a residual and N round trips.
		if len(rep.HeldOut) != 2*2*len(p.Routes) {
			t.Errorf("%d held-out rows", len(rep.HeldOut))
		}
		for _, h := range rep.HeldOut {
			if h.Model == ModelProfiled && math.Abs(h.ErrorMs) > 0.001 {
				t.Errorf("held-out %s on %s: %s error %.4f ms", h.Route, h.Host, h.Model, h.ErrorMs)
			}
		}
		wantRouted := (p.RoutedWarmup + p.RoutedRequests) * len(p.Policies) * (len(p.Routes) + len(p.RoutedN))
		if rep.Decisions != wantRouted || rep.Unmatched != 0 {
			t.Errorf("routed: %d decisions (want %d), %d unmatched", rep.Decisions, wantRouted, rep.Unmatched)
		}
		if len(rep.Routed.Cells) == 0 {
			t.Error("no routed cells")
		}
		// By call count: at N=1 every policy keeps a (the client's side); at
		// N=12 profiled moves to b, 12 × 0.125 ms of database RTT nearer, and
		// beats user-first by about 1.25 ms.
		for _, d := range rep.Routed.Diffs {
			if d.Policy != PolicyProfiled || d.Base != PolicyUserFirst {
				continue
			}
			switch d.Route {
			case "/serial?n=1":
				if math.Abs(float64(d.DiffMs)) > 0.01 {
					t.Errorf("N=1: profiled − user-first %v ms, want 0", d.DiffMs)
				}
			case "/serial?n=12":
				if d.DiffMs > -1 || d.CI.High >= 0 || d.Verdict != "lower" {
					t.Errorf("N=12: profiled − user-first %v ms %v %s, want about −1.25, lower", d.DiffMs, d.CI, d.Verdict)
				}
			}
		}
		if rep.ProxyOverheadP50Ms <= 0 {
			t.Errorf("proxy overhead %v", rep.ProxyOverheadP50Ms)
		}

		// a is next to the client, b next to the database and, held out, one
		// 0.25 ms one-way further from the client: b wins from N = 2 on.
		if res.Measured == nil || len(res.Measured.Crossings) != 1 || res.Measured.Crossings[0].Low != 1 || res.Measured.Crossings[0].High != 6 {
			t.Errorf("measured crossover %+v, want one crossing between N=1 and N=6", res.Measured)
		}
		if len(res.SweepPredicted) == 0 || len(res.Capacity) != 2 || len(res.Concurrency) == 0 || res.ConcurrencyConn == "" {
			t.Errorf("sweep predicted %d, capacity %d, concurrency %d rows", len(res.SweepPredicted), len(res.Capacity), len(res.Concurrency))
		}
		for _, c := range res.Concurrency {
			if c.Policy == "" || c.N == 0 {
				t.Errorf("concurrency row %+v", c)
			}
		}

		for _, f := range []string{"manifest.json", "samples.jsonl", "decisions.jsonl", "summary.json", "summary.md"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
		svgs, _ := filepath.Glob(filepath.Join(dir, "plots", "*.svg"))
		if len(svgs) == 0 {
			t.Error("no plots")
		}
		var man map[string]any
		if b, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err != nil || json.Unmarshal(b, &man) != nil || man["kind"] != "placement" || man["backend"] != "userspace" {
			t.Errorf("manifest %v: %v", man, err)
		}
		if !strings.Contains(strings.Join(progress, "\n"), "routed comparison through the proxy") {
			t.Errorf("progress:\n%s", strings.Join(progress, "\n"))
		}

		md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
		if !strings.Contains(string(md), "### Routed by call count (/serial?n=N)") || !strings.Contains(string(md), "| 12 |") {
			t.Errorf("no table by call count in summary.md:\n%s", md)
		}

		// The folder re-renders from its raw files to the same figures.
		before, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
		if !IsPlacementFolder(dir) {
			t.Fatal("not a placement folder")
		}
		if _, err := ReportPlacement(dir); err != nil {
			t.Fatal(err)
		}
		after, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
		if len(after) == 0 || !strings.Contains(string(after), "crossover") {
			t.Errorf("re-rendered summary:\n%s", after)
		}
		if string(before) != string(after) {
			t.Errorf("the summary re-rendered from the raw files differs from the run's:\n%s\n---\n%s", before, after)
		}
		if md, err := ComparePlacement(dir, dir); err != nil || md == "" {
			t.Errorf("compare with itself: %v", err)
		}
	})
}

// A failure mid-study ends the run with an error that names it; what was
// measured so far stays in the folder, and the session's stack still
// comes down whole (startLab's cleanup checks).
func TestPlacementRunFailures(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		for _, c := range []struct {
			name   string
			break_ func(l *placeLab)
			want   string
		}{
			{"compute host dies", func(l *placeLab) { l.Exit("-b", 137, "Killed\n") }, "container exited"},
			{"load client fails", func(l *placeLab) {
				l.Handle("rttlab agent load", func(ctx context.Context, x *enginefake.Call) (int, error) {
					fmt.Fprintln(x.Stderr, "rttlab: dial tcp: connection refused")
					return 1, nil
				})
			}, "connection refused"},
			{"SELECT 1 probe fails", func(l *placeLab) { l.FailOn("Exec", "agent sqlprobe", -1, errors.New("exec boom")) }, "exec boom"},
			{"proxy log unreadable", func(l *placeLab) {
				l.Handle("cat "+proxyLog, func(ctx context.Context, x *enginefake.Call) (int, error) {
					fmt.Fprintln(x.Stderr, "cat: permission denied")
					return 1, nil
				})
			}, "read the decision log"},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := smallPlan(t, "go")
				p.SweepN, p.ConcurrencyRates = nil, nil
				l, ps := startLab(t, p, d)
				c.break_(l)
				dir := t.TempDir()
				_, err := (&Runner{Runtime: l.Runtime(), Engine: l, Session: ps, Dir: dir, Version: "test", NoPlots: fakelab.UnderRace}).Run(context.Background())
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err %v, want one about %q", err, c.want)
				}
				if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
					t.Error(err)
				}
			})
		}
	})
}

// placement-asym is placement with b on half a CPU; the quota reaches b's
// container only, and the summary says so.
func TestPlacementCPUsLimitAHost(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		asym, ok := BuiltinPlan("placement-asym")
		if !ok || asym.CPUs[NodeB] != 0.5 || len(asym.CPUs) != 1 || asym.Validate() != nil {
			t.Fatalf("placement-asym: %+v", asym)
		}
		p := smallPlan(t, "go")
		p.CPUs = map[string]float64{NodeB: 0.5}
		l, ps := startLab(t, p, d)
		for _, s := range l.Started() {
			want := int64(0)
			if s.Name == ps.Nodes[NodeB].Name {
				want = 500_000_000
			}
			if s.NanoCPUs != want {
				t.Errorf("%s: CPU quota %d, want %d", s.Name, s.NanoCPUs, want)
			}
		}
		if md := PlaceMarkdown(&PlaceResult{Plan: p}); !strings.Contains(md, "compute hosts a and b (b on 0.5 CPU);") {
			t.Errorf("summary header: %s", strings.SplitN(md, "\n", 4)[2])
		}
	})
}

// A study whose nodes a cluster placed records, per study node, the
// cluster node it ran on in the manifest and the summary, and says it in
// one line of summary.md that a report keeps; on one host (Docker) none
// of them is written.
func TestPlacementRecordsClusterNodes(t *testing.T) {
	fakelab.EachDouble(t, func(t *testing.T, d fakelab.Double) {
		p := smallPlan(t, "go")
		p.SweepN, p.ConcurrencyRates = nil, nil
		l, ps := startLab(t, p, d)
		dir := t.TempDir()
		if _, err := (&Runner{Runtime: l.Runtime(), Engine: l, Session: ps, Dir: dir, Version: "test", NoPlots: fakelab.UnderRace}).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"manifest.json", "summary.json", "summary.md"} {
			if b, _ := os.ReadFile(filepath.Join(dir, f)); strings.Contains(string(b), "cluster_nodes") || strings.Contains(string(b), "Cluster nodes") || strings.Contains(string(b), `"nodes": {}`) {
				t.Errorf("%s of a study on one host names cluster nodes:\n%s", f, b)
			}
		}

		// The same study as a cluster runs it: the plan pins b and the
		// database, the runtime reads back where each member runs.
		l, ps = startLab(t, p, d)
		pinned := *p
		pinned.Nodes = map[string]string{NodeB: "node-2", NodeDB: "node-2"}
		ps.Plan = &pinned
		on := map[string]string{NodeClient: "node-1", NodeA: "node-1", NodeB: "node-2", NodeDB: "node-2"}
		for n, m := range ps.Nodes {
			m.Node = on[n]
		}
		dir = t.TempDir()
		res, err := (&Runner{Runtime: l.Runtime(), Engine: l, Session: ps, Dir: dir, Version: "test", NoPlots: fakelab.UnderRace}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.ClusterNodes, on) {
			t.Errorf("result's cluster nodes %v, want %v", res.ClusterNodes, on)
		}
		var man struct {
			ClusterNodes map[string]string `json:"cluster_nodes"`
			Plan         *Plan             `json:"plan"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err != nil || json.Unmarshal(b, &man) != nil || !reflect.DeepEqual(man.ClusterNodes, on) || !reflect.DeepEqual(man.Plan.Nodes, pinned.Nodes) {
			t.Errorf("manifest: cluster nodes %v, plan nodes %v, %v", man.ClusterNodes, man.Plan, err)
		}
		if fp, err := FolderPlan(dir); err != nil || !reflect.DeepEqual(fp.Nodes, pinned.Nodes) {
			t.Errorf("the folder's plan for --resume: %v, %v", fp, err)
		}
		const line = "Cluster nodes (pinned by the plan's nodes where it names them): client on node-1, a on node-1, b on node-2, db on node-2.\n"
		if md, _ := os.ReadFile(filepath.Join(dir, "summary.md")); !strings.Contains(string(md), line) {
			t.Errorf("summary.md has no line %q:\n%s", line, md)
		}
		if _, err := ReportPlacement(dir); err != nil {
			t.Fatal(err)
		}
		if md, _ := os.ReadFile(filepath.Join(dir, "summary.md")); !strings.Contains(string(md), line) {
			t.Errorf("the report dropped the line %q:\n%s", line, md)
		}
	})
}

// A fresh stack (a retry, a resume) that runs a study node elsewhere adds
// that node to the record; one on the same nodes changes nothing.
func TestPlacementNoteNodesAcrossSessions(t *testing.T) {
	member := func(node string) *stack.Member { return &stack.Member{Node: node} }
	r := &Runner{res: &PlaceResult{}, Session: &Session{Nodes: map[string]*stack.Member{NodeA: member("n1"), NodeDB: member("n2"), NodeClient: member("")}}}
	r.noteNodes()
	r.noteNodes()
	r.Session = &Session{Nodes: map[string]*stack.Member{NodeA: member("n3"), NodeDB: member("n2")}}
	r.noteNodes()
	if want := map[string]string{NodeA: "n1, n3", NodeDB: "n2"}; !reflect.DeepEqual(r.res.ClusterNodes, want) {
		t.Errorf("cluster nodes %v, want %v", r.res.ClusterNodes, want)
	}
	r = &Runner{res: &PlaceResult{}, Session: &Session{Nodes: map[string]*stack.Member{NodeA: member("")}}}
	if r.noteNodes(); r.res.ClusterNodes != nil {
		t.Errorf("one host: cluster nodes %v", r.res.ClusterNodes)
	}
}

// The summary names where each node ran when the plan pins any or they
// ran on more than one cluster node; on one host or one node it says
// nothing.
func TestPlaceMarkdownClusterNodes(t *testing.T) {
	p, _ := BuiltinPlan("placement-smoke")
	pinned := *p
	pinned.Nodes = map[string]string{NodeClient: "n1", NodeA: "n1", NodeB: "n2", NodeDB: "n2"}
	all := map[string]string{NodeClient: "n1", NodeA: "n1", NodeB: "n2", NodeDB: "n2"}
	for _, c := range []struct {
		name  string
		plan  *Plan
		nodes map[string]string
		want  string
	}{
		{"one host", p, nil, ""},
		{"one node", p, map[string]string{NodeClient: "n1", NodeA: "n1", NodeB: "n1", NodeDB: "n1"}, ""},
		{"placed apart", p, all, "Cluster nodes (as the cluster placed them): client on n1, a on n1, b on n2, db on n2.\n\n"},
		{"pinned", &pinned, all, "Cluster nodes (pinned by the plan's nodes): client on n1, a on n1, b on n2, db on n2.\n\n"},
		{"pinned, on one node", &pinned, map[string]string{NodeClient: "n1", NodeA: "n1", NodeB: "n1", NodeDB: "n2"},
			"Cluster nodes (pinned by the plan's nodes): client on n1, a on n1, b on n1 (pinned to n2), db on n2.\n\n"},
		{"moved by a retry", p, map[string]string{NodeClient: "n1", NodeA: "n1", NodeB: "n1, n2", NodeDB: "n1"},
			"Cluster nodes (as the cluster placed them): client on n1, a on n1, b on n1, n2, db on n1.\n\n"},
		{"pinned, not read back", &pinned, nil, "Cluster nodes (pinned by the plan's nodes): client pinned to n1 (not read back), a pinned to n1 (not read back), b pinned to n2 (not read back), db pinned to n2 (not read back).\n\n"},
	} {
		if got := clusterNodesLine(&PlaceResult{Plan: c.plan, ClusterNodes: c.nodes}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	md := PlaceMarkdown(&PlaceResult{Plan: &pinned, ClusterNodes: all})
	if lines := strings.Split(md, "\n"); len(lines) < 5 || !strings.HasPrefix(lines[4], "Cluster nodes (pinned") {
		t.Errorf("summary header:\n%s", md)
	}
}

// Each way a link's wire check can end: met (no warning), nothing
// measured, too few turns measured, the added round trip off the
// configured RTT either way, and shapers the captures cannot see (no
// check, no warning). The summary's row shows dashes where nothing was
// measured.
func TestSelect1WireWarning(t *testing.T) {
	ok := Select1Check{Host: NodeA, ConfiguredMs: 0.25, WireZeroP50Ms: 0.05, WireSettingP50Ms: 0.31, WireAddedMs: 0.26, WireTrips: 100, WireTurns: 100}
	for _, c := range []struct {
		name string
		hook string
		edit func(*Select1Check)
		want string
	}{
		{"met", "", func(*Select1Check) {}, ""},
		{"met, wire hook named", netem.HookWire, func(*Select1Check) {}, ""},
		{"nothing measured", "", func(s *Select1Check) { s.WireTrips, s.WireTurns = 0, 0 }, "wire check of a–db: no turn of the database was seen in both captures"},
		{"few turns", "", func(s *Select1Check) { s.WireTrips = 90 }, "wire check of a–db: 90 of 100 turns of the database measured (fewer than 95%)"},
		{"too much", "", func(s *Select1Check) { s.WireAddedMs = 0.30 }, "the wire added 0.300 ms per round trip for 0.250 ms configured (off by +0.050 ms, tolerance ±0.04 ms)"},
		{"too little", "", func(s *Select1Check) { s.WireAddedMs = 0.20 }, "off by -0.050 ms"},
		{"shapers out of sight", netem.HookEgress, func(s *Select1Check) { s.WireTrips, s.WireTurns = 0, 0 }, ""},
		{"kernel netem out of sight", "kernel", func(s *Select1Check) { s.WireTrips, s.WireTurns = 0, 0 }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.edit(&s)
			hook, backend := c.hook, netem.BackendUserspace
			if hook == "kernel" {
				hook, backend = "", netem.BackendKernel
			}
			got := s.wireWarning(hook, backend)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("warning %q, want %q", got, c.want)
			}
		})
	}
	if got := ok.wireCells(); got != "0.050 | 0.310 | 0.260 | 100 of 100" {
		t.Errorf("cells %q", got)
	}
	if got := (Select1Check{}).wireCells(); got != "– | – | – | –" {
		t.Errorf("cells of a check without trips %q", got)
	}
}
