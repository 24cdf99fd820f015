package workloads

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// wireLab scripts the packets of a request timeline into the three
// captures the anatomy reads: the client's, the app's and the database's.
type wireLab struct {
	client, app, db Capture
	seq             map[[2]netip.AddrPort]uint32
	id              uint16
	lat             []AnatomyLatency
	// marked counts the requests sent (send from the client to the
	// app): each carries its number as the load client's mark.
	marked int
}

var (
	labClient = netip.MustParseAddrPort("10.9.0.1:40000")
	labApp    = netip.MustParseAddrPort("10.9.0.2:8080")
	labAppDB  = netip.MustParseAddrPort("10.9.0.2:50000") // the app's end of its database connection
	labDB     = netip.MustParseAddrPort("10.9.0.3:5432")
	labFlows  = AnatomyFlows{Client: labClient.Addr(), App: labApp.Addr(), DB: labDB.Addr(), AppPort: 8080, DBPort: 5432}
)

func newWireLab() *wireLab {
	l := &wireLab{seq: map[[2]netip.AddrPort]uint32{}}
	l.client.Local, l.app.Local, l.db.Local = labClient.Addr(), labApp.Addr(), labDB.Addr()
	return l
}

// capOf is the capture of the namespace an address lives in.
func (l *wireLab) capOf(a netip.AddrPort) *Capture {
	switch a.Addr() {
	case labClient.Addr():
		return &l.client
	case labApp.Addr():
		return &l.app
	}
	return &l.db
}

// segment builds one TCP segment's key from src to dst with n bytes at
// seq (flags: PSH|ACK, or SYN when syn).
func (l *wireLab) segment(src, dst netip.AddrPort, seq uint32, n int, syn bool) (PacketKey, int) {
	l.id++
	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], src.Port())
	binary.BigEndian.PutUint16(tcp[2:], dst.Port())
	binary.BigEndian.PutUint32(tcp[4:], seq)
	tcp[12] = 5 << 4
	tcp[13] = 0x18
	if syn {
		tcp[13] = 0x02
	}
	return NewPacketKey(src.Addr(), dst.Addr(), 6, l.id, 0x4000, tcp), n
}

// send sends n bytes from src to dst, leaving at out (µs) and arriving
// at in (µs; < 0: lost), as one segment; it returns the segment's seq.
// A request (from the client to the app) carries the next sequence
// number as its mark.
func (l *wireLab) send(src, dst netip.AddrPort, n int, out, in float64) uint32 {
	mark := 0
	if src.Addr() == labClient.Addr() && dst == labApp {
		l.marked++
		mark = l.marked
	}
	return l.sendMarked(src, dst, n, mark, out, in)
}

// sendMarked is send with the segment's mark given (0: none).
func (l *wireLab) sendMarked(src, dst netip.AddrPort, n, mark int, out, in float64) uint32 {
	k := [2]netip.AddrPort{src, dst}
	seq := l.seq[k]
	l.seq[k] = seq + uint32(n)
	l.putMarked(src, dst, seq, n, false, mark, out, in)
	return seq
}

// put records one segment at seq in the sender's and (unless in < 0)
// the receiver's capture.
func (l *wireLab) put(src, dst netip.AddrPort, seq uint32, n int, syn bool, out, in float64) {
	l.putMarked(src, dst, seq, n, syn, 0, out, in)
}

func (l *wireLab) putMarked(src, dst netip.AddrPort, seq uint32, n int, syn bool, mark int, out, in float64) {
	key, ln := l.segment(src, dst, seq, n, syn)
	s := l.capOf(src)
	s.Packets = append(s.Packets, CapturedPacket{T: us(out), Out: true, Key: key, Len: ln, Mark: mark})
	if in >= 0 {
		r := l.capOf(dst)
		r.Packets = append(r.Packets, CapturedPacket{T: us(in), Key: key, Len: ln, Mark: mark})
	}
}

// ack sends a pure ACK (no data): the anatomy must ignore it.
func (l *wireLab) ack(src, dst netip.AddrPort, at float64) {
	l.put(src, dst, l.seq[[2]netip.AddrPort{src, dst}], 0, false, at, at+1)
}

func us(v float64) int64 { return int64(math.Round(v * 1000)) }

