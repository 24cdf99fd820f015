package vmtest

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rttlab/rttlab/netem"
)

// Stream sizes: datagrams of one UDP stream and the gap between them.
const (
	streamLen = 150
	streamGap = time.Millisecond
)

// suite runs one backend through its checks.
type suite struct {
	r    *reporter
	t    *topology
	b    *backendUnderTest
	sh   netem.Shaper
	base map[string]time.Duration // unshaped medians by observer
	ref  map[string]time.Duration // see reference
	cur  netem.Config             // the last setting, after Effective
}

func (s *suite) check(name string, fn func(c *ck)) {
	c := &ck{}
	start := time.Now()
	var st0 netem.Stats
	if s.sh != nil {
		st0, _ = stats(s.sh)
	}
	fn(c)
	if s.sh != nil {
		s.logStats(name, st0, time.Since(start))
	}
	s.r.check(s.b.name+"/"+name, !c.failed(), fmt.Sprintf("%s (%v)", c.detail(), time.Since(start).Round(time.Millisecond)))
}

// logStats logs what a userspace shaper did during a check: packets,
// the hold it realized, how late it let packets go, how long packets
// waited before it read them.
func (s *suite) logStats(name string, st0 netem.Stats, wall time.Duration) {
	st1, err := stats(s.sh)
	if err != nil {
		return
	}
	d, err := st1.Sub(st0)
	if err != nil || d.Packets == 0 {
		return
	}
	sm := d.Summarize(wall)
	s.r.log("%s shaper during %s: %d packets, %d dropped, hold p50 %.0fµs p99 %.0fµs, late p50 %.0fµs p99 %.0fµs, read lag p50 %.0fµs p99 %.0fµs, %.2f cores",
		s.b.name, name, sm.Packets, sm.Drops, sm.HoldP50Us, sm.HoldP99Us, sm.LateP50Us, sm.LateP99Us, sm.ReadLagP50, sm.ReadLagP99, sm.CPUCores)
}

// set applies cfg and reads it back, logging what the kernel holds.
func (s *suite) set(c *ck, cfg netem.Config) bool {
	if err := s.sh.Set(context.Background(), cfg); err != nil {
		c.fail("set %+v: %v", cfg, err)
		return false
	}
	s.cur = cfg.Effective()
	return s.readBack(c)
}

func (s *suite) readBack(c *ck) bool {
	lines, err := s.b.readBack(s.sh, s.cur)
	for _, l := range lines {
		s.r.log("%s read back: %s", s.b.name, l)
	}
	if err != nil {
		c.fail("read back: %v", err)
		return false
	}
	return true
}

// stream runs a UDP stream from A's address src through B's echo server
// and checks that every datagram came back, in order.
func (s *suite) stream(c *ck, src netip.Addr, during func() error) {
	st, err := udpStream(s.t.nsA, src, s.t.b, streamLen, streamGap, during)
	s.r.log("%s UDP stream %s->B->%s: %s", s.b.name, src, src, st)
	if err != nil {
		c.fail("UDP stream from %s: %v", src, err)
	}
	if !st.ok() {
		c.fail("UDP stream from %s: %s", src, st)
	} else {
		c.note("stream from %s: %d back in order", src, st.Received)
	}
}

// changeInPlace applies cfg while a UDP stream from src runs, and checks
// that the change kept the structure (no qdisc, filter or rule replaced)
// and did not reset the packet counter.
func (s *suite) changeInPlace(c *ck, src netip.Addr, cfg netem.Config) {
	before, err := s.b.structure()
	if err != nil {
		c.fail("%v", err)
		return
	}
	n0, err := s.b.counter(s.sh)
	if err != nil {
		c.fail("%v", err)
		return
	}
	s.stream(c, src, func() error { return s.sh.Set(context.Background(), cfg) })
	s.cur = cfg.Effective()
	if !s.readBack(c) {
		return
	}
	after, err := s.b.structure()
	if err != nil {
		c.fail("%v", err)
		return
	}
	if !slices.Equal(before, after) {
		c.fail("not in place: before %q, after %q", before, after)
	}
	if n1, err := s.b.counter(s.sh); err != nil || n1 < n0 {
		c.fail("packet counter went from %d to %d (%v): replaced, not changed", n0, n1, err)
	} else {
		c.note("in place, counter %d -> %d", n0, n1)
	}
}

