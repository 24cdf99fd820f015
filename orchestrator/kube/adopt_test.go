package kube

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// userPod is a pod of the user's namespace shop, Running on node n1 with
// address ip (none: Pending), Ready when ready says so, labelled app=app,
// with a container of each name.
func userPod(name, app, ip string, ready bool, containers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "shop/" + c})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c, Ready: ready})
	}
	if ip != "" {
		p.Status.Phase, p.Status.PodIP = corev1.PodRunning, ip
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	}
	return p
}

func selecting(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

// shop is the fake cluster of a user's namespace, shop: deploy/web (its
// pods web-a not Ready, web-b and web-c Ready, web-0 being deleted),
// statefulset/db (db-0, its environment from a secret and a config
// map), deploy/idle (no pod Ready), pod/multi (two containers) and
// pod/broken (a secret key that is not there).
func shop() *fake.Clientset {
	db := userPod("db-0", "db", "10.1.0.9", true, "postgres")
	db.Spec.NodeName = "n2"
	db.Status.ContainerStatuses[0].RestartCount = 2
	db.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "PG_",
		SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}}}}
	db.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "PGDATA", Value: "/var/lib/postgresql/data"},
		{Name: "POSTGRES_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Key: "password"}}},
		{Name: "POSTGRES_DB", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db-conf"}, Key: "name"}}},
		{Name: "MY_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	}
	broken := userPod("broken", "broken", "10.1.0.8", true, "app")
	broken.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Key: "token"}}}}
	deleting := userPod("web-0", "web", "10.1.0.4", true, "web")
	now := metav1.Now()
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"example.com/hold"}
	// A Ready pod of the same labels in another namespace is not the
	// target's.
	elsewhere := userPod("idle-0", "idle", "10.2.0.1", true, "idle")
	elsewhere.Namespace = "other"
	return fake.NewClientset(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{Selector: selecting("web")}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{Selector: selecting("idle")}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: appsv1.StatefulSetSpec{Selector: selecting("db")}},
		// Listed out of name order: the first Ready by name is web-b.
		userPod("web-c", "web", "10.1.0.3", true, "web"),
		userPod("web-b", "web", "10.1.0.2", true, "web"),
		userPod("web-a", "web", "10.1.0.1", false, "web"),
		deleting,
		userPod("idle-1", "idle", "", false, "idle"),
		userPod("idle-2", "idle", "10.1.0.7", false, "idle"),
		elsewhere,
		db, broken,
		userPod("multi", "multi", "10.1.0.5", true, "app", "sidecar"),
		userPod("pending", "pending", "", false, "app"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-creds", Namespace: "shop"},
			Data: map[string][]byte{"password": []byte("s3cret"), "user": []byte("shop")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "db-conf", Namespace: "shop"}, Data: map[string]string{"name": "orders"}},
	)
}

// Each kind of target resolves to its ready pod: a deployment's or a
// statefulset's the first Ready one by name its selector selects, a
// pod itself.
func TestAdoptResolvesTheTargetsPod(t *testing.T) {
	c := shop()
	l := NewLab(c, nil, "", "r1")
	ctx := context.Background()
	for target, want := range map[string]string{
		"deploy/web":      "web-b",
		"deployment/web":  "web-b",
		"Deployments/web": "web-b",
		"statefulset/db":  "db-0",
		"sts/db":          "db-0",
		"pod/web-c":       "web-c",
		"po/web-b":        "web-b",
	} {
		a, err := l.Adopt(ctx, runtime.AdoptSpec{Target: target, Namespace: "shop"})
		if err != nil {
			t.Errorf("Adopt(%s): %v", target, err)
			continue
		}
		if a.Name != want {
			t.Errorf("Adopt(%s) = pod %s, want %s", target, a.Name, want)
		}
		if err := (&Cluster{C: c}).CheckTarget(ctx, "shop", target, ""); err != nil {
			t.Errorf("CheckTarget(%s) = %v", target, err)
		}
	}
}