// exchange scripts a plain request: the request leaves the client at t0
// and arrives 10 µs later, then per query gap (app), 300 µs each way,
// 80 µs at the database, then 50 µs of app time, the response 10 µs to
// the client, which measured latency+clientOwn.
func (l *wireLab) exchange(t0 float64, queries int, clientOwn float64) float64 {
	l.marked++
	return l.exchangeAs(t0, queries, clientOwn, l.marked-1)
}

// exchangeAs is exchange with the request carrying seq, the load
// client's number of it.
func (l *wireLab) exchangeAs(t0 float64, queries int, clientOwn float64, seq int) float64 {
	l.sendMarked(labClient, labApp, 120, seq+1, t0, t0+10)
	t := t0 + 10
	for range queries {
		t += 40
		l.send(labAppDB, labDB, 100, t, t+300)
		t += 300 + 80
		l.send(labDB, labAppDB, 200, t, t+300)
		t += 300
	}
	t += 50
	l.send(labApp, labClient, 480, t, t+10)
	lat := t + 10 - t0 + clientOwn
	l.lat = append(l.lat, AnatomyLatency{Seq: seq, LatencyNS: us(lat)})
	return t + 10 + 100
}

func (l *wireLab) anatomize() Anatomy {
	return Anatomize(labFlows, l.client, l.app, l.db, l.lat)
}

func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// checkSum checks that a request's parts add up to its latency.
func checkSum(t *testing.T, r RequestAnatomy) {
	t.Helper()
	sum := r.ClientMs + r.LegInMs + r.LegOutMs + r.AppMs() + r.WireMs() + r.DBMs
	if !closeTo(sum, r.LatencyMs) {
		t.Errorf("request %d: parts add up to %.6f ms, latency %.6f ms (%+v)", r.Seq, sum, r.LatencyMs, r)
	}
}

func onlyRequest(t *testing.T, an Anatomy) RequestAnatomy {
	t.Helper()
	if an.Problem != "" || len(an.Requests) != 1 || an.Incomplete != 0 {
		t.Fatalf("anatomy: %+v", an)
	}
	checkSum(t, an.Requests[0])
	return an.Requests[0]
}

// request sets the client's one latency, request 0's, to latencyUs (µs)
// and takes the wire apart: its only request, and the whole anatomy.
func (l *wireLab) request(t *testing.T, latencyUs float64) (RequestAnatomy, Anatomy) {
	t.Helper()
	l.lat = []AnatomyLatency{{Seq: 0, LatencyNS: us(latencyUs)}}
	an := l.anatomize()
	return onlyRequest(t, an), an
}