func runSuite(r *reporter, t *topology, b *backendUnderTest) {
	s := &suite{r: r, t: t, b: b, base: map[string]time.Duration{}, ref: map[string]time.Duration{}}
	ms5, ms10, ms15, ms20 := 5*time.Millisecond, 10*time.Millisecond, 15*time.Millisecond, 20*time.Millisecond
	var before []string
	s.check("new", func(c *ck) {
		sh, info, err := netem.New(context.Background(), b.opts)
		if err != nil {
			c.fail("netem.New: %v", err)
			return
		}
		s.sh = sh
		if info.Backend != b.want {
			c.fail("backend %q, want %q (%s)", info.Backend, b.want, info.Why)
		}
		c.note("%s on %s: %s", info.Backend, info.Link, info.Why)
		if before, err = b.structure(); err != nil {
			c.fail("%v", err)
		}
	})
	if s.sh == nil {
		return
	}
	defer func() {
		s.check("close", func(c *ck) {
			if err := s.sh.Close(); err != nil {
				c.fail("close: %v", err)
			}
			if after, err := b.structure(); err != nil || !slices.Equal(after, before) {
				c.fail("after close %q (%v), before the first set %q", after, err, before)
			} else {
				c.note("nothing left: %q", after)
			}
		})
	}()
	s.check("baseline", func(c *ck) {
		for _, o := range observers(t) {
			res, err := o.probe()
			if err != nil || res.Lost > 0 {
				c.fail("%s: %v, %s", o.name, err, res)
				continue
			}
			s.base[o.name] = res.median()
			c.note("%s %s", o.name, ms(res.median()))
		}
		s.stream(c, t.a1, nil)
	})
	s.check("reference", func(c *ck) { s.reference(c) })
	s.check("set-interface", func(c *ck) {
		if s.set(c, netem.Config{Delay: ms10}) {
			s.observe(c, s.cur)
			s.stream(c, t.a1, nil)
		}
	})
	s.check("change-up", func(c *ck) {
		s.changeInPlace(c, t.a1, netem.Config{Delay: ms20})
		s.observe(c, s.cur)
	})
	s.check("change-down", func(c *ck) {
		s.changeInPlace(c, t.a1, netem.Config{Delay: ms5})
		s.observe(c, s.cur)
	})
	s.check("set-path", func(c *ck) {
		if s.set(c, netem.Config{Delay: ms10, Peers: b.peers(t.a1, t.a6)}) {
			s.observe(c, s.cur)
			s.stream(c, t.a1, nil)
			s.stream(c, t.a2, nil)
		}
	})
	peerDelays := func(d1, d2, d6 time.Duration) netem.Config {
		c := netem.Config{PeerDelays: []netem.PeerDelay{{Peer: t.a1, Delay: d1}, {Peer: t.a2, Delay: d2}}}
		if b.shapes6 {
			c.PeerDelays = append(c.PeerDelays, netem.PeerDelay{Peer: t.a6, Delay: d6})
		}
		return c
	}
	s.check("peer-delays", func(c *ck) {
		if s.set(c, peerDelays(ms5, ms15, ms10)) {
			s.observe(c, s.cur)
		}
	})
	s.check("peer-delays-change", func(c *ck) {
		// 10.77.0.3 goes from 15 to 5 ms while its stream runs.
		s.changeInPlace(c, t.a2, peerDelays(ms15, ms5, ms10))
		s.observe(c, s.cur)
	})
	s.check("floor", func(c *ck) {
		if s.set(c, netem.Config{Delay: ms5, Floor: ms5}) {
			s.observe(c, s.cur)
		}
	})
	s.check("refuse", func(c *ck) {
		for _, bad := range []struct {
			why string
			cfg netem.Config
		}{
			{"negative delay", netem.Config{Delay: -time.Millisecond}},
			{"negative floor", netem.Config{Delay: ms5, Floor: -time.Millisecond}},
			{"above MaxDelay", netem.Config{Delay: netem.MaxDelay + time.Millisecond}},
			{"delay + floor above MaxDelay", netem.Config{Delay: netem.MaxDelay, Floor: time.Millisecond}},
			{"negative peer delay", netem.Config{PeerDelays: []netem.PeerDelay{{Peer: t.a1, Delay: -time.Millisecond}}}},
			{"duplicate peer", netem.Config{PeerDelays: []netem.PeerDelay{{Peer: t.a1, Delay: ms5}, {Peer: t.a1, Delay: ms10}}}},
		} {
			if err := s.sh.Set(context.Background(), bad.cfg); err == nil {
				c.fail("%s accepted", bad.why)
			} else {
				c.note("%s: %v", bad.why, err)
			}
		}
		// What was set before stays set.
		s.readBack(c)
	})
	s.check("no-drops", func(c *ck) {
		n, err := b.drops(s.sh)
		switch {
		case err != nil:
			c.fail("%v", err)
		case n > 0:
			c.fail("the shaper dropped %d packets", n)
		default:
			c.note("0 dropped")
		}
	})
	s.check("clear", func(c *ck) {
		if err := s.sh.Clear(context.Background()); err != nil {
			c.fail("clear: %v", err)
			return
		}
		after, err := b.structure()
		if err != nil || !slices.Equal(after, before) {
			c.fail("after clear %q (%v), before the first set %q", after, err, before)
		} else {
			c.note("left as before the first set: %s", strings.Join(after, ", "))
		}
		s.cur = netem.Config{}
		s.observe(c, s.cur)
		s.stream(c, t.a1, nil)
	})
}

