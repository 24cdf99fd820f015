package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// fakeExec records every exec and answers with its handler.
type fakeExec struct {
	mu     sync.Mutex
	reqs   []ExecRequest
	answer func(r ExecRequest) error
}

func (f *fakeExec) Exec(ctx context.Context, r ExecRequest) error {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	answer := f.answer
	f.mu.Unlock()
	if answer == nil {
		return nil
	}
	return answer(r)
}

func (f *fakeExec) requests() []ExecRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// script is the script of a `sh -c SCRIPT sh ARGS...` command, or "".
func script(cmd []string) string {
	if len(cmd) > 2 && cmd[0] == "sh" && cmd[1] == "-c" {
		return cmd[2]
	}
	return ""
}

// lab is a Lab of run r1 on a fake cluster whose kubelet runs each pod
// on node-1 as soon as it is created, unless waiting names the reason
// its container waits on instead.
func lab(t *testing.T, waiting string) (*Lab, *fake.Clientset, *fakeExec) {
	t.Helper()
	c := fake.NewClientset()
	seq := 0
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		seq++
		if p.Spec.NodeName == "" {
			p.Spec.NodeName = "node-1"
		}
		cs := corev1.ContainerStatus{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image}
		if waiting != "" && p.Labels[runtime.LabelRole] != RoleNodeAgent {
			p.Status.Phase = corev1.PodPending
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting, Message: "container image \"" + cs.Image + "\" is not present with pull policy of Never"}
		} else {
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = fmt.Sprintf("10.244.0.%d", seq)
			cs.ContainerID = fmt.Sprintf("containerd://%064x", seq)
			cs.State.Running = &corev1.ContainerStateRunning{}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		return false, nil, nil
	})
	x := &fakeExec{}
	l := NewLab(c, x, "", "r1")
	l.Poll, l.StartTimeout = time.Millisecond, 2*time.Second
	if err := l.OpenRun(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l, c, x
}

func dbSpec() runtime.MemberSpec {
	return runtime.MemberSpec{
		Name: "rttlab-r1-db", Role: "db", Image: "rttlab/postgres:latest",
		Cmd:     []string{"postgres", "-c", "fsync=off"},
		Env:     []string{"POSTGRES_PASSWORD=x=y"},
		Labels:  map[string]string{runtime.LabelRun: "r1", "io.rttlab.service": "db", "io.rttlab.target": "rttlab-r1/rttlab-r1-app/member"},
		Aliases: []string{"db"}, Platform: "linux/arm64", NanoCPUs: 1_500_000_000,
		CapAdd: []runtime.Capability{runtime.CapNetAdmin}, DropAllCaps: true,
	}
}