func TestAnatomyThreeQueries(t *testing.T) {
	l := newWireLab()
	next := l.exchange(1000, 3, 25)
	l.ack(labClient, labApp, next) // pure ACKs take no part
	l.ack(labAppDB, labDB, next)
	r := onlyRequest(t, l.anatomize())
	want := RequestAnatomy{Seq: 0, LatencyMs: 3*(40+680)/1e3 + 0.05 + 0.02 + 0.025, ClientMs: 0.025, LegInMs: 0.01, LegOutMs: 0.01,
		AppPreMs: 0.04, AppBetweenMs: 0.08, AppPostMs: 0.05, WireOutMs: 0.9, DBMs: 0.24, WireBackMs: 0.9, RoundTrips: 3}
	if !anatomyNear(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	for i, tr := range r.TripsUs {
		if tr != [3]int32{300, 80, 300} {
			t.Errorf("round trip %d: %v µs, want 300 out, 80 at the database, 300 back", i, tr)
		}
	}
}

func anatomyNear(a, b RequestAnatomy) bool {
	return a.Seq == b.Seq && a.RoundTrips == b.RoundTrips && a.Overlap == b.Overlap && a.Overlaps == b.Overlaps &&
		closeTo(a.LatencyMs, b.LatencyMs) && closeTo(a.ClientMs, b.ClientMs) && closeTo(a.LegInMs, b.LegInMs) && closeTo(a.LegOutMs, b.LegOutMs) &&
		closeTo(a.AppPreMs, b.AppPreMs) && closeTo(a.AppBetweenMs, b.AppBetweenMs) && closeTo(a.AppPostMs, b.AppPostMs) &&
		closeTo(a.WireOutMs, b.WireOutMs) && closeTo(a.DBMs, b.DBMs) && closeTo(a.WireBackMs, b.WireBackMs)
}

func TestAnatomyNoDatabaseCall(t *testing.T) {
	l := newWireLab()
	l.exchange(0, 0, 30)
	r := onlyRequest(t, l.anatomize())
	if r.RoundTrips != 0 || !closeTo(r.AppPreMs, 0.05) || r.AppBetweenMs != 0 || r.AppPostMs != 0 || r.WireMs() != 0 || r.DBMs != 0 {
		t.Errorf("%+v", r)
	}
}

// One query and its answer, their segments split, pipelined, reordered,
// lost or coalesced on the wire: a request of one round trip, its parts
// where each case says.
func TestAnatomySegments(t *testing.T) {
	for _, c := range []struct {
		name      string
		script    func(l *wireLab)
		latencyUs float64
		// The round trip's parts (ms): the app's before it, the wire out,
		// the database, the wire back, the app's after it.
		pre, out, db, back, post float64
	}{
		// A query written in two segments is complete at the database
		// when the second arrives: the wire out is that segment's, the gap
		// between the two writes is the app's.
		{name: "query split over two segments", script: func(l *wireLab) {
			l.send(labClient, labApp, 100, 0, 10)
			l.send(labAppDB, labDB, 60, 50, 340)   // the first part
			l.send(labAppDB, labDB, 40, 70, 370)   // the second: 300 µs on the wire
			l.send(labDB, labAppDB, 200, 450, 750) // 80 µs at the database
			l.send(labApp, labClient, 300, 800, 810)
		}, latencyUs: 820, pre: 0.06, out: 0.3, db: 0.08, back: 0.3, post: 0.05},
		// Statements sent together before any answer (a pipeline, or a
		// driver's Parse/Bind/Execute/Sync in separate segments) are one
		// round trip.
		{name: "pipelined statements", script: func(l *wireLab) {
			l.send(labClient, labApp, 100, 0, 10)
			l.send(labAppDB, labDB, 50, 20, 320)
			l.send(labAppDB, labDB, 50, 25, 325)
			l.send(labAppDB, labDB, 50, 30, 330)
			l.send(labDB, labAppDB, 100, 400, 700)
			l.send(labDB, labAppDB, 100, 410, 710)
			l.send(labApp, labClient, 300, 760, 770)
		}, latencyUs: 800, pre: 0.02, out: 0.3, db: 0.08, back: 0.3, post: 0.05},
		// An answer whose two segments arrive in the wrong order is
		// complete when the one that fills the gap arrives: at 760, when
		// the first segment (sent at 400) filled it.
		{name: "reordered segments", script: func(l *wireLab) {
			l.send(labClient, labApp, 100, 0, 10)
			l.send(labAppDB, labDB, 100, 20, 320)
			l.send(labDB, labAppDB, 100, 400, 760) // the first segment arrives last
			l.send(labDB, labAppDB, 100, 410, 710)
			l.send(labApp, labClient, 300, 800, 810)
		}, latencyUs: 820, pre: 0.01, out: 0.3, db: 0.08, back: 0.36, post: 0.04},
		// A lost segment and its retransmission: the wire holds the whole
		// wait from the first send, not the app.
		{name: "retransmitted segment", script: func(l *wireLab) {
			l.send(labClient, labApp, 100, 0, 10)
			seq := l.send(labAppDB, labDB, 100, 20, -1)             // lost
			l.put(labAppDB, labDB, seq, 100, false, 220020, 220320) // retransmitted 220 ms later
			l.send(labDB, labAppDB, 100, 220400, 220700)
			l.send(labApp, labClient, 300, 220750, 220760)
		}, latencyUs: 220770, pre: 0.01, out: 220.3, db: 0.08, back: 0.3, post: 0.05},
		// Two segments the database sent apart arrive as one (coalesced
		// by the receiver): the answer is complete at that arrival, and
		// its completing bytes left with the second segment.
		{name: "coalesced segments", script: func(l *wireLab) {
			l.send(labClient, labApp, 100, 0, 10)
			l.send(labAppDB, labDB, 100, 20, 320)
			k := [2]netip.AddrPort{labDB, labAppDB}
			seq := l.seq[k]
			l.put(labDB, labAppDB, seq, 100, false, 400, -1)
			l.put(labDB, labAppDB, seq+100, 100, false, 420, -1)
			key, _ := l.segment(labDB, labAppDB, seq, 200, false)
			l.app.Packets = append(l.app.Packets, CapturedPacket{T: us(720), Key: key, Len: 200})
			l.seq[k] = seq + 200
			l.send(labApp, labClient, 300, 770, 780)
		}, latencyUs: 800, pre: 0.01, out: 0.3, db: 0.1, back: 0.3, post: 0.05},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newWireLab()
			c.script(l)
			r, _ := l.request(t, c.latencyUs)
			if r.RoundTrips != 1 || !closeTo(r.AppPreMs, c.pre) || !closeTo(r.WireOutMs, c.out) || !closeTo(r.DBMs, c.db) ||
				!closeTo(r.WireBackMs, c.back) || !closeTo(r.AppPostMs, c.post) {
				t.Errorf("%+v", r)
			}
		})
	}
}

