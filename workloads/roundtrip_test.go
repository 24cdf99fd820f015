package workloads

import (
	"encoding/binary"
	"math"
	"net/netip"
	"testing"
)

// tripKey is the key of a TCP packet from src:sport to dst:dport with
// sequence number seq.
func tripKey(src, dst netip.Addr, sport, dport uint16, seq uint32) PacketKey {
	h := make([]byte, 20)
	binary.BigEndian.PutUint16(h[0:2], sport)
	binary.BigEndian.PutUint16(h[2:4], dport)
	binary.BigEndian.PutUint32(h[4:8], seq)
	return NewPacketKey(src, dst, 6, uint16(seq), 0, h)
}

// Two captures whose clocks are 5 s apart still give each turn's round
// trip: 0.25 ms each way plus what the database took, which is left out.
// A packet the database did not answer is no turn, a retransmitted one
// (its key seen twice) is not measured, and an answer the app's capture
// missed counts as a turn without a trip.
func TestMatchRoundTrips(t *testing.T) {
	appIP, dbIP := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	app := Capture{Local: appIP, Peer: dbIP}
	db := Capture{Local: dbIP, Peer: appIP}
	const offset = int64(5e9) // the app's clock runs 5 s ahead
	const oneWay, think = int64(250_000), int64(100_000)
	dbT := int64(1e12)
	turn := func(port uint16, seq uint32, dropAnswer bool) {
		p := tripKey(appIP, dbIP, port, 5432, seq)
		q := tripKey(dbIP, appIP, 5432, port, seq+1000)
		app.Packets = append(app.Packets, CapturedPacket{T: dbT + offset - oneWay, Out: true, Key: p})
		db.Packets = append(db.Packets, CapturedPacket{T: dbT, Key: p})
		db.Packets = append(db.Packets, CapturedPacket{T: dbT + think, Out: true, Key: q})
		if !dropAnswer {
			app.Packets = append(app.Packets, CapturedPacket{T: dbT + think + oneWay + offset, Key: q})
		}
		dbT += 1_000_000
	}
	turn(40000, 1, false)
	turn(40001, 1, false) // a second connection
	turn(40000, 2, false)
	turn(40000, 3, true) // the answer never seen by the app's capture
	// An ACK of the app the database does not answer: no turn.
	ack := tripKey(appIP, dbIP, 40000, 5432, 99)
	app.Packets = append(app.Packets, CapturedPacket{T: dbT + offset - oneWay, Out: true, Key: ack})
	db.Packets = append(db.Packets, CapturedPacket{T: dbT, Key: ack})
	dbT += 1_000_000
	// A packet sent twice with the same key (a retransmission), then
	// answered: its stamps are not unique, so it is not measured.
	re := tripKey(appIP, dbIP, 40001, 5432, 7)
	app.Packets = append(app.Packets, CapturedPacket{T: dbT + offset - oneWay, Out: true, Key: re},
		CapturedPacket{T: dbT + offset + 200_000, Out: true, Key: re})
	db.Packets = append(db.Packets, CapturedPacket{T: dbT, Key: re})
	ans := tripKey(dbIP, appIP, 5432, 40001, 8)
	db.Packets = append(db.Packets, CapturedPacket{T: dbT + 500_000, Out: true, Key: ans})
	app.Packets = append(app.Packets, CapturedPacket{T: dbT + 500_000 + oneWay + offset, Key: ans})

	rt := MatchRoundTrips(app, db)
	if rt.Turns != 4 || rt.Trips != 3 {
		t.Fatalf("turns %d, trips %d; want 4 and 3 (%+v)", rt.Turns, rt.Trips, rt)
	}
	for _, v := range []float64{rt.P50Ms, rt.MinMs, rt.MaxMs} {
		if math.Abs(v-0.5) > 1e-9 {
			t.Errorf("round trip %v ms, want 0.5 (%+v)", v, rt)
		}
	}
	if got := rt.Share(); math.Abs(got-0.75) > 1e-9 {
		t.Errorf("share %v, want 0.75", got)
	}
	if (RoundTrips{}).Share() != 0 || MatchRoundTrips(Capture{}, Capture{}).Trips != 0 {
		t.Error("no capture: want no trip")
	}
}
