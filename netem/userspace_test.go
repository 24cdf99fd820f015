package netem_test

import (
	"context"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/workloads"
)

const testQueue = 4242

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// TestUserspaceShaper runs the agent with the userspace shaper in
// namespace B and pings across the veth pair, with each hook. The bounds
// are loose on purpose; BenchmarkShaperAccuracy measures the figures.
func TestUserspaceShaper(t *testing.T) {
	for _, hook := range []string{netem.HookIngress, netem.HookEgress} {
		t.Run(hook, func(t *testing.T) {
			t.Setenv(envHook, hook)
			testUserspaceShaper(t, hook)
		})
	}
}

func testUserspaceShaper(t *testing.T, hook string) {
	p := newPair(t)
	h := startHelper(t, p.nsB, p.linkB, testQueue)
	if rep := h.ctl(netem.Request{Op: "ping"}); rep.Backend != "userspace" || rep.Link != p.linkB {
		t.Fatalf("ping reply %+v", rep)
	}
	if r := mangleRules(t, p.nsB); r != "" {
		t.Fatalf("rules before the first set:\n%s", r)
	}

	// Interface scope, 0 ms: packets go through the queue, RTT stays small.
	h.ctl(netem.Request{Op: "set", DelayNs: 0})
	if r := mangleRules(t, p.nsB); !strings.Contains(r, "NFQUEUE") || strings.Contains(r, "queue-bypass") {
		t.Fatalf("rules for 0 ms:\n%s", r)
	}
	zero := ping(t, p.nsA, p.b, 20, 2*time.Millisecond)
	if zero.Lost != 0 || zero.Median >= time.Millisecond {
		t.Fatalf("0 ms: lost %d, median %v (want no loss, < 1ms)", zero.Lost, zero.Median)
	}

	// 1 ms one way on B's ingress (or egress).
	rep := h.ctl(netem.Request{Op: "set", DelayNs: int64(time.Millisecond)})
	if !rep.Active || rep.Scope != "interface" || rep.DelayNs != int64(time.Millisecond) {
		t.Fatalf("set reply %+v", rep)
	}
	one := ping(t, p.nsA, p.b, 20, 2*time.Millisecond)
	added := one.Median - zero.Median
	t.Logf("interface scope: median 0ms %.3f ms, 1ms %.3f ms, added %.3f ms", ms(zero.Median), ms(one.Median), ms(added))
	if one.Lost != 0 || added < 500*time.Microsecond || added > 2*time.Millisecond {
		t.Fatalf("1 ms: lost %d, added %v (want 0.5-2 ms)", one.Lost, added)
	}
	// IPv6 goes through the queue as well.
	six := ping(t, p.nsA, netip.MustParseAddr("fd77::2"), 10, 2*time.Millisecond)
	if six.Lost != 0 || six.Median < 900*time.Microsecond {
		t.Fatalf("IPv6 with 1 ms: lost %d median %v", six.Lost, six.Median)
	}

	// Path scope: only packets between B and a1 are delayed; a2 lives on
	// the same link. Pings leave from B: on ingress the replies from a1 are
	// held, on egress the requests to it.
	rep = h.ctl(netem.Request{Op: "set", DelayNs: int64(time.Millisecond), Peers: []string{p.a1.String()}})
	if rep.Scope != "path" || len(rep.Peers) != 1 {
		t.Fatalf("path set reply %+v", rep)
	}
	want := "-A PREROUTING -s 10.77.0.1/32"
	if hook == netem.HookEgress {
		want = "-A POSTROUTING -d 10.77.0.1/32"
	}
	if r := mangleRules(t, p.nsB); strings.Count(r, "NFQUEUE") != 1 || !strings.Contains(r, want) {
		t.Fatalf("path rules:\n%s", r)
	}
	toPeer := ping(t, p.nsB, p.a1, 20, 2*time.Millisecond)
	toOther := ping(t, p.nsB, p.a2, 20, 2*time.Millisecond)
	t.Logf("path scope: to peer %.3f ms, to other %.3f ms", ms(toPeer.Median), ms(toOther.Median))
	if toPeer.Median-toOther.Median < 500*time.Microsecond || toOther.Median >= time.Millisecond {
		t.Fatalf("path scope: peer %v, other %v", toPeer.Median, toOther.Median)
	}

	// Clear removes the rules; show reports nothing active.
	if rep := h.ctl(netem.Request{Op: "clear"}); rep.Active {
		t.Fatalf("clear reply %+v", rep)
	}
	if r := mangleRules(t, p.nsB); r != "" {
		t.Fatalf("rules after clear:\n%s", r)
	}

	// SIGKILL while shaping: traffic stops instead of passing unshaped.
	h.ctl(netem.Request{Op: "set", DelayNs: int64(time.Millisecond)})
	h.kill()
	dead := ping(t, p.nsA, p.b, 2, 0)
	if dead.Received != 0 || dead.Lost != 2 {
		t.Fatalf("after SIGKILL: received %d of %d echoes unshaped", dead.Received, dead.Sent)
	}
	if r := mangleRules(t, p.nsB); r == "" {
		t.Fatal("SIGKILL left no rule, so traffic could pass unshaped")
	}

	// A new agent on the same queue removes the stale rule; SIGTERM then
	// leaves nothing behind.
	h2 := startHelper(t, p.nsB, p.linkB, testQueue)
	if r := mangleRules(t, p.nsB); r != "" {
		t.Fatalf("stale rules not swept:\n%s", r)
	}
	h2.ctl(netem.Request{Op: "set", DelayNs: 200000, Peers: []string{p.a1.String(), "fd77::1"}})
	if r := mangleRules(t, p.nsB); strings.Count(r, "NFQUEUE") != 2 {
		t.Fatalf("rules for two peers:\n%s", r)
	}
	if err := h2.stop(); err != nil {
		t.Fatalf("agent exit: %v\n%s", err, h2.out.String())
	}
	if r := mangleRules(t, p.nsB); r != "" {
		t.Fatalf("rules after SIGTERM:\n%s", r)
	}
	if after := ping(t, p.nsA, p.b, 3, time.Millisecond); after.Lost != 0 {
		t.Fatalf("traffic blocked after the agent stopped: %+v", after)
	}
}