// Requests on the wire pair with the client's latencies in order; a
// round trip outside every request is counted, not assigned.
func TestAnatomyManyRequestsAndBackgroundTrips(t *testing.T) {
	l := newWireLab()
	next := l.exchange(0, 3, 20)
	l.send(labAppDB, labDB, 30, next, next+300) // a pool's keep-alive between requests
	l.send(labDB, labAppDB, 30, next+400, next+700)
	next = l.exchange(next+1000, 12, 20)
	l.exchange(next, 1, 20)
	an := l.anatomize()
	if an.Problem != "" || an.Found != 3 || len(an.Requests) != 3 || an.Unassigned != 1 {
		t.Fatalf("%+v", an)
	}
	for i, want := range []int{3, 12, 1} {
		r := an.Requests[i]
		checkSum(t, r)
		if r.Seq != i || r.RoundTrips != want || !closeTo(r.ClientMs, 0.02) || !closeTo(r.WireOutMs, float64(want)*0.3) {
			t.Errorf("request %d: %+v", i, r)
		}
	}
}

// A new database connection in a request: its handshake is a round trip
// on the wire; the HTTP handshake is no request.
func TestAnatomyHandshakes(t *testing.T) {
	l := newWireLab()
	l.put(labClient, labApp, 999, 0, true, 0, 10) // the client's SYN
	l.put(labApp, labClient, 4999, 0, true, 15, 25)
	l.seq[[2]netip.AddrPort{labClient, labApp}] = 1000
	l.seq[[2]netip.AddrPort{labApp, labClient}] = 5000
	l.send(labClient, labApp, 100, 30, 40)
	l.put(labAppDB, labDB, 77, 0, true, 50, 350) // the app connects
	l.put(labDB, labAppDB, 88, 0, true, 360, 660)
	l.seq[[2]netip.AddrPort{labAppDB, labDB}] = 78
	l.seq[[2]netip.AddrPort{labDB, labAppDB}] = 89
	l.send(labAppDB, labDB, 100, 670, 970)
	l.send(labDB, labAppDB, 100, 1050, 1350)
	l.send(labApp, labClient, 300, 1400, 1410)
	r, _ := l.request(t, 1420)
	if r.RoundTrips != 2 || !closeTo(r.WireOutMs, 0.6) || !closeTo(r.DBMs, 0.09) || !closeTo(r.AppBetweenMs, 0.01) {
		t.Errorf("%+v", r)
	}
}

// Queries in parallel on two connections: flagged, and the parts still
// add up.
func TestAnatomyOverlappingTrips(t *testing.T) {
	l := newWireLab()
	other := netip.MustParseAddrPort("10.9.0.2:50001")
	l.send(labClient, labApp, 100, 0, 10)
	l.send(labAppDB, labDB, 100, 20, 320)
	l.send(other, labDB, 100, 30, 330)
	l.send(labDB, labAppDB, 100, 400, 700)
	l.send(labDB, other, 100, 410, 710)
	l.send(labApp, labClient, 300, 760, 770)
	r, an := l.request(t, 800)
	if !r.Overlap || r.Overlaps != 1 || an.Overlaps != 1 || r.RoundTrips != 2 {
		t.Errorf("%+v", r)
	}
}

