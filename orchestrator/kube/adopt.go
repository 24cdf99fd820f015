package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

var _ runtime.Adopter = (*Lab)(nil)

// Adopt finds the running pod of s.Target (pod/NAME, deploy/NAME or
// statefulset/NAME, and their long names, in s.Namespace) and returns it
// as a member of s's run: its container (s.Container, or its only one),
// its address, node and network namespace, its container's environment
// and its instance. Nothing of the pod is changed; the run's members
// started after it reach it as s.Alias. A target that does not exist,
// has no ready pod, or has several containers and no s.Container is a
// one-line error.
func (l *Lab) Adopt(ctx context.Context, s runtime.AdoptSpec) (runtime.Adopted, error) {
	l, err := l.inRun(ctx, s.Labels)
	if err != nil {
		return runtime.Adopted{}, fmt.Errorf("%s: %w", s.Target, err)
	}
	p, c, env, err := l.find(ctx, s.Namespace, s.Target, s.Container)
	if err != nil {
		return runtime.Adopted{}, err
	}
	ns := p.Namespace
	id := memberID{Namespace: ns, Pod: p.Name, Container: c.Name}
	a := runtime.Adopted{
		Member: runtime.Member{Name: p.Name, ID: id.String(), Addr: p.Status.PodIP, Node: p.Spec.NodeName,
			NetNS: runtime.NetNS(ns + "/" + p.Name)},
		Env:      env,
		Instance: instanceOf(p, c.Name),
	}
	if s.Alias != "" {
		l.hosts.add([]string{s.Alias}, a.Addr)
	}
	return a, nil
}

// InstanceOf reads the pod UID and the restart count of member id's
// container.
func (l *Lab) InstanceOf(ctx context.Context, id string) (runtime.Instance, error) {
	m, err := parseID(id)
	if err != nil {
		return runtime.Instance{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	p, err := l.C.CoreV1().Pods(m.Namespace).Get(ctx, m.Pod, metav1.GetOptions{})
	if err != nil {
		return runtime.Instance{}, l.podErr("read", m, err)
	}
	return instanceOf(p, m.Container), nil
}

func instanceOf(p *corev1.Pod, container string) runtime.Instance {
	in := runtime.Instance{UID: string(p.UID)}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			in.Restarts = int(cs.RestartCount)
		}
	}
	return in
}

// targetPod is the ready pod target names in ns: the pod itself, or the
// first ready pod (by name) its Deployment's or StatefulSet's selector
// selects.
func (l *Lab) targetPod(ctx context.Context, ns, target string) (*corev1.Pod, error) {
	kind, name, ok := strings.Cut(target, "/")
	if !ok || name == "" {
		return nil, fmt.Errorf("target %q: name it kind/name: pod/NAME, deploy/NAME or statefulset/NAME", target)
	}
	var sel *metav1.LabelSelector
	var err error
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		p, err := l.C.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, targetErr(target, ns, err)
		}
		if !podReady(p) {
			return nil, fmt.Errorf("%s in %s is not ready (%s): measure a running app", target, ns, strings.ToLower(string(p.Status.Phase)))
		}
		return p, nil
	case "deploy", "deployment", "deployments":
		d, gerr := l.C.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if gerr == nil {
			sel = d.Spec.Selector
		}
		err = gerr
	case "sts", "statefulset", "statefulsets":
		s, gerr := l.C.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if gerr == nil {
			sel = s.Spec.Selector
		}
		err = gerr
	default:
		return nil, fmt.Errorf("target %q: kind %s: use pod, deploy or statefulset", target, kind)
	}
	if err != nil {
		return nil, targetErr(target, ns, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if sel == nil || err != nil || selector.Empty() {
		return nil, fmt.Errorf("%s in %s: its selector selects no pod by label", target, ns)
	}
	pods, err := l.C.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("%s in %s: list its pods: %s", target, ns, firstLine(err.Error()))
	}
	items := slices.Clone(pods.Items)
	slices.SortFunc(items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i := range items {
		if podReady(&items[i]) {
			return &items[i], nil
		}
	}
	return nil, fmt.Errorf("%s in %s has no ready pod (%d pods): measure a running app", target, ns, len(items))
}

func targetErr(target, ns string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s not found in namespace %s: name a running pod, deploy or statefulset (and --namespace)", target, ns)
	}
	return fmt.Errorf("%s in %s: %s", target, ns, firstLine(err.Error()))
}

