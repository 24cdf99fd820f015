package kube

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rttlab/rttlab/orchestrator/agentclient"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// RemoveRun removes run runID: it ends the sessions of its node agents
// first (SIGTERM, so that the agents undo their shaping), then deletes
// the run's pods (SIGKILL after a second) and the namespaces labelled
// with the run, their services with them. rttlab-<runID> without the
// run's label is not rttlab's and is refused. The count is of the pods, services and namespaces deleted;
// the apiserver finishes a namespace's deletion after it answers.
func (l *Lab) RemoveRun(ctx context.Context, runID string) (int, error) {
	if runID == "" {
		return 0, errors.New("remove run: empty run id")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*shortCall)
	defer cancel()
	defer l.forget(runID)
	nss := l.C.CoreV1().Namespaces()
	sel := metav1.ListOptions{LabelSelector: runtime.LabelRun + "=" + runID}
	list, err := nss.List(ctx, sel)
	if err != nil {
		return 0, fmt.Errorf("remove run %s: list namespaces: %s", runID, firstLine(err.Error()))
	}
	var errs []error
	named := []string{RunNamespace(runID)}
	if l.RunID == runID && l.Namespace != named[0] {
		named = append(named, l.Namespace)
	}
	for _, name := range named {
		if ns, err := nss.Get(ctx, name, metav1.GetOptions{}); err == nil && ns.Labels[runtime.LabelRun] != runID {
			errs = append(errs, fmt.Errorf("remove run %s: namespace %s has no label %s=%s: not rttlab's, left alone", runID, name, runtime.LabelRun, runID))
		}
	}
	removed := 0
	for _, ns := range list.Items {
		if ns.Labels[runtime.LabelRun] != runID { // a selector the server ignored
			errs = append(errs, fmt.Errorf("remove run %s: namespace %s has no label %s=%s: not rttlab's, left alone", runID, ns.Name, runtime.LabelRun, runID))
			continue
		}
		n, err := l.removeNamespace(ctx, ns, runID)
		removed += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// removeNamespace ends the sessions of ns's node agents, deletes its
// pods with a grace period of a second and then ns, counting its pods
// and services with it.
func (l *Lab) removeNamespace(ctx context.Context, ns corev1.Namespace, runID string) (int, error) {
	sel := metav1.ListOptions{LabelSelector: runtime.LabelRun + "=" + runID}
	pods, err := l.C.CoreV1().Pods(ns.Name).List(ctx, sel)
	if err != nil {
		return 0, fmt.Errorf("remove run %s: pods of %s: %s", runID, ns.Name, firstLine(err.Error()))
	}
	for _, p := range pods.Items {
		if p.Labels[runtime.LabelRole] != RoleNodeAgent || p.Status.Phase != corev1.PodRunning {
			continue
		}
		m := memberID{Namespace: ns.Name, Pod: p.Name, Container: nodeAgentContainer}
		// A session that does not end in time is killed with its node
		// agent: the namespace goes anyway.
		_, _ = l.exec(ctx, m, []string{"sh", "-c", sessionStopAllScript}, nil, nil, nil, "stop sessions")
		// The node agent runs on the node's network: what a wire shaper
		// of the run left in the node's tables (one killed with its node
		// agent, before this one) goes too.
		_, _ = agentclient.Client{D: l, ID: m.String()}.Exec(ctx, agentclient.Call{Verb: "sweep", Args: []string{"--label-prefix", runID + "/"}, AnyExit: true})
	}
	// The pods go at once, as a Docker run's containers do, rather than
	// with the namespace after each pod's grace period (30 s unless the
	// pod says otherwise): a member that ignores SIGTERM, as a shell's
	// sleep does, would hold its node that long after the run.
	var errs []error
	grace := int64(1)
	for _, p := range pods.Items {
		err := l.C.CoreV1().Pods(ns.Name).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove run %s: delete pod %s/%s: %s", runID, ns.Name, p.Name, firstLine(err.Error())))
		}
	}
	svcs, err := l.C.CoreV1().Services(ns.Name).List(ctx, sel)
	if err != nil {
		return 0, errors.Join(append(errs, fmt.Errorf("remove run %s: services of %s: %s", runID, ns.Name, firstLine(err.Error())))...)
	}
	err = l.C.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return 0, errors.Join(errs...)
	case err != nil:
		return 0, errors.Join(append(errs, fmt.Errorf("remove run %s: delete namespace %s: %s", runID, ns.Name, firstLine(err.Error())))...)
	}
	return len(pods.Items) + len(svcs.Items) + 1, errors.Join(errs...)
}
