package vmtest

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rttlab/rttlab/netem"
)

// Probe sizes: echoes or requests per observer and setting.
const (
	probeCount = 10
	// unheldBelow: a round trip whose minimum stays under it was not held
	// (the suite never sets a delay below it).
	unheldBelow = 5 * time.Millisecond
)

// observer is one way of seeing the delay: a kernel-stamped ping or a
// TCP request/response, from one namespace to the other. B's shaper
// delays what B sends, so every observer's round trip crosses the delay
// once: on the reply when A asks, on the request when B asks.
type observer struct {
	name     string
	ns       string
	src, dst netip.Addr
	peer     netip.Addr // the address B's shaped packets go to
	tcp      bool
}

func observers(t *topology) []observer {
	return []observer{
		{name: "ping A(10.77.0.1)->B", ns: t.nsA, src: t.a1, dst: t.b, peer: t.a1},
		{name: "ping B->10.77.0.1", ns: t.nsB, src: t.b, dst: t.a1, peer: t.a1},
		{name: "ping A(10.77.0.3)->B", ns: t.nsA, src: t.a2, dst: t.b, peer: t.a2},
		{name: "ping B->10.77.0.3", ns: t.nsB, src: t.b, dst: t.a2, peer: t.a2},
		{name: "ping6 A->B", ns: t.nsA, src: t.a6, dst: t.b6, peer: t.a6},
		{name: "ping6 B->A", ns: t.nsB, src: t.b6, dst: t.a6, peer: t.a6},
		{name: "tcp A(10.77.0.1)->B", ns: t.nsA, src: t.a1, dst: t.b, peer: t.a1, tcp: true},
		{name: "tcp B->10.77.0.1", ns: t.nsB, src: t.b, dst: t.a1, peer: t.a1, tcp: true},
	}
}

func (o observer) probe() (samples, error) {
	if o.tcp {
		return tcpRequests(o.ns, o.src, o.dst, probeCount)
	}
	return pingStamped(o.ns, o.src, o.dst, probeCount)
}

// expected is the one-way delay eff puts on B's packets to peer.
func expected(eff netem.Config, peer netip.Addr, shapes6 bool) time.Duration {
	if peer.Is6() && !shapes6 {
		return 0
	}
	if eff.Scope() == "interface" {
		return eff.Delay
	}
	for _, e := range eff.Entries() {
		if e.Peer.Unmap() == peer {
			return e.Delay
		}
	}
	return 0
}

// ck gathers one check's failures and notes.
type ck struct {
	fails []string
	notes []string
}

func (c *ck) fail(format string, args ...any) {
	c.fails = append(c.fails, fmt.Sprintf(format, args...))
}
func (c *ck) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}
func (c *ck) failed() bool { return len(c.fails) > 0 }

func (c *ck) detail() string {
	if c.failed() {
		return strings.Join(c.fails, "; ")
	}
	return strings.Join(c.notes, "; ")
}

// observe probes every observer under eff and checks what each saw: no
// probe lost; an unshaped path's minimum below unheldBelow; a shaped
// one's minimum at least the delay. Timing beyond that is checked only
// where emulation leaves it meaningful, on the kernel-stamped pings of
// delays of 5-20 ms, pooled by delay: each echo's excess is its round
// trip less the delay and less its observer's ref (its round trip
// through the same backend at the reference delay, less that delay; see
// reference), and the median excess must be at most max(1.5 ms, 10% of
// the delay), on backends that hold from a kernel stamp (timed). Pooling
// the observers' echoes keeps one observer's unlucky few from deciding.
// A TCP round trip is timed on the guest's own clock around two wake-ups
// of this program, which the emulated CPUs stretch to milliseconds now
// and then: it checks the minimum only.
func (s *suite) observe(c *ck, eff netem.Config) {
	excess := map[time.Duration][]time.Duration{}
	for _, o := range observers(s.t) {
		res, err := o.probe()
		if err != nil {
			c.fail("%s: %v", o.name, err)
			continue
		}
		d := expected(eff, o.peer, s.b.shapes6)
		s.r.log("%s %s: delay %v: %s (unshaped median %s, ref %s)", s.b.name, o.name, d, res, ms(s.base[o.name]), ms(s.ref[o.name]))
		if res.Lost > 0 {
			c.fail("%s lost %d of %d", o.name, res.Lost, probeCount)
		}
		if len(res.RTT) == 0 {
			continue
		}
		if d == 0 {
			if res.min() >= unheldBelow {
				c.fail("%s: unshaped path held: min %s", o.name, ms(res.min()))
			}
			continue
		}
		if res.min() < d {
			c.fail("%s: min %s below the delay %v", o.name, ms(res.min()), d)
		}
		if !o.tcp && d >= 5*time.Millisecond && d <= 20*time.Millisecond {
			// An untimed backend's reference is mostly its wake-up lag,
			// not a cost per release: its excess counts from unshaped.
			from := s.ref[o.name]
			if !s.b.timed {
				from = s.base[o.name]
			}
			for _, rtt := range res.RTT {
				excess[d] = append(excess[d], rtt-d-from)
			}
		}
	}
	for _, d := range slices.Sorted(maps.Keys(excess)) {
		e := samples{RTT: excess[d]}.median()
		tol := max(1500*time.Microsecond, d/10)
		over := "ref"
		if !s.b.timed {
			over = "unshaped"
		}
		line := fmt.Sprintf("delay %v: pings' median excess over %s + delay %s (bound %s, %d echoes)", d, over, ms(e), ms(tol), len(excess[d]))
		switch {
		case e <= tol:
			c.note("%s", line)
		case s.b.timed:
			c.fail("%s", line)
		default:
			c.note("%s, not enforced: %s", line, s.b.untimedWhy)
		}
	}
}