// startDB starts dbSpec's member on l; a failure fails the test.
func startDB(t *testing.T, l *Lab) runtime.Member {
	t.Helper()
	m, err := l.StartMember(context.Background(), dbSpec())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func oneLine(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
}

func TestStartMemberIsAPodWithItsServices(t *testing.T) {
	l, c, _ := lab(t, "")
	ctx := context.Background()
	m := startDB(t, l)
	want := runtime.Member{Name: "rttlab-r1-db", Role: "db", ID: "rttlab-r1/rttlab-r1-db/member", Addr: "10.244.0.1", Node: "node-1", NetNS: "rttlab-r1/rttlab-r1-db"}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("member = %+v, want %+v", m, want)
	}
	p, err := c.CoreV1().Pods("rttlab-r1").Get(ctx, "rttlab-r1-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	ct := s.Containers[0]
	if s.RestartPolicy != corev1.RestartPolicyNever || ct.ImagePullPolicy != corev1.PullNever {
		t.Errorf("restart %s, pull %s: want Never, Never", s.RestartPolicy, ct.ImagePullPolicy)
	}
	if s.NodeSelector[corev1.LabelArchStable] != "arm64" || s.NodeSelector[corev1.LabelOSStable] != "linux" {
		t.Errorf("node selector = %v", s.NodeSelector)
	}
	if got := ct.Resources.Limits.Cpu().String(); got != "1500m" {
		t.Errorf("cpu limit = %s, want 1500m", got)
	}
	if !slices.Equal(ct.Args, []string{"postgres", "-c", "fsync=off"}) || ct.Command != nil {
		t.Errorf("command %v args %v: want the image's entrypoint with Cmd as its arguments", ct.Command, ct.Args)
	}
	if len(ct.Env) != 1 || ct.Env[0].Name != "POSTGRES_PASSWORD" || ct.Env[0].Value != "x=y" {
		t.Errorf("env = %v", ct.Env)
	}
	caps := ct.SecurityContext.Capabilities
	if !slices.Equal(caps.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(caps.Add, []corev1.Capability{"NET_ADMIN"}) {
		t.Errorf("capabilities = %+v", caps)
	}
	if p.Labels[runtime.LabelRole] != "db" || p.Labels[LabelMember] != "rttlab-r1-db" || p.Labels["io.rttlab.service"] != "db" {
		t.Errorf("labels = %v", p.Labels)
	}
	if p.Annotations["io.rttlab.target"] != "rttlab-r1/rttlab-r1-app/member" {
		t.Errorf("a value no label takes should be an annotation: %v", p.Annotations)
	}
	svc, err := c.CoreV1().Services("rttlab-r1").Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Selector[LabelMember] != "rttlab-r1-db" || svc.Spec.Selector[runtime.LabelRun] != "r1" {
		t.Errorf("service = %+v", svc.Spec)
	}
	st, err := l.State(ctx, m.ID)
	if err != nil || !st.Running {
		t.Errorf("state = %+v, %v", st, err)
	}
}

// A member pinned to a node selects it by its hostname label, beside the
// platform's selector.
func TestStartMemberPinnedToANode(t *testing.T) {
	l, c, _ := lab(t, "")
	ctx := context.Background()
	s := dbSpec()
	s.Node = "node-2"
	if _, err := l.StartMember(ctx, s); err != nil {
		t.Fatal(err)
	}
	p, err := c.CoreV1().Pods("rttlab-r1").Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "arm64", corev1.LabelHostname: "node-2"}
	if !reflect.DeepEqual(p.Spec.NodeSelector, want) {
		t.Errorf("node selector = %v, want %v", p.Spec.NodeSelector, want)
	}
	if _, err := l.StartMember(ctx, runtime.MemberSpec{Name: "m", Image: "rttlab/agent:latest", Node: "node-3"}); err != nil {
		t.Fatal(err)
	}
	p, _ = c.CoreV1().Pods("rttlab-r1").Get(ctx, "m", metav1.GetOptions{})
	if want := map[string]string{corev1.LabelHostname: "node-3"}; !reflect.DeepEqual(p.Spec.NodeSelector, want) {
		t.Errorf("node selector without a platform = %v, want %v", p.Spec.NodeSelector, want)
	}
	if _, err := l.StartMember(ctx, runtime.MemberSpec{Name: "free", Image: "rttlab/agent:latest"}); err != nil {
		t.Fatal(err)
	}
	if p, _ = c.CoreV1().Pods("rttlab-r1").Get(ctx, "free", metav1.GetOptions{}); p.Spec.NodeSelector != nil {
		t.Errorf("a member naming no node nor platform has node selector %v", p.Spec.NodeSelector)
	}
}

func TestRegistryPullsIfNotPresent(t *testing.T) {
	l, c, _ := lab(t, "")
	l.Registry = "registry.example:5000"
	if _, err := l.StartMember(context.Background(), runtime.MemberSpec{Name: "m", Image: "registry.example:5000/x"}); err != nil {
		t.Fatal(err)
	}
	p, _ := c.CoreV1().Pods("rttlab-r1").Get(context.Background(), "m", metav1.GetOptions{})
	if got := p.Spec.Containers[0].ImagePullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("pull policy = %s, want IfNotPresent", got)
	}
}

func TestStartMemberImageMissingOnTheNode(t *testing.T) {
	l, _, _ := lab(t, "ErrImageNeverPull")
	m, err := l.StartMember(context.Background(), dbSpec())
	if err == nil {
		t.Fatal("a pod whose image the node lacks started")
	}
	oneLine(t, err)
	if !strings.Contains(err.Error(), "ctr -n k8s.io images import") || !strings.Contains(err.Error(), "node-1") {
		t.Errorf("error does not name the node and the import: %v", err)
	}
	if m.ID == "" {
		t.Error("a member whose pod was created came back without its ID")
	}
}

