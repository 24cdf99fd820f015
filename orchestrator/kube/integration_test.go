package kube

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// TestIntegrationKubeMemberExecRemove starts a member on a real cluster
// (RTTLAB_KUBECONFIG) from an image its node holds (RTTLAB_KUBE_IMAGE, a
// shell image whose entrypoint is /bin/sh; default rttlab.local/shell:1,
// which .ci/kube.sh imports), runs commands in it and removes the run.
func TestIntegrationKubeMemberExecRemove(t *testing.T) {
	cfg := os.Getenv("RTTLAB_KUBECONFIG")
	if os.Getenv("RTTLAB_INTEGRATION") != "1" || cfg == "" || testing.Short() {
		t.Skip("set RTTLAB_INTEGRATION=1 and RTTLAB_KUBECONFIG to run against a cluster")
	}
	image := os.Getenv("RTTLAB_KUBE_IMAGE")
	if image == "" {
		image = "rttlab.local/shell:1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := fmt.Sprintf("it%d", time.Now().UnixNano()%1_000_000_000)
	l, err := New(ctx, Options{Kubeconfig: cfg, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := l.HasImage(ctx, image); err != nil || !ok {
		t.Fatalf("HasImage(%s) = %v, %v: import it on the node first", image, ok, err)
	}
	if err := l.OpenRun(ctx); err != nil {
		t.Fatal(err)
	}
	removed := false
	defer func() {
		if !removed {
			_, _ = l.RemoveRun(context.Background(), run)
		}
	}()
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
	removed = true
	if err != nil || n != 3 {
		t.Errorf("RemoveRun = %d, %v; want 3 (pod, service, namespace)", n, err)
	}
	ns, err := l.C.CoreV1().Namespaces().Get(ctx, l.Namespace, metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("namespace %s is not being deleted", l.Namespace)
	}
}
