// Package kube is the Kubernetes runtime of the lab (runtime.Runtime)
// over client-go: a run is a namespace rttlab-<run> labelled with the run,
// a member a pod in it (imagePullPolicy Never unless a registry is named,
// restartPolicy Never) reached by its aliases through a headless service
// each, and exec and logs go over the API (pods/exec, pods/log).
//
// A member started beside another (an agent that shapes, captures and
// probes its target's traffic, the routing proxy) runs as a session of a
// node agent: a privileged pod of the agent image with hostPID, pinned on
// the target's node, in the run's namespace. A session finds a process of
// the target's container by its container ID in /proc/*/cgroup and runs
// the member's command under nsenter in that process's network namespace
// (/proc/<pid>/ns/net), its capabilities cut to the member's by setpriv;
// an exec in the member enters the same namespace. This is how Chaos
// Mesh's chaos-daemon reaches a pod, and it is chosen over the two other
// ways a process can share a pod's network namespace:
//
//   - An ephemeral container added to the target pod (the
//     pods/ephemeralcontainers subresource) edits the target's pod spec
//     for good: ephemeral containers can be neither removed nor
//     restarted, stay listed in the pod's status after they exit, take no
//     resource limits, and need the right to update the user's pods. The
//     lab's reason to exist on a cluster is to measure the user's own app
//     where it already runs, and that app must never be edited or
//     restarted by a measurement; a run's agents must go with its
//     namespace and leave nothing on pods outside it.
//   - A second container declared in the member's pod when it is created
//     works for rttlab's own pods only, and only when every agent is known
//     before its target starts; the lab starts agents after their targets
//     (StartMember with Beside), with a command that depends on the study,
//     and a pod's containers cannot be added once it exists.
//
// The node agent leaves the target's pod untouched, serves any pod on its
// node whoever started it, and goes with the run's namespace. Its price
// is a privileged pod with the host's PIDs and network (a wire shaper
// holds pods' packets on the node's bridge from it): it needs a namespace that
// admits privileged pods (Pod Security "privileged"), and its sessions'
// capabilities are cut by setpriv rather than by the container runtime.
// Each session has a mount namespace of its own, in which its own
// folder is /run/rttlab, as each agent container has on Docker (an
// agent serves its shaper on /run/rttlab/agent.sock). The session
// scripts use sh, grep, unshare, mount, nsenter and setpriv, which the
// agent image (Debian) has.
//
// Member IDs are namespace/pod/container for a pod's member and
// namespace/pod/container/session for a session of the node agent pod;
// a member's NetNS is its pod, namespace/pod.
package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/rttlab/rttlab/internal/conc"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// ErrNoCluster is returned when no Kubernetes apiserver answers: no
// kubeconfig, one that cannot be read, or a server that does not answer.
var ErrNoCluster = errors.New("no Kubernetes cluster answers")

// Labels of the runtime's own, beside runtime.LabelRun and LabelRole.
const (
	// LabelMember is the member's name on its pod, which its services
	// select.
	LabelMember = "io.rttlab.member"
	// RoleNodeAgent is the LabelRole of a node agent pod.
	RoleNodeAgent = "node-agent"
)

// memberContainer is the name of a member's container in its pod.
const memberContainer = "member"

// Timeouts of the runtime's calls.
const (
	shortCall    = 30 * time.Second
	pingTimeout  = 5 * time.Second
	startTimeout = 3 * time.Minute // image pulls from a registry included
)

// Options say which cluster and which run.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty: KUBECONFIG, then
	// ~/.kube/config.
	Kubeconfig string
	// Namespace is the run's namespace; empty: rttlab-<RunID>.
	Namespace string
	// RunID is the run whose namespace the lab uses.
	RunID string
	// Registry, when set, is where the nodes pull images from: members
	// then use imagePullPolicy IfNotPresent, and EnsureImage leaves the
	// pull to the kubelet. Empty: the images must be on the nodes
	// already (imagePullPolicy Never).
	Registry string
}

