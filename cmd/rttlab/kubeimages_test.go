package main

import (
	"context"
	"io"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rttlab/rttlab/apps"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/kube"
)

// Without a registry the images a run's stacks start must be on the
// nodes: PostgreSQL and the agent for every stack rttlab starts, the
// app's own image for an app rttlab builds, a user's image as it is; a
// user's app where it runs needs the agent alone.
func TestKubeImages(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Images: []corev1.ContainerImage{{Names: []string{
			"docker.io/" + engine.ImageRef("agent"), "docker.io/" + engine.ImageRef("postgres"), "docker.io/" + engine.ImageRef("go"), "docker.io/example/shop:1"}}},
	}}
	lab := kube.NewLab(fake.NewClientset(node), nil, "", "r1")
	own := apps.Target{Name: "shop", Meta: &apps.Meta{Name: "shop"}, Image: "example/shop:1"}
	goApp := apps.Target{Name: "go", Meta: &apps.Meta{Name: "go"}}
	running := apps.Target{Name: "shop", Meta: &apps.Meta{Name: "shop", Running: &apps.RunningRef{}}}
	for _, c := range []struct {
		name    string
		targets []apps.Target
		want    map[string]string
	}{
		{"rttlab's app", []apps.Target{goApp}, map[string]string{"postgres": engine.ImageRef("postgres"), "agent": engine.ImageRef("agent"), "go": engine.ImageRef("go")}},
		{"a user's image", []apps.Target{own}, map[string]string{"postgres": engine.ImageRef("postgres"), "agent": engine.ImageRef("agent"), "shop": "example/shop:1"}},
		{"a user's app where it runs", []apps.Target{running}, map[string]string{"agent": engine.ImageRef("agent")}},
	} {
		got, err := kubeImages(ctx, lab, c.targets, engine.Platform{}, io.Discard)
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%s: images %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
