package workloads

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
)

// The anatomy of a request: the captures of the client's, the app's and
// the database's network namespaces (one clock, kernel stamps) take each
// request of a closed-loop load run apart on the wire:
//
//	client ──req──▶ app ──q1──▶ db ──a1──▶ app ──q2──▶ db … ──▶ app ──resp──▶ client
//
// Every event is the moment a burst of data (a request, a query, an
// answer, a response) is complete where it arrives, and the moment its
// completing bytes were first sent. The parts telescope: the load
// client's own time, the two client↔app legs, and within the app's span
// the app's own time (before the first query, between an answer and the
// next query, after the last answer) and, per round trip, the wire out,
// the database's time and the wire back, add up to the latency the
// client measured, exactly.

// AnatomyFlows names the endpoints of the three captures: the addresses
// of the client, the app and the database, the app's HTTP port and the
// database's port.
type AnatomyFlows struct {
	Client, App, DB netip.Addr
	AppPort, DBPort uint16
}

// RequestAnatomy is one request taken apart on the wire (Anatomize);
// times in milliseconds.
type RequestAnatomy struct {
	// Seq is the request's place in the load run (warmup included), as
	// the load client numbers it.
	Seq       int     `json:"seq"`
	LatencyMs float64 `json:"latency_ms"`
	// ClientMs is the load client's own time: its latency less the time
	// from the request's completing bytes leaving the client to the
	// response being complete at the client.
	ClientMs float64 `json:"client_ms"`
	// LegInMs and LegOutMs are the client→app and app→client legs.
	LegInMs  float64 `json:"leg_in_ms"`
	LegOutMs float64 `json:"leg_out_ms"`
	// The app's own time: before the first query (with no query: all of
	// it), between an answer and the next query, after the last answer.
	AppPreMs     float64 `json:"app_pre_ms"`
	AppBetweenMs float64 `json:"app_between_ms"`
	AppPostMs    float64 `json:"app_post_ms"`
	// Per round trip, summed over the request's: the wire out (app→db),
	// the database's time, the wire back (db→app).
	WireOutMs  float64 `json:"wire_out_ms"`
	DBMs       float64 `json:"db_ms"`
	WireBackMs float64 `json:"wire_back_ms"`
	RoundTrips int     `json:"round_trips"`
	// TripsUs is each round trip in order: its wire out, the database's
	// time and its wire back, in µs.
	TripsUs [][3]int32 `json:"trips_us,omitempty"`
	// Overlaps counts what ran beside the request's own round trips on
	// the app's database connections: a query that left before an
	// earlier answer of the request arrived (queries in parallel: the
	// app's time between them is then negative), and a round trip that
	// straddles the request's span (a background exchange, or a pool's,
	// that began before the request arrived or ended after its response
	// left: not the request's, so not among RoundTrips). Overlap is set
	// when there is any (folders written before Overlaps have only it).
	Overlaps int  `json:"overlaps,omitempty"`
	Overlap  bool `json:"overlap,omitempty"`
}

// AppMs is the app's own time.
func (r RequestAnatomy) AppMs() float64 { return r.AppPreMs + r.AppBetweenMs + r.AppPostMs }

// WireMs is the time on the wire between the app and the database.
func (r RequestAnatomy) WireMs() float64 { return r.WireOutMs + r.WireBackMs }

// OutsideMs is the time outside the app's span: the client's own time
// and the two legs.
func (r RequestAnatomy) OutsideMs() float64 { return r.ClientMs + r.LegInMs + r.LegOutMs }

// Rounded returns r with every time rounded to 0.1 µs, as anatomy.jsonl
// keeps them.
func (r RequestAnatomy) Rounded() RequestAnatomy {
	for _, p := range []*float64{&r.LatencyMs, &r.ClientMs, &r.LegInMs, &r.LegOutMs, &r.AppPreMs, &r.AppBetweenMs, &r.AppPostMs,
		&r.WireOutMs, &r.DBMs, &r.WireBackMs} {
		*p = math.Round(*p*1e4) / 1e4
	}
	return r
}

