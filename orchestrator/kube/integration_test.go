package kube

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// TestIntegrationKubeMemberExecRemove starts a member on a real cluster
// (RTTLAB_KUBECONFIG) from an image its node holds (RTTLAB_KUBE_IMAGE, a
// shell image whose entrypoint is /bin/sh; default rttlab.local/shell:1,
// which .ci/kube.sh imports), runs commands in it and removes the run.
func TestIntegrationKubeMemberExecRemove(t *testing.T) {
	cfg, image := integrationCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l, run := openTestRun(ctx, t, cfg, "it", image)

	start := time.Now()
	m, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-" + run + "-m", Role: "app", Image: image,
		Cmd: []string{"-c", "echo started; exec sleep 600"}, Aliases: []string{"m"}, NanoCPUs: 500_000_000,
		Labels: map[string]string{runtime.LabelRun: run}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Logf("member %s at %s on %s, running after %s", m.ID, m.Addr, m.Node, time.Since(start).Round(time.Millisecond))
	if m.Addr == "" || m.Node == "" {
		t.Errorf("member without address or node: %+v", m)
	}
	var out, errb strings.Builder
	start = time.Now()
	code, err := l.Exec(ctx, m.ID, runtime.ExecSpec{Cmd: []string{"echo", "hello"}, Stdout: &out, Stderr: &errb})
	if err != nil || code != 0 || out.String() != "hello\n" {
		t.Errorf("exec echo = %d, %v, %q (stderr %q)", code, err, out.String(), errb.String())
	}
	t.Logf("exec echo took %s", time.Since(start).Round(time.Millisecond))
	out.Reset()
	code, err = l.Exec(ctx, m.ID, runtime.ExecSpec{Cmd: []string{"sh", "-c", "echo $X; exit 3"}, Env: []string{"X=from-env"}, Stdout: &out})
	if err != nil || code != 3 || out.String() != "from-env\n" {
		t.Errorf("exec exit 3 = %d, %v, %q", code, err, out.String())
	}
	if logs, err := l.Logs(ctx, m.ID, 5); err != nil || !strings.Contains(logs, "started") {
		t.Errorf("logs = %q, %v", logs, err)
	}
	if st, err := l.State(ctx, m.ID); err != nil || !st.Running {
		t.Errorf("state = %+v, %v", st, err)
	}
	n, err := l.RemoveRun(ctx, run)
	if err != nil || n != 3 {
		t.Errorf("RemoveRun = %d, %v; want 3 (pod, service, namespace)", n, err)
	}
	ns, err := l.C.CoreV1().Namespaces().Get(ctx, l.Namespace, metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("namespace %s is not being deleted", l.Namespace)
	}
}

