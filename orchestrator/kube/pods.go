package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rttlab/rttlab/internal/conc"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// StartMember creates a pod of s in the run's namespace, a headless
// service per alias that selects it, and waits until it runs; a member
// beside another is a session of the node agent on its target's node.
func (l *Lab) StartMember(ctx context.Context, s runtime.MemberSpec) (runtime.Member, error) {
	l, err := l.inRun(ctx, s.Labels)
	if err != nil {
		return runtime.Member{}, fmt.Errorf("start %s: %w", s.Name, err)
	}
	if s.Beside != "" {
		return l.startSession(ctx, s)
	}
	if errs := validation.IsDNS1123Label(s.Name); len(errs) > 0 {
		return runtime.Member{}, fmt.Errorf("start %s: the name cannot name a pod: %s", s.Name, errs[0])
	}
	for _, a := range s.Aliases {
		if errs := validation.IsDNS1035Label(a); len(errs) > 0 {
			return runtime.Member{}, fmt.Errorf("start %s: alias %q cannot name a service: %s", s.Name, a, errs[0])
		}
	}
	pod, err := l.podOf(s)
	if err != nil {
		return runtime.Member{}, fmt.Errorf("start %s: %w", s.Name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if _, err := l.C.CoreV1().Pods(l.Namespace).Create(cctx, pod, metav1.CreateOptions{}); err != nil {
		return runtime.Member{}, fmt.Errorf("start %s: create pod: %s", s.Name, firstLine(err.Error()))
	}
	id := memberID{Namespace: l.Namespace, Pod: s.Name, Container: memberContainer}
	m := runtime.Member{Name: s.Name, Role: s.Role, ID: id.String(), NetNS: runtime.NetNS(l.Namespace + "/" + s.Name)}
	for _, a := range s.Aliases {
		if err := l.createService(cctx, s, a); err != nil {
			return m, fmt.Errorf("start %s: service %s: %s", s.Name, a, firstLine(err.Error()))
		}
	}
	p, err := l.waitRunning(ctx, l.Namespace, s.Name, memberContainer)
	if err != nil {
		return m, fmt.Errorf("start %s: %w", s.Name, err)
	}
	m.Addr, m.Node = p.Status.PodIP, p.Spec.NodeName
	l.hosts.add(s.Aliases, m.Addr)
	return m, nil
}

// podOf is the pod of member s.
func (l *Lab) podOf(s runtime.MemberSpec) (*corev1.Pod, error) {
	labels, annotations := splitLabels(l.runLabels(s.Labels))
	if s.Role != "" {
		labels[runtime.LabelRole] = s.Role
	}
	labels[LabelMember] = s.Name
	env, err := envOf(s.Env)
	if err != nil {
		return nil, err
	}
	c := corev1.Container{
		Name:            memberContainer,
		Image:           l.Pulled(s.Image),
		Args:            s.Cmd, // the image's entrypoint stays, as Docker's Cmd
		Env:             env,
		ImagePullPolicy: l.pullPolicy(),
		SecurityContext: capsOf(s),
	}
	if s.NanoCPUs > 0 {
		cpu := *resource.NewMilliQuantity((s.NanoCPUs+999_999)/1_000_000, resource.DecimalSI)
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: cpu}
	}
	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: l.Namespace, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{c},
			HostAliases:                  l.hosts.aliases(),
			RestartPolicy:                corev1.RestartPolicyNever,
			EnableServiceLinks:           &no,
			AutomountServiceAccountToken: &no,
		},
	}
	sel := map[string]string{}
	if s.Platform != "" {
		goos, arch, _ := strings.Cut(s.Platform, "/")
		sel[corev1.LabelOSStable] = goos
		if arch != "" {
			sel[corev1.LabelArchStable] = arch
		}
	}
	if s.Node != "" {
		sel[corev1.LabelHostname] = s.Node
	}
	if len(sel) > 0 {
		pod.Spec.NodeSelector = sel
	}
	return pod, nil
}