// Anatomy is a load run's requests taken apart, with what could not be.
// Each request on the wire is joined to the client's latency by the
// sequence number it carries (SeqHeader), never by its place: a request
// that cannot be joined is counted, not guessed.
type Anatomy struct {
	// Requests are the requests found on the wire, in order, each paired
	// and complete; Found counts the requests on the wire; Incomplete
	// those paired with an event a capture missed (left out).
	Requests   []RequestAnatomy
	Found      int
	Incomplete int
	// Unpaired counts the client's requests that no request on the wire
	// could be joined to: a capture missed it, its mark lay beyond what
	// the capture keeps, or two requests on the wire carry it. Unmarked
	// counts the requests on the wire joined to no latency: no mark, or
	// one the client did not report or that another request carries too.
	// Neither is taken apart.
	Unpaired int
	Unmarked int
	// NegativeClient counts paired requests whose client time came out
	// negative: the client measured less than the time its own capture
	// saw from the request leaving to the response arriving, so a stamp
	// or the pairing is wrong; they are left out of Requests.
	NegativeClient int
	// Overlaps sums the overlaps of Requests (RequestAnatomy.Overlaps).
	Overlaps int
	// Unassigned counts database round trips no request took: outside
	// every request (a pool's keep-alive, a background job), or
	// straddling one's span (counted among its Overlaps too).
	Unassigned int
	// Problem says why no request could be taken apart (none on the wire
	// carries the mark of a request the client sent), "" when some could.
	Problem string
}

// AnatomyLatency is what the load client measured of one request.
type AnatomyLatency struct {
	Seq       int
	LatencyNS int64
}

// Anatomize takes each request of a closed-loop load run apart from the
// captures of the client (flows with the app), the app (with the client
// and the database) and the database (with the app). latencies are the
// client's (warmup included); each request found on the wire is joined
// to the latency whose Seq its mark names (SeqHeader, as the client's
// capture read it).
func Anatomize(f AnatomyFlows, client, app, db Capture, latencies []AnatomyLatency) Anatomy {
	cs, as, ds := segmentsOf(client), segmentsOf(app), segmentsOf(db)
	reqs := requestBursts(as, f)
	var out Anatomy
	out.Found = len(reqs)
	sent := make(map[int]int, len(latencies)) // seq → how many latencies
	for _, l := range latencies {
		sent[l.Seq]++
	}
	carried := make(map[int]int, len(reqs)) // seq → how many requests on the wire
	marks := make([]int, len(reqs))
	for i, rq := range reqs {
		if marks[i] = rq.mark(cs); marks[i] > 0 {
			carried[marks[i]-1]++
		}
	}
	paired := make(map[int]int, len(reqs)) // seq → index in reqs
	for i, m := range marks {
		if m > 0 && sent[m-1] == 1 && carried[m-1] == 1 {
			paired[m-1] = i
		}
	}
	out.Unmarked = len(reqs) - len(paired)
	byReq := make([]*AnatomyLatency, len(reqs))
	for i, l := range latencies {
		if j, ok := paired[l.Seq]; ok {
			byReq[j] = &latencies[i]
			continue
		}
		out.Unpaired++
	}
	switch {
	case len(latencies) == 0 || len(paired) > 0:
	case len(reqs) == 0:
		out.Problem = fmt.Sprintf("no request on the wire, %d sent by the client", len(latencies))
	default:
		out.Problem = fmt.Sprintf("none of %d requests on the wire carries the %s of one of the %d the client sent", len(reqs), SeqHeader, len(latencies))
	}
	trips := roundTrips(as, f)
	for i, rq := range reqs {
		// An unpaired request is taken apart too, for its round trips to
		// be its own and not counted unassigned, then left out.
		ra, ok := rq.anatomy(cs, as, ds, trips)
		l := byReq[i]
		if l == nil {
			continue
		}
		if !ok {
			out.Incomplete++
			continue
		}
		ra.Seq, ra.LatencyMs = l.Seq, float64(l.LatencyNS)/1e6
		ra.ClientMs = ra.LatencyMs - ra.ClientMs // ClientMs held the client's wire span
		if ra.ClientMs < 0 {
			out.NegativeClient++
			continue
		}
		out.Overlaps += ra.Overlaps
		out.Requests = append(out.Requests, ra)
	}
	for _, c := range trips {
		for _, a := range c.assigned {
			if !a {
				out.Unassigned++
			}
		}
	}
	return out
}

