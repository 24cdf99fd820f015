package netem

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

func TestKernelPlanInterfaceScope(t *testing.T) {
	qs, fs := kernelPlan(7, Config{Delay: 500 * time.Microsecond})
	if len(qs) != 1 || len(fs) != 0 {
		t.Fatalf("plan = %d qdiscs, %d filters; want 1, 0", len(qs), len(fs))
	}
	n, ok := qs[0].(*netlink.Netem)
	if !ok {
		t.Fatalf("root qdisc is %T, want netem", qs[0])
	}
	a := n.Attrs()
	if a.LinkIndex != 7 || a.Parent != netlink.HANDLE_ROOT || a.Handle != netlink.MakeHandle(kernelMajor, 0) {
		t.Fatalf("netem attrs = %+v", a)
	}
	if n.Limit < 100_000 {
		t.Fatalf("netem limit %d < 100000 packets (1s at 100k pps)", n.Limit)
	}
	// NewNetem stores the latency in scheduler ticks; it must convert back
	// to the configured 500µs.
	if n.Latency == 0 {
		t.Fatal("netem latency is 0")
	}
	if n.Jitter != 0 || n.Loss != 0 || n.Duplicate != 0 || n.ReorderProb != 0 {
		t.Fatalf("netem adds more than delay: %+v", n)
	}
}

func TestKernelPlanPathScope(t *testing.T) {
	v4 := netip.MustParseAddr("172.18.0.2")
	v6 := netip.MustParseAddr("fd00::2")
	mapped := netip.MustParseAddr("::ffff:10.1.2.3")
	qs, fs := kernelPlan(3, Config{Delay: time.Millisecond, Peers: []netip.Addr{v4, v6, mapped}})
	if len(qs) != 2 || len(fs) != 3 {
		t.Fatalf("plan = %d qdiscs, %d filters; want 2, 3", len(qs), len(fs))
	}
	prio, ok := qs[0].(*netlink.Prio)
	if !ok || prio.Parent != netlink.HANDLE_ROOT || prio.Handle != netlink.MakeHandle(kernelMajor, 0) {
		t.Fatalf("root = %T %+v", qs[0], qs[0].Attrs())
	}
	if prio.Bands != 4 {
		t.Fatalf("prio bands %d, want 4", prio.Bands)
	}
	for i, b := range prio.PriorityMap {
		if b > 2 {
			t.Fatalf("priomap[%d] = %d sends unmatched traffic to the netem band", i, b)
		}
	}
	netem, ok := qs[1].(*netlink.Netem)
	if !ok || netem.Parent != netlink.MakeHandle(kernelMajor, 4) || netem.Handle != netlink.MakeHandle(kernelNetemMajor, 0) {
		t.Fatalf("child = %T %+v", qs[1], qs[1].Attrs())
	}
	check := func(f netlink.Filter, proto uint16, prioNum uint16, keys []nl.TcU32Key) {
		t.Helper()
		u, ok := f.(*netlink.U32)
		if !ok {
			t.Fatalf("filter is %T", f)
		}
		a := u.Attrs()
		if a.LinkIndex != 3 || a.Parent != netlink.MakeHandle(kernelMajor, 0) || a.Protocol != proto || a.Priority != prioNum {
			t.Fatalf("filter attrs = %+v", a)
		}
		if u.ClassId != netlink.MakeHandle(kernelMajor, 4) {
			t.Fatalf("classid %x", u.ClassId)
		}
		if u.Sel == nil || u.Sel.Flags&nl.TC_U32_TERMINAL == 0 || int(u.Sel.Nkeys) != len(keys) || len(u.Sel.Keys) != len(keys) {
			t.Fatalf("selector = %+v", u.Sel)
		}
		for i, k := range keys {
			if u.Sel.Keys[i] != k {
				t.Fatalf("key %d = %+v, want %+v", i, u.Sel.Keys[i], k)
			}
		}
	}
	check(fs[0], unix.ETH_P_IP, 1, []nl.TcU32Key{{Mask: 0xffffffff, Val: 0xac120002, Off: 16}})
	check(fs[1], unix.ETH_P_IPV6, 2, []nl.TcU32Key{
		{Mask: 0xffffffff, Val: 0xfd000000, Off: 24},
		{Mask: 0xffffffff, Val: 0, Off: 28},
		{Mask: 0xffffffff, Val: 0, Off: 32},
		{Mask: 0xffffffff, Val: 2, Off: 36},
	})
	check(fs[2], unix.ETH_P_IP, 1, []nl.TcU32Key{{Mask: 0xffffffff, Val: 0x0a010203, Off: 16}})
}