// Pulled is the reference a member's pod pulls for ref: the one pushed
// to the registry for it, else ref itself.
func (l *Lab) Pulled(ref string) string {
	if p, ok := l.Pushed[ref]; ok {
		return p
	}
	return ref
}

// pullPolicy is Never without a registry: the images are on the nodes.
func (l *Lab) pullPolicy() corev1.PullPolicy {
	if l.Registry == "" {
		return corev1.PullNever
	}
	return corev1.PullIfNotPresent
}

// capsOf is the security context of s's capabilities.
func capsOf(s runtime.MemberSpec) *corev1.SecurityContext {
	if !s.DropAllCaps && len(s.CapAdd) == 0 {
		return nil
	}
	caps := &corev1.Capabilities{}
	if s.DropAllCaps {
		caps.Drop = []corev1.Capability{"ALL"}
	}
	for _, c := range s.CapAdd {
		caps.Add = append(caps.Add, corev1.Capability(c))
	}
	return &corev1.SecurityContext{Capabilities: caps}
}

// envOf reads KEY=value pairs.
func envOf(env []string) ([]corev1.EnvVar, error) {
	var out []corev1.EnvVar
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("environment %q is not KEY=value", kv)
		}
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out, nil
}

// splitLabels keeps as labels what Kubernetes takes as one, and the rest
// (a value too long or with characters a label refuses, such as a member
// ID) as annotations of the same key.
func splitLabels(in map[string]string) (labels, annotations map[string]string) {
	labels = map[string]string{}
	for k, v := range in {
		if len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0 {
			labels[k] = v
			continue
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[k] = v
	}
	return labels, annotations
}

// createService creates the headless service alias that resolves to
// member s's pod, its address listed before the pod is ready.
func (l *Lab) createService(ctx context.Context, s runtime.MemberSpec, alias string) error {
	labels := l.runLabels(nil)
	labels[LabelMember] = s.Name
	if s.Role != "" {
		labels[runtime.LabelRole] = s.Role
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: alias, Namespace: l.Namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{runtime.LabelRun: l.RunID, LabelMember: s.Name},
			PublishNotReadyAddresses: true,
		},
	}
	_, err := l.C.CoreV1().Services(l.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	return err
}

// waitRunning waits until container c of pod name runs, and fails as
// soon as it cannot: the pod ended, or the container waits on a reason
// that does not pass by itself (an image missing on the node, a bad
// spec).
func (l *Lab) waitRunning(ctx context.Context, namespace, name, c string) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, l.startLimit())
	defer cancel()
	last := "pending"
	for {
		p, err := l.C.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, errors.New("the pod is gone")
		case err != nil && ctx.Err() == nil:
			return nil, fmt.Errorf("read pod: %s", firstLine(err.Error()))
		case err == nil:
			st := containerState(p, c)
			if st.Running && p.Status.Phase == corev1.PodRunning {
				return p, nil
			}
			if reason, stuck := stuckReason(p, c); stuck {
				return p, errors.New(reason)
			}
			last = st.Reason
		}
		if err := conc.Sleep(ctx, l.poll()); err != nil {
			return nil, fmt.Errorf("not running after %s (%s)", l.startLimit(), last)
		}
	}
}

// stuckReason says why container c of p will not run, when it will not.
func stuckReason(p *corev1.Pod, c string) (string, bool) {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		st := containerState(p, c)
		return fmt.Sprintf("the pod ended (%s, exit code %d)", st.Reason, st.ExitCode), true
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != c || cs.State.Waiting == nil {
			continue
		}
		w := cs.State.Waiting
		switch w.Reason {
		case "ErrImageNeverPull":
			return fmt.Sprintf("image %s is not on node %s (%s): import it there with `docker save %s | ctr -n k8s.io images import -`", cs.Image, p.Spec.NodeName, w.Reason, cs.Image), true
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff":
			return fmt.Sprintf("%s: %s", w.Reason, firstLine(w.Message)), true
		}
	}
	return "", false
}