func TestAnatomyProblems(t *testing.T) {
	l := newWireLab()
	l.exchange(0, 3, 20)
	l.lat = append(l.lat, AnatomyLatency{Seq: 1, LatencyNS: 1})
	// A count mismatch: what pairs is taken apart, the rest counted.
	if an := l.anatomize(); an.Problem != "" || len(an.Requests) != 1 || an.Requests[0].Seq != 0 || an.Unpaired != 1 || an.Unmarked != 0 {
		t.Errorf("count mismatch: %+v", an)
	}
	// No request on the wire carries a mark the client sent: a Problem.
	l.lat = []AnatomyLatency{{Seq: 5, LatencyNS: 1}}
	if an := l.anatomize(); !strings.Contains(an.Problem, "none of 1 requests on the wire carries the X-Rttlab-Seq of one of the 1") ||
		len(an.Requests) != 0 || an.Unpaired != 1 || an.Unmarked != 1 {
		t.Errorf("no mark: %+v", an)
	}
	// The database's capture missed a query: that request is incomplete.
	l = newWireLab()
	l.exchange(0, 2, 20)
	l.db.Packets = l.db.Packets[1:]
	if an := l.anatomize(); an.Incomplete != 1 || len(an.Requests) != 0 || an.Found != 1 {
		t.Errorf("missed packet: %+v", an)
	}
	// The client's capture missed the response: that request is
	// incomplete.
	l = newWireLab()
	l.exchange(0, 2, 20)
	l.client.Packets = l.client.Packets[:1]
	if an := l.anatomize(); an.Incomplete != 1 || an.Unpaired != 0 || len(an.Requests) != 0 {
		t.Errorf("missed response: %+v", an)
	}
	// No client capture: no request on the wire can be joined to its
	// latency (the client's capture reads the mark).
	l = newWireLab()
	l.exchange(0, 2, 20)
	l.client.Packets = nil
	if an := l.anatomize(); an.Unpaired != 1 || an.Unmarked != 1 || an.Incomplete != 0 || len(an.Requests) != 0 {
		t.Errorf("no client capture: %+v", an)
	}
}

// Two requests whose bursts reach the wire in the other order than the
// client's latencies list them (a request the client re-sent, two
// connections) each get their own latency: pairing by place would give
// each the other's, and a client time off by the difference.
func TestAnatomyPairsByMarkNotByPlace(t *testing.T) {
	l := newWireLab()
	next := l.exchangeAs(0, 1, 70, 1) // seq 1 first on the wire, 70 µs of its own
	l.exchangeAs(next, 3, 25, 0)
	slices.Reverse(l.lat) // the client lists seq 0 first
	an := l.anatomize()
	if an.Problem != "" || len(an.Requests) != 2 || an.Unpaired != 0 || an.Unmarked != 0 || an.NegativeClient != 0 {
		t.Fatalf("%+v", an)
	}
	for _, r := range an.Requests {
		checkSum(t, r)
		want := map[int][2]float64{1: {1, 0.07}, 0: {3, 0.025}}[r.Seq]
		if float64(r.RoundTrips) != want[0] || !closeTo(r.ClientMs, want[1]) {
			t.Errorf("request %d: %d round trips, client %.6f ms; want %v", r.Seq, r.RoundTrips, r.ClientMs, want)
		}
	}
	if an.Requests[0].Seq != 1 {
		t.Errorf("requests in the wire's order: first is %d, want 1", an.Requests[0].Seq)
	}
}

// A request the client's capture did not see is counted unpaired and
// the others pair (its round trips stay its own, not unassigned); a
// request on the wire whose mark the client did not
// report, or two requests with one mark, are counted unmarked.
func TestAnatomyUnpairedAndUnmarked(t *testing.T) {
	l := newWireLab()
	next := l.exchange(0, 1, 20)
	next = l.exchange(next, 1, 20)
	l.exchange(next, 1, 20)
	// The second request is missing from the client's capture.
	var kept []CapturedPacket
	for _, p := range l.client.Packets {
		if p.Mark != 2 {
			kept = append(kept, p)
		}
	}
	l.client.Packets = kept
	an := l.anatomize()
	if an.Found != 3 || len(an.Requests) != 2 || an.Requests[0].Seq != 0 || an.Requests[1].Seq != 2 || an.Unpaired != 1 || an.Unmarked != 1 || an.Problem != "" ||
		an.Unassigned != 0 {
		t.Errorf("missing request: %+v", an)
	}
	// Two requests carry mark 0; a third carries 9, which the client
	// did not send.
	l = newWireLab()
	next = l.exchangeAs(0, 1, 20, 0)
	next = l.exchangeAs(next, 1, 20, 0)
	l.exchangeAs(next, 1, 20, 9)
	l.lat = []AnatomyLatency{l.lat[0], {Seq: 1, LatencyNS: l.lat[1].LatencyNS}}
	an = l.anatomize()
	if an.Found != 3 || len(an.Requests) != 0 || an.Unpaired != 2 || an.Unmarked != 3 {
		t.Errorf("marks twice and unknown: %+v", an)
	}
}