// podReady says whether p runs, is not being deleted, has an address
// and is Ready.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Status.PodIP == "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pickContainer is p's container named name, or its only one.
func pickContainer(p *corev1.Pod, name string) (*corev1.Container, error) {
	var names []string
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if c.Name == name {
			return c, nil
		}
		names = append(names, c.Name)
	}
	if name != "" {
		return nil, fmt.Errorf("pod %s has no container %s (its containers: %s)", p.Name, name, strings.Join(names, ", "))
	}
	if len(names) != 1 {
		return nil, fmt.Errorf("pod %s has containers %s: name the one meant with --container", p.Name, strings.Join(names, ", "))
	}
	return &p.Spec.Containers[0], nil
}

// containerEnv is c's environment as its spec sets it: values, and those
// it takes from a Secret, a ConfigMap or the pod's fields (envFrom's
// included); a reference that cannot be read is an error.
func (l *Lab) containerEnv(ctx context.Context, p *corev1.Pod, c *corev1.Container) ([]string, error) {
	var out []string
	for _, ef := range c.EnvFrom {
		kv, err := l.envFrom(ctx, p.Namespace, ef)
		optional := (ef.SecretRef != nil && ef.SecretRef.Optional != nil && *ef.SecretRef.Optional) ||
			(ef.ConfigMapRef != nil && ef.ConfigMapRef.Optional != nil && *ef.ConfigMapRef.Optional)
		if err != nil && optional {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, kv...)
	}
	for _, e := range c.Env {
		v := e.Value
		if src := e.ValueFrom; src != nil {
			var err error
			optional := false
			switch {
			case src.SecretKeyRef != nil:
				optional = src.SecretKeyRef.Optional != nil && *src.SecretKeyRef.Optional
				v, err = l.secretKey(ctx, p.Namespace, src.SecretKeyRef.Name, src.SecretKeyRef.Key)
			case src.ConfigMapKeyRef != nil:
				optional = src.ConfigMapKeyRef.Optional != nil && *src.ConfigMapKeyRef.Optional
				v, err = l.configMapKey(ctx, p.Namespace, src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key)
			case src.FieldRef != nil && src.FieldRef.FieldPath == "status.podIP":
				v = p.Status.PodIP
			case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.name":
				v = p.Name
			case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.namespace":
				v = p.Namespace
			default:
				continue // not a credential rttlab reads
			}
			if err != nil && optional {
				continue // the pod runs without it, as the kubelet starts it
			}
			if err != nil {
				return nil, fmt.Errorf("environment %s: %w", e.Name, err)
			}
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

func (l *Lab) envFrom(ctx context.Context, ns string, ef corev1.EnvFromSource) ([]string, error) {
	var data map[string]string
	switch {
	case ef.SecretRef != nil:
		s, err := l.C.CoreV1().Secrets(ns).Get(ctx, ef.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("envFrom secret %s: %s", ef.SecretRef.Name, firstLine(err.Error()))
		}
		data = map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
	case ef.ConfigMapRef != nil:
		cm, err := l.C.CoreV1().ConfigMaps(ns).Get(ctx, ef.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("envFrom configmap %s: %s", ef.ConfigMapRef.Name, firstLine(err.Error()))
		}
		data = cm.Data
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(data)) {
		out = append(out, ef.Prefix+k+"="+data[k])
	}
	return out, nil
}

func (l *Lab) secretKey(ctx context.Context, ns, name, key string) (string, error) {
	s, err := l.C.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("secret %s: %s", name, firstLine(err.Error()))
	}
	v, ok := s.Data[key]
	if !ok {
		return "", fmt.Errorf("secret %s has no key %s", name, key)
	}
	return string(v), nil
}

func (l *Lab) configMapKey(ctx context.Context, ns, name, key string) (string, error) {
	cm, err := l.C.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("configmap %s: %s", name, firstLine(err.Error()))
	}
	v, ok := cm.Data[key]
	if !ok {
		return "", fmt.Errorf("configmap %s has no key %s", name, key)
	}
	return v, nil
}

// CheckTarget says, before a run creates anything, whether target (and
// container) names a ready pod in namespace: the error is Adopt's.
func (c *Cluster) CheckTarget(ctx context.Context, namespace, target, container string) error {
	_, _, _, err := NewLab(c.C, c.X, "", "").find(ctx, namespace, target, container)
	return err
}

// find is the ready pod of target in namespace (empty: default), its
// container (container, or its only one) and that container's
// environment: what Adopt takes, and CheckTarget checks.
func (l *Lab) find(ctx context.Context, namespace, target, container string) (*corev1.Pod, *corev1.Container, []string, error) {
	if namespace == "" {
		namespace = "default"
	}
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	p, err := l.targetPod(ctx, namespace, target)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := pickContainer(p, container)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s in %s: %w", target, namespace, err)
	}
	env, err := l.containerEnv(ctx, p, c)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s in %s: %w", target, namespace, err)
	}
	return p, c, env, nil
}