// A target that cannot be measured is a one-line error that says why,
// the same from CheckTarget as from Adopt.
func TestAdoptTargetErrors(t *testing.T) {
	c := shop()
	l := NewLab(c, nil, "", "r1")
	cl := &Cluster{C: c}
	ctx := context.Background()
	for _, tc := range []struct {
		target, namespace, container string
		want                         []string
	}{
		{"deploy/idle", "shop", "", []string{"deploy/idle in shop has no ready pod (2 pods)"}},
		{"deploy/gone", "shop", "", []string{"deploy/gone not found in namespace shop"}},
		{"statefulset/gone", "shop", "", []string{"not found in namespace shop"}},
		{"pod/gone", "shop", "", []string{"pod/gone not found in namespace shop"}},
		{"deploy/web", "", "", []string{"not found in namespace default"}},
		{"pod/web-a", "shop", "", []string{"pod/web-a in shop is not ready"}},
		{"pod/web-0", "shop", "", []string{"is not ready"}},
		{"pod/pending", "shop", "", []string{"is not ready (pending)"}},
		{"svc/web", "shop", "", []string{`target "svc/web"`, "use pod, deploy or statefulset"}},
		{"web", "shop", "", []string{"pod/NAME, deploy/NAME or statefulset/NAME"}},
		{"pod/", "shop", "", []string{"pod/NAME, deploy/NAME or statefulset/NAME"}},
		{"pod/multi", "shop", "", []string{"pod multi has containers app, sidecar", "name the one meant with --container"}},
		{"pod/multi", "shop", "nope", []string{"pod/multi in shop", "pod multi has no container nope (its containers: app, sidecar)"}},
		{"pod/web-b", "shop", "nope", []string{"has no container nope (its containers: web)"}},
	} {
		_, err := l.Adopt(ctx, runtime.AdoptSpec{Target: tc.target, Namespace: tc.namespace, Container: tc.container})
		cerr := cl.CheckTarget(ctx, tc.namespace, tc.target, tc.container)
		if err == nil {
			t.Errorf("Adopt(%s in %q, container %q) answered", tc.target, tc.namespace, tc.container)
			continue
		}
		oneLine(t, err)
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Adopt(%s in %q, container %q) = %v, want it to say %q", tc.target, tc.namespace, tc.container, err, w)
			}
		}
		if cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("CheckTarget(%s in %q, container %q) = %v, want Adopt's %v", tc.target, tc.namespace, tc.container, cerr, err)
		}
	}
	// The container named among several is the one adopted.
	a, err := l.Adopt(ctx, runtime.AdoptSpec{Target: "pod/multi", Namespace: "shop", Container: "sidecar"})
	if err != nil || a.ID != "shop/multi/sidecar" {
		t.Errorf("Adopt(pod/multi, sidecar) = %+v, %v", a, err)
	}
	if err := cl.CheckTarget(ctx, "shop", "pod/multi", "app"); err != nil {
		t.Errorf("CheckTarget(pod/multi, app) = %v", err)
	}
}

