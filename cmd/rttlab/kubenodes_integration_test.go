package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rttlab/rttlab/orchestrator/kube"
	"github.com/rttlab/rttlab/placement"
	"github.com/rttlab/rttlab/workloads"
)

// twoNodes are the cluster's two nodes that take pods: the first, and
// the second that .ci/kube.sh join added (RTTLAB_KUBE_NODE2).
func twoNodes(t *testing.T, cl *kube.Cluster) (string, string) {
	t.Helper()
	node2 := os.Getenv("RTTLAB_KUBE_NODE2")
	if node2 == "" {
		if os.Getenv("RTTLAB_KUBE_AGENT") == "required" {
			t.Fatal("RTTLAB_KUBE_NODE2 names no second node (.ci/kube.sh join adds one)")
		}
		t.Skip("RTTLAB_KUBE_NODE2 names no second node (.ci/kube.sh join adds one)")
	}
	hosts, err := cl.Runtime().Hosts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 2 || !slices.Contains(hosts, node2) {
		t.Fatalf("nodes taking pods: %v; want two, %s one of them", hosts, node2)
	}
	if hosts[0] == node2 {
		return hosts[1], node2
	}
	return hosts[0], node2
}

// rttlab on two nodes of a real cluster: a user's app and its database
// pinned to two nodes, measured where they run with the wire verified
// per round trip (no clock shared, so no one-way row is kept); and the
// placement study with its client and compute host a on one node,
// compute host b and the database on the other, each compute host's
// link to the database verified on the wire. Nothing of either run is
// left, neither a namespace nor a rule on a node.
func TestIntegrationKubeTwoNodes(t *testing.T) {
	cl := kubeRunCluster(t)
	node1, node2 := twoNodes(t, cl)
	bin, root := drillBinary(t)
	before := liveRuns(t, cl)

	t.Run("target across nodes", func(t *testing.T) {
		ns, pods := applyShop(t, cl, root, map[string]string{"shop": node1, "shop-db": node2})
		was := pods()
		_, d := kubeRun(t, bin, root, "run", "--namespace", ns, "--target", "deploy/shop", "--db-target", "statefulset/shop-db",
			"--routes", "/feed-naive", "--health", "/health", "--plan", "study", "--delays", "0,1", "--runs", "2", "--requests", "40", "--warmup", "5")
		if now := pods(); fmt.Sprint(now) != fmt.Sprint(was) {
			t.Errorf("the user's pods changed: before %v, after %v", was, now)
		}
		nodes := map[string]string{}
		for _, m := range d.Manifest.Members {
			if m.Adopted {
				nodes[m.Role] = m.Node
			}
		}
		if nodes["app"] != node1 || nodes["db"] != node2 {
			t.Errorf("manifest nodes %v, want app on %s and db on %s", nodes, node1, node2)
		}
		trips := 0
		for _, w := range d.Wire {
			if w.Direction != workloads.DirRoundTrip {
				t.Errorf("a %s row across two nodes (no clock shared): %+v", w.Direction, w)
			}
			if w.RTTms == 1 {
				trips++
			}
		}
		if trips == 0 {
			t.Errorf("no round-trip row at 1 ms: %+v", d.Wire)
		}
		checkClusterClean(t, cl, before, "namespaces left by the run")
	})

	t.Run("placement across nodes", func(t *testing.T) {
		// placement-smoke's counts on the go app, as the testdata plan,
		// with two policies and no concurrency phase: what is tested here
		// is where the nodes run and that their links hold on the wire.
		b, err := os.ReadFile(filepath.Join(root, "placement", "testdata", "two-nodes.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.NewReplacer("node-1", node1, "node-2", node2, "name: two-nodes", "name: two-nodes\napp: go").Replace(string(b)) +
			"policies: [user-first, profiled]\nrouted_n: []\nconcurrency_rates: []\n"
		plan := writeFile(t, t.TempDir(), "two-nodes.yaml", text)
		out := t.TempDir()
		cmd := exec.Command(bin, "place", "--plan", plan, "--out", out)
		cmd.Dir = root
		o, err := cmd.CombinedOutput()
		t.Logf("rttlab place --plan %s:\n%s", plan, o)
		if err != nil {
			t.Fatalf("place: %v", err)
		}
		files, _ := filepath.Glob(filepath.Join(out, "*", "summary.json"))
		if len(files) != 1 {
			t.Fatalf("summaries: %v", files)
		}
		b, err = os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		var res placement.PlaceResult
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{placement.NodeClient: node1, placement.NodeA: node1, placement.NodeB: node2, placement.NodeDB: node2}
		if fmt.Sprint(res.ClusterNodes) != fmt.Sprint(want) {
			t.Errorf("cluster nodes %v, want %v", res.ClusterNodes, want)
		}
		if len(res.Select1) != 2 {
			t.Fatalf("SELECT 1 checks: %+v", res.Select1)
		}
		for _, s := range res.Select1 {
			t.Logf("link %s–db (%s to %s): configured %.3f ms, SELECT 1 added %.3f, wire round trip added %.3f (%d of %d turns)",
				s.Host, want[s.Host], node2, s.ConfiguredMs, s.AddedMs, s.WireAddedMs, s.WireTrips, s.WireTurns)
			if s.WireTrips == 0 || math.Abs(s.WireAddedMs-s.ConfiguredMs) > placement.WireToleranceMs {
				t.Errorf("link %s–db not verified on the wire: %+v", s.Host, s)
			}
		}
		checkClusterClean(t, cl, before, "namespaces left by the run")
	})
}
