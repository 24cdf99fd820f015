package netem_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
	"github.com/rttlab/rttlab/workloads"
)

// bridged is the topology Docker builds: namespaces A and B, each with a
// veth whose other end sits on a bridge in a third namespace H.
type bridged struct {
	prefix       string
	nsA, nsB     string
	nsH          string
	linkA, linkB string
	a, b         netip.Addr
}

func newBridged(t *testing.T) *bridged {
	t.Helper()
	requireRoot(t)
	p := &bridged{prefix: fmt.Sprintf("rtb%05d", os.Getpid()%100000)}
	p.nsA, p.nsB, p.nsH = p.prefix+"a", p.prefix+"b", p.prefix+"h"
	p.linkA, p.linkB = "eth0", "eth0"
	p.a, p.b = netip.MustParseAddr("10.78.0.1"), netip.MustParseAddr("10.78.0.2")
	t.Cleanup(func() {
		for _, ns := range []string{p.nsA, p.nsB, p.nsH} {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	for _, ns := range []string{p.nsA, p.nsB, p.nsH} {
		run(t, "ip", "netns", "add", ns)
	}
	run(t, "ip", "-n", p.nsH, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", p.nsH, "link", "set", "br0", "up")
	for _, side := range []struct{ ns, host, addr string }{{p.nsA, "va", "10.78.0.1/24"}, {p.nsB, "vb", "10.78.0.2/24"}} {
		run(t, "ip", "-n", p.nsH, "link", "add", side.host, "type", "veth", "peer", "name", "eth0", "netns", side.ns)
		run(t, "ip", "-n", p.nsH, "link", "set", side.host, "master", "br0")
		run(t, "ip", "-n", p.nsH, "link", "set", side.host, "up")
		run(t, "ip", "-n", side.ns, "addr", "add", side.addr, "dev", "eth0")
		run(t, "ip", "-n", side.ns, "link", "set", "eth0", "up")
		run(t, "ip", "-n", side.ns, "link", "set", "lo", "up")
	}
	return p
}

// echoServe is the helper-process mode that answers each 16-byte message
// on a TCP connection with the same bytes (a stand-in for SELECT 1: a
// process on the far side wakes up, reads and answers).
func echoServe() int {
	ln, err := net.Listen("tcp", os.Getenv("RTTLAB_ECHO_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("listening")
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 16)
			for {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}()
	}
}

// tcpRTT measures n request/response round trips of 16 bytes from ns to
// addr and returns their median.
func tcpRTT(t *testing.T, ns, addr string, n int, gap time.Duration) time.Duration {
	t.Helper()
	var c net.Conn
	if err := netem.InNetNS(nsPath(ns), func() error {
		var err error
		c, err = net.DialTimeout("tcp", addr, 2*time.Second)
		return err
	}); err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	buf := make([]byte, 16)
	var v []time.Duration
	for i := range n + 20 {
		start := time.Now()
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if i >= 20 {
			v = append(v, time.Since(start))
		}
		if gap > 0 {
			time.Sleep(gap)
		}
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// TestShaperBreakdown measures where the userspace shaper's delay goes, per
// side and setting: how long a packet waited before the shaper read it
// (kernel receive stamp to read), how late it left (due time to verdict),
// how long the verdict took, and the end-to-end ICMP and TCP round trips
// against no shaper. It asserts nothing: set RTTLAB_BREAKDOWN=1 to run it.
// RTTLAB_BREAKDOWN_HOOKS (default "egress,ingress"), RTTLAB_BREAKDOWN_HOT
// (default "0,2ms") and RTTLAB_BREAKDOWN_LOAD=1 (one CPU-bound process
// beside the probes) choose the variants.
func TestShaperBreakdown(t *testing.T) {
	if os.Getenv("RTTLAB_BREAKDOWN") == "" {
		t.Skip("set RTTLAB_BREAKDOWN=1 to measure the shaper's breakdown")
	}
	p := newBridged(t)
	echo := exec.Command("ip", "netns", "exec", p.nsB, exeForTest(), "-test.run=^$")
	echo.Env = append(os.Environ(), envHelper+"=echo", "RTTLAB_ECHO_ADDR=10.78.0.2:7777")
	out, _ := echo.StdoutPipe()
	if err := echo.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = echo.Process.Kill(); _ = echo.Wait() })
	line := make([]byte, 10)
	_, _ = io.ReadFull(out, line)

	if os.Getenv("RTTLAB_BREAKDOWN_LOAD") != "" {
		burn := exec.Command("sh", "-c", "while :; do :; done")
		if err := burn.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = burn.Process.Kill(); _ = burn.Wait() })
	}
	hooks := strings.Split(envOr("RTTLAB_BREAKDOWN_HOOKS", "egress,ingress"), ",")
	hots := strings.Split(envOr("RTTLAB_BREAKDOWN_HOT", "0,2ms"), ",")
	rtts := []time.Duration{0, 50 * time.Microsecond, 300 * time.Microsecond, 750 * time.Microsecond, time.Millisecond}
	const icmpN, tcpN = 300, 1000
	measure := func() (workloads.PingResult, time.Duration) {
		var pr workloads.PingResult
		_ = netem.InNetNS(nsPath(p.nsA), func() error {
			var err error
			pr, err = workloads.PingTimed(context.Background(), p.b, icmpN, 3*time.Millisecond, workloads.PingInProcess)
			return err
		})
		return pr, tcpRTT(t, p.nsA, "10.78.0.2:7777", tcpN, 0)
	}
	noneICMP, noneTCP := measure()
	var b strings.Builder
	fmt.Fprintf(&b, "no shaper: ICMP median %.1f µs, TCP median %.1f µs\n", us(noneICMP.Median), us(noneTCP))
	for _, hook := range hooks {
		for _, hot := range hots {
			t.Setenv(envHook, hook)
			t.Setenv(envHot, hot)
			oneSide := os.Getenv("RTTLAB_BREAKDOWN_ONESIDE") != ""
			ha := startHelper(t, p.nsA, p.linkA, testQueue)
			if c := os.Getenv("RTTLAB_BREAKDOWN_CPU"); c != "" {
				t.Setenv("RTTLAB_NETEM_CPU", c)
			}
			hb := startHelper(t, p.nsB, p.linkB, testQueue)
			fmt.Fprintf(&b, "\nhook %s, hot %s\n", hook, hot)
			fmt.Fprintf(&b, "%7s %9s %9s %9s %9s | %-62s | %s\n", "rtt_us", "icmp_us", "icmp+", "tcp_us", "tcp+",
				"side A: pkts hold50 late50 lag50/99 verdict50", "side B")
			var zeroICMP, zeroTCP time.Duration
			for _, rtt := range rtts {
				appD, dbD := netem.SplitRTT(rtt)
				if oneSide {
					appD, dbD = 0, rtt
				}
				ha.ctl(netem.Request{Op: "set", DelayNs: int64(appD), Peers: []string{p.b.String()}})
				if oneSide {
					ha.ctl(netem.Request{Op: "clear"})
				}
				hb.ctl(netem.Request{Op: "set", DelayNs: int64(dbD), Peers: []string{p.a.String()}})
				sa0, sb0 := *ha.ctl(netem.Request{Op: "show"}).Stats, *hb.ctl(netem.Request{Op: "show"}).Stats
				pr, tcp := measure()
				sa1, sb1 := *ha.ctl(netem.Request{Op: "show"}).Stats, *hb.ctl(netem.Request{Op: "show"}).Stats
				da, _ := sa1.Sub(sa0)
				db, _ := sb1.Sub(sb0)
				if rtt == 0 {
					zeroICMP, zeroTCP = pr.Median, tcp
				}
				side := func(s netem.Stats) string {
					sm := s.Summarize(0)
					return fmt.Sprintf("%6d %6.1f %5.1f %5.1f/%6.1f %5.1f st%d dr%d", sm.Packets, sm.HoldP50Us, sm.LateP50Us,
						sm.ReadLagP50, sm.ReadLagP99, sm.VerdictP50, sm.Stamped, sm.Drops)
				}
				ref, reft := zeroICMP, zeroTCP
				if rtt == 0 {
					ref, reft = noneICMP.Median, noneTCP
				}
				fmt.Fprintf(&b, "%7.0f %9.1f %+9.1f %9.1f %+9.1f | %-62s | %s\n", us(rtt), us(pr.Median), us(pr.Median-ref-rtt),
					us(tcp), us(tcp-reft-rtt), side(da), side(db))
			}
			_ = ha.stop()
			_ = hb.stop()
		}
	}
	t.Log("\n" + b.String())
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
