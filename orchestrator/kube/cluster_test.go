package kube

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// cluster is the fake cluster of lab (its kubelet runs each pod on
// node-1 at once) with no run opened yet, and its cluster-wide Lab.
func cluster(t *testing.T) (*Cluster, *Lab, *fake.Clientset) {
	t.Helper()
	l, c, x := lab(t, "")
	if err := c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("serviceaccounts"), l.Namespace, "default"); err != nil {
		t.Fatal(err)
	}
	if err := c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("namespaces"), "", l.Namespace); err != nil {
		t.Fatal(err)
	}
	c.ClearActions()
	cl := &Cluster{C: c, X: x}
	rt := cl.Runtime()
	rt.Poll, rt.StartTimeout = l.Poll, l.StartTimeout
	return cl, rt, c
}

// creates are the objects of kind res (pods, namespaces) created so far,
// by name.
func creates(c *fake.Clientset, res string) []string {
	var out []string
	for _, a := range c.Actions() {
		if ca, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == res {
			out = append(out, ca.GetObject().(metav1.Object).GetName())
		}
	}
	return out
}

func runMember(name string, aliases ...string) runtime.MemberSpec {
	return runtime.MemberSpec{Name: name, Image: "rttlab/" + name + ":latest", Aliases: aliases,
		Labels: map[string]string{runtime.LabelRun: "r1"}}
}

// A cluster-wide Lab starts each member in its run's namespace, made
// and labelled with the run at its first member only.
func TestClusterRuntimeOpensTheRunsNamespaceOnce(t *testing.T) {
	_, rt, c := cluster(t)
	ctx := context.Background()
	for _, name := range []string{"db", "app"} {
		m, err := rt.StartMember(ctx, runMember(name))
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != "rttlab-r1/"+name+"/member" || m.NetNS != runtime.NetNS("rttlab-r1/"+name) || m.Node != "node-1" {
			t.Errorf("member = %+v", m)
		}
	}
	if got := creates(c, "namespaces"); !reflect.DeepEqual(got, []string{"rttlab-r1"}) {
		t.Errorf("namespaces created: %v, want rttlab-r1 once", got)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, "rttlab-r1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels[runtime.LabelRun] != "r1" {
		t.Errorf("namespace labels = %v, want %s=r1", ns.Labels, runtime.LabelRun)
	}
	pods, err := c.CoreV1().Pods("rttlab-r1").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 2 {
		t.Errorf("pods of the run = %v, %v; want db and app", pods, err)
	}
}

// A member without the run label has no namespace to go to: a one-line
// error, and nothing is created.
func TestClusterRuntimeNeedsTheRunLabel(t *testing.T) {
	_, rt, c := cluster(t)
	ctx := context.Background()
	s := runMember("db")
	s.Labels = map[string]string{"io.rttlab.service": "db"}
	_, err := rt.StartMember(ctx, s)
	if err == nil || !strings.Contains(err.Error(), runtime.LabelRun) {
		t.Errorf("a member without %s = %v", runtime.LabelRun, err)
	}
	oneLine(t, err)
	_, err = rt.Adopt(ctx, runtime.AdoptSpec{Target: "pod/x", Namespace: "shop"})
	if err == nil || !strings.Contains(err.Error(), runtime.LabelRun) {
		t.Errorf("an adoption without %s = %v", runtime.LabelRun, err)
	}
	oneLine(t, err)
	for _, a := range c.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" {
			t.Errorf("%s %s in %q by a member of no run", v, a.GetResource().Resource, a.GetNamespace())
		}
	}
}

// The members of a run started after another reach it by its aliases,
// which their pods' /etc/hosts maps to its address.
func TestClusterRuntimeHostAliases(t *testing.T) {
	_, rt, c := cluster(t)
	ctx := context.Background()
	db, err := rt.StartMember(ctx, runMember("db", "db", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.StartMember(ctx, runMember("app", "app")); err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *corev1.Pod {
		t.Helper()
		p, err := c.CoreV1().Pods("rttlab-r1").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if ha := pod("db").Spec.HostAliases; len(ha) != 0 {
		t.Errorf("the first member's host aliases = %+v, want none", ha)
	}
	want := []corev1.HostAlias{{IP: db.Addr, Hostnames: []string{"db", "postgres"}}}
	if ha := pod("app").Spec.HostAliases; db.Addr == "" || !reflect.DeepEqual(ha, want) {
		t.Errorf("app's host aliases = %+v, want %+v", ha, want)
	}
}

// A user's pod adopted with an alias is reached by it from the run's
// members started after it, and only from that run's.
func TestClusterRuntimeAdoptAliasReachesLaterMembers(t *testing.T) {
	_, rt, c := cluster(t)
	ctx := context.Background()
	user := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-db-0", Namespace: "shop"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "postgres"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.9.0.5",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	if err := c.Tracker().Add(user); err != nil {
		t.Fatal(err)
	}
	a, err := rt.Adopt(ctx, runtime.AdoptSpec{Target: "pod/orders-db-0", Namespace: "shop", Alias: "db",
		Labels: map[string]string{runtime.LabelRun: "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "shop/orders-db-0/postgres" || a.Addr != "10.9.0.5" {
		t.Errorf("adopted = %+v", a)
	}
	if _, err := rt.StartMember(ctx, runMember("app", "app")); err != nil {
		t.Fatal(err)
	}
	other := runMember("app")
	other.Labels = map[string]string{runtime.LabelRun: "r2"}
	if _, err := rt.StartMember(ctx, other); err != nil {
		t.Fatal(err)
	}
	p, err := c.CoreV1().Pods("rttlab-r1").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []corev1.HostAlias{{IP: "10.9.0.5", Hostnames: []string{"db"}}}; !reflect.DeepEqual(p.Spec.HostAliases, want) {
		t.Errorf("host aliases after adopting db = %+v, want %+v", p.Spec.HostAliases, want)
	}
	p, err = c.CoreV1().Pods("rttlab-r2").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.HostAliases) != 0 {
		t.Errorf("a member of another run got the alias: %+v", p.Spec.HostAliases)
	}
}

func node(name string, unschedulable bool, cpu, mem string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: unschedulable},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64", KernelVersion: "6.8.0-" + name,
				KubeletVersion: "v1.35.4", ContainerRuntimeVersion: "containerd://2.1.0"},
		}}
}

