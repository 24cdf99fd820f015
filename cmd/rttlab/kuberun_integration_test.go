package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// nodeWireRules are the wire shapers' rules in the mangle tables of the
// nodes of make test's cluster: this host, and the second node's network
// namespace when it has one (RTTLAB_KUBE_NODE2_NETNS, from .ci/kube.sh
// join).
func nodeWireRules(t *testing.T) []string {
	t.Helper()
	var rules []string
	for _, netns := range []string{"", os.Getenv("RTTLAB_KUBE_NODE2_NETNS")} {
		args := []string{"iptables-save", "-t", "mangle"}
		if netns != "" {
			args = append([]string{"ip", "netns", "exec", netns}, args...)
		}
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, netem.WireCommentPrefix) {
				rules = append(rules, netns+": "+l)
			}
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
		// The drill's plan, smaller, on the route of twelve round trips.
		small := strings.NewReplacer("runs: 3", "runs: 2", "requests: 300", "requests: 40", "routes: [/feed]", "routes: [/feed-naive]").Replace(drillPlan)
		plan := writeFile(t, t.TempDir(), "kube.yaml", small)
		b, d := kubeRun(t, bin, root, "run", "--plan", plan)
		// The round trips, each capture on its own clock, agree with the
		// two one-way delays, read on the node's one clock.
		m := regexp.MustCompile(`per round trip \(each capture on its own clock, no clock shared\): added ([0-9.]+) ms at 1 ms \(the two one-way: ([0-9.]+)\)`).FindStringSubmatch(b)
		if m == nil {
			t.Fatalf("no round-trip figure in the digest")
		}
		trip, _ := strconv.ParseFloat(m[1], 64)
		oneWay, _ := strconv.ParseFloat(m[2], 64)
		if math.Abs(trip-oneWay) > 0.01 || math.Abs(trip-1) > 0.04 {
			t.Errorf("round trip added %.3f ms, the two one-way %.3f ms: want them within 0.01 ms of each other and 0.04 ms of 1 ms", trip, oneWay)
		}
		if len(d.Done) != len(d.Manifest.Tasks) || !strings.HasPrefix(d.Manifest.EngineVersion, "kubernetes ") {
			t.Errorf("%d of %d tasks done; engine %q", len(d.Done), len(d.Manifest.Tasks), d.Manifest.EngineVersion)
		}
		checkClusterClean(t, cl, before, "namespaces left by the run")
	})

	t.Run("target", func(t *testing.T) { kubeTargetRun(t, cl, bin, root, before) })

	// verify and trace start the go app's stack on the cluster and check
	// its database work on the wire, as on Docker.
	t.Run("verify and trace", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"verify", "go"}, "verify go: PASS"},
			{[]string{"trace", "go", "--requests", "20"}, "/feed-naive  20  0       12 [12-12]"},
		} {
			cmd := exec.Command(bin, c.args...)
			cmd.Dir = root
			b, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(b), c.want) {
				t.Errorf("%v on the cluster: %v, want %q in:\n%s", c.args, err, c.want, b)
			}
		}
		checkClusterClean(t, cl, before, "namespaces left")
	})

	// The node agent's pod deleted mid-task (as an eviction does): the
	// task fails, a fresh stack is started, the task is tried again, and
	// the run ends with every task done.
	t.Run("node agent killed", func(t *testing.T) {
		plan := writeFile(t, t.TempDir(), "drill.yaml", drillPlan)
		cmd, dir, stderr, wait := startRun(t, bin, root, plan, t.TempDir())
		ctx := context.Background()
		pods, err := cl.C.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "io.rttlab.role=" + kube.RoleNodeAgent})
		if err != nil || len(pods.Items) == 0 {
			_ = cmd.Process.Kill()
			t.Fatalf("no node agent pod to kill (%v)", err)
		}
		zero := int64(0)
		for _, p := range pods.Items {
			if err := cl.C.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				t.Fatal(err)
			}
		}
		if err := wait(); err != nil {
			t.Fatalf("run after its node agent was killed: %v\n%s", err, stderr)
		}
		d, err := raw.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		for _, r := range d.Records {
			if r.Status == raw.StatusFailed {
				failed++
			}
		}
		if len(d.Done) != len(d.Manifest.Tasks) || failed == 0 {
			t.Errorf("%d of %d tasks done, %d failed attempts: want all done after a failed attempt\n%s", len(d.Done), len(d.Manifest.Tasks), failed, stderr)
		}
		checkClusterClean(t, cl, before, "namespaces left")
	})

	t.Run("SIGKILL", func(t *testing.T) {
		plan := writeFile(t, t.TempDir(), "drill.yaml", drillPlan)
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
		checkClusterClean(t, cl, before, "namespaces left by the resumed run")
	})
}

