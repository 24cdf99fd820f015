package placement

import (
	"context"
	"reflect"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime/runtimefake"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// A node starts through the runtime interface alone: the compute hosts
// carry the app's label and their CPU limit, a pinned node names its
// cluster node, and every node keeps the runtime's address, network
// namespace (what the proxy joins) and the node it runs on.
func TestStartNodeOnARuntime(t *testing.T) {
	r := runtimefake.New()
	r.AddImage("app:1")
	ps := &Session{
		Stack: &stack.Stack{RunID: "abc", Target: apps.Target{Name: "go"}},
		Nodes: map[string]*stack.Member{},
		Plan:  &Plan{CPUs: map[string]float64{NodeB: 0.5}, Nodes: map[string]string{NodeB: "node-2"}},
	}
	r.Node = "node-1" // where the runtime puts a member that names none
	for _, n := range []string{NodeA, NodeB, NodeClient} {
		m, err := ps.startNode(context.Background(), r, n, "app:1", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ps.Nodes[n] != m || m.IP == "" || m.NetNS == "" {
			t.Errorf("node %s: %+v", n, m)
		}
	}
	for _, s := range r.Started() {
		wantCPU, wantApp, wantNode := int64(0), "go", ""
		switch s.Name {
		case "rttlab-abc-" + NodeB:
			wantCPU, wantNode = 500_000_000, "node-2"
		case "rttlab-abc-" + NodeClient:
			wantApp = ""
		}
		if s.NanoCPUs != wantCPU || s.Labels[engine.LabelApp] != wantApp || s.Role != s.Labels[engine.LabelService] || s.Node != wantNode {
			t.Errorf("%s: %+v", s.Name, s)
		}
	}
	want := map[string]string{NodeA: "node-1", NodeB: "node-2", NodeClient: "node-1"}
	if got := ps.clusterNodes(); !reflect.DeepEqual(got, want) {
		t.Errorf("cluster nodes read back %v, want %v", got, want)
	}
}