// dseg is a TCP segment that carries data (or a SYN, which takes a
// sequence number) as one capture saw it.
type dseg struct {
	t          int64
	out        bool
	src, dst   netip.AddrPort
	seq, end   uint32
	syn, hasLn bool
	mark       int // CapturedPacket.Mark
}

// captureSegs are a capture's data segments in time order, by
// connection and direction (src, dst with both ports).
type captureSegs map[[2]netip.AddrPort][]dseg

func segmentsOf(c Capture) captureSegs {
	out := captureSegs{}
	for _, p := range c.Packets {
		sport, dport, seq, flags, ok := p.Key.TCP()
		if !ok {
			continue
		}
		syn := flags&0x02 != 0
		if p.Len == 0 && !syn {
			continue // a pure ACK (or a FIN, which nobody waits on)
		}
		end := seq + uint32(p.Len)
		if syn {
			end++
		}
		s := dseg{t: p.T, out: p.Out, src: netip.AddrPortFrom(p.Key.Src(), sport), dst: netip.AddrPortFrom(p.Key.Dst(), dport),
			seq: seq, end: end, syn: syn, hasLn: p.Len > 0, mark: p.Mark}
		k := [2]netip.AddrPort{s.src, s.dst}
		out[k] = append(out[k], s)
	}
	for _, v := range out {
		slices.SortStableFunc(v, func(a, b dseg) int { return cmp.Compare(a.t, b.t) })
	}
	return out
}

// burst is a run of data segments one way on one connection, as the
// app's capture saw them, with its sequence range [seq, end).
type burst struct {
	segs     []dseg
	seq, end uint32
}

func (b *burst) add(s dseg) {
	if len(b.segs) == 0 {
		b.seq, b.end = s.seq, s.end
	}
	if before(s.seq, b.seq) {
		b.seq = s.seq
	}
	if before(b.end, s.end) {
		b.end = s.end
	}
	b.segs = append(b.segs, s)
}

// before compares sequence numbers modulo 2^32.
func before(a, b uint32) bool { return int32(a-b) < 0 }

// exchanges splits the app's view of one connection (its segments both
// ways) into alternating bursts: a run one way, then a run the other.
func exchanges(segs []dseg) []burst {
	slices.SortStableFunc(segs, func(a, b dseg) int { return cmp.Compare(a.t, b.t) })
	var out []burst
	for _, s := range segs {
		if len(out) == 0 || out[len(out)-1].segs[0].out != s.out {
			out = append(out, burst{})
		}
		out[len(out)-1].add(s)
	}
	return out
}

// connections gathers the app's segments of every connection between
// the app and a server endpoint (its HTTP port, or the database),
// keyed by the connection's other end; keep picks the segments.
func connections(as captureSegs, match func(s dseg) (peer netip.AddrPort, ok bool)) map[netip.AddrPort][]dseg {
	out := map[netip.AddrPort][]dseg{}
	for _, segs := range as {
		for _, s := range segs {
			if p, ok := match(s); ok {
				out[p] = append(out[p], s)
			}
		}
	}
	return out
}

// request is one HTTP exchange on the app's side: the request burst
// (client→app) and the response burst (app→client).
type request struct {
	req, resp burst
}

// mark is the sequence number plus one that the request carries, as
// the client's capture kept the segments the client sent of it (0:
// none). The client's capture is the one read: a request it missed
// cannot be timed from the client's side, so it is left unpaired.
func (rq request) mark(cs captureSegs) int {
	segs := cs[key(rq.req.segs[0])]
	for _, s := range segs[firstAfter(segs, rq.req.segs[0].t-retransmitWindow):] {
		if s.t > rq.req.segs[len(rq.req.segs)-1].t+maxClockSkew {
			break
		}
		if s.out && s.mark > 0 && !before(s.seq, rq.req.seq) && before(s.seq, rq.req.end) {
			return s.mark
		}
	}
	return 0
}