// kubeRun runs rttlab with args and a fresh --out on the cluster, fails
// the test when it fails, checks that the wire was verified at 1 ms, and
// returns what it printed and its results folder.
func kubeRun(t *testing.T, bin, root string, args ...string) (string, *raw.Data) {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(bin, append(args, "--out", out)...)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	t.Logf("rttlab %s:\n%s", strings.Join(args, " "), b)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(string(b), "1 ms verified") {
		t.Errorf("the wire is not verified at 1 ms")
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(dirs) != 1 {
		t.Fatalf("results folders: %v", dirs)
	}
	d, err := raw.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b), d
}

// checkClusterClean fails the test when a namespace is live that was not
// before (saying so with what), and waits until the node has no wire
// rule left.
func checkClusterClean(t *testing.T, cl *kube.Cluster, before []string, what string) {
	t.Helper()
	if left := liveRunsSince(t, cl, before); len(left) > 0 {
		t.Errorf("%s: %v", what, left)
	}
	waitNoWireRules(t)
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

// kubeTargetRun measures a user's Deployment and its PostgreSQL
// StatefulSet, applied with kubectl from a manifest of testdata, where
// they run: the wire verified at 1 ms, the pods' UIDs and restart counts
// the same afterwards (and in the manifest), nothing of the run left,
// no rule on the node; a target that is not there, or no --db-target,
// is one line and creates nothing.
func kubeTargetRun(t *testing.T, cl *kube.Cluster, bin, root string, before []string) {
	ns, pods := applyShop(t, cl, root, nil)
	was := pods()
	if len(was) != 2 {
		t.Fatalf("pods of the manifest: %v", was)
	}

	// Bad input: one line, nothing created on the cluster.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--target", "deploy/nope", "--db-target", "statefulset/shop-db"}, 1, "rttlab: --target: deploy/nope not found in namespace " + ns},
		{[]string{"--target", "deploy/shop"}, 2, "rttlab: --target deploy/shop: name its PostgreSQL with --db-target"},
	} {
		cmd := exec.Command(bin, append([]string{"run", "--namespace", ns, "--routes", "/feed", "--plan", "smoke", "--out", t.TempDir()}, c.args...)...)
		cmd.Dir = root
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		last := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(last, "\n"); i >= 0 && strings.HasPrefix(last, "plan ") {
			last = last[i+1:] // after the plan's one-line outline
		}
		if err == nil || code != c.code || !strings.HasPrefix(last, c.want) || strings.Contains(last, "\n") {
			t.Errorf("run %v: exit %d, stderr %q; want exit %d and one line %q", c.args, code, stderr.String(), c.code, c.want)
		}
		if left := liveRunsSince(t, cl, before); len(left) > 0 {
			t.Errorf("run %v created %v", c.args, left)
		}
	}

	_, d := kubeRun(t, bin, root, "run", "--namespace", ns, "--target", "deploy/shop", "--db-target", "statefulset/shop-db",
		"--routes", "/feed-naive", "--health", "/health", "--plan", "study", "--delays", "0,1", "--runs", "2", "--requests", "40", "--warmup", "5")
	if now := pods(); !maps.Equal(now, was) {
		t.Errorf("the user's pods changed: before %v, after %v", was, now)
	}
	adopted := 0
	for _, m := range d.Manifest.Members {
		if !m.Adopted {
			continue
		}
		adopted++
		if m.UID == "" || m.UID != m.UIDAfter || m.Restarts == nil || m.RestartsAfter == nil || *m.Restarts != *m.RestartsAfter || m.Node == "" {
			t.Errorf("manifest member %+v: want its UID and restarts the same before and after, and its node", m)
		}
	}
	if adopted != 2 {
		t.Errorf("manifest records %d members found where they run, want 2: %+v", adopted, d.Manifest.Members)
	}
	checkClusterClean(t, cl, before, "namespaces left by the run")
}

