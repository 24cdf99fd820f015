package netem_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rttlab/rttlab/internal/syncbuf"
	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/workloads"
)

// Helper-process mode: the test binary re-executed inside a namespace (via
// "ip netns exec") runs the agent there, so the shaper is a separate
// process that a test can SIGKILL.
const (
	envHelper = "RTTLAB_NETEM_HELPER"
	envSocket = "RTTLAB_NETEM_SOCKET"
	envLink   = "RTTLAB_NETEM_LINK"
	envQueue  = "RTTLAB_NETEM_QUEUE"
	envBack   = "RTTLAB_NETEM_BACKEND"
	envHook   = "RTTLAB_NETEM_HOOK"
	envHot    = "RTTLAB_NETEM_HOT"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "":
		os.Exit(m.Run())
	case "serve":
		os.Exit(helperServe())
	case "new":
		os.Exit(helperNew())
	case "echo":
		os.Exit(echoServe())
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode")
		os.Exit(2)
	}
}

func helperOptions() netem.Options {
	q, _ := strconv.Atoi(os.Getenv(envQueue))
	hot, _ := time.ParseDuration(os.Getenv(envHot))
	return netem.Options{Backend: os.Getenv(envBack), Link: os.Getenv(envLink), QueueNum: uint16(q), Hook: os.Getenv(envHook), Hot: hot}
}

func helperServe() int {
	if c := os.Getenv("RTTLAB_NETEM_CPU"); c != "" {
		n, _ := strconv.Atoi(c)
		var set unix.CPUSet
		set.Set(n)
		_ = unix.SchedSetaffinity(0, &set)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := netem.Serve(ctx, os.Getenv(envSocket), helperOptions()); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// helperNew creates a shaper and prints the error (used without
// CAP_NET_ADMIN).
func helperNew() int {
	sh, _, err := netem.New(context.Background(), helperOptions())
	if err != nil {
		fmt.Println("ERROR:", err)
		return 1
	}
	sh.Close()
	fmt.Println("OK")
	return 0
}

func requireRoot(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("times real packets through the shaper: meaningless under the race detector (make test runs it without -race)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, iptables, NFQUEUE, raw ICMP)")
	}
	for _, bin := range []string{"ip", "iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s: %v", bin, err)
		}
	}
}

// pair is two network namespaces joined by a veth pair:
// A (10.77.0.1 and 10.77.0.3, fd77::1) <-> B (10.77.0.2, fd77::2).
type pair struct {
	prefix       string
	nsA, nsB     string
	linkA, linkB string
	a1, a2, b    netip.Addr
}