// TestIntegrationKubeAgentBeside starts a target member and an agent
// beside it (a session of the node agent, from the agent image that
// RTTLAB_KUBE_AGENT_IMAGE names on the node) as the lab's shaping does,
// checks that the agent's commands run in the target's network
// namespace, and that the target's pod was neither edited nor
// restarted, and that removing the run leaves no pod and no session
// process behind.
func TestIntegrationKubeAgentBeside(t *testing.T) {
	cfg, image := integrationCluster(t)
	agentImage := os.Getenv("RTTLAB_KUBE_AGENT_IMAGE")
	if agentImage == "" {
		if why := os.Getenv("RTTLAB_KUBE_AGENT_IMAGE_MISSING"); why != "" {
			t.Skip(why)
		}
		t.Skip("set RTTLAB_KUBE_AGENT_IMAGE to the agent image on the cluster's node (.ci/kube.sh import rttlab/agent:latest)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	l, run := openTestRun(ctx, t, cfg, "ia", image, agentImage)

	labels := map[string]string{runtime.LabelRun: run}
	start := time.Now()
	target, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-" + run + "-app", Role: "app", Image: image,
		Cmd: []string{"-c", "exec sleep 600"}, Labels: labels})
	if err != nil {
		t.Fatalf("start target: %v", err)
	}
	t.Logf("target %s at %s on %s, running after %s", target.ID, target.Addr, target.Node, time.Since(start).Round(time.Millisecond))
	pods := l.C.CoreV1().Pods(l.Namespace)
	before, err := pods.Get(ctx, target.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	nodeAgent, err := l.ensureNodeAgent(ctx, target.Node, agentImage)
	if err != nil {
		t.Fatalf("node agent: %v", err)
	}
	t.Logf("node agent %s running after %s", nodeAgent, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	agent, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-" + run + "-app-agent", Role: "agent", Image: agentImage,
		Cmd: []string{"agent", "serve", "--shaper", "auto"}, Labels: labels, Beside: target.NetNS,
		DropAllCaps: true, CapAdd: []runtime.Capability{runtime.CapNetAdmin, runtime.CapNetRaw}})
	if err != nil {
		t.Fatalf("start agent: %v", err)
	}
	t.Logf("agent %s (netns %s) started after %s", agent.ID, agent.NetNS, time.Since(start).Round(time.Millisecond))

	sh := func(cmd ...string) (string, string, int) {
		t.Helper()
		var out, errb strings.Builder
		start := time.Now()
		code, err := l.Exec(ctx, agent.ID, runtime.ExecSpec{Cmd: cmd, Stdout: &out, Stderr: &errb})
		if err != nil {
			t.Fatalf("exec %q in the agent: %v", cmd, err)
		}
		t.Logf("exec %q: exit %d after %s\n%s%s", cmd, code, time.Since(start).Round(time.Millisecond), out.String(), errb.String())
		return out.String(), errb.String(), code
	}
	if out, _, code := sh("ip", "-4", "-o", "addr", "show"); code != 0 || !strings.Contains(out, " "+target.Addr+"/") {
		t.Errorf("the agent does not see the target's address %s: it is not in the target's network namespace", target.Addr)
	}
	sh("ip", "route")
	// The lab reaches the agent's shaper by its control verb, as on
	// Docker.
	if out, _, code := sh("/usr/local/bin/rttlab", "agent", "ctl", "show"); code != 0 || !strings.Contains(out, `"backend"`) {
		t.Errorf("agent ctl show = exit %d, %q", code, out)
	}
	// The session keeps the member's capabilities only.
	if out, _, _ := sh("grep", "^Cap", "/proc/self/status"); !strings.Contains(out, "CapBnd:\t0000000000003000") {
		t.Errorf("the agent's bounding set is not CAP_NET_ADMIN and CAP_NET_RAW alone")
	}
	if st, err := l.State(ctx, agent.ID); err != nil || !st.Running {
		t.Errorf("agent state = %+v, %v; want running", st, err)
	}
	// A second target and its agent on the same node are sessions of
	// the same node agent, and each agent's control reaches its own
	// shaper, as each agent container's does on Docker.
	db, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-" + run + "-db", Role: "db", Image: image,
		Cmd: []string{"-c", "exec sleep 600"}, Labels: labels})
	if err != nil {
		t.Fatalf("start second target: %v", err)
	}
	dbAgent, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-" + run + "-db-agent", Role: "agent", Image: agentImage,
		Cmd: []string{"agent", "serve", "--shaper", "auto"}, Labels: labels, Beside: db.NetNS,
		DropAllCaps: true, CapAdd: []runtime.Capability{runtime.CapNetAdmin, runtime.CapNetRaw}})
	if err != nil {
		t.Fatalf("start second agent: %v", err)
	}
	if out, _, code := sh("/usr/local/bin/rttlab", "agent", "ctl", "set", "--delay", "1ms"); code != 0 || !strings.Contains(out, `"active":true`) {
		t.Errorf("agent ctl set = exit %d, %q", code, out)
	}
	// The shaper's queue rule is in the target's network namespace.
	if out, _, code := sh("iptables-save"); code != 0 || !strings.Contains(out, "NFQUEUE") {
		t.Errorf("no NFQUEUE rule in the target's network namespace after ctl set")
	}
	var dbOut strings.Builder
	code, err := l.Exec(ctx, dbAgent.ID, runtime.ExecSpec{Cmd: []string{"/usr/local/bin/rttlab", "agent", "ctl", "show"}, Stdout: &dbOut, Stderr: &dbOut})
	t.Logf("second agent's ctl show: exit %d, %v\n%s", code, err, dbOut.String())
	if err != nil || code != 0 || !strings.Contains(dbOut.String(), `"active":false`) {
		t.Errorf("the second agent's control does not reach a shaper of its own")
	}
	if st, err := l.State(ctx, dbAgent.ID); err != nil || !st.Running {
		logs, _ := l.Logs(ctx, dbAgent.ID, 10)
		t.Errorf("second agent state = %+v, %v; want running (logs %q)", st, err, logs)
	}
	if out, _, code := sh("/usr/local/bin/rttlab", "agent", "ctl", "clear"); code != 0 {
		t.Errorf("agent ctl clear = exit %d, %q", code, out)
	}
	if logs, err := l.Logs(ctx, agent.ID, 20); err != nil {
		t.Errorf("agent logs: %v", err)
	} else {
		t.Logf("agent logs:\n%s", logs)
	}
	nodeAgentID := memberID{Namespace: l.Namespace, Pod: nodeAgent, Container: nodeAgentContainer}
	sessionPIDOf := func(name string) string {
		t.Helper()
		var out strings.Builder
		if _, err := l.exec(ctx, nodeAgentID, []string{"cat", sessionRoot + "/" + name + "/pid"}, nil, &out, nil, "pid"); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}
	sessionPID, dbSessionPID := sessionPIDOf(agent.Name), sessionPIDOf(dbAgent.Name)
	t.Logf("session processes on the node: %s (%s), %s (%s)", sessionPID, agent.Name, dbSessionPID, dbAgent.Name)
	start = time.Now()
	if err := l.StopMember(ctx, agent.ID, 5*time.Second); err != nil {
		t.Errorf("stop agent: %v", err)
	}
	t.Logf("agent stopped after %s", time.Since(start).Round(time.Millisecond))
	if st, err := l.State(ctx, agent.ID); err != nil || st.Running {
		t.Errorf("agent state after stop = %+v, %v", st, err)
	} else {
		t.Logf("agent state after stop: %+v", st)
	}
	if code, err := l.exec(ctx, nodeAgentID, []string{"sh", "-c", "kill -0 " + sessionPID}, nil, nil, nil, "kill -0"); err != nil || code == 0 {
		t.Errorf("session process %s is still alive after stop (%d, %v)", sessionPID, code, err)
	}

	after, err := pods.Get(ctx, target.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID {
		t.Errorf("target pod UID %s, was %s: it was replaced", after.UID, before.UID)
	}
	if r0, r1 := restarts(before), restarts(after); r0 != r1 {
		t.Errorf("target pod restarts %d, was %d", r1, r0)
	}
	if len(after.Spec.EphemeralContainers) != 0 || len(after.Status.EphemeralContainerStatuses) != 0 {
		t.Errorf("target pod has ephemeral containers: %+v", after.Spec.EphemeralContainers)
	}
	if !apiequality.Semantic.DeepEqual(before.Spec, after.Spec) {
		t.Errorf("target pod spec changed:\nbefore %+v\nafter  %+v", before.Spec, after.Spec)
	}
	if st, err := l.State(ctx, target.ID); err != nil || !st.Running {
		t.Errorf("target state = %+v, %v; want running", st, err)
	}

	start = time.Now()
	n, err := l.RemoveRun(ctx, run)
	if err != nil {
		t.Errorf("RemoveRun: %v", err)
	}
	t.Logf("RemoveRun removed %d objects in %s", n, time.Since(start).Round(time.Millisecond))
	deadline := time.Now().Add(time.Minute)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("pods of the run still there a minute after RemoveRun: %v, %v", list, err)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("no pod of the run left %s after RemoveRun", time.Since(start).Round(time.Millisecond))
	// The node agent shares the node's PIDs: where the node is this
	// host, the sessions' processes must be gone from it too, the one
	// still running when the run was removed included.
	if host, _ := os.Hostname(); strings.EqualFold(host, target.Node) {
		for _, pid := range []string{sessionPID, dbSessionPID} {
			if b, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil {
				t.Errorf("session process %s is still on the node: %q", pid, b)
			}
		}
	} else {
		t.Logf("node %s is not this host: the sessions' processes were not looked for on it", target.Node)
	}
}