// TestUserspaceInProcessNetNS drives the shaper of another namespace from
// this process (Options.NetNS).
func TestUserspaceInProcessNetNS(t *testing.T) {
	p := newPair(t)
	ctx := context.Background()
	sh, info, err := netem.New(ctx, netem.Options{Backend: "userspace", NetNS: nsPath(p.nsB), QueueNum: testQueue + 1})
	if err != nil {
		t.Fatal(err)
	}
	if info.Backend != "userspace" || info.Link != p.linkB {
		t.Fatalf("info %+v (want the link of B's default route)", info)
	}
	defer sh.Close()
	if err := sh.Set(ctx, netem.Config{Delay: 2 * time.Millisecond, Peers: []netip.Addr{p.a1}}); err != nil {
		t.Fatal(err)
	}
	if r := mangleRules(t, p.nsB); !strings.Contains(r, "rttlab-4243") {
		t.Fatalf("rule not in B:\n%s", r)
	}
	out, _ := exec.Command("iptables", "-w", "-t", "mangle", "-S").CombinedOutput()
	if strings.Contains(string(out), "rttlab-4243") {
		t.Fatal("rule landed in the test's own namespace")
	}
	r := ping(t, p.nsB, p.a1, 5, time.Millisecond)
	if r.Lost != 0 || r.Median < 1500*time.Microsecond {
		t.Fatalf("ping through in-process shaper: %+v", r)
	}
	// A delay per peer: a1 and a2 share B's link with 2ms and 0.5ms.
	if err := sh.Set(ctx, netem.Config{PeerDelays: []netem.PeerDelay{{Peer: p.a1, Delay: 2 * time.Millisecond}, {Peer: p.a2, Delay: 500 * time.Microsecond}}}); err != nil {
		t.Fatal(err)
	}
	far, near := ping(t, p.nsB, p.a1, 10, time.Millisecond), ping(t, p.nsB, p.a2, 10, time.Millisecond)
	t.Logf("per-peer delays: 2ms peer %.3f ms, 0.5ms peer %.3f ms", ms(far.Median), ms(near.Median))
	if far.Lost+near.Lost != 0 || far.Median < 1500*time.Microsecond || near.Median < 400*time.Microsecond || near.Median > 1500*time.Microsecond {
		t.Fatalf("per-peer delays: 2ms peer %+v, 0.5ms peer %+v", far, near)
	}
	// A peer without delay is not held behind another peer's delayed
	// packets: while a1's echo replies wait 20ms each, a2's go through.
	if err := sh.Set(ctx, netem.Config{PeerDelays: []netem.PeerDelay{{Peer: p.a1, Delay: 20 * time.Millisecond}, {Peer: p.a2, Delay: 0}}}); err != nil {
		t.Fatal(err)
	}
	before := sh.(netem.StatsReporter).Stats()
	farDone := make(chan workloads.PingResult)
	go func() {
		var r workloads.PingResult
		_ = netem.InNetNS(nsPath(p.nsB), func() error {
			var err error
			r, err = workloads.PingTimed(ctx, p.a1, 40, 0, workloads.PingInProcess)
			return err
		})
		farDone <- r
	}()
	time.Sleep(50 * time.Millisecond)
	near = ping(t, p.nsB, p.a2, 20, 10*time.Millisecond)
	far = <-farDone
	overtook := sh.(netem.StatsReporter).Stats().Overtook - before.Overtook
	t.Logf("side by side: 20ms peer %.3f ms, 0ms peer %.3f ms (max %.3f), %d packets overtook", ms(far.Median), ms(near.Median), ms(near.Max), overtook)
	if far.Received < 30 || far.Median < 19*time.Millisecond || near.Lost != 0 || near.Median > 5*time.Millisecond || overtook == 0 {
		t.Fatalf("0ms peer held behind the 20ms peer: 20ms peer %+v, 0ms peer %+v, %d packets overtook", far, near, overtook)
	}
	if err := sh.Set(ctx, netem.Config{Delay: 1, Peers: nil}); err != nil {
		t.Fatal(err)
	}
	if err := sh.Set(ctx, netem.Config{Delay: -1}); err == nil {
		t.Fatal("negative delay accepted")
	}
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	if r := mangleRules(t, p.nsB); r != "" {
		t.Fatalf("rules after Close:\n%s", r)
	}
}

