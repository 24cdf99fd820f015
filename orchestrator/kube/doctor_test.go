package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

func readyNode(name string, images ...string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Images:     []corev1.ContainerImage{{Names: images}},
	}}
}

// checkNamed is the check named name among cs.
func checkNamed(t *testing.T, cs []runtime.Check, name string) runtime.Check {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q among %v", name, cs)
	return runtime.Check{}
}

// The doctor of a healthy cluster passes every required check; a denied
// right, a refused privileged pod, a node not Ready and an image missing
// on a node each fail their own line with a fix.
func TestDoctor(t *testing.T) {
	ctx := context.Background()
	healthy := fake.NewClientset(readyNode("n1", "docker.io/rttlab/agent:latest"))
	healthy.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.35.4"}
	healthy.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	cs := (&Cluster{C: healthy, Host: "https://127.0.0.1:6443"}).Doctor(ctx, "rttlab/agent", "default")
	for _, c := range cs {
		if c.Required && !c.OK {
			t.Errorf("healthy cluster: %s", c)
		}
	}
	if c := checkNamed(t, cs, "cluster"); c.Detail != "Kubernetes v1.35.4 at https://127.0.0.1:6443" {
		t.Errorf("cluster: %s", c)
	}
	if c := checkNamed(t, cs, "agent image"); !c.OK {
		t.Errorf("agent image: %s", c)
	}
	if pods, _ := healthy.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); len(pods.Items) > 0 && pods.Items[0].Spec.HostPID != true {
		t.Errorf("the privileged dry run was not the node agent's kind of pod: %+v", pods.Items[0].Spec)
	}

	sick := fake.NewClientset(readyNode("n1"), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}})
	sick.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview)
		r.Status.Allowed = r.Spec.ResourceAttributes.Subresource != "exec"
		return true, r, nil
	})
	sick.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, errors.New(`pods "rttlab-doctor-node-agent" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true), privileged`)
	})
	cs = (&Cluster{C: sick, Host: "h"}).Doctor(ctx, "rttlab/agent", "default")
	for name, want := range map[string]string{
		"right: pods/exec": "create pods/exec in default: denied",
		"privileged pods":  "violates PodSecurity",
		"agent image":      "rttlab/agent is not on node n1",
	} {
		c := checkNamed(t, cs, name)
		if c.OK || !strings.Contains(c.Detail, want) || c.Fix == "" || strings.Contains(c.String(), "\n") {
			t.Errorf("%s: %s (want not OK, with %q and a fix, on one line)", name, c, want)
		}
	}
	if c := checkNamed(t, cs, "right: pods"); !c.OK {
		t.Errorf("right: pods: %s", c)
	}
	if c := checkNamed(t, cs, "nodes"); !c.OK || c.Detail != "1 Ready and taking pods (n1); not: n2" {
		t.Errorf("nodes, one of two Ready: %s", c)
	}
	none := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}})
	if c := checkNamed(t, (&Cluster{C: none}).Doctor(ctx, "rttlab/agent", "default"), "nodes"); c.OK || c.Fix == "" {
		t.Errorf("nodes, none Ready: %s", c)
	}
}

// The runs on a cluster are the run labels of its namespaces, each once;
// a namespace without the label is none of rttlab's.
func TestClusterRuns(t *testing.T) {
	c := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rttlab-b2", Labels: map[string]string{runtime.LabelRun: "b2"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rttlab-a1", Labels: map[string]string{runtime.LabelRun: "a1"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{runtime.LabelRun: "a1"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rttlab-zz"}},
	)
	runs, err := (&Cluster{C: c}).Runs(context.Background())
	if err != nil || strings.Join(runs, ",") != "a1,b2" {
		t.Errorf("runs %v, %v; want a1,b2", runs, err)
	}
}
