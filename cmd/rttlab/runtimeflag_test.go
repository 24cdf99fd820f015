package main

import (
	"context"
	"strings"
	"testing"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/kube"
	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/orchestrator/stack"
)

// withCluster makes kubeConnect answer c for the test.
func withCluster(t *testing.T, c *kube.Cluster) {
	saved := kubeConnect
	t.Cleanup(func() { kubeConnect = saved })
	kubeConnect = func(context.Context) (*kube.Cluster, error) { return c, nil }
}

// The runtime is docker unless --runtime or RTTLAB_RUNTIME says kube; an
// unknown one, the cluster's flags without kube, and a command that does
// not run on a cluster yet are refused with one line (exit 2) before
// anything connects.
func TestRuntimeRefusals(t *testing.T) {
	ctx := context.Background()
	connected := false
	saved, savedKube := connect, kubeConnect
	defer func() { connect, kubeConnect = saved, savedKube }()
	connect = func(context.Context) (*engine.Runtime, error) { connected = true; return nil, errNoEngineHere }
	kubeConnect = func(context.Context) (*kube.Cluster, error) { connected = true; return nil, errNoClusterHere }
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"doctor", "--runtime", "swarm"}, "", `--runtime "swarm": use docker (this host's engine) or kube (a Kubernetes cluster)`},
		{[]string{"doctor"}, "nomad", `--runtime "nomad": use docker`},
		{[]string{"clean", "--kubeconfig", "/k"}, "", "--kubeconfig, --namespace and --registry go with --runtime kube"},
		{[]string{"run", "--registry", "127.0.0.1:5000"}, "", "--kubeconfig, --namespace and --registry go with --runtime kube"},
		{[]string{"up", "go", "--runtime", "kube"}, "", "rttlab: up --runtime kube: not supported yet:"},
		{[]string{"images", "build", "--runtime", "kube"}, "", "rttlab: images build --runtime kube: not supported yet:"},
		{[]string{"shape", "set", "--runtime", "kube"}, "", "rttlab: shape set --runtime kube: not supported yet:"},
		{[]string{"clean", "--runtime", "kube", "--images"}, "", "--images and --force are Docker's"},
	} {
		t.Setenv("RTTLAB_RUNTIME", c.env)
		connected = false
		code, out, errOut := execLine(ctx, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 || out != "" || connected {
			t.Errorf("%v (RTTLAB_RUNTIME=%q): exit %d, connected %v, stderr %q; want exit 2 and one line with %q", c.args, c.env, code, connected, errOut, c.want)
		}
	}
}

// doctor --runtime kube with no cluster answering says so in one FAIL line
// with the fix (exit 1); with a cluster it prints its checks.
func TestKubeDoctor(t *testing.T) {
	ctx := context.Background()
	code, out, errOut := execLine(ctx, "doctor", "--runtime", "kube")
	if code != 1 || !strings.HasPrefix(out, "FAIL cluster") || !strings.Contains(out, "fix: start the cluster") || !strings.Contains(errOut, "a required check of the cluster failed") {
		t.Errorf("no cluster: exit %d\n%s%s", code, out, errOut)
	}
	c := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Images:     []corev1.ContainerImage{{Names: []string{stack.AgentImage}}},
	}})
	c.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	withCluster(t, &kube.Cluster{C: c, Host: "https://cluster"})
	code, out, errOut = execLine(ctx, "doctor", "--runtime", "kube", "--namespace", "shop")
	if code != 0 || !strings.Contains(out, "OK   right: pods/exec") || !strings.Contains(out, "create pods/exec in shop: allowed") || !strings.Contains(out, "admitted in shop") {
		t.Errorf("a healthy cluster: exit %d\n%s%s", code, out, errOut)
	}
}

// clean --runtime kube removes the runs' namespaces and nothing else; with
// --run, that run's only.
func TestKubeClean(t *testing.T) {
	ctx := context.Background()
	ns := func(name, run string) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if run != "" {
			n.Labels = map[string]string{runtime.LabelRun: run}
		}
		return n
	}
	c := fake.NewClientset(ns("rttlab-aaaa000001", "aaaa000001"), ns("rttlab-bbbb000002", "bbbb000002"), ns("shop", ""))
	withCluster(t, &kube.Cluster{C: c})
	code, out, errOut := execLine(ctx, "clean", "--runtime", "kube", "--run", "aaaa000001")
	if code != 0 || !strings.Contains(out, "of 1 run(s) on the cluster") {
		t.Errorf("clean --run: exit %d\n%s%s", code, out, errOut)
	}
	left := func() []string {
		l, _ := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		var names []string
		for _, n := range l.Items {
			names = append(names, n.Name)
		}
		return names
	}
	if got := strings.Join(left(), ","); got != "rttlab-bbbb000002,shop" {
		t.Errorf("after clean --run: %s", got)
	}
	code, out, errOut = execLine(ctx, "clean", "--runtime", "kube")
	if code != 0 || !strings.Contains(out, "of 1 run(s) on the cluster") || strings.Join(left(), ",") != "shop" {
		t.Errorf("clean: exit %d, left %v\n%s%s", code, left(), out, errOut)
	}
	code, _, errOut = execLine(ctx, "clean", "--runtime", "kube", "--kubeconfig", "/nowhere")
	if code != 0 {
		t.Errorf("clean of a cluster without runs: exit %d %s", code, errOut)
	}
}