// Lab is the Kubernetes runtime of one run.
type Lab struct {
	C kubernetes.Interface
	// X runs commands in pods (pods/exec).
	X Executor
	// Namespace is the run's namespace, RunID the run it is labelled
	// with.
	Namespace string
	RunID     string
	// Registry as in Options; Pushed maps the image a member names to
	// the one pushed there for it (rttlab's images, tagged by content),
	// which its pod pulls. An image not in it is used as it is.
	Registry string
	Pushed   map[string]string
	// Poll is how often a wait reads a pod again.
	Poll time.Duration
	// StartTimeout bounds the wait for a member to run.
	StartTimeout time.Duration
	// runs, on a cluster-wide Lab (Cluster.Runtime), holds each run's
	// Lab; hosts, on a run's, its members' addresses by alias.
	runs  *runsOf
	hosts hosts
}

var _ runtime.Runtime = (*Lab)(nil)

// NewLab is the runtime of run runID in namespace (empty:
// rttlab-<runID>) on the cluster c, exec going through x.
func NewLab(c kubernetes.Interface, x Executor, namespace, runID string) *Lab {
	if namespace == "" && runID != "" {
		namespace = RunNamespace(runID)
	}
	return &Lab{C: c, X: x, Namespace: namespace, RunID: runID, Poll: 250 * time.Millisecond, StartTimeout: startTimeout}
}

// RunNamespace is the namespace of run runID.
func RunNamespace(runID string) string { return "rttlab-" + runID }

// New connects to the cluster of o's kubeconfig, checks that its
// apiserver answers, and returns the runtime of o's run. The run's
// namespace is created by OpenRun. An error wraps ErrNoCluster when no
// cluster answers.
func New(ctx context.Context, o Options) (*Lab, error) {
	if err := checkRunID(o.RunID); err != nil {
		return nil, err
	}
	cl, err := Connect(ctx, o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	l := NewLab(cl.C, cl.X, o.Namespace, o.RunID)
	l.Registry = o.Registry
	return l, nil
}

// Cluster is a connection to a cluster, before or beside any run: what
// doctor and clean use.
type Cluster struct {
	C kubernetes.Interface
	X Executor
	// Host is the apiserver's address, as the kubeconfig names it.
	Host string
}

// Connect reads the kubeconfig (path, else KUBECONFIG, else
// ~/.kube/config) and checks that its apiserver answers; an error wraps
// ErrNoCluster when none does.
func Connect(ctx context.Context, kubeconfig string) (*Cluster, error) {
	quietClient()
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: kubernetes client: %s", ErrNoCluster, firstLine(err.Error()))
	}
	if err := ping(ctx, c, cfg.Host); err != nil {
		return nil, err
	}
	return &Cluster{C: c, X: &apiExecutor{cfg: cfg, c: c}, Host: cfg.Host}, nil
}

// quietClient stops client-go's own log (klog) from writing to the
// terminal: the end of an exec's stream it reports as an "Unhandled
// Error" is how every exec whose command ends before its input does
// ends, and rttlab reports an exec's failure itself.
func quietClient() {
	klog.SetLogger(logr.Discard())
}

// restConfig reads the kubeconfig: path, else KUBECONFIG, else
// ~/.kube/config.
func restConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	switch {
	case err != nil && clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("%w: no kubeconfig (name one with --kubeconfig or KUBECONFIG, or write ~/.kube/config)", ErrNoCluster)
	case err != nil:
		return nil, fmt.Errorf("%w: kubeconfig: %s", ErrNoCluster, firstLine(err.Error()))
	}
	cfg.UserAgent = "rttlab"
	return cfg, nil
}

// ping asks the apiserver for its version.
func ping(ctx context.Context, c kubernetes.Interface, host string) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	err := c.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return fmt.Errorf("%w: the apiserver at %s refuses the kubeconfig's credentials (%s)", ErrNoCluster, host, firstLine(err.Error()))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%w at %s (%s): check that the cluster runs and that the kubeconfig names its apiserver", ErrNoCluster, host, firstLine(err.Error()))
}

// checkRunID refuses a run id that cannot name a namespace.
func checkRunID(runID string) error {
	if runID == "" {
		return errors.New("kubernetes runtime: empty run id")
	}
	if errs := validation.IsDNS1123Label(RunNamespace(runID)); len(errs) > 0 {
		return fmt.Errorf("run id %q cannot name a namespace: %s", runID, errs[0])
	}
	if errs := validation.IsValidLabelValue(runID); len(errs) > 0 {
		return fmt.Errorf("run id %q cannot be a label value: %s", runID, errs[0])
	}
	return nil
}

