package placement

import (
	"context"
	"testing"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/runtime/runtimefake"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// A node starts through the runtime interface alone: the compute hosts
// carry the app's label and their CPU limit, and every node keeps the
// runtime's address and network namespace (what the proxy joins).
func TestStartNodeOnARuntime(t *testing.T) {
	r := runtimefake.New()
	r.AddImage("app:1")
	ps := &Session{
		Stack: &stack.Stack{RunID: "abc", Target: apps.Target{Name: "go"}},
		Nodes: map[string]*stack.Member{},
		Plan:  &Plan{CPUs: map[string]float64{NodeB: 0.5}},
	}
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
		wantCPU, wantApp := int64(0), "go"
		switch s.Name {
		case "rttlab-abc-" + NodeB:
			wantCPU = 500_000_000
		case "rttlab-abc-" + NodeClient:
			wantApp = ""
		}
		if s.NanoCPUs != wantCPU || s.Labels[engine.LabelApp] != wantApp || s.Role != s.Labels[engine.LabelService] {
			t.Errorf("%s: %+v", s.Name, s)
		}
	}
}