// TestAutoBackend checks that auto picks kernel netem where it works and
// otherwise says why it fell back.
func TestAutoBackend(t *testing.T) {
	p := newPair(t)
	sh, info, err := netem.New(context.Background(), netem.Options{NetNS: nsPath(p.nsB), QueueNum: testQueue + 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	t.Logf("auto: backend %s: %s", info.Backend, info.Why)
	if sh.Backend() != info.Backend {
		t.Fatalf("Backend() %s, info %s", sh.Backend(), info.Backend)
	}
	if info.Backend == "userspace" && !strings.Contains(info.Why, "kernel netem unavailable") {
		t.Fatalf("fallback without a reason: %q", info.Why)
	}
}

// TestMissingNetAdmin runs New without CAP_NET_ADMIN: the error names it.
func TestMissingNetAdmin(t *testing.T) {
	p := newPair(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux) to drop CAP_NET_ADMIN")
	}
	cmd := exec.Command("ip", "netns", "exec", p.nsB, "setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin",
		exeForTest(), "-test.run=^$")
	cmd.Env = append(cmd.Environ(), envHelper+"=new", envBack+"=userspace", envQueue+"=4245")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "ERROR:") || !strings.Contains(string(out), "CAP_NET_ADMIN") {
		t.Fatalf("without CAP_NET_ADMIN: %s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}
