package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// Doctor checks what a run needs of the cluster, a line each: the
// apiserver's version, the nodes that are Ready, the rights a run uses
// (namespaces, and in namespace pods, pods/exec and a privileged pod
// with the host's PIDs for the node agent: asked of the apiserver, the
// last as a dry run that admission judges as it would the real pod), and
// whether every node lists agentImage. Each node's kernel (sch_netem, NFQUEUE) is read by
// the node agent once the agent image is on the node; until then the
// check says it was not read.
func (c *Cluster) Doctor(ctx context.Context, agentImage, namespace string) []runtime.Check {
	ctx, cancel := context.WithTimeout(ctx, 2*shortCall)
	defer cancel()
	var out []runtime.Check
	v, err := c.C.Discovery().ServerVersion()
	if err != nil {
		out = append(out, runtime.Check{Name: "cluster", Required: true, Detail: firstLine(err.Error()), Fix: "start the cluster, or name its kubeconfig with --kubeconfig"})
		return out
	}
	out = append(out, runtime.Check{Name: "cluster", OK: true, Required: true, Detail: fmt.Sprintf("Kubernetes %s at %s", v.GitVersion, c.Host)})
	out = append(out, c.nodesCheck(ctx))
	for _, r := range []struct{ name, verb, resource, sub, ns string }{
		{"right: namespaces", "create", "namespaces", "", ""},
		{"right: delete namespaces", "delete", "namespaces", "", ""},
		{"right: pods", "create", "pods", "", namespace},
		{"right: pods/exec", "create", "pods", "exec", namespace},
	} {
		out = append(out, c.rightCheck(ctx, r.name, r.verb, r.resource, r.sub, r.ns))
	}
	out = append(out, c.privilegedCheck(ctx, agentImage, namespace))
	out = append(out, c.imageCheck(ctx, agentImage))
	out = append(out, runtime.Check{Name: "node kernels", Detail: "sch_netem and NFQUEUE are read by the node agent when a run starts it",
		Fix: "import the agent image on every node; a run then says which shaper each node's kernel allows"})
	return out
}

// nodesCheck counts the Ready nodes that take pods.
func (c *Cluster) nodesCheck(ctx context.Context) runtime.Check {
	ch := runtime.Check{Name: "nodes", Required: true}
	nodes, err := c.C.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		ch.Detail, ch.Fix = firstLine(err.Error()), "give the kubeconfig's user the right to list nodes"
		return ch
	}
	var ready, notReady []string
	for _, n := range nodes.Items {
		if nodeTakesPods(n) {
			ready = append(ready, n.Name)
		} else {
			notReady = append(notReady, n.Name)
		}
	}
	ch.OK = len(ready) > 0
	ch.Detail = fmt.Sprintf("%d Ready and taking pods (%s)", len(ready), strings.Join(ready, ", "))
	if len(notReady) > 0 {
		ch.Detail += fmt.Sprintf("; not: %s", strings.Join(notReady, ", "))
	}
	if !ch.OK {
		ch.Fix = "start a kubelet that registers a Ready node"
	}
	return ch
}

// rightCheck asks the apiserver whether the kubeconfig's user may verb
// resource (its sub-resource sub) in namespace ns ("": cluster-wide).
func (c *Cluster) rightCheck(ctx context.Context, name, verb, resource, sub, ns string) runtime.Check {
	ch := runtime.Check{Name: name, Required: true}
	what := verb + " " + resource
	if sub != "" {
		what += "/" + sub
	}
	if ns != "" {
		what += " in " + ns
	}
	r, err := c.C.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
		Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{Verb: verb, Resource: resource, Subresource: sub, Namespace: ns}},
	}, metav1.CreateOptions{})
	switch {
	case err != nil:
		ch.Detail, ch.Fix = fmt.Sprintf("%s: not asked (%s)", what, firstLine(err.Error())), "give the kubeconfig's user the right to create selfsubjectaccessreviews"
	case r.Status.Allowed:
		ch.OK, ch.Detail = true, what+": allowed"
	default:
		ch.Detail = what + ": denied"
		if r.Status.Reason != "" {
			ch.Detail += " (" + firstLine(r.Status.Reason) + ")"
		}
		ch.Fix = fmt.Sprintf("bind the kubeconfig's user to a role that may %s", what)
	}
	return ch
}

// privilegedCheck creates, as a dry run in namespace, the kind of pod
// the node agent is: privileged, with the host's PIDs.
func (c *Cluster) privilegedCheck(ctx context.Context, image, namespace string) runtime.Check {
	ch := runtime.Check{Name: "privileged pods", Required: true}
	priv := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rttlab-doctor-node-agent", Labels: map[string]string{runtime.LabelRole: "doctor"}},
		Spec: corev1.PodSpec{HostPID: true, RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "agent", Image: image, ImagePullPolicy: corev1.PullNever, SecurityContext: &corev1.SecurityContext{Privileged: &priv},
		}}},
	}
	_, err := c.C.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		ch.Detail = "a privileged pod with the host's PIDs is refused in " + namespace + ": " + firstLine(err.Error())
		ch.Fix = "let rttlab's namespaces admit privileged pods (Pod Security: label them pod-security.kubernetes.io/enforce=privileged) and give the user the right to create them"
		return ch
	}
	ch.OK, ch.Detail = true, "a privileged pod with the host's PIDs is admitted in "+namespace+" (dry run)"
	return ch
}

// imageCheck says which nodes lack image.
func (c *Cluster) imageCheck(ctx context.Context, image string) runtime.Check {
	ch := runtime.Check{Name: "agent image"}
	missing, err := nodesWithout(ctx, c.C, image)
	switch {
	case err != nil:
		ch.Detail = firstLine(err.Error())
	case len(missing) > 0:
		ch.Detail = fmt.Sprintf("%s is not on node %s", image, strings.Join(missing, ", "))
		ch.Fix = fmt.Sprintf("rttlab images build agent, then on each node `docker save %s | ctr -n k8s.io images import -`, or name a registry", image)
	default:
		ch.OK, ch.Detail = true, image+" is on every node"
	}
	return ch
}

// Runs lists the runs that have a namespace on the cluster (labelled
// io.rttlab.run), each once, in order.
func (c *Cluster) Runs(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	list, err := c.C.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: runtime.LabelRun})
	if err != nil {
		return nil, fmt.Errorf("list rttlab's namespaces: %s", firstLine(err.Error()))
	}
	var runs []string
	for _, ns := range list.Items {
		if id := ns.Labels[runtime.LabelRun]; id != "" && !slices.Contains(runs, id) {
			runs = append(runs, id)
		}
	}
	slices.Sort(runs)
	return runs, nil
}

// Lab is the runtime of run runID on the cluster, in namespace (empty:
// rttlab-<runID>).
func (c *Cluster) Lab(namespace, runID string) *Lab { return NewLab(c.C, c.X, namespace, runID) }