// TestKernelPlanSerializes checks the request bytes the plan produces:
// netem's TCA_OPTIONS carry the tc_netem_qopt with our limit.
func TestKernelPlanSerializes(t *testing.T) {
	qs, _ := kernelPlan(1, Config{Delay: time.Millisecond})
	n := qs[0].(*netlink.Netem)
	opt := nl.TcNetemQopt{Latency: n.Latency, Limit: n.Limit}
	b := opt.Serialize()
	back := nl.DeserializeTcNetemQopt(b)
	if back.Limit != netemLimit || back.Latency != n.Latency {
		t.Fatalf("qopt round trip = %+v", back)
	}
}

func TestNetemUnavailable(t *testing.T) {
	for _, err := range []error{
		unix.ENOENT,
		unix.EOPNOTSUPP,
		errNetemUnavailable,
	} {
		if !NetemUnavailable(err) {
			t.Errorf("NetemUnavailable(%v) = false", err)
		}
	}
	for _, err := range []error{nil, unix.EPERM, unix.EEXIST} {
		if NetemUnavailable(err) {
			t.Errorf("NetemUnavailable(%v) = true", err)
		}
	}
	if w := kernelWords(&wrapErr{"add netem qdisc on eth0: no such file or directory: Specified qdisc kind is unknown."}); w != "Specified qdisc kind is unknown" {
		t.Errorf("kernelWords = %q", w)
	}
}

type wrapErr struct{ s string }

func (e *wrapErr) Error() string { return e.s }

// Per-peer delays: one netem band per distinct delay, each peer's filter
// steering into its delay's band.
func TestKernelPlanPerPeer(t *testing.T) {
	a := netip.MustParseAddr("172.18.0.2")
	b := netip.MustParseAddr("172.18.0.3")
	c := netip.MustParseAddr("172.18.0.4")
	cfg := Config{PeerDelays: []PeerDelay{{a, 125 * time.Microsecond}, {b, 50 * time.Microsecond}, {c, 125 * time.Microsecond}}}
	qs, fs := kernelPlan(5, cfg)
	if len(qs) != 3 || len(fs) != 3 {
		t.Fatalf("plan = %d qdiscs, %d filters; want prio + 2 netems, 3 filters", len(qs), len(fs))
	}
	if p := qs[0].(*netlink.Prio); p.Bands != 5 {
		t.Fatalf("prio bands %d, want 3 + 2", p.Bands)
	}
	wantBand := map[netip.Addr]uint16{a: 4, b: 5, c: 4}
	for i, n := range qs[1:] {
		ne := n.(*netlink.Netem)
		if ne.Parent != netlink.MakeHandle(kernelMajor, uint16(4+i)) || ne.Handle != netlink.MakeHandle(uint16(kernelNetemMajor+i), 0) {
			t.Fatalf("netem %d attrs %+v", i, ne.Attrs())
		}
	}
	if qs[1].(*netlink.Netem).Latency == qs[2].(*netlink.Netem).Latency {
		t.Fatal("two delays share one latency")
	}
	for i, f := range fs {
		u := f.(*netlink.U32)
		peer := cfg.PeerDelays[i].Peer
		if u.ClassId != netlink.MakeHandle(kernelMajor, wantBand[peer]) {
			t.Fatalf("peer %s goes to class %x, want band %d", peer, u.ClassId, wantBand[peer])
		}
	}
	if !sameGrouping(cfg, Config{PeerDelays: []PeerDelay{{a, time.Millisecond}, {b, 2 * time.Millisecond}, {c, time.Millisecond}}}) {
		t.Fatal("same peers and grouping, other delays: should change in place")
	}
	if sameGrouping(cfg, Config{PeerDelays: []PeerDelay{{a, time.Millisecond}, {b, time.Millisecond}, {c, time.Millisecond}}}) {
		t.Fatal("a different grouping was taken for an in-place change")
	}
	var many []PeerDelay
	for i := range 14 {
		many = append(many, PeerDelay{netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), time.Duration(i+1) * time.Microsecond})
	}
	k := &kernelShaper{}
	if err := k.Set(t.Context(), Config{PeerDelays: many}); err == nil {
		t.Fatal("14 distinct delays accepted; prio has 13 bands for them")
	}
}