func TestBesideIsASessionOfTheNodeAgent(t *testing.T) {
	l, c, x := lab(t, "")
	ctx := context.Background()
	app, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-r1-app", Image: "rttlab/app:latest", Labels: map[string]string{runtime.LabelRun: "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-r1-app-agent", Role: "agent", Image: "rttlab/agent:latest",
		Cmd: []string{"agent", "serve"}, Env: []string{"A=1"}, Beside: app.NetNS, Labels: map[string]string{runtime.LabelRun: "r1"},
		DropAllCaps: true, CapAdd: []runtime.Capability{runtime.CapNetAdmin, runtime.CapNetRaw}})
	if err != nil {
		t.Fatal(err)
	}
	agent := nodeAgentName("node-1", "rttlab/agent:latest")
	if want := "rttlab-r1/" + agent + "/agent/rttlab-r1-app-agent"; a.ID != want || a.NetNS != app.NetNS || a.Addr != "" || a.Node != "node-1" {
		t.Errorf("session member = %+v, want ID %s in %s", a, want, app.NetNS)
	}
	p, err := c.CoreV1().Pods("rttlab-r1").Get(ctx, agent, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Spec.HostPID || p.Spec.NodeName != "node-1" || !*p.Spec.Containers[0].SecurityContext.Privileged || p.Labels[runtime.LabelRole] != RoleNodeAgent {
		t.Errorf("node agent pod = %+v", p.Spec)
	}
	// The target's pod is left as it was: no container added.
	tp, _ := c.CoreV1().Pods("rttlab-r1").Get(ctx, "rttlab-r1-app", metav1.GetOptions{})
	if len(tp.Spec.Containers) != 1 || len(tp.Spec.EphemeralContainers) != 0 {
		t.Errorf("the target's pod was edited: %+v", tp.Spec)
	}
	reqs := x.requests()
	if len(reqs) != 1 || script(reqs[0].Cmd) != sessionStartScript || reqs[0].Pod != agent {
		t.Fatalf("execs = %+v, want the session's start in the node agent", reqs)
	}
	args := reqs[0].Cmd[4:]
	want := []string{"rttlab-r1-app-agent", fmt.Sprintf("%064x", 1), "-all,+net_admin,+net_raw", "env", "A=1", AgentEntrypoint, "agent", "serve"}
	if !slices.Equal(args, want) {
		t.Errorf("session args = %q, want %q", args, want)
	}

	x.answer = func(r ExecRequest) error {
		if script(r.Cmd) == sessionStateScript {
			_, _ = io.WriteString(r.Stdout, "exited 143\n")
		}
		return nil
	}
	if _, err := l.Exec(ctx, a.ID, runtime.ExecSpec{Cmd: []string{"ip", "link"}}); err != nil {
		t.Fatal(err)
	}
	reqs = x.requests()
	last := reqs[len(reqs)-1].Cmd
	if script(last) != sessionExecScript || !slices.Equal(last[3:], []string{"sh", "rttlab-r1-app-agent", "ip", "link"}) {
		t.Errorf("exec in a session = %q", last)
	}
	st, err := l.State(ctx, a.ID)
	if err != nil || st != (runtime.State{ExitCode: 143, Reason: "exited"}) {
		t.Errorf("session state = %+v, %v", st, err)
	}
	if err := l.StopMember(ctx, a.ID, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	reqs = x.requests()
	if last := reqs[len(reqs)-1].Cmd; script(last) != sessionStopScript || !slices.Equal(last[3:], []string{"sh", "rttlab-r1-app-agent", "3", "0"}) {
		t.Errorf("stop of a session = %q", last)
	}
}

func TestBesideRefusesAHostNetworkPod(t *testing.T) {
	l, c, _ := lab(t, "")
	ctx := context.Background()
	hp := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "host", Namespace: "user"}, Spec: corev1.PodSpec{HostNetwork: true, NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if err := c.Tracker().Add(hp); err != nil {
		t.Fatal(err)
	}
	_, err := l.StartMember(ctx, runtime.MemberSpec{Name: "a", Image: "rttlab/agent:latest", Cmd: []string{"agent", "idle"}, Beside: "user/host"})
	if err == nil || !strings.Contains(err.Error(), "node's network namespace") {
		t.Errorf("beside a host-network pod: %v", err)
	}
	_, err = l.StartMember(ctx, runtime.MemberSpec{Name: "a", Image: "rttlab/agent:latest", Cmd: []string{"agent", "idle"}, Beside: "user/none"})
	if !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("beside a pod that does not exist: %v", err)
	}
	oneLine(t, err)
}

