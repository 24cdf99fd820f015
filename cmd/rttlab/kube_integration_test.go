package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rttlab/rttlab/orchestrator/kube"
	"github.com/rttlab/rttlab/orchestrator/runtime"
)

// doctor --runtime kube on a real cluster (RTTLAB_KUBECONFIG) passes its
// required checks; clean --runtime kube removes a run's namespace, with
// its pod, and leaves a namespace that is not rttlab's alone.
func TestIntegrationKubeDoctorAndClean(t *testing.T) {
	cfg := os.Getenv("RTTLAB_KUBECONFIG")
	if os.Getenv("RTTLAB_INTEGRATION") != "1" || cfg == "" || testing.Short() {
		t.Skip("set RTTLAB_INTEGRATION=1 and RTTLAB_KUBECONFIG to run against a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	saved := kubeConnect
	defer func() { kubeConnect = saved }()
	kubeConnect = func(ctx context.Context) (*kube.Cluster, error) { return kube.Connect(ctx, labRuntime.kubeconfig) }

	code, out, errOut := execLine(ctx, "doctor", "--runtime", "kube", "--kubeconfig", cfg)
	t.Logf("doctor --runtime kube:\n%s%s", out, errOut)
	if code != 0 || !strings.Contains(out, "OK   cluster") || !strings.Contains(out, "OK   privileged pods") || strings.Contains(out, "FAIL") {
		t.Fatalf("doctor on the cluster: exit %d", code)
	}

	cl, err := kube.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf("cl%d", time.Now().UnixNano()%1_000_000_000)
	l := cl.Lab("", run)
	if err := l.OpenRun(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.RemoveRun(context.Background(), run)
	if _, err := l.StartMember(ctx, runtime.MemberSpec{Name: "rttlab-" + run + "-app", Role: "app", Image: "rttlab.local/shell:1",
		Cmd: []string{"-c", "exec sleep 600"}, Labels: map[string]string{runtime.LabelRun: run}}); err != nil {
		t.Fatal(err)
	}
	other := "not-rttlab-" + run
	if _, err := cl.C.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cl.C.CoreV1().Namespaces().Delete(context.Background(), other, metav1.DeleteOptions{})

	code, out, errOut = execLine(ctx, "clean", "--runtime", "kube", "--kubeconfig", cfg, "--run", run)
	if code != 0 || !strings.Contains(out, "of 1 run(s) on the cluster") {
		t.Fatalf("clean --run: exit %d\n%s%s", code, out, errOut)
	}
	ns, err := cl.C.CoreV1().Namespaces().Get(ctx, kube.RunNamespace(run), metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("the run's namespace %s is not being deleted", ns.Name)
	}
	if ns, err := cl.C.CoreV1().Namespaces().Get(ctx, other, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("a namespace without the run label was touched: %v, %+v", err, ns.DeletionTimestamp)
	}
	runs, err := cl.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r == run {
			if ns, err := cl.C.CoreV1().Namespaces().Get(ctx, kube.RunNamespace(run), metav1.GetOptions{}); err == nil && ns.DeletionTimestamp == nil {
				t.Errorf("run %s still listed with a live namespace", run)
			}
		}
	}
}
