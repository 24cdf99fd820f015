package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/orchestrator/engine"
	"github.com/rttlab/rttlab/orchestrator/kube"
	"github.com/rttlab/rttlab/rtt/raw"
)

// kubeRunCluster is the cluster of RTTLAB_KUBECONFIG for the tests that
// run a study on it, with rttlab's images for the go app on its node;
// the rttlab commands the test starts run on it (RTTLAB_RUNTIME,
// KUBECONFIG).
func kubeRunCluster(t *testing.T) *kube.Cluster {
	t.Helper()
	cfg := os.Getenv("RTTLAB_KUBECONFIG")
	if os.Getenv("RTTLAB_INTEGRATION") != "1" || cfg == "" || testing.Short() {
		t.Skip("set RTTLAB_INTEGRATION=1 and RTTLAB_KUBECONFIG to run against a cluster")
	}
	ctx := context.Background()
	cl, err := kube.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"agent", "postgres", "go"} {
		if err := cl.Runtime().EnsureImage(ctx, engine.ImageRef(n)); err != nil {
			if os.Getenv("RTTLAB_KUBE_AGENT") == "required" {
				t.Fatal(err)
			}
			t.Skip(err)
		}
	}
	t.Setenv("RTTLAB_RUNTIME", "kube")
	t.Setenv("KUBECONFIG", cfg)
	return cl
}

// liveRuns are the runs whose namespace is on the cluster and not being
// deleted.
func liveRuns(t *testing.T, cl *kube.Cluster) []string {
	t.Helper()
	ctx := context.Background()
	list, err := cl.C.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "io.rttlab.run"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ns := range list.Items {
		if ns.DeletionTimestamp == nil {
			out = append(out, ns.Name)
		}
	}
	return out
}

// nodeWireRules are the wire shapers' rules in this host's mangle table:
// the cluster of make test is one node, this host.
func nodeWireRules(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "mangle").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save: %v\n%s", err, out)
	}
	var rules []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, netem.WireCommentPrefix) {
			rules = append(rules, l)
		}
	}
	return rules
}

// waitNoWireRules waits until the node has no wire shaper rule: the
// shapers remove theirs when their sessions get SIGTERM.
func waitNoWireRules(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rules := nodeWireRules(t)
		if len(rules) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("wire rules left on the node:\n%s", strings.Join(rules, "\n"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// rttlab run --runtime kube on a real cluster: the go app's stack in a
// namespace of the run, the delay held on the node's pod bridge by a
// session of the node agent, the wire verified by the captures in the
// pods' namespaces; nothing of the run left afterwards, neither its
// namespace nor a rule on the node. Then SIGKILL in the middle of a run,
// `clean --runtime kube`, and --resume: every task done once.
func TestIntegrationKubeRun(t *testing.T) {
	cl := kubeRunCluster(t)
	bin, root := drillBinary(t)
	before := liveRuns(t, cl)
	if len(before) > 0 {
		t.Logf("runs on the cluster before the test (not the test's): %v", before)
	}

	t.Run("verified", func(t *testing.T) {
		plan := filepath.Join(t.TempDir(), "kube.yaml")
		if err := os.WriteFile(plan, []byte(`name: kube
seed: 5
delays_ms: [0, 1]
runs: 2
requests: 40
warmup: 5
icmp_count: 5
select1_runs: 1
select1_calls: 10
task_icmp_count: 2
apps:
  - name: go
    routes: [/feed-naive]
`), 0o644); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		cmd := exec.Command(bin, "run", "--plan", plan, "--out", out)
		cmd.Dir = root
		b, err := cmd.CombinedOutput()
		t.Logf("rttlab run --runtime kube:\n%s", b)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if !strings.Contains(string(b), "1 ms verified") {
			t.Errorf("the wire is not verified at 1 ms on the cluster")
		}
		dirs, _ := filepath.Glob(filepath.Join(out, "*-kube"))
		if len(dirs) != 1 {
			t.Fatalf("results folders: %v", dirs)
		}
		d, err := raw.Load(dirs[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Done) != len(d.Manifest.Tasks) || !strings.HasPrefix(d.Manifest.EngineVersion, "kubernetes ") {
			t.Errorf("%d of %d tasks done; engine %q", len(d.Done), len(d.Manifest.Tasks), d.Manifest.EngineVersion)
		}
		if left := liveRunsSince(t, cl, before); len(left) > 0 {
			t.Errorf("namespaces left by the run: %v", left)
		}
		waitNoWireRules(t)
	})

	t.Run("SIGKILL", func(t *testing.T) {
		plan := filepath.Join(t.TempDir(), "drill.yaml")
		if err := os.WriteFile(plan, []byte(drillPlan), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd, dir, _, wait := startRun(t, bin, root, plan, t.TempDir())
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = wait()
		left := liveRunsSince(t, cl, before)
		if len(left) == 0 {
			t.Fatal("SIGKILL left no namespace: the drill did not kill a running study")
		}
		if len(nodeWireRules(t)) == 0 {
			t.Fatal("SIGKILL left no wire rule: the drill did not kill a shaped run")
		}
		for _, ns := range left {
			run := strings.TrimPrefix(ns, "rttlab-")
			if b, err := exec.Command(bin, "clean", "--run", run).CombinedOutput(); err != nil {
				t.Fatalf("clean --runtime kube --run %s: %v\n%s", run, err, b)
			}
		}
		if left := liveRunsSince(t, cl, before); len(left) > 0 {
			t.Fatalf("namespaces left after clean: %v", left)
		}
		waitNoWireRules(t)
		resumeAndCheck(t, bin, root, dir)
		if left := liveRunsSince(t, cl, before); len(left) > 0 {
			t.Errorf("namespaces left by the resumed run: %v", left)
		}
		waitNoWireRules(t)
	})
}

// liveRunsSince is what liveRuns lists that it did not list before.
func liveRunsSince(t *testing.T, cl *kube.Cluster, before []string) []string {
	t.Helper()
	var out []string
	for _, ns := range liveRuns(t, cl) {
		if !strings.Contains(strings.Join(before, "\n")+"\n", ns+"\n") {
			out = append(out, ns)
		}
	}
	return out
}