// applyShop applies testdata's shop manifest with kubectl in a
// namespace of its own (deleted when the test ends), its Deployment and
// StatefulSet pinned to the nodes pin names ("shop", "shop-db": node;
// none: where the scheduler puts them), and waits until both roll out.
// It returns the namespace and a reader of its pods' UIDs and restarts.
func applyShop(t *testing.T, cl *kube.Cluster, root string, pin map[string]string) (string, func() map[string]string) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("the target test applies its manifest with kubectl: %v", err)
	}
	ctx := context.Background()
	ns := fmt.Sprintf("shop-%d", time.Now().UnixNano()%1_000_000_000)
	if _, err := cl.C.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.C.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	steps := [][]string{{"apply", "-f", filepath.Join(root, "cmd", "rttlab", "testdata", "kube", "shop.yaml")}}
	for _, w := range []string{"statefulset/shop-db", "deploy/shop"} {
		if node := pin[strings.TrimPrefix(strings.TrimPrefix(w, "statefulset/"), "deploy/")]; node != "" {
			steps = append(steps, []string{"patch", w, "-p", fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:%q}}}}}`, corev1.LabelHostname, node)})
		}
	}
	steps = append(steps, []string{"rollout", "status", "statefulset/shop-db", "--timeout", "180s"}, []string{"rollout", "status", "deploy/shop", "--timeout", "180s"})
	for _, args := range steps {
		if b, err := exec.Command(kubectl, append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, b)
		}
	}
	pods := func() map[string]string {
		list, err := cl.C.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				continue // a replica of the rollout before the pin, on its way out
			}
			restarts := 0
			for _, cs := range p.Status.ContainerStatuses {
				restarts += int(cs.RestartCount)
			}
			out[p.Name] = fmt.Sprintf("uid %s, %d restarts, node %s", p.UID, restarts, p.Spec.NodeName)
		}
		return out
	}
	return ns, pods
}

// rttlab run --registry against the registry beside the cluster
// (RTTLAB_KUBE_REGISTRY, from .ci/kube.sh up): the run's images built on
// this host's engine, pushed there tagged by content, pulled by the node
// from it, and the wire verified as with imported images. .ci/kubetest.sh
// runs it last: containerd 1.6's CRI plugin then loses the imported name
// of an image it pulled under another (README, "Kubernetes").
func TestIntegrationKubeRegistry(t *testing.T) {
	cl := kubeRunCluster(t)
	bin, root := drillBinary(t)
	before := liveRuns(t, cl)
	reg := os.Getenv("RTTLAB_KUBE_REGISTRY")
	if reg == "" {
		if os.Getenv("RTTLAB_KUBE_AGENT") == "required" {
			t.Fatal("RTTLAB_KUBE_REGISTRY names no registry beside the cluster (.ci/kube.sh up prints it)")
		}
		t.Skip("RTTLAB_KUBE_REGISTRY names no registry beside the cluster")
	}
	_, d := kubeRun(t, bin, root, "run", "--registry", reg, "--plan", "study", "--apps", "go", "--routes", "/feed",
		"--delays", "0,1", "--runs", "1", "--requests", "40", "--warmup", "5")
	for _, n := range []string{"go", "postgres", "agent"} {
		ref := d.Manifest.Images[n]
		if !strings.HasPrefix(ref, reg+"/rttlab/"+n+":") || len(ref) != len(reg+"/rttlab/"+n+":")+12 {
			t.Errorf("manifest image of %s: %q, want %s/rttlab/%s:<12 hex digits of its ID>", n, ref, reg, n)
		}
	}
	// The registry has them, and the node pulled them from it.
	resp, err := http.Get("http://" + reg + "/v2/_catalog")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cat struct{ Repositories []string }
	if err := json.NewDecoder(resp.Body).Decode(&cat); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"go", "postgres", "agent"} {
		if !slices.Contains(cat.Repositories, "rttlab/"+n) {
			t.Errorf("the registry's catalog %v lacks rttlab/%s", cat.Repositories, n)
		}
	}
	// The kubelet lists a node's images in the node's status, which it
	// updates every few seconds.
	deadline := time.Now().Add(90 * time.Second)
	for {
		nodes, err := cl.C.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		for _, n := range []string{"go", "postgres", "agent"} {
			pulled := false
			for _, node := range nodes.Items {
				for _, img := range node.Status.Images {
					pulled = pulled || slices.Contains(img.Names, d.Manifest.Images[n])
				}
			}
			if !pulled {
				missing = append(missing, d.Manifest.Images[n])
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no node lists %v after 90 s: not pulled from the registry", missing)
			break
		}
		time.Sleep(2 * time.Second)
	}
	checkClusterClean(t, cl, before, "namespaces left")
}