// containerState is the runtime's state of container c of p.
func containerState(p *corev1.Pod, c string) runtime.State {
	for _, cs := range append(p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses...) {
		if cs.Name != c {
			continue
		}
		switch st := cs.State; {
		case st.Running != nil:
			return runtime.State{Running: true, Reason: "running"}
		case st.Terminated != nil:
			return runtime.State{ExitCode: int(st.Terminated.ExitCode), Reason: st.Terminated.Reason}
		case st.Waiting != nil:
			return runtime.State{Reason: st.Waiting.Reason}
		}
	}
	return runtime.State{Reason: strings.ToLower(string(p.Status.Phase))}
}

// startLimit bounds a wait for something a run starts to be there: a
// member running, its namespace made.
func (l *Lab) startLimit() time.Duration {
	if l.StartTimeout > 0 {
		return l.StartTimeout
	}
	return startTimeout
}

func (l *Lab) poll() time.Duration {
	if l.Poll > 0 {
		return l.Poll
	}
	return 250 * time.Millisecond
}

// State reads member id's container status; ErrNotFound once its pod is
// gone.
func (l *Lab) State(ctx context.Context, id string) (runtime.State, error) {
	m, err := parseID(id)
	if err != nil {
		return runtime.State{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	if m.Session != "" {
		return l.sessionState(ctx, m)
	}
	p, err := l.C.CoreV1().Pods(m.Namespace).Get(ctx, m.Pod, metav1.GetOptions{})
	if err != nil {
		return runtime.State{}, l.podErr("state", m, err)
	}
	return containerState(p, m.Container), nil
}

// podErr is err of a call on m's pod: ErrNotFound when it is gone.
func (l *Lab) podErr(what string, m memberID, err error) error {
	if apierrors.IsNotFound(err) {
		return notFound(fmt.Sprintf("%s %s", what, m))
	}
	return fmt.Errorf("%s %s: %s", what, m, firstLine(err.Error()))
}

// StopMember deletes member id's pod with a grace period (Kubernetes
// does not keep a stopped pod to start again) and waits until it is
// gone; a session gets SIGTERM, then SIGKILL after grace.
func (l *Lab) StopMember(ctx context.Context, id string, grace time.Duration) error {
	m, err := parseID(id)
	if err != nil {
		return err
	}
	if m.Session != "" {
		return l.stopSession(ctx, m, grace, false)
	}
	return l.deletePod(ctx, m, grace)
}

// RemoveMember deletes member id's pod at once, with its services; a
// session is killed and its files removed.
func (l *Lab) RemoveMember(ctx context.Context, id string) error {
	m, err := parseID(id)
	if err != nil {
		return err
	}
	if m.Session != "" {
		return l.stopSession(ctx, m, 0, true)
	}
	err = l.deletePod(ctx, m, 0)
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	// The member's namespace is its run's: its services are found by the
	// member alone, whichever Lab (a run's or the cluster's) removes it.
	sel := metav1.ListOptions{LabelSelector: LabelMember + "=" + m.Pod}
	svcs, lerr := l.C.CoreV1().Services(m.Namespace).List(ctx, sel)
	if lerr != nil {
		return errors.Join(err, fmt.Errorf("services of %s: %s", m, firstLine(lerr.Error())))
	}
	for _, s := range svcs.Items {
		if derr := l.C.CoreV1().Services(m.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			err = errors.Join(err, fmt.Errorf("service %s/%s: %s", m.Namespace, s.Name, firstLine(derr.Error())))
		}
	}
	return err
}

// deletePod deletes m's pod with grace and waits, a little beyond the
// grace, until it is gone; one gone already is not an error.
func (l *Lab) deletePod(ctx context.Context, m memberID, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, grace+shortCall)
	defer cancel()
	secs := int64(grace / time.Second)
	pods := l.C.CoreV1().Pods(m.Namespace)
	if err := pods.Delete(ctx, m.Pod, metav1.DeleteOptions{GracePeriodSeconds: &secs}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("delete %s: %s", m, firstLine(err.Error()))
	}
	for {
		_, err := pods.Get(ctx, m.Pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err := conc.Sleep(ctx, l.poll()); err != nil {
			return fmt.Errorf("delete %s: the pod is still there after %s", m, grace+shortCall)
		}
	}
}
