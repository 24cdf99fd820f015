package kube

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// runsOf is what a cluster-wide Lab (Cluster.Runtime) keeps: the Lab of
// each run it started a member of, its namespace opened once.
type runsOf struct {
	mu   sync.Mutex
	labs map[string]*Lab
}

// Runtime is the cluster's runtime for any run, as Docker's is for its
// engine: each member goes to the namespace of the run its labels name
// (runtime.LabelRun), rttlab-<run>, made and labelled at the run's first
// member; a study picks its runs' ids as it goes, and each stack it
// starts lands in a namespace of its own.
func (c *Cluster) Runtime() *Lab {
	l := NewLab(c.C, c.X, "", "")
	l.runs = &runsOf{labs: map[string]*Lab{}}
	return l
}

// inRun is the Lab that starts a member labelled labels: l itself, or,
// on a cluster-wide Lab, the Lab of the run the labels name (forRun).
func (l *Lab) inRun(ctx context.Context, labels map[string]string) (*Lab, error) {
	if l.runs == nil {
		return l, nil
	}
	return l.forRun(ctx, labels[runtime.LabelRun])
}

// forRun is the Lab of run runID, its namespace opened on first use.
func (l *Lab) forRun(ctx context.Context, runID string) (*Lab, error) {
	if runID == "" {
		return nil, fmt.Errorf("the member carries no %s label: which run's namespace it goes to is unknown", runtime.LabelRun)
	}
	l.runs.mu.Lock()
	defer l.runs.mu.Unlock()
	if rl := l.runs.labs[runID]; rl != nil {
		return rl, nil
	}
	rl := NewLab(l.C, l.X, "", runID)
	rl.Registry, rl.Pushed, rl.Poll, rl.StartTimeout = l.Registry, l.Pushed, l.Poll, l.StartTimeout
	if err := rl.OpenRun(ctx); err != nil {
		return nil, err
	}
	l.runs.labs[runID] = rl
	return rl, nil
}

// forget drops run runID's Lab once its namespace is deleted: a run of
// the same id later opens it again.
func (l *Lab) forget(runID string) {
	if l.runs == nil {
		return
	}
	l.runs.mu.Lock()
	delete(l.runs.labs, runID)
	l.runs.mu.Unlock()
}

// hosts is what a run's members find each other by without the
// cluster's DNS (a cluster may have none, as the one-node cluster of
// make test): each alias of a member started so far and its pod's
// address, written into the /etc/hosts of the members started after it
// (the pod's hostAliases), as compose's dependency order starts a
// database before the app that connects to it.
type hosts struct {
	mu sync.Mutex
	ip map[string]string
}

func (h *hosts) add(aliases []string, ip string) {
	if ip == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ip == nil {
		h.ip = map[string]string{}
	}
	for _, a := range aliases {
		h.ip[a] = ip
	}
}

// aliases are the pod's hostAliases: one per address, its names sorted.
func (h *hosts) aliases() []corev1.HostAlias {
	h.mu.Lock()
	defer h.mu.Unlock()
	by := map[string][]string{}
	for name, ip := range h.ip {
		by[ip] = append(by[ip], name)
	}
	var out []corev1.HostAlias
	for _, ip := range slices.Sorted(maps.Keys(by)) {
		names := by[ip]
		slices.Sort(names)
		out = append(out, corev1.HostAlias{IP: ip, Hostnames: names})
	}
	return out
}

// NodeInfo is what a node of the cluster runs: what a study records as
// its engine.
type NodeInfo struct {
	Name             string
	OS, Arch, Kernel string
	Kubelet          string
	Runtime          string // the container runtime, containerd://1.6.20
	CPUs             int
	MemBytes         int64
	// Server is the apiserver's version.
	Server string
}

// Node reads the first node that takes pods (by name), and the
// apiserver's version.
func (c *Cluster) Node(ctx context.Context) (NodeInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	nodes, err := c.C.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return NodeInfo{}, fmt.Errorf("list nodes: %s", firstLine(err.Error()))
	}
	items := slices.SortedFunc(slices.Values(nodes.Items), func(a, b corev1.Node) int {
		return strings.Compare(a.Name, b.Name)
	})
	for _, n := range items {
		if n.Spec.Unschedulable {
			continue
		}
		ni := n.Status.NodeInfo
		info := NodeInfo{Name: n.Name, OS: ni.OperatingSystem, Arch: ni.Architecture, Kernel: ni.KernelVersion,
			Kubelet: ni.KubeletVersion, Runtime: ni.ContainerRuntimeVersion,
			CPUs: int(n.Status.Capacity.Cpu().Value()), MemBytes: n.Status.Capacity.Memory().Value()}
		if v, err := c.C.Discovery().ServerVersion(); err == nil {
			info.Server = v.GitVersion
		}
		return info, nil
	}
	return NodeInfo{}, fmt.Errorf("the cluster has no node that takes pods: %w", ErrNoCluster)
}

// CheckNodes checks, before anything is created, that each of names is
// a node the members pinned to it (runtime.MemberSpec.Node, a node
// selector on kubernetes.io/hostname) can start on: a node of the
// cluster, its hostname label that name, Ready and not cordoned. The
// first that is not is one line, with the nodes the cluster has.
func (c *Cluster) CheckNodes(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	list, err := c.C.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %s", firstLine(err.Error()))
	}
	nodes := slices.SortedFunc(slices.Values(list.Items), func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	var all []string
	for _, n := range nodes {
		all = append(all, n.Name)
	}
	taking := takingPods(nodes)
	has := func(what string, names []string) string {
		return what + ": " + cmp.Or(strings.Join(names, ", "), "none")
	}
	for _, name := range names {
		i := slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Labels[corev1.LabelHostname] == name })
		if i < 0 {
			j := slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == name })
			if j < 0 {
				return fmt.Errorf("node %q is not in the cluster (%s): name one of them under nodes:", name, has("its nodes", all))
			}
			if h := nodes[j].Labels[corev1.LabelHostname]; h != "" {
				return fmt.Errorf("node %s carries %s=%s, which pinned pods select on: name it %s under nodes:", name, corev1.LabelHostname, h, h)
			}
			return fmt.Errorf("node %s has no %s label, which pinned pods select on: kubectl label node %s %s=%s", name, corev1.LabelHostname, name, corev1.LabelHostname, name)
		}
		n := nodes[i]
		switch {
		case !nodeReady(n):
			return fmt.Errorf("node %s is not Ready: pods pinned to it would not start; wait until kubectl get nodes shows it Ready, or pin to another (%s)", name, has("taking pods", taking))
		case n.Spec.Unschedulable:
			return fmt.Errorf("node %s is cordoned: pods pinned to it would not start; kubectl uncordon %s, or pin to another (%s)", name, n.Name, has("taking pods", taking))
		}
	}
	return nil
}

// nodeReady says whether node n's Ready condition is true.
func nodeReady(n corev1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}

// nodeTakesPods says whether node n is Ready and not cordoned.
func nodeTakesPods(n corev1.Node) bool { return nodeReady(n) && !n.Spec.Unschedulable }

// takingPods lists the names of the nodes that take pods, sorted.
func takingPods(nodes []corev1.Node) []string {
	var taking []string
	for _, n := range nodes {
		if nodeTakesPods(n) {
			taking = append(taking, n.Name)
		}
	}
	slices.Sort(taking)
	return taking
}