// requestBursts finds the HTTP requests at the app: on every connection
// from the client to the app's port, a burst of request data followed by
// one of response data (the handshake's SYNs are no request), in the
// order the requests arrived.
func requestBursts(as captureSegs, f AnatomyFlows) []request {
	conns := connections(as, func(s dseg) (netip.AddrPort, bool) {
		switch {
		case !s.hasLn:
			return netip.AddrPort{}, false
		case !s.out && s.src.Addr() == f.Client && s.dst == netip.AddrPortFrom(f.App, f.AppPort):
			return s.src, true
		case s.out && s.src == netip.AddrPortFrom(f.App, f.AppPort) && s.dst.Addr() == f.Client:
			return s.dst, true
		}
		return netip.AddrPort{}, false
	})
	var out []request
	for _, segs := range conns {
		bs := exchanges(segs)
		for i := 0; i+1 < len(bs); i++ {
			if !bs[i].segs[0].out && bs[i+1].segs[0].out {
				out = append(out, request{req: bs[i], resp: bs[i+1]})
				i++
			}
		}
	}
	slices.SortFunc(out, func(a, b request) int { return cmp.Compare(a.req.segs[0].t, b.req.segs[0].t) })
	return out
}

// trip is one database round trip seen from the app: a query burst
// (app→db; a connection's SYN counts) and the answer burst after it.
type trip struct {
	q, a burst
}

// dbConn is one of the app's connections to the database as the app's
// capture saw it: its round trips in order, and which a request took.
type dbConn struct {
	trips    []trip
	assigned []bool
}

// roundTrips finds the database round trips at the app on every
// connection to the database, by connection (in the order of the
// app's ports) and, on each, in order.
func roundTrips(as captureSegs, f AnatomyFlows) []dbConn {
	db := netip.AddrPortFrom(f.DB, f.DBPort)
	conns := connections(as, func(s dseg) (netip.AddrPort, bool) {
		switch {
		case s.out && s.src.Addr() == f.App && s.dst == db:
			return s.src, true
		case !s.out && s.src == db && s.dst.Addr() == f.App:
			return s.dst, true
		}
		return netip.AddrPort{}, false
	})
	var out []dbConn
	for _, end := range slices.SortedFunc(maps.Keys(conns), netip.AddrPort.Compare) {
		var c dbConn
		bs := exchanges(conns[end])
		for i := 0; i+1 < len(bs); i++ {
			if bs[i].segs[0].out && !bs[i+1].segs[0].out {
				c.trips = append(c.trips, trip{q: bs[i], a: bs[i+1]})
				i++
			}
		}
		c.assigned = make([]bool, len(c.trips))
		out = append(out, c)
	}
	return out
}

// answered is when the trip's answer was complete at the app (ok false
// when it never was).
func (tr trip) answered() (int64, bool) {
	t, _, ok := completion(tr.a, tr.a.segs)
	return t, ok
}

// tripsOf picks the round trips of the request whose span at the app
// runs from appReq to appResp: on each of the app's connections to the
// database, in order, those whose query left after the request arrived
// and whose answer was complete before the response left; a round trip
// another request took is not looked at. A round trip that straddles
// an edge of the span is not the request's: it counts as an overlap.
// ok is false when a round trip inside the span was never answered.
func tripsOf(conns []dbConn, appReq, appResp int64) (picked []*trip, overlaps int, ok bool) {
	for ci := range conns {
		c := &conns[ci]
		// The trips of one connection follow each other: the first whose
		// query left at or after the request arrived, and the one before
		// it, which may still have been waiting for its answer.
		j, _ := slices.BinarySearchFunc(c.trips, appReq, func(tr trip, t int64) int { return cmp.Compare(tr.q.segs[0].t, t) })
		if j > 0 && !c.assigned[j-1] {
			prev := c.trips[j-1]
			aIn, done := prev.answered()
			if !done {
				aIn = prev.a.segs[len(prev.a.segs)-1].t
			}
			if aIn > appReq {
				overlaps++
			}
		}
		for ; j < len(c.trips) && c.trips[j].q.segs[0].t <= appResp; j++ {
			if c.assigned[j] {
				continue
			}
			aIn, done := c.trips[j].answered()
			switch {
			case !done && c.trips[j].a.segs[0].t <= appResp:
				return nil, 0, false // answered inside the span, but a capture missed bytes
			case !done || aIn > appResp:
				overlaps++
				continue
			}
			c.assigned[j] = true
			picked = append(picked, &c.trips[j])
		}
	}
	slices.SortStableFunc(picked, func(a, b *trip) int { return cmp.Compare(a.q.segs[0].t, b.q.segs[0].t) })
	return picked, overlaps, true
}

