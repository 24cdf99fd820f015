package workloads

import (
	"math"
	"net/netip"
	"testing"
)

const t0 = int64(1_700_000_000_000_000_000)

// echoKey is the key of the n-th echo from src to dst (IP id n).
func echoKey(src, dst netip.Addr, n int) PacketKey {
	return NewPacketKey(src, dst, 1, uint16(n), 0x4000, icmpEcho(8, 0, 7, uint16(n), ""))
}

// capturePair returns the sender's (at A) and the receiver's (at B)
// captures, both running from t0 to t0 + 10 s, with no packets yet.
func capturePair() (a, b Capture) {
	a = Capture{Local: addrA, Peer: addrB, StartNs: t0, EndNs: t0 + 10e9}
	b = Capture{Local: addrB, Peer: addrA, StartNs: t0, EndNs: t0 + 10e9}
	return a, b
}

func sent(c *Capture, k PacketKey, at int64) {
	c.Packets = append(c.Packets, CapturedPacket{T: t0 + at, Out: true, Key: k})
}

func received(c *Capture, k PacketKey, at int64) {
	c.Packets = append(c.Packets, CapturedPacket{T: t0 + at, Key: k})
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func checkCounts(t *testing.T, ow OneWay, sent, matched, ambiguous, lost int) {
	t.Helper()
	if ow.Sent != sent || ow.Matched != matched || ow.Ambiguous != ambiguous || ow.Lost != lost {
		t.Errorf("sent %d matched %d ambiguous %d lost %d; want %d %d %d %d", ow.Sent, ow.Matched, ow.Ambiguous, ow.Lost, sent, matched, ambiguous, lost)
	}
}

// Every packet pairs with its own arrival: delays 1..10 ms, share 1.
func TestMatchOneWayExact(t *testing.T) {
	a, b := capturePair()
	for i := 1; i <= 10; i++ {
		k := echoKey(addrA, addrB, i)
		sent(&a, k, int64(i)*100e6)
		received(&b, k, int64(i)*100e6+int64(i)*1e6)
	}
	ow := MatchOneWay(a, b)
	checkCounts(t, ow, 10, 10, 0, 0)
	if ow.From != addrA || ow.To != addrB || !near(ow.Share, 1) {
		t.Errorf("flow %s -> %s share %g", ow.From, ow.To, ow.Share)
	}
	if !near(ow.MinMs, 1) || !near(ow.MaxMs, 10) || !near(ow.P50Ms, 5.5) || !near(ow.P90Ms, 9.1) || !near(ow.P99Ms, 9.91) {
		t.Errorf("delays: min %g p50 %g p90 %g p99 %g max %g", ow.MinMs, ow.P50Ms, ow.P90Ms, ow.P99Ms, ow.MaxMs)
	}
}

// Packets that arrive in another order than they left still pair with
// their own sends.
func TestMatchOneWayReordered(t *testing.T) {
	a, b := capturePair()
	k1, k2, k3 := echoKey(addrA, addrB, 1), echoKey(addrA, addrB, 2), echoKey(addrA, addrB, 3)
	sent(&a, k1, 0)
	sent(&a, k2, 1e6)
	sent(&a, k3, 2e6)
	received(&b, k3, 2.5e6) // 0.5 ms
	received(&b, k1, 3e6)   // 3 ms
	received(&b, k2, 3.5e6) // 2.5 ms
	ow := MatchOneWay(a, b)
	checkCounts(t, ow, 3, 3, 0, 0)
	if !near(ow.MinMs, 0.5) || !near(ow.P50Ms, 2.5) || !near(ow.MaxMs, 3) {
		t.Errorf("delays: min %g p50 %g max %g", ow.MinMs, ow.P50Ms, ow.MaxMs)
	}
}

func TestMatchOneWayLost(t *testing.T) {
	a, b := capturePair()
	for i := 1; i <= 4; i++ {
		k := echoKey(addrA, addrB, i)
		sent(&a, k, int64(i)*1e6)
		if i != 2 {
			received(&b, k, int64(i)*1e6+200e3)
		}
	}
	ow := MatchOneWay(a, b)
	checkCounts(t, ow, 4, 3, 0, 1)
	if !near(ow.Share, 0.75) || !near(ow.MinMs, 0.2) || !near(ow.MaxMs, 0.2) {
		t.Errorf("share %g, delays %g..%g", ow.Share, ow.MinMs, ow.MaxMs)
	}
}

// A packet sent twice with the same key before the first copy arrived
// (a retransmission that repeats every byte) cannot be paired safely; a
// packet seen arriving twice neither. Both are left out and counted.
func TestMatchOneWayDuplicates(t *testing.T) {
	a, b := capturePair()
	retx, dup, ok := echoKey(addrA, addrB, 1), echoKey(addrA, addrB, 2), echoKey(addrA, addrB, 3)
	sent(&a, retx, 0)
	sent(&a, retx, 1e6)
	received(&b, retx, 1.5e6)
	received(&b, retx, 2e6)
	sent(&a, dup, 3e6)
	received(&b, dup, 3.1e6)
	received(&b, dup, 3.2e6)
	sent(&a, ok, 4e6)
	received(&b, ok, 4.3e6)
	ow := MatchOneWay(a, b)
	checkCounts(t, ow, 4, 1, 3, 0)
	if !near(ow.P50Ms, 0.3) {
		t.Errorf("p50 %g: an ambiguous pair was matched", ow.P50Ms)
	}
	// Two copies, one arrival: which copy arrived is unknown.
	a, b = capturePair()
	sent(&a, retx, 0)
	sent(&a, retx, 1e6)
	received(&b, retx, 1.5e6)
	checkCounts(t, MatchOneWay(a, b), 2, 0, 2, 0)
}

// IP ids wrap around: the same key again, long after the first copy
// arrived, pairs in order; a later copy that never arrived is lost.
func TestMatchOneWayIPIDWraparound(t *testing.T) {
	a, b := capturePair()
	k := echoKey(addrA, addrB, 65535)
	sent(&a, k, 0)
	received(&b, k, 1e6)
	sent(&a, k, 2e9)
	received(&b, k, 2e9+3e6)
	sent(&a, k, 4e9)
	ow := MatchOneWay(a, b)
	checkCounts(t, ow, 3, 2, 0, 1)
	if !near(ow.MinMs, 1) || !near(ow.MaxMs, 3) {
		t.Errorf("wrapped copies paired wrongly: %g..%g ms", ow.MinMs, ow.MaxMs)
	}
}

// Other flows, the other direction, the receiver's own sends and the
// sender's arrivals are not this direction's packets; sends outside the
// receiver's window are not counted.
func TestMatchOneWayIgnoresOtherFlows(t *testing.T) {
	a, b := capturePair()
	mine := echoKey(addrA, addrB, 1)
	sent(&a, mine, 1e6)
	received(&b, mine, 2e6)
	sent(&a, echoKey(addrA, addrC, 2), 1e6)     // to another host
	received(&b, echoKey(addrC, addrB, 2), 2e6) // from another host
	back := echoKey(addrB, addrA, 3)
	sent(&b, back, 1e6) // the other direction
	received(&a, back, 2e6)
	received(&a, mine, 1.5e6) // A's capture cannot hold A's own packet arriving
	sent(&b, mine, 1.5e6)     // nor B's capture it leaving
	early := echoKey(addrA, addrB, 4)
	sent(&a, early, -1e6) // before B's capture started
	received(&b, early, 0)
	ow := MatchOneWay(a, b)
	checkCounts(t, ow, 1, 1, 0, 0)
	if ow.Outside != 1 || !near(ow.P50Ms, 1) {
		t.Errorf("outside %d, p50 %g", ow.Outside, ow.P50Ms)
	}
	rev := MatchOneWay(b, a)
	checkCounts(t, rev, 1, 1, 0, 0)
	if rev.From != addrB || rev.To != addrA {
		t.Errorf("reverse flow %s -> %s", rev.From, rev.To)
	}
}

func TestMatchOneWayEmpty(t *testing.T) {
	a, b := capturePair()
	ow := MatchOneWay(a, b)
	checkCounts(t, ow, 0, 0, 0, 0)
	if ow.Share != 0 || ow.P50Ms != 0 || ow.MaxMs != 0 || ow.Truncated {
		t.Errorf("empty: %+v", ow)
	}
	// Nothing arrived: all lost, no delays.
	sent(&a, echoKey(addrA, addrB, 1), 0)
	ow = MatchOneWay(a, b)
	checkCounts(t, ow, 1, 0, 0, 1)
	if ow.Share != 0 || ow.P99Ms != 0 {
		t.Errorf("nothing arrived: %+v", ow)
	}
}

// A stamp out of order (arrival before departure) still pairs a key seen
// once on each side: the negative delay shows, it is not hidden. Caps and
// kernel drops of either capture are passed on.
func TestMatchOneWayNegativeAndFlags(t *testing.T) {
	a, b := capturePair()
	k := echoKey(addrA, addrB, 1)
	sent(&a, k, 2e6)
	received(&b, k, 1e6)
	b.Truncated, a.Drops, b.Drops = true, 2, 3
	ow := MatchOneWay(a, b)
	checkCounts(t, ow, 1, 1, 0, 0)
	if !near(ow.MinMs, -1) || !ow.Truncated || ow.Drops != 5 {
		t.Errorf("%+v", ow)
	}
}
