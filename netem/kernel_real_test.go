package netem_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rttlab/rttlab/netem"
)

// TestKernelShaperReal runs the kernel backend where the kernel has netem;
// elsewhere it skips, quoting the kernel's own words.
func TestKernelShaperReal(t *testing.T) {
	p := newPair(t)
	ctx := context.Background()
	sh, info, err := netem.New(ctx, netem.Options{Backend: "kernel", NetNS: nsPath(p.nsB), Link: p.linkB})
	if netem.NetemUnavailable(err) {
		t.Skipf("kernel has no netem: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	if info.Backend != "kernel" {
		t.Fatalf("info %+v", info)
	}
	base := ping(t, p.nsA, p.b, 10, time.Millisecond)
	if err := sh.Set(ctx, netem.Config{Delay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	one := ping(t, p.nsA, p.b, 10, time.Millisecond)
	if d := one.Median - base.Median; d < 500*time.Microsecond || d > 2*time.Millisecond {
		t.Fatalf("interface scope 1ms added %v", d)
	}
	if err := sh.Set(ctx, netem.Config{Delay: time.Millisecond, Peers: []netip.Addr{p.a1}}); err != nil {
		t.Fatal(err)
	}
	toPeer := ping(t, p.nsB, p.a1, 10, time.Millisecond)
	toOther := ping(t, p.nsB, p.a2, 10, time.Millisecond)
	if toPeer.Median-toOther.Median < 500*time.Microsecond {
		t.Fatalf("path scope: peer %v other %v", toPeer.Median, toOther.Median)
	}
	if err := sh.Set(ctx, netem.Config{Delay: 2 * time.Millisecond, Peers: []netip.Addr{p.a1}}); err != nil {
		t.Fatalf("change delay in place: %v", err)
	}
	if err := sh.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if out := run(t, "ip", "netns", "exec", p.nsB, "tc", "qdisc", "show", "dev", p.linkB); strings.Contains(out, "7274:") || strings.Contains(out, "netem") {
		t.Fatalf("qdisc left after Clear: %s", out)
	}
}