// A client time that comes out negative (the client measured less than
// its capture saw on the wire) is counted and left out, not averaged in.
func TestAnatomyNegativeClientTime(t *testing.T) {
	l := newWireLab()
	next := l.exchange(0, 1, 20)
	l.exchange(next, 1, -5)
	an := l.anatomize()
	if len(an.Requests) != 1 || an.Requests[0].Seq != 0 || an.NegativeClient != 1 || an.Unpaired != 0 || an.Incomplete != 0 {
		t.Errorf("%+v", an)
	}
}

// Round trips on two of the app's connections to the database, one
// after the other, are the request's in the order their queries left;
// a background exchange on a third that began inside the request and
// was answered after its response left is not the request's: an overlap,
// and unassigned.
func TestAnatomyTripsOnTwoConnections(t *testing.T) {
	l := newWireLab()
	other := netip.MustParseAddrPort("10.9.0.2:50001")
	pool := netip.MustParseAddrPort("10.9.0.2:50002")
	l.send(labClient, labApp, 100, 0, 10)
	l.send(other, labDB, 100, 20, 320) // the first query, on the second connection
	l.send(labDB, other, 100, 400, 700)
	l.send(labAppDB, labDB, 100, 710, 1010) // the second, on the first
	l.send(labDB, labAppDB, 100, 1090, 1390)
	l.send(pool, labDB, 30, 1395, 1695) // a pool's keep-alive
	l.send(labApp, labClient, 300, 1440, 1450)
	l.send(labDB, pool, 30, 1700, 2000)
	r, an := l.request(t, 1470)
	want := RequestAnatomy{Seq: 0, LatencyMs: 1.47, ClientMs: 0.02, LegInMs: 0.01, LegOutMs: 0.01, AppPreMs: 0.01, AppBetweenMs: 0.01, AppPostMs: 0.05,
		WireOutMs: 0.6, DBMs: 0.16, WireBackMs: 0.6, RoundTrips: 2, Overlaps: 1, Overlap: true}
	if !anatomyNear(r, want) || r.Overlaps != 1 || an.Overlaps != 1 || an.Unassigned != 1 {
		t.Errorf("got  %+v\nwant %+v (%+v)", r, want, an)
	}
}

// A background exchange that began before the request arrived and was
// answered inside it is an overlap of the request, not its round trip.
func TestAnatomyBackgroundTripBeforeRequest(t *testing.T) {
	l := newWireLab()
	pool := netip.MustParseAddrPort("10.9.0.2:50002")
	l.send(pool, labDB, 30, 0, 300)
	l.send(labClient, labApp, 100, 100, 110)
	l.send(labDB, pool, 30, 350, 650)
	l.send(labAppDB, labDB, 100, 700, 1000)
	l.send(labDB, labAppDB, 100, 1080, 1380)
	l.send(labApp, labClient, 300, 1430, 1440)
	r, an := l.request(t, 1360)
	if r.RoundTrips != 1 || r.Overlaps != 1 || !r.Overlap || !closeTo(r.AppPreMs, 0.59) || an.Unassigned != 1 {
		t.Errorf("%+v (%+v)", r, an)
	}
}

// anatomy.jsonl written before Overlaps reads as it did; a request with
// none writes no new field.
func TestRequestAnatomyJSON(t *testing.T) {
	var r RequestAnatomy
	if err := json.Unmarshal([]byte(`{"seq":3,"latency_ms":1.5,"round_trips":2,"overlap":true}`), &r); err != nil || r.Seq != 3 || !r.Overlap || r.Overlaps != 0 || r.RoundTrips != 2 {
		t.Errorf("old row: %+v, %v", r, err)
	}
	b, err := json.Marshal(RequestAnatomy{Seq: 1})
	if err != nil || strings.Contains(string(b), "overlap") {
		t.Errorf("no overlap: %s, %v", b, err)
	}
}
