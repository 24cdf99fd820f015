package workloads

import (
	"encoding/binary"
	"math"
	"net/netip"
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
func (l *wireLab) send(src, dst netip.AddrPort, n int, out, in float64) uint32 {
	k := [2]netip.AddrPort{src, dst}
	seq := l.seq[k]
	l.seq[k] = seq + uint32(n)
	l.put(src, dst, seq, n, false, out, in)
	return seq
}

// put records one segment at seq in the sender's and (unless in < 0)
// the receiver's capture.
func (l *wireLab) put(src, dst netip.AddrPort, seq uint32, n int, syn bool, out, in float64) {
	key, ln := l.segment(src, dst, seq, n, syn)
	s := l.capOf(src)
	s.Packets = append(s.Packets, CapturedPacket{T: us(out), Out: true, Key: key, Len: ln})
	if in >= 0 {
		r := l.capOf(dst)
		r.Packets = append(r.Packets, CapturedPacket{T: us(in), Key: key, Len: ln})
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
	l.send(labClient, labApp, 120, t0, t0+10)
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
	l.lat = append(l.lat, AnatomyLatency{Seq: len(l.lat), LatencyNS: us(lat)})
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
	return a.Seq == b.Seq && a.RoundTrips == b.RoundTrips && a.Overlap == b.Overlap &&
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

// A query written in two segments is complete at the database when the
// second arrives: the wire out is that segment's, the gap between the two
// writes is the app's.
func TestAnatomyQuerySplitOverTwoSegments(t *testing.T) {
	l := newWireLab()
	l.send(labClient, labApp, 100, 0, 10)
	l.send(labAppDB, labDB, 60, 50, 340)   // the first part
	l.send(labAppDB, labDB, 40, 70, 370)   // the second: 300 µs on the wire
	l.send(labDB, labAppDB, 200, 450, 750) // 80 µs at the database
	l.send(labApp, labClient, 300, 800, 810)
	l.lat = []AnatomyLatency{{Seq: 0, LatencyNS: us(820)}}
	r := onlyRequest(t, l.anatomize())
	if r.RoundTrips != 1 || !closeTo(r.AppPreMs, 0.06) || !closeTo(r.WireOutMs, 0.3) || !closeTo(r.DBMs, 0.08) || !closeTo(r.WireBackMs, 0.3) || !closeTo(r.AppPostMs, 0.05) {
		t.Errorf("%+v", r)
	}
}

// Statements sent together before any answer (a pipeline, or a driver's
// Parse/Bind/Execute/Sync in separate segments) are one round trip.
func TestAnatomyPipelinedStatements(t *testing.T) {
	l := newWireLab()
	l.send(labClient, labApp, 100, 0, 10)
	l.send(labAppDB, labDB, 50, 20, 320)
	l.send(labAppDB, labDB, 50, 25, 325)
	l.send(labAppDB, labDB, 50, 30, 330)
	l.send(labDB, labAppDB, 100, 400, 700)
	l.send(labDB, labAppDB, 100, 410, 710)
	l.send(labApp, labClient, 300, 760, 770)
	l.lat = []AnatomyLatency{{Seq: 0, LatencyNS: us(800)}}
	r := onlyRequest(t, l.anatomize())
	if r.RoundTrips != 1 || !closeTo(r.AppPreMs, 0.02) || !closeTo(r.WireOutMs, 0.3) || !closeTo(r.DBMs, 0.08) || !closeTo(r.WireBackMs, 0.3) || !closeTo(r.AppPostMs, 0.05) {
		t.Errorf("%+v", r)
	}
}

// An answer whose two segments arrive in the wrong order is complete
// when the one that fills the gap arrives.
func TestAnatomyReorderedSegments(t *testing.T) {
	l := newWireLab()
	l.send(labClient, labApp, 100, 0, 10)
	l.send(labAppDB, labDB, 100, 20, 320)
	l.send(labDB, labAppDB, 100, 400, 760) // the first segment arrives last
	l.send(labDB, labAppDB, 100, 410, 710)
	l.send(labApp, labClient, 300, 800, 810)
	l.lat = []AnatomyLatency{{Seq: 0, LatencyNS: us(820)}}
	r := onlyRequest(t, l.anatomize())
	// Complete at 760, when the first segment (sent at 400) filled the gap.
	if !closeTo(r.DBMs, 0.08) || !closeTo(r.WireBackMs, 0.36) || !closeTo(r.AppPostMs, 0.04) {
		t.Errorf("%+v", r)
	}
}

// A lost segment and its retransmission: the wire holds the whole wait
// from the first send, not the app.
func TestAnatomyRetransmittedSegment(t *testing.T) {
	l := newWireLab()
	l.send(labClient, labApp, 100, 0, 10)
	seq := l.send(labAppDB, labDB, 100, 20, -1)             // lost
	l.put(labAppDB, labDB, seq, 100, false, 220020, 220320) // retransmitted 220 ms later
	l.send(labDB, labAppDB, 100, 220400, 220700)
	l.send(labApp, labClient, 300, 220750, 220760)
	l.lat = []AnatomyLatency{{Seq: 0, LatencyNS: us(220770)}}
	r := onlyRequest(t, l.anatomize())
	if !closeTo(r.AppPreMs, 0.01) || !closeTo(r.WireOutMs, 220.3) || !closeTo(r.DBMs, 0.08) || !closeTo(r.WireBackMs, 0.3) {
		t.Errorf("%+v", r)
	}
}

// Two segments the database sent apart arrive as one (coalesced by the
// receiver): the answer is complete at that arrival, and its completing
// bytes left with the second segment.
func TestAnatomyCoalescedSegments(t *testing.T) {
	l := newWireLab()
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
	l.lat = []AnatomyLatency{{Seq: 0, LatencyNS: us(800)}}
	r := onlyRequest(t, l.anatomize())
	if !closeTo(r.DBMs, 0.1) || !closeTo(r.WireBackMs, 0.3) || !closeTo(r.AppPostMs, 0.05) {
		t.Errorf("%+v", r)
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
	l.lat = []AnatomyLatency{{Seq: 0, LatencyNS: us(1420)}}
	r := onlyRequest(t, l.anatomize())
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
	l.lat = []AnatomyLatency{{Seq: 0, LatencyNS: us(800)}}
	r := onlyRequest(t, l.anatomize())
	if !r.Overlap || r.RoundTrips != 2 {
		t.Errorf("%+v", r)
	}
}

func TestAnatomyProblems(t *testing.T) {
	l := newWireLab()
	l.exchange(0, 3, 20)
	l.lat = append(l.lat, AnatomyLatency{Seq: 1, LatencyNS: 1})
	if an := l.anatomize(); !strings.Contains(an.Problem, "1 requests on the wire, 2 sent by the client") || len(an.Requests) != 0 {
		t.Errorf("count mismatch: %+v", an)
	}
	// The database's capture missed a query: that request is incomplete.
	l = newWireLab()
	l.exchange(0, 2, 20)
	l.db.Packets = l.db.Packets[1:]
	if an := l.anatomize(); an.Incomplete != 1 || len(an.Requests) != 0 || an.Found != 1 {
		t.Errorf("missed packet: %+v", an)
	}
	// No client capture: every request is incomplete.
	l = newWireLab()
	l.exchange(0, 2, 20)
	l.client.Packets = nil
	if an := l.anatomize(); an.Incomplete != 1 {
		t.Errorf("no client capture: %+v", an)
	}
}