// The adopted member is the pod's container, its address, node and
// network namespace, its environment as its spec sets it, and its
// instance, which InstanceOf reads again.
func TestAdoptedMember(t *testing.T) {
	c := shop()
	l := NewLab(c, nil, "", "r1")
	ctx := context.Background()
	a, err := l.Adopt(ctx, runtime.AdoptSpec{Target: "statefulset/db", Namespace: "shop", Alias: "db",
		Labels: map[string]string{runtime.LabelRun: "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.Member{Name: "db-0", ID: "shop/db-0/postgres", Addr: "10.1.0.9", Node: "n2", NetNS: "shop/db-0"}
	if !reflect.DeepEqual(a.Member, want) {
		t.Errorf("member = %+v, want %+v", a.Member, want)
	}
	wantEnv := []string{"PG_password=s3cret", "PG_user=shop", "PGDATA=/var/lib/postgresql/data",
		"POSTGRES_PASSWORD=s3cret", "POSTGRES_DB=orders", "MY_IP=10.1.0.9"}
	if !slices.Equal(a.Env, wantEnv) {
		t.Errorf("env = %q, want %q", a.Env, wantEnv)
	}
	if a.Instance != (runtime.Instance{UID: "uid-db-0", Restarts: 2}) {
		t.Errorf("instance = %+v", a.Instance)
	}
	in, err := l.InstanceOf(ctx, a.ID)
	if err != nil || in != a.Instance {
		t.Errorf("InstanceOf = %+v, %v; want %+v", in, err, a.Instance)
	}
	// A restart shows.
	p, _ := c.CoreV1().Pods("shop").Get(ctx, "db-0", metav1.GetOptions{})
	p.Status.ContainerStatuses[0].RestartCount = 3
	if _, err := c.CoreV1().Pods("shop").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if in, err := l.InstanceOf(ctx, a.ID); err != nil || in != (runtime.Instance{UID: "uid-db-0", Restarts: 3}) {
		t.Errorf("InstanceOf after a restart = %+v, %v", in, err)
	}
	if _, err := l.InstanceOf(ctx, "shop/gone/postgres"); err == nil {
		t.Error("InstanceOf of a pod gone answered")
	}
	if _, err := l.InstanceOf(ctx, "nonsense"); err == nil {
		t.Error("InstanceOf of a malformed ID answered")
	}
}

// A reference to a secret key that is not there, or a secret that is
// not, fails the adoption in one line naming them.
func TestAdoptEnvReferenceMissing(t *testing.T) {
	c := shop()
	l := NewLab(c, nil, "", "r1")
	ctx := context.Background()
	_, err := l.Adopt(ctx, runtime.AdoptSpec{Target: "pod/broken", Namespace: "shop"})
	if err == nil || !strings.Contains(err.Error(), "environment TOKEN: secret db-creds has no key token") {
		t.Errorf("a missing secret key = %v", err)
	}
	oneLine(t, err)
	if err := c.CoreV1().Secrets("shop").Delete(ctx, "db-creds", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = l.Adopt(ctx, runtime.AdoptSpec{Target: "sts/db", Namespace: "shop"})
	if err == nil || !strings.Contains(err.Error(), "envFrom secret db-creds") {
		t.Errorf("a missing secret = %v", err)
	}
	oneLine(t, err)
}

// Adopt and CheckTarget only read the user's namespace: they create,
// update and delete nothing there.
func TestAdoptOnlyReads(t *testing.T) {
	c := shop()
	ctx := context.Background()
	l := NewLab(c, nil, "", "r1")
	for _, s := range []runtime.AdoptSpec{
		{Target: "deploy/web", Namespace: "shop", Alias: "app"},
		{Target: "statefulset/db", Namespace: "shop", Alias: "db"},
		{Target: "pod/multi", Namespace: "shop", Container: "app"},
		{Target: "pod/broken", Namespace: "shop"},
		{Target: "deploy/idle", Namespace: "shop"},
	} {
		_, _ = l.Adopt(ctx, s)
	}
	_ = (&Cluster{C: c}).CheckTarget(ctx, "shop", "deploy/web", "")
	acts := c.Actions()
	if len(acts) == 0 {
		t.Fatal("no action recorded")
	}
	for _, a := range acts {
		if v := a.GetVerb(); (v != "get" && v != "list") || a.GetNamespace() != "shop" {
			t.Errorf("%s %s in %q: Adopt only reads the user's namespace", v, a.GetResource().Resource, a.GetNamespace())
		}
	}
	// Through a cluster-wide Lab, the run's namespace is made, and
	// the user's only read.
	c.ClearActions()
	if _, err := (&Cluster{C: c}).Runtime().Adopt(ctx, runtime.AdoptSpec{Target: "deploy/web", Namespace: "shop", Alias: "app",
		Labels: map[string]string{runtime.LabelRun: "r1"}}); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Actions() {
		v, ns, res := a.GetVerb(), a.GetNamespace(), a.GetResource().Resource
		switch {
		case ns == "shop":
			if v != "get" && v != "list" {
				t.Errorf("%s %s in shop: Adopt only reads the user's namespace", v, res)
			}
		case v == "create" && res == "namespaces":
			if name := a.(k8stesting.CreateAction).GetObject().(*corev1.Namespace).Name; name != "rttlab-r1" {
				t.Errorf("Adopt created namespace %s", name)
			}
		case ns != "rttlab-r1":
			t.Errorf("%s %s in %q: neither the user's namespace nor the run's", v, res, ns)
		}
	}
}