// OpenRun creates the run's namespace, labelled with the run, as a Docker
// run creates its network; a namespace of that name that is the run's
// already is kept, one that is not is refused.
func (l *Lab) OpenRun(ctx context.Context) error {
	if err := checkRunID(l.RunID); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.startLimit())
	defer cancel()
	for {
		done, err := l.createNamespace(ctx)
		if err != nil {
			return err
		}
		if done {
			break
		}
		// The run's namespace of a stack removed a moment ago (a fresh
		// stack after a failed attempt) is still being deleted: a new
		// one of the name can be made once it is gone.
		if err := conc.Sleep(ctx, l.poll()); err != nil {
			return fmt.Errorf("namespace %s: still being deleted: %w", l.Namespace, err)
		}
	}
	// The apiserver admits no pod in a namespace without its default
	// service account, which the controller manager makes a moment
	// after the namespace: the run makes it at once.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: l.Namespace, Labels: l.runLabels(nil)}}
	if _, err := l.C.CoreV1().ServiceAccounts(l.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: default service account: %s", l.Namespace, firstLine(err.Error()))
	}
	return nil
}

// createNamespace creates the run's namespace, or finds it the run's
// already; false when one of the name is still being deleted.
func (l *Lab) createNamespace(ctx context.Context) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace, Labels: l.runLabels(nil)}}
	_, err := l.C.CoreV1().Namespaces().Create(cctx, ns, metav1.CreateOptions{})
	if err == nil {
		return true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("namespace %s: %s", l.Namespace, firstLine(err.Error()))
	}
	got, err := l.C.CoreV1().Namespaces().Get(cctx, l.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil // deleted between the two calls
	case err != nil:
		return false, fmt.Errorf("namespace %s: %s", l.Namespace, firstLine(err.Error()))
	case got.Labels[runtime.LabelRun] != l.RunID:
		return false, fmt.Errorf("namespace %s exists and is not run %s's (no label %s=%s): choose another run id or namespace", l.Namespace, l.RunID, runtime.LabelRun, l.RunID)
	case got.DeletionTimestamp != nil:
		return false, nil
	}
	return true, nil
}

// runLabels are extra with the run's label, which always wins: every
// object the lab creates carries it.
func (l *Lab) runLabels(extra map[string]string) map[string]string {
	out := maps.Clone(extra)
	if out == nil {
		out = map[string]string{}
	}
	out[runtime.LabelRun] = l.RunID
	return out
}

// memberID is what a member's ID names.
type memberID struct {
	Namespace, Pod, Container string
	// Session is set for a session of a node agent.
	Session string
}

func (m memberID) String() string {
	s := m.Namespace + "/" + m.Pod + "/" + m.Container
	if m.Session != "" {
		s += "/" + m.Session
	}
	return s
}

// parseID reads a member ID.
func parseID(id string) (memberID, error) {
	p := strings.Split(id, "/")
	if (len(p) != 3 && len(p) != 4) || p[0] == "" || p[1] == "" || p[2] == "" || (len(p) == 4 && p[3] == "") {
		return memberID{}, fmt.Errorf("member %q: not a Kubernetes member ID (namespace/pod/container[/session])", id)
	}
	m := memberID{Namespace: p[0], Pod: p[1], Container: p[2]}
	if len(p) == 4 {
		m.Session = p[3]
	}
	return m, nil
}

// parseNetNS reads a NetNS: namespace/pod.
func parseNetNS(ns runtime.NetNS) (namespace, pod string, err error) {
	namespace, pod, ok := strings.Cut(string(ns), "/")
	if !ok || namespace == "" || pod == "" || strings.Contains(pod, "/") {
		return "", "", fmt.Errorf("network namespace %q: not a Kubernetes pod (namespace/pod)", ns)
	}
	return namespace, pod, nil
}

// firstLine is the first non-blank line of s, trimmed: errors stay one
// line.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// notFound wraps runtime.ErrNotFound for what.
func notFound(what string) error { return fmt.Errorf("%s: %w", what, runtime.ErrNotFound) }