func TestEveryObjectCarriesTheRunLabel(t *testing.T) {
	l, c, _ := lab(t, "")
	ctx := context.Background()
	m := startDB(t, l)
	// Labels the caller forgot or got wrong do not lose the object.
	if _, err := l.StartMember(ctx, runtime.MemberSpec{Name: "bare", Image: "x", Aliases: []string{"bare"}, Labels: map[string]string{runtime.LabelRun: "other"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.StartMember(ctx, runtime.MemberSpec{Name: "agent", Image: "rttlab/agent:latest", Cmd: []string{"agent", "idle"}, Beside: m.NetNS}); err != nil {
		t.Fatal(err)
	}
	nss, _ := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	pods, _ := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	svcs, _ := c.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	var objs []metav1.ObjectMeta
	for _, o := range nss.Items {
		objs = append(objs, o.ObjectMeta)
	}
	for _, o := range pods.Items {
		objs = append(objs, o.ObjectMeta)
	}
	for _, o := range svcs.Items {
		objs = append(objs, o.ObjectMeta)
	}
	sas, _ := c.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
	for _, o := range sas.Items {
		objs = append(objs, o.ObjectMeta)
	}
	if len(objs) != 1+3+2+1 {
		t.Errorf("%d objects, want a namespace, 3 pods (db, bare, node agent), 2 services and the default service account", len(objs))
	}
	for _, o := range objs {
		if o.Labels[runtime.LabelRun] != "r1" {
			t.Errorf("%s/%s has labels %v, without %s=r1", o.Namespace, o.Name, o.Labels, runtime.LabelRun)
		}
	}
}

func TestRemoveRun(t *testing.T) {
	l, c, x := lab(t, "")
	ctx := context.Background()
	m := startDB(t, l)
	if _, err := l.StartMember(ctx, runtime.MemberSpec{Name: "agent", Image: "rttlab/agent:latest", Cmd: []string{"agent", "idle"}, Beside: m.NetNS}); err != nil {
		t.Fatal(err)
	}
	n, err := l.RemoveRun(ctx, "r1")
	if err != nil || n != 4 {
		t.Errorf("RemoveRun = %d, %v; want 4 (2 pods, 1 service, the namespace)", n, err)
	}
	reqs := x.requests()
	if len(reqs) < 2 || script(reqs[len(reqs)-2].Cmd) != sessionStopAllScript {
		t.Error("the node agent's sessions were not stopped before the namespace went")
	}
	if want := []string{AgentEntrypoint, "agent", "sweep", "--label-prefix", "r1/"}; !slices.Equal(reqs[len(reqs)-1].Cmd, want) {
		t.Errorf("last exec %q, want the sweep of the run's wire rules on the node %q", reqs[len(reqs)-1].Cmd, want)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "rttlab-r1", metav1.GetOptions{}); err == nil {
		t.Error("the run's namespace is still there")
	}
	// The pods go at once, not after their grace period with the
	// namespace.
	if pods, err := c.CoreV1().Pods("rttlab-r1").List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left after RemoveRun: %v, %v", pods, err)
	}
	var graces []int64
	for _, a := range c.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			graces = append(graces, *d.GetDeleteOptions().GracePeriodSeconds)
		}
	}
	if !slices.Equal(graces, []int64{1, 1}) {
		t.Errorf("pods deleted with grace periods %v, want 1 s each", graces)
	}
	if n, err := l.RemoveRun(ctx, "r1"); n != 0 || err != nil {
		t.Errorf("RemoveRun of a run gone = %d, %v", n, err)
	}
	if _, err := l.RemoveRun(ctx, ""); err == nil {
		t.Error("RemoveRun of an empty run id answered")
	}
}

