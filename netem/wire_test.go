package netem

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func wireShaper() *userspace {
	return &userspace{opts: Options{Hook: HookWire, Bridge: "br-0123456789ab", Src: netip.MustParseAddr("172.19.0.3"), Label: "run1/rttlab-run1-app", QueueNum: 40000}}
}

// The wire hook's rules match only what Src sends on the run's bridge,
// entering from a bridge port, per peer in path scope, and carry the
// label that the sweep finds.
func TestWireRules(t *testing.T) {
	u := wireShaper()
	db := netip.MustParseAddr("172.19.0.2")
	got := u.rulesFor(Config{Delay: time.Millisecond, Peers: []netip.Addr{db, db, netip.MustParseAddr("fd00::2")}})
	want := "-i br-0123456789ab -s 172.19.0.3/32 -d 172.19.0.2/32 -m physdev --physdev-is-in -m comment --comment rttlab:run1/rttlab-run1-app -j NFQUEUE --queue-num 40000"
	if len(got) != 1 || got[0] != (iptRule{"iptables", "PREROUTING", want}) {
		t.Fatalf("path scope rules %+v", got)
	}
	got = u.rulesFor(Config{Delay: time.Millisecond})
	if len(got) != 1 || strings.Contains(got[0].spec, " -d ") || !strings.Contains(got[0].spec, "-i br-0123456789ab -s 172.19.0.3/32 ") {
		t.Fatalf("interface scope rules %+v", got)
	}
	if u.comment() != "rttlab:run1/rttlab-run1-app" || u.link() != "br-0123456789ab" {
		t.Errorf("comment %q link %q", u.comment(), u.link())
	}
	// Per-peer delays are keyed by the destination, as on egress.
	tbl := newDelayTable(Config{PeerDelays: []PeerDelay{{db, 2 * time.Millisecond}, {netip.MustParseAddr("172.19.0.4"), 0}}})
	if _, d := tbl.laneFor(pktInfo{src: u.opts.Src, dst: db}, HookWire); d != int64(2*time.Millisecond) {
		t.Errorf("lane delay for the destination %v", d)
	}
}

func TestWireRuleOf(t *testing.T) {
	line := `-A PREROUTING -s 172.19.0.3/32 -i br-x -m physdev --physdev-is-in -m comment --comment "rttlab:run1/rttlab-run1-app" -j NFQUEUE --queue-num 40000`
	f := strings.Fields(line)
	for prefix, want := range map[string]bool{"": true, "run1/": true, "run1/rttlab-run1-app": true, "run2/": false, "run": true} {
		if got := wireRuleOf(f, prefix); got != want {
			t.Errorf("prefix %q: %v", prefix, got)
		}
	}
	if wireRuleOf(strings.Fields(`-A PREROUTING -m comment --comment "rttlab-7274" -j NFQUEUE`), "") {
		t.Error("a container's own queue rule taken for a wire rule")
	}
	if got := unquote([]string{`"rttlab:a/b"`, "-j"}); got[0] != "rttlab:a/b" || got[1] != "-j" {
		t.Errorf("unquote %q", got)
	}
}

func TestCheckWireRefusals(t *testing.T) {
	ok := Options{Hook: HookWire, Bridge: "br-x", Src: netip.MustParseAddr("10.0.0.1"), Label: "r/a"}
	for name, c := range map[string]struct {
		mut  func(*Options)
		want string
	}{
		"no bridge": {func(o *Options) { o.Bridge = "" }, "no bridge given"},
		"no src":    {func(o *Options) { o.Src = netip.Addr{} }, "no address of the shaped container"},
		"label":     {func(o *Options) { o.Label = "a b" }, "without spaces"},
		"no label":  {func(o *Options) { o.Label = "" }, "give a unique name"},
	} {
		o := ok
		c.mut(&o)
		if err := checkWire(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