// anatomy takes one request apart: its events on the three captures and
// the round trips it made (tripsOf, marked assigned). ClientMs holds the
// client's wire span; the caller turns it into the client's own time.
// ok is false when a capture missed an event.
func (rq request) anatomy(cs, as, ds captureSegs, conns []dbConn) (RequestAnatomy, bool) {
	var r RequestAnatomy
	// The request: complete at the app; its completing bytes first left
	// the client.
	appReq, b, ok := completion(rq.req, rq.req.segs)
	if !ok {
		return r, false
	}
	// When the client's capture missed an event, the round trips inside
	// the app's span (to its response's last segment) are still the
	// request's: no other request takes them.
	missed := func() (RequestAnatomy, bool) {
		tripsOf(conns, appReq, rq.resp.segs[len(rq.resp.segs)-1].t)
		return r, false
	}
	clReq, ok := firstSend(cs[key(rq.req.segs[0])], b, appReq)
	if !ok {
		return missed()
	}
	// The response: complete at the client; its completing bytes first
	// left the app.
	clResp, b, ok := completion(rq.resp, cs[key(rq.resp.segs[0])])
	if !ok {
		return missed()
	}
	appResp, ok := firstSend(as[key(rq.resp.segs[0])], b, clResp)
	if !ok {
		return missed()
	}
	r.LegInMs, r.LegOutMs, r.ClientMs = ms(appReq-clReq), ms(clResp-appResp), ms(clResp-clReq)
	trips, overlaps, ok := tripsOf(conns, appReq, appResp)
	if !ok {
		return r, false
	}
	r.Overlaps = overlaps
	last, latest := appReq, appReq // the previous answer, the latest so far
	for _, tr := range trips {
		qOut, qIn, aOut, aIn, ok := tr.events(as, ds)
		if !ok {
			return r, false
		}
		if r.RoundTrips == 0 {
			r.AppPreMs = ms(qOut - appReq)
		} else {
			r.AppBetweenMs += ms(qOut - last)
			if qOut < latest {
				r.Overlaps++ // a query left before an earlier answer arrived
			}
		}
		r.WireOutMs += ms(qIn - qOut)
		r.DBMs += ms(aOut - qIn)
		r.WireBackMs += ms(aIn - aOut)
		r.TripsUs = append(r.TripsUs, [3]int32{roundUs(qIn - qOut), roundUs(aOut - qIn), roundUs(aIn - aOut)})
		r.RoundTrips++
		last, latest = aIn, max(latest, aIn)
	}
	if r.RoundTrips == 0 {
		r.AppPreMs = ms(appResp - appReq)
	} else {
		r.AppPostMs = ms(appResp - last)
	}
	r.Overlap = r.Overlaps > 0
	return r, true
}

// events are a round trip's four moments: the query's completing bytes
// left the app, the query was complete at the database, the answer's
// completing bytes left the database, the answer was complete at the app.
func (tr trip) events(as, ds captureSegs) (qOut, qIn, aOut, aIn int64, ok bool) {
	k := key(tr.q.segs[0])
	qIn, b, ok := completion(tr.q, ds[k])
	if !ok {
		return
	}
	if qOut, ok = firstSend(as[k], b, qIn); !ok {
		return
	}
	aIn, b, ok = completion(tr.a, tr.a.segs)
	if !ok {
		return
	}
	aOut, ok = firstSend(ds[key(tr.a.segs[0])], b, aIn)
	return
}

