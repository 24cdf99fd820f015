package main

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/kube"
)

// twoNodesPlan writes a placement plan that pins the client and a to
// node-1, b and the database to node-2.
func twoNodesPlan(t *testing.T) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "two-nodes.yaml", "nodes: {client: node-1, a: node-1, b: node-2, db: node-2}\nrequests: 40\nrounds: 2\n")
}

// A plan that pins nodes runs on a cluster only: on Docker it is refused
// in one line (exit 2) before anything connects.
func TestPlacePinnedNodesNeedKube(t *testing.T) {
	saved := connect
	t.Cleanup(func() { connect = saved })
	connected := false
	connect = func(context.Context) (*engine.Runtime, error) { connected = true; return nil, errNoEngineHere }
	t.Setenv("RTTLAB_RUNTIME", "")
	code, out, errs := execLine(context.Background(), "place", "--plan", twoNodesPlan(t))
	want := "rttlab: plan two-nodes pins nodes (nodes:): run it with --runtime kube\n"
	if code != 2 || errs != want || out != "" || connected {
		t.Errorf("exit %d, connected %v, stderr %q; want exit 2 and %q", code, connected, errs, want)
	}
}

// On a cluster, each pinned node is found Ready before anything is
// created: one missing or not Ready is one line naming it and the nodes
// the cluster has, and the cluster stays as it was.
func TestPlacePinnedNodesChecked(t *testing.T) {
	ready := func(name string, ok bool) *corev1.Node {
		st := corev1.ConditionTrue
		if !ok {
			st = corev1.ConditionFalse
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
	}
	plan := twoNodesPlan(t)
	for _, c := range []struct {
		name  string
		nodes []*corev1.Node
		want  string
	}{
		{"missing", []*corev1.Node{ready("node-1", true), ready("node-3", true)},
			`rttlab: plan two-nodes: node "node-2" is not in the cluster (its nodes: node-1, node-3): name one of them under nodes:`},
		{"not ready", []*corev1.Node{ready("node-1", true), ready("node-2", false)},
			"rttlab: plan two-nodes: node node-2 is not Ready: pods pinned to it would not start; wait until kubectl get nodes shows it Ready, or pin to another (taking pods: node-1)"},
		{"both ready", []*corev1.Node{ready("node-1", true), ready("node-2", true)}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c0 := fake.NewClientset(c.nodes[0], c.nodes[1])
			withCluster(t, &kube.Cluster{C: c0})
			code, _, errs := execLine(context.Background(), "place", "--runtime", "kube", "--plan", plan)
			if c.want == "" {
				// Past the check, the study goes on to the images, which
				// this cluster's nodes lack.
				if strings.Contains(errs, "plan two-nodes:") || !strings.Contains(errs, "image rttlab/") {
					t.Errorf("both nodes Ready: exit %d, stderr %q", code, errs)
				}
				return
			}
			if code != 1 || strings.TrimSpace(errs) != c.want || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errs, c.want)
			}
			for _, a := range c0.Actions() {
				if a.GetVerb() != "list" {
					t.Errorf("the check did %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}