// refDelay is the reference setting's delay: in the middle of the timed
// band, and longer than the wake-up lag this VM gives the userspace
// loop (median 0.4-0.6 ms, p99 3-9 ms), so that a shaper holding from a kernel stamp
// absorbs that lag at the reference as it does at the settings checked.
const refDelay = 10 * time.Millisecond

// reference measures what the backend's own path costs besides the
// delay: the shaped ping observers' round trips at refDelay (interface
// scope), each less the delay and its observer's unshaped median,
// pooled; each observer's ref is its unshaped median plus that cost.
// Under emulation the cost is not nil: a timer-driven release (netem's
// watchdog, the userspace loop's wake-ups) costs the emulated CPUs
// 0.5-2 ms, unlike a packet passed straight on. Like the project's own
// comparisons against the zero setting at the same floor, the timed
// bound then checks that the round trip tracks the setting: at delay d
// it is at most the reference's less refDelay plus d, within the
// tolerance. What the backend set is checked exactly by the read-back.
func (s *suite) reference(c *ck) {
	cfg := netem.Config{Delay: refDelay}
	if !s.set(c, cfg) {
		return
	}
	var cost []time.Duration
	for _, o := range observers(s.t) {
		if o.tcp || expected(cfg, o.peer, s.b.shapes6) == 0 {
			continue
		}
		res, err := pingStamped(o.ns, o.src, o.dst, 2*probeCount)
		s.r.log("%s %s: delay %v: %s", s.b.name, o.name, refDelay, res)
		if err != nil || res.Lost > 0 || len(res.RTT) == 0 {
			c.fail("%s: %v, %s", o.name, err, res)
			continue
		}
		if res.min() < refDelay {
			c.fail("%s: min %s below the delay %v", o.name, ms(res.min()), refDelay)
		}
		for _, rtt := range res.RTT {
			cost = append(cost, rtt-refDelay-s.base[o.name])
		}
	}
	o := max(samples{RTT: cost}.median(), 0)
	for name, b := range s.base {
		s.ref[name] = b + o
	}
	c.note("the path costs %s besides the delay (median of %d echoes at %v)", ms(o), len(cost), refDelay)
}

// peers drops IPv6 peers where the backend shapes no IPv6.
func (b *backendUnderTest) peers(ps ...netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, p := range ps {
		if p.Is4() || b.shapes6 {
			out = append(out, p)
		}
	}
	return out
}