// restarts is the sum of p's containers' restart counts.
func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// integrationCluster is the cluster the integration tests run against
// (RTTLAB_KUBECONFIG, with RTTLAB_INTEGRATION=1; else the test skips) and
// the shell image its node holds (RTTLAB_KUBE_IMAGE, default
// rttlab.local/shell:1, which .ci/kube.sh imports).
func integrationCluster(t *testing.T) (kubeconfig, shellImage string) {
	t.Helper()
	kubeconfig = os.Getenv("RTTLAB_KUBECONFIG")
	if os.Getenv("RTTLAB_INTEGRATION") != "1" || kubeconfig == "" || testing.Short() {
		t.Skip("set RTTLAB_INTEGRATION=1 and RTTLAB_KUBECONFIG to run against a cluster")
	}
	shellImage = os.Getenv("RTTLAB_KUBE_IMAGE")
	if shellImage == "" {
		shellImage = "rttlab.local/shell:1"
	}
	return kubeconfig, shellImage
}

// openTestRun opens a fresh run (its id prefix and a number) on the
// cluster of kubeconfig, once every node has images; the test's end
// removes it unless the test did.
func openTestRun(ctx context.Context, t *testing.T, kubeconfig, prefix string, images ...string) (*Lab, string) {
	t.Helper()
	run := fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()%1_000_000_000)
	l, err := New(ctx, Options{Kubeconfig: kubeconfig, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range images {
		if ok, err := l.HasImage(ctx, img); err != nil || !ok {
			t.Fatalf("HasImage(%s) = %v, %v: import it on the node first", img, ok, err)
		}
	}
	if err := l.OpenRun(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ns, err := l.C.CoreV1().Namespaces().Get(context.Background(), l.Namespace, metav1.GetOptions{})
		if err == nil && ns.DeletionTimestamp == nil { // the test did not remove it
			_, _ = l.RemoveRun(context.Background(), run)
		}
	})
	return l, run
}
