package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// HasImage says whether every node that takes pods lists ref among its
// images (the node's status, as its kubelet reports it: at most its 50
// largest images unless the kubelet's nodeStatusMaxImages says more).
func (l *Lab) HasImage(ctx context.Context, ref string) (bool, error) {
	missing, err := nodesWithout(ctx, l.C, ref)
	return err == nil && len(missing) == 0, err
}

// EnsureImage checks that every node has ref. With a registry the
// kubelet pulls what a node lacks when a member starts; without one an
// image missing on a node is an error wrapping runtime.ErrNotFound that
// names the import.
func (l *Lab) EnsureImage(ctx context.Context, ref string) error {
	if l.Registry != "" {
		return nil
	}
	missing, err := nodesWithout(ctx, l.C, ref)
	if err != nil || len(missing) == 0 {
		return err
	}
	return fmt.Errorf("image %s: %w on node %s: import it there with `docker save %s | ctr -n k8s.io images import -`, or name a registry",
		ref, runtime.ErrNotFound, strings.Join(missing, ", "), ref)
}

// nodesWithout lists the nodes of cluster c that take pods and do not
// list ref.
func nodesWithout(ctx context.Context, c kubernetes.Interface, ref string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, shortCall)
	defer cancel()
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("image %s: list nodes: %s", ref, firstLine(err.Error()))
	}
	want := normalRef(ref)
	var missing []string
	taking := 0
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		taking++
		has := false
		for _, img := range n.Status.Images {
			if slices.ContainsFunc(img.Names, func(name string) bool { return normalRef(name) == want }) {
				has = true
				break
			}
		}
		if !has {
			missing = append(missing, n.Name)
		}
	}
	if taking == 0 {
		return nil, fmt.Errorf("image %s: the cluster has no node that takes pods", ref)
	}
	return missing, nil
}

// normalRef is ref as containerd names it: with its registry
// (docker.io), Docker Hub's library/ for a one-word name, and :latest
// unless it has a tag or a digest.
func normalRef(ref string) string {
	name, digest, hasDigest := strings.Cut(ref, "@")
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", name
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	if i := strings.LastIndex(rest, ":"); i < 0 && !hasDigest {
		rest += ":latest"
	}
	out := domain + "/" + rest
	if hasDigest {
		out += "@" + digest
	}
	return out
}