func TestRemoveRunRefusesANamespaceNotRttlabs(t *testing.T) {
	l, c, _ := lab(t, "")
	ctx := context.Background()
	theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rttlab-prod", Labels: map[string]string{"team": "db"}}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := l.RemoveRun(ctx, "prod")
	if err == nil || n != 0 {
		t.Fatalf("RemoveRun of a namespace not rttlab's = %d, %v", n, err)
	}
	oneLine(t, err)
	if !strings.Contains(err.Error(), "not rttlab's") {
		t.Errorf("refusal = %v", err)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "rttlab-prod", metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace not rttlab's was removed: %v", err)
	}
	// OpenRun does not take it over either.
	if err := NewLab(c, nil, "", "prod").OpenRun(ctx); err == nil || !strings.Contains(err.Error(), "is not run prod's") {
		t.Errorf("OpenRun on a namespace not rttlab's = %v", err)
	}
}

func TestStopAndRemoveMember(t *testing.T) {
	l, c, _ := lab(t, "")
	ctx := context.Background()
	m := startDB(t, l)
	if err := l.StopMember(ctx, m.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := l.State(ctx, m.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("state of a stopped member = %v, want ErrNotFound", err)
	}
	if err := l.StopMember(ctx, m.ID, time.Second); err != nil {
		t.Errorf("stopping a member gone: %v", err)
	}
	if err := l.RemoveMember(ctx, m.ID); err != nil {
		t.Errorf("removing a member gone: %v", err)
	}
	if svcs, _ := c.CoreV1().Services("rttlab-r1").List(ctx, metav1.ListOptions{}); len(svcs.Items) != 0 {
		t.Errorf("RemoveMember left services: %v", svcs.Items)
	}
	if _, err := l.State(ctx, "nonsense"); err == nil {
		t.Error("a malformed ID was taken")
	}
}

func TestExecExitCodeAndOutput(t *testing.T) {
	l, _, x := lab(t, "")
	ctx := context.Background()
	x.answer = func(r ExecRequest) error {
		_, _ = io.WriteString(r.Stdout, "hello\n")
		return utilexec.CodeExitError{Err: errors.New("command terminated with exit code 3"), Code: 3}
	}
	var out strings.Builder
	code, err := l.Exec(ctx, "rttlab-r1/db/member", runtime.ExecSpec{Cmd: []string{"pg_isready"}, User: "postgres", Env: []string{"PGHOST=127.0.0.1"}, Stdout: &out})
	if err != nil || code != 3 || out.String() != "hello\n" {
		t.Errorf("exec = %d, %v, %q", code, err, out.String())
	}
	r := x.requests()[0]
	if want := []string{"sh", "-c", asUser, "sh", "postgres", "env", "PGHOST=127.0.0.1", "pg_isready"}; !slices.Equal(r.Cmd, want) || r.Pod != "db" || r.Container != "member" {
		t.Errorf("exec request = %+v, want %q", r, want)
	}
	x.answer = func(r ExecRequest) error { return errors.New("upgrade failed\nwith a body") }
	code, err = l.Exec(ctx, "rttlab-r1/db/member", runtime.ExecSpec{Cmd: []string{"true"}})
	if err == nil || code != -1 {
		t.Errorf("a failed exec = %d, %v", code, err)
	}
	oneLine(t, err)
	if _, err := l.Exec(ctx, "rttlab-r1/db/member", runtime.ExecSpec{}); err == nil {
		t.Error("an exec without a command ran")
	}
}

func TestImages(t *testing.T) {
	c := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"docker.io/rttlab/agent:latest", "docker.io/library/busybox:latest"}}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"docker.io/rttlab/agent:latest"}}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cordoned"}, Spec: corev1.NodeSpec{Unschedulable: true}},
	)
	l := NewLab(c, nil, "", "r1")
	ctx := context.Background()
	if ok, err := l.HasImage(ctx, "rttlab/agent"); !ok || err != nil {
		t.Errorf("HasImage(rttlab/agent) = %v, %v", ok, err)
	}
	if ok, err := l.HasImage(ctx, "busybox"); ok || err != nil {
		t.Errorf("HasImage(busybox), on one node of two = %v, %v", ok, err)
	}
	if err := l.EnsureImage(ctx, "rttlab/agent:latest"); err != nil {
		t.Error(err)
	}
	err := l.EnsureImage(ctx, "busybox")
	if !errors.Is(err, runtime.ErrNotFound) || !strings.Contains(err.Error(), "ctr -n k8s.io images import") || !strings.Contains(err.Error(), "n2") {
		t.Errorf("EnsureImage of an image missing on n2 = %v", err)
	}
	oneLine(t, err)
	l.Registry = "registry.example"
	if err := l.EnsureImage(ctx, "busybox"); err != nil {
		t.Errorf("with a registry the kubelet pulls: %v", err)
	}
	if _, err := NewLab(fake.NewClientset(), nil, "", "r1").HasImage(ctx, "busybox"); err == nil {
		t.Error("HasImage on a cluster without nodes answered")
	}
}