func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func newPair(t testing.TB) *pair {
	t.Helper()
	requireRoot(t)
	rnd := make([]byte, 3)
	_, _ = rand.Read(rnd)
	p := &pair{prefix: "rtl" + hex.EncodeToString(rnd)}
	p.nsA, p.nsB = p.prefix+"a", p.prefix+"b"
	p.linkA, p.linkB = p.prefix+"a0", p.prefix+"b0"
	p.a1, p.a2, p.b = netip.MustParseAddr("10.77.0.1"), netip.MustParseAddr("10.77.0.3"), netip.MustParseAddr("10.77.0.2")
	t.Cleanup(func() {
		for _, ns := range []string{p.nsA, p.nsB} {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
		out, _ := exec.Command("ip", "netns", "list").CombinedOutput()
		if strings.Contains(string(out), p.prefix) {
			t.Errorf("network namespaces left behind: %s", out)
		}
		out, _ = exec.Command("ip", "-o", "link").CombinedOutput()
		if strings.Contains(string(out), p.prefix) {
			t.Errorf("links left behind: %s", out)
		}
	})
	run(t, "ip", "netns", "add", p.nsA)
	run(t, "ip", "netns", "add", p.nsB)
	run(t, "ip", "link", "add", p.linkA, "netns", p.nsA, "type", "veth", "peer", "name", p.linkB, "netns", p.nsB)
	for _, c := range [][]string{
		{p.nsA, "ip", "addr", "add", "10.77.0.1/24", "dev", p.linkA},
		{p.nsA, "ip", "addr", "add", "10.77.0.3/24", "dev", p.linkA},
		{p.nsA, "ip", "addr", "add", "fd77::1/64", "dev", p.linkA, "nodad"},
		{p.nsB, "ip", "addr", "add", "10.77.0.2/24", "dev", p.linkB},
		{p.nsB, "ip", "addr", "add", "fd77::2/64", "dev", p.linkB, "nodad"},
		{p.nsA, "ip", "link", "set", p.linkA, "up"},
		{p.nsB, "ip", "link", "set", p.linkB, "up"},
		{p.nsA, "ip", "link", "set", "lo", "up"},
		{p.nsB, "ip", "link", "set", "lo", "up"},
		{p.nsB, "ip", "route", "add", "default", "via", "10.77.0.1"},
	} {
		run(t, append([]string{"ip", "netns", "exec"}, c...)...)
	}
	return p
}

// exeForTest is the test binary, for helper processes.
func exeForTest() string { return os.Args[0] }

func nsPath(ns string) string { return "/var/run/netns/" + ns }

// ping runs workloads.Ping from inside namespace ns.
func ping(t testing.TB, ns string, dst netip.Addr, count int, interval time.Duration) workloads.PingResult {
	t.Helper()
	var res workloads.PingResult
	err := netem.InNetNS(nsPath(ns), func() error {
		var err error
		res, err = workloads.PingTimed(context.Background(), dst, count, interval, workloads.PingInProcess)
		return err
	})
	if err != nil {
		t.Fatalf("ping %s from %s: %v", dst, ns, err)
	}
	return res
}

// mangleRules lists the rttlab rules in ns's mangle table (IPv4 and IPv6).
func mangleRules(t testing.TB, ns string) string {
	t.Helper()
	var out []string
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, l := range strings.Split(run(t, "ip", "netns", "exec", ns, bin, "-w", "-t", "mangle", "-S"), "\n") {
			if strings.Contains(l, "rttlab-") {
				out = append(out, bin+": "+l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// helper is an agent process running in a namespace.
type helper struct {
	t      testing.TB
	cmd    *exec.Cmd
	socket string
	out    *syncbuf.Buffer
	done   chan struct{} // closed when the process has exited
	err    error         // exit error, set before done closes
}

func startHelper(t testing.TB, ns, link string, queue int) *helper {
	t.Helper()
	h := &helper{t: t, socket: filepath.Join(t.TempDir(), "agent.sock"), out: &syncbuf.Buffer{}, done: make(chan struct{})}
	h.cmd = exec.Command("ip", "netns", "exec", ns, exeForTest(), "-test.run=^$")
	h.cmd.Env = append(os.Environ(), envHelper+"=serve", envSocket+"="+h.socket, envLink+"="+link,
		envQueue+"="+strconv.Itoa(queue), envBack+"=userspace")
	h.cmd.Stdout, h.cmd.Stderr = h.out, h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	go func() { h.err = h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() { h.stop() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := netem.Ctl(context.Background(), h.socket, netem.Request{Op: "ping"}); err == nil {
			return h
		}
		select {
		case <-h.done:
			t.Fatalf("helper exited: %v\n%s", h.err, h.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("helper did not come up:\n%s", h.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *helper) ctl(req netem.Request) netem.Reply {
	h.t.Helper()
	rep, err := netem.Ctl(context.Background(), h.socket, req)
	if err != nil {
		h.t.Fatalf("ctl %+v: %v\n%s", req, err, h.out.String())
	}
	return rep
}

// stop ends the helper with SIGTERM (a no-op once it has exited) and
// returns its exit error.
func (h *helper) stop() error {
	select {
	case <-h.done:
		return h.err
	default:
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
		return h.err
	case <-time.After(10 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.done
		return errors.New("helper ignored SIGTERM")
	}
}

// kill ends the helper with SIGKILL: no cleanup runs.
func (h *helper) kill() {
	_ = h.cmd.Process.Kill()
	<-h.done
}
