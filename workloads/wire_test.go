package workloads

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
)

func frame(src, dst netip.AddrPort, seq uint32, payload []byte) []byte {
	f := make([]byte, 14+20+20+len(payload))
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(40+len(payload)))
	ip[9] = 6
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(ip[12:], s4[:])
	copy(ip[16:], d4[:])
	tcp := ip[20:]
	binary.BigEndian.PutUint16(tcp[0:], src.Port())
	binary.BigEndian.PutUint16(tcp[2:], dst.Port())
	binary.BigEndian.PutUint32(tcp[4:], seq)
	tcp[12] = 5 << 4
	copy(tcp[20:], payload)
	return f
}

func msg(typ byte, body string) []byte {
	b := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(4+len(body)))
	return append(b, body...)
}

func TestWireCountsRoundTripsAndMessages(t *testing.T) {
	db := netip.MustParseAddrPort("172.18.0.2:5432")
	app := netip.MustParseAddrPort("172.18.0.3:40000")
	other := netip.MustParseAddrPort("172.18.0.9:8080")
	w := &WireCounter{server: db, nextSeq: map[uint32]uint32{}}
	w.markCond = sync.NewCond(&w.mu)
	seq := uint32(1000)
	send := func(p []byte) {
		w.packet(frame(app, db, seq, p))
		seq += uint32(len(p))
	}
	answer := func() { w.packet(frame(db, app, 1, []byte("reply"))) }

	// A cached prepared statement: Bind/Execute/Sync in one packet, answered.
	send(append(append(msg('B', "xx"), msg('E', "yy")...), msg('S', "")...))
	answer()
	// An unprepared one: Parse/Describe/Sync answered, then Bind/Execute/Sync answered: 2 round trips.
	send(append(msg('P', "select 1"), msg('S', "")...))
	answer()
	send(append(msg('B', ""), msg('E', "")...))
	answer()
	// A simple query split over two segments, answered by two packets.
	q := msg('Q', "SELECT count(*) FROM feedback WHERE article_id = 1")
	send(q[:7])
	send(q[7:])
	answer()
	answer()
	// A retransmitted segment is not counted twice.
	w.packet(frame(app, db, seq-uint32(len(q)-7), q[7:]))
	// Traffic to another peer and empty ACKs are ignored.
	w.packet(frame(app, other, 5, msg('Q', "x")))
	w.packet(frame(db, app, 2, nil))

	c := w.Snapshot()
	want := WireCounts{RoundTrips: 4, Statements: 3, Parses: 1, ClientPackets: 5, ServerPackets: 5}
	if c != want {
		t.Fatalf("counts %+v, want %+v", c, want)
	}
	// Garbage resynchronises instead of miscounting.
	send([]byte{0xff, 0, 0, 0, 1, 2})
	send(msg('Q', "select 1"))
	answer()
	c2 := w.Snapshot().Sub(c)
	if c2.Desync != 1 || c2.Statements != 1 || c2.RoundTrips != 1 {
		t.Fatalf("after garbage: %+v", c2)
	}
}

func TestParseTCPRejectsShortFrames(t *testing.T) {
	for _, f := range [][]byte{nil, make([]byte, 13), make([]byte, 30)} {
		if _, ok := parseTCP(f); ok {
			t.Fatalf("frame of %d bytes parsed", len(f))
		}
	}
}