// Node is the first node by name that takes pods, with the apiserver's
// version.
func TestClusterNode(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(node("c", false, "2", "4Gi"), node("a", true, "16", "64Gi"), node("b", false, "4", "8Gi"))
	c.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.35.4"}
	got, err := (&Cluster{C: c}).Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := NodeInfo{Name: "b", OS: "linux", Arch: "arm64", Kernel: "6.8.0-b", Kubelet: "v1.35.4", Runtime: "containerd://2.1.0",
		CPUs: 4, MemBytes: 8 << 30, Server: "v1.35.4"}
	if got != want {
		t.Errorf("Node = %+v, want %+v", got, want)
	}
	_, err = (&Cluster{C: fake.NewClientset(node("a", true, "1", "1Gi"))}).Node(ctx)
	if !errors.Is(err, ErrNoCluster) {
		t.Errorf("Node of a cluster whose only node is cordoned = %v, want ErrNoCluster", err)
	}
	oneLine(t, err)
}

// hostNode is a node whose kubernetes.io/hostname label is host (none
// when empty), Ready unless notReady, cordoned when cordoned.
func hostNode(name, host string, notReady, cordoned bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	if host != "" {
		n.Labels = map[string]string{corev1.LabelHostname: host}
	}
	st := corev1.ConditionTrue
	if notReady {
		st = corev1.ConditionFalse
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	return n
}

// CheckNodes passes the nodes pinned pods can start on, and names the
// first that cannot in one line, with the cluster's nodes; it creates
// nothing.
func TestCheckNodes(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(hostNode("n1", "n1", false, false), hostNode("n2", "n2", false, false),
		hostNode("sick", "sick", true, false), hostNode("drained", "drained", false, true),
		hostNode("ip-10-0-0-5.ec2.internal", "ip-10-0-0-5", false, false), hostNode("bare", "", false, false))
	cl := &Cluster{C: c}
	for _, names := range [][]string{nil, {"n1"}, {"n1", "n2", "n2"}, {"ip-10-0-0-5"}} {
		if err := cl.CheckNodes(ctx, names); err != nil {
			t.Errorf("CheckNodes(%v) = %v", names, err)
		}
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"n1", "n9"}, `node "n9" is not in the cluster (its nodes: bare, drained, ip-10-0-0-5.ec2.internal, n1, n2, sick): name one of them under nodes:`},
		{[]string{"sick"}, "node sick is not Ready: pods pinned to it would not start; wait until kubectl get nodes shows it Ready, or pin to another (taking pods: bare, ip-10-0-0-5.ec2.internal, n1, n2)"},
		{[]string{"drained"}, "node drained is cordoned: pods pinned to it would not start; kubectl uncordon drained, or pin to another (taking pods:"},
		{[]string{"ip-10-0-0-5.ec2.internal"}, "node ip-10-0-0-5.ec2.internal carries kubernetes.io/hostname=ip-10-0-0-5, which pinned pods select on: name it ip-10-0-0-5 under nodes:"},
		{[]string{"bare"}, "node bare has no kubernetes.io/hostname label, which pinned pods select on: kubectl label node bare kubernetes.io/hostname=bare"},
	} {
		err := cl.CheckNodes(ctx, tc.names)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("CheckNodes(%v) = %v, want %q", tc.names, err, tc.want)
		}
		oneLine(t, err)
	}
	for _, a := range c.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("CheckNodes did %s %s: it only reads", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// A member removed through the cluster-wide Lab goes with its services,
// as through its run's own Lab: a member started in its place later
// creates its alias afresh.
func TestClusterRuntimeRemovesAMembersServices(t *testing.T) {
	_, rt, c := cluster(t)
	ctx := context.Background()
	m, err := rt.StartMember(ctx, runMember("app", "app"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.RemoveMember(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if svcs, _ := c.CoreV1().Services("rttlab-r1").List(ctx, metav1.ListOptions{}); len(svcs.Items) != 0 {
		t.Errorf("RemoveMember left services: %v", svcs.Items)
	}
}