func key(s dseg) [2]netip.AddrPort { return [2]netip.AddrPort{s.src, s.dst} }

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// roundUs rounds ns to whole µs.
func roundUs(ns int64) int32 { return int32((ns + 500) / 1000) }

// completion is when the burst's range [b.seq, b.end) was complete
// among the received segments recv (of the burst's connection and
// direction, in time order, as the receiving side saw them), and the
// last byte of the segment that completed it. Retransmitted and
// coalesced segments count by the bytes they cover; ok is false when
// the range was not complete within retransmitWindow of the burst.
func completion(b burst, recv []dseg) (t int64, last uint32, ok bool) {
	size := int64(b.end - b.seq)
	until := b.segs[len(b.segs)-1].t + retransmitWindow
	var cov coverage
	for _, s := range recv[firstAfter(recv, b.segs[0].t-maxClockSkew):] {
		if s.t > until {
			break
		}
		lo, hi := int64(int32(s.seq-b.seq)), int64(int32(s.end-b.seq))
		if s.out || hi <= 0 || lo >= size {
			continue
		}
		if cov.add(max(lo, 0), min(hi, size)) == size {
			return s.t, b.seq + uint32(min(hi, size)) - 1, true
		}
	}
	return 0, 0, false
}

// maxClockSkew bounds how much earlier than the sender's stamp a
// receiver's stamp of the same packet may be (both are CLOCK_REALTIME on
// one host: their order across namespaces is exact to a few µs).
const maxClockSkew = 1_000_000 // 1 ms

// retransmitWindow bounds how long after a burst its bytes may still
// arrive or have first left (TCP retransmits a lost segment after
// 200 ms at the least, then backs off).
const retransmitWindow = 3_000_000_000 // 3 s

// firstAfter is the index of the first segment at or after t.
func firstAfter(segs []dseg, t int64) int {
	i, _ := slices.BinarySearchFunc(segs, t, func(s dseg, t int64) int { return cmp.Compare(s.t, t) })
	return i
}

// firstSend is when the byte b, received at recvT, first left, among the
// sent segments (of one connection and direction, in time order): the
// earliest that covers it within retransmitWindow before recvT.
func firstSend(sent []dseg, b uint32, recvT int64) (int64, bool) {
	t, ok := int64(0), false
	for i := firstAfter(sent, recvT+maxClockSkew) - 1; i >= 0 && sent[i].t >= recvT-retransmitWindow; i-- {
		if s := sent[i]; s.out && !before(b, s.seq) && before(b, s.end) {
			t, ok = s.t, true
		}
	}
	return t, ok
}

// coverage is the union of byte ranges received so far.
type coverage struct {
	iv [][2]int64 // sorted, disjoint
}

// add adds [lo, hi) and returns the length of the covered prefix.
func (c *coverage) add(lo, hi int64) int64 {
	if hi > lo {
		c.iv = append(c.iv, [2]int64{lo, hi})
		slices.SortFunc(c.iv, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		merged := c.iv[:1]
		for _, v := range c.iv[1:] {
			m := &merged[len(merged)-1]
			if v[0] <= m[1] {
				m[1] = max(m[1], v[1])
				continue
			}
			merged = append(merged, v)
		}
		c.iv = merged
	}
	if len(c.iv) == 0 || c.iv[0][0] > 0 {
		return 0
	}
	return c.iv[0][1]
}

// TCP returns a TCP packet's ports, sequence number and flags (false for
// another protocol or a fragment).
func (k PacketKey) TCP() (sport, dport uint16, seq uint32, flags uint8, ok bool) {
	if k.Proto() != 6 || binary.BigEndian.Uint16(k[11:13])&0x1fff != 0 {
		return 0, 0, 0, 0, false
	}
	t := k[keyTransport:]
	return binary.BigEndian.Uint16(t[0:2]), binary.BigEndian.Uint16(t[2:4]), binary.BigEndian.Uint32(t[4:8]), t[13], true
}