func TestNormalRef(t *testing.T) {
	for ref, want := range map[string]string{
		"busybox":                         "docker.io/library/busybox:latest",
		"rttlab/agent":                    "docker.io/rttlab/agent:latest",
		"rttlab/agent:v1":                 "docker.io/rttlab/agent:v1",
		"registry.k8s.io/pause:3.10":      "registry.k8s.io/pause:3.10",
		"localhost:5000/x":                "localhost:5000/x:latest",
		"localhost/x:1":                   "localhost/x:1",
		"busybox@sha256:00":               "docker.io/library/busybox@sha256:00",
		"docker.io/library/busybox:1.36":  "docker.io/library/busybox:1.36",
		"quay.io/org/img@sha256:abcdef01": "quay.io/org/img@sha256:abcdef01",
	} {
		if got := normalRef(ref); got != want {
			t.Errorf("normalRef(%s) = %s, want %s", ref, got, want)
		}
	}
}

// kubeconfig writes a kubeconfig naming server.
func kubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewNeedsAnAnsweringCluster(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Setenv("KUBECONFIG", filepath.Join(dir, "none"))
	t.Setenv("HOME", dir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := New(ctx, Options{RunID: "r1"})
	if !errors.Is(err, ErrNoCluster) || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("no kubeconfig: %v", err)
	}
	oneLine(t, err)
	_, err = New(ctx, Options{RunID: "r1", Kubeconfig: filepath.Join(dir, "missing")})
	if !errors.Is(err, ErrNoCluster) {
		t.Errorf("a kubeconfig that is not there: %v", err)
	}
	oneLine(t, err)
	_, err = New(ctx, Options{RunID: "r1", Kubeconfig: kubeconfig(t, "https://127.0.0.1:1")})
	if !errors.Is(err, ErrNoCluster) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("a server that does not answer: %v", err)
	}
	oneLine(t, err)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"major":"1","minor":"35","gitVersion":"v1.35.4"}`)
	}))
	defer srv.Close()
	l, err := New(ctx, Options{RunID: "r1", Kubeconfig: kubeconfig(t, srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if l.Namespace != "rttlab-r1" || l.RunID != "r1" {
		t.Errorf("lab = %+v", l)
	}
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	defer denied.Close()
	_, err = New(ctx, Options{RunID: "r1", Kubeconfig: kubeconfig(t, denied.URL)})
	if !errors.Is(err, ErrNoCluster) || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("refused credentials: %v", err)
	}
	oneLine(t, err)
	if _, err := New(ctx, Options{RunID: "Bad_Run"}); err == nil {
		t.Error("a run id no namespace takes was accepted")
	}
}

// TestSessionScriptsParse has sh read every script the node agent runs.
func TestSessionScriptsParse(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for name, s := range map[string]string{"start": sessionStartScript, "exec": sessionExecScript, "state": sessionStateScript,
		"stop": sessionStopScript, "stop all": sessionStopAllScript, "logs": sessionLogsScript} {
		if out, err := exec.Command(sh, "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("%s script: %v: %s", name, err, out)
		}
	}
}

// With a registry, a member's pod and the node agent pull the image
// pushed for the one they name (IfNotPresent); an image not pushed (a
// user's own) is used as it is; EnsureImage leaves the pull to the
// kubelet.
func TestRegistryImages(t *testing.T) {
	l, c, _ := lab(t, "")
	ctx := context.Background()
	l.Registry = "127.0.0.1:5000"
	l.Pushed = map[string]string{"rttlab/postgres:latest": "127.0.0.1:5000/rttlab/postgres:0123456789ab",
		"rttlab/agent:latest": "127.0.0.1:5000/rttlab/agent:ba9876543210"}
	m := startDB(t, l)
	if _, err := l.StartMember(ctx, runtime.MemberSpec{Name: "agent", Image: "rttlab/agent:latest", Cmd: []string{"agent", "idle"}, Beside: m.NetNS}); err != nil {
		t.Fatal(err)
	}
	own := runtime.MemberSpec{Name: "rttlab-r1-app", Role: "app", Image: "example/shop:1.4", Labels: map[string]string{runtime.LabelRun: "r1"}}
	if _, err := l.StartMember(ctx, own); err != nil {
		t.Fatal(err)
	}
	pods, err := c.CoreV1().Pods("rttlab-r1").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rttlab-r1-db": "127.0.0.1:5000/rttlab/postgres:0123456789ab", "rttlab-r1-app": "example/shop:1.4"}
	for _, p := range pods.Items {
		ctr := p.Spec.Containers[0]
		w, ok := want[p.Name]
		if p.Labels[runtime.LabelRole] == RoleNodeAgent {
			w, ok = "127.0.0.1:5000/rttlab/agent:ba9876543210", true
		}
		if !ok || ctr.Image != w || ctr.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("pod %s: image %s (%s), want %s (IfNotPresent)", p.Name, ctr.Image, ctr.ImagePullPolicy, w)
		}
	}
	if err := l.EnsureImage(ctx, "example/shop:1.4"); err != nil {
		t.Errorf("EnsureImage with a registry: %v", err)
	}
}

// On a cluster of two nodes a member on a node's own network goes where
// it is told (MemberSpec.Node); without a node or a member beside, which
// node is meant is unknown and it is refused in one line. Hosts lists
// the nodes that take pods, a cordoned or unready one left out.
func TestHostMemberOnANamedNode(t *testing.T) {
	l, c, x := lab(t, "")
	ctx := context.Background()
	node := func(name string, ready corev1.ConditionStatus, cordoned bool) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node("node-1", corev1.ConditionTrue, false)
	node("node-2", corev1.ConditionTrue, false)
	node("node-3", corev1.ConditionFalse, false)
	node("node-4", corev1.ConditionTrue, true)
	hosts, err := l.Hosts(ctx)
	if err != nil || !slices.Equal(hosts, []string{"node-1", "node-2"}) {
		t.Errorf("hosts = %q, %v; want node-1 and node-2", hosts, err)
	}
	spec := runtime.MemberSpec{Name: "rttlab-sweep-1", Image: "rttlab/agent:latest", Cmd: []string{"agent", "idle"},
		Labels: map[string]string{runtime.LabelRun: "r1"}, DropAllCaps: true, CapAdd: []runtime.Capability{runtime.CapNetAdmin}}
	_, err = l.StartHostMember(ctx, spec, runtime.OnHost)
	oneLine(t, err)
	if err == nil || !strings.Contains(err.Error(), "the cluster has 2 nodes that take pods (node-1, node-2)") {
		t.Errorf("a host member without a node on two nodes: %v", err)
	}
	if n := len(x.requests()); n != 0 {
		t.Errorf("%d execs before the refusal", n)
	}
	spec.Node = "node-2"
	m, err := l.StartHostMember(ctx, spec, runtime.OnHost)
	if err != nil {
		t.Fatal(err)
	}
	agent := nodeAgentName("node-2", "rttlab/agent:latest")
	if m.Node != "node-2" || !strings.Contains(m.ID, "/"+agent+"/") {
		t.Errorf("host member = %+v, want a session of %s on node-2", m, agent)
	}
	p, err := c.CoreV1().Pods("rttlab-r1").Get(ctx, agent, metav1.GetOptions{})
	if err != nil || p.Spec.NodeName != "node-2" || !p.Spec.HostNetwork {
		t.Errorf("node agent pod on %q (host network %v), %v; want on node-2", p.Spec.NodeName, p.Spec.HostNetwork, err)
	}
}