// The read-back compares what the kernel lists with what was set.
func TestCheckNetems(t *testing.T) {
	qs, _ := kernelPlan(1, Config{Delay: time.Millisecond, Peers: []netip.Addr{netip.MustParseAddr("10.0.0.2")}})
	same := []netlink.Qdisc{qs[0], qs[1]}
	if err := checkNetems(qs, same); err != nil {
		t.Fatalf("identical qdiscs: %v", err)
	}
	other := *qs[1].(*netlink.Netem)
	other.Latency++
	if err := checkNetems(qs, []netlink.Qdisc{qs[0], &other}); err == nil {
		t.Fatal("a netem with another latency passed the read-back")
	}
	if err := checkNetems(qs, []netlink.Qdisc{qs[0]}); err == nil {
		t.Fatal("a missing netem passed the read-back")
	}
	unordered := *qs[1].(*netlink.Netem)
	unordered.Rate64 = 0
	if err := checkNetems(qs, []netlink.Qdisc{qs[0], &unordered}); err == nil {
		t.Fatal("a netem without the rate that keeps its queue in order passed the read-back")
	}
}

// Every netem of a plan has the rate that keeps its queue in order, so
// that a change down does not let new packets overtake held ones.
func TestKernelPlanKeepsOrder(t *testing.T) {
	for _, c := range []Config{
		{Delay: time.Millisecond},
		{PeerDelays: []PeerDelay{{netip.MustParseAddr("10.0.0.2"), time.Millisecond}, {netip.MustParseAddr("10.0.0.3"), 2 * time.Millisecond}}},
	} {
		qs, _ := kernelPlan(1, c)
		for _, q := range qs {
			if n, ok := q.(*netlink.Netem); ok && n.Rate64 != netemFIFORate {
				t.Fatalf("%s scope: netem %x has rate %d, want %d", c.Scope(), n.Handle>>16, n.Rate64, uint64(netemFIFORate))
			}
		}
	}
}

func TestConfigValidatePeerDelays(t *testing.T) {
	a := netip.MustParseAddr("10.0.0.2")
	if err := (Config{PeerDelays: []PeerDelay{{a, time.Millisecond}, {a, 2 * time.Millisecond}}}).Validate(); err == nil {
		t.Fatal("a peer with two delays was accepted")
	}
	if err := (Config{PeerDelays: []PeerDelay{{a, -1}}}).Validate(); err == nil {
		t.Fatal("a negative peer delay was accepted")
	}
	c := Config{PeerDelays: []PeerDelay{{a, time.Millisecond}}}
	if c.Scope() != "path" || len(c.Entries()) != 1 {
		t.Fatalf("scope %s entries %v", c.Scope(), c.Entries())
	}
}

// A floor is added to every delay, zero included, on both backends: the
// netems' latencies and the userspace loop's due times.
func TestConfigFloor(t *testing.T) {
	a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	c := Config{PeerDelays: []PeerDelay{{a, 125 * time.Microsecond}, {b, 0}}, Floor: 300 * time.Microsecond}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	e := c.Effective()
	if e.Floor != 0 || e.PeerDelays[0].Delay != 425*time.Microsecond || e.PeerDelays[1].Delay != 300*time.Microsecond {
		t.Fatalf("effective %+v", e)
	}
	if c.PeerDelays[0].Delay != 125*time.Microsecond {
		t.Fatal("Effective changed its receiver's delays")
	}
	qs, _ := kernelPlan(3, e)
	for i, want := range []time.Duration{425 * time.Microsecond, 300 * time.Microsecond} {
		if got, w := qs[1+i].(*netlink.Netem).Latency, netemQdisc(3, 0, 0, want).Latency; got != w {
			t.Fatalf("netem %d latency %d, want %d (%v)", i, got, w, want)
		}
	}
	tab := newDelayTable(e)
	if _, d := tab.laneFor(pktInfo{src: b}, HookIngress); d != int64(300*time.Microsecond) {
		t.Fatalf("zero-delay peer held %v, want the floor", time.Duration(d))
	}
	if h := newAccounting().arrive(pktInfo{id: 1, src: a}, 1000, 0, int64(425*time.Microsecond)); h.due != 1000+int64(425*time.Microsecond) {
		t.Fatalf("due %d", h.due)
	}
	if e := (Config{Delay: 100 * time.Microsecond}).Effective(); e.Delay != 100*time.Microsecond {
		t.Fatal("no floor changed the delay")
	}
	if e := (Config{Delay: time.Millisecond, Peers: []netip.Addr{a}, Floor: time.Millisecond}).Effective(); e.Delay != 2*time.Millisecond || len(e.Peers) != 1 {
		t.Fatalf("single delay with floor: %+v", e)
	}
	for _, bad := range []Config{
		{Delay: time.Millisecond, Floor: -1},
		{Delay: -time.Millisecond, Floor: 2 * time.Millisecond},
		{Delay: MaxDelay, Floor: 1},
		{PeerDelays: []PeerDelay{{a, MaxDelay}}, Floor: time.Microsecond},
	} {
		if err := bad.Validate(); err == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
}
