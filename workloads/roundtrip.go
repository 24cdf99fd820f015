package workloads

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/rttlab/rttlab/results/stats"
)

// DirRoundTrip names the round trip app -> database -> app, measured
// per trip (MatchRoundTrips) beside the two one-way directions.
const DirRoundTrip = "app->db->app"

// RoundTrips is what the app's and the database's captures show of the
// trips between them with no clock in common: for each turn of the
// database (a packet from the app, and the first packet the database
// sent back on the same connection after it arrived), the app's time
// from sending the one to receiving the other, less the database's time
// from receiving the one to sending the other. Each difference is read
// on one capture's clock, so the captures may run on two hosts whose
// clocks disagree (an app and its database on two nodes): wire round
// trip = (app in - app out) - (db out - db in).
type RoundTrips struct {
	// Turns counts the database's turns its capture saw whose packet
	// from the app the app's capture saw leave; Trips those whose answer
	// the app's capture saw arrive too (each of the four sightings
	// unique), the ones measured.
	Turns, Trips int
	// Round trip of the measured turns in milliseconds; zero when none.
	P50Ms, P90Ms, P99Ms, MinMs, MaxMs float64
}

// Share is Trips / Turns (0 for no turn).
func (r RoundTrips) Share() float64 { return stats.Share(r.Trips, r.Turns) }

// sighting is the one time a capture saw a packet; seen counts how often
// it did (a key seen twice says nothing certain).
type sighting struct {
	t    int64
	seen int
}

// MatchRoundTrips measures the round trips between the app (app.Local)
// and its database (db.Local), each capture on its own clock.
func MatchRoundTrips(app, db Capture) RoundTrips {
	appAddr, dbAddr := app.Local, db.Local
	toDB := func(k PacketKey) bool { return k.Proto() == 6 && k.Src() == appAddr && k.Dst() == dbAddr }
	toApp := func(k PacketKey) bool { return k.Proto() == 6 && k.Src() == dbAddr && k.Dst() == appAddr }
	sights := func(c Capture, out bool, flow func(PacketKey) bool) map[PacketKey]sighting {
		m := map[PacketKey]sighting{}
		for _, p := range c.Packets {
			if p.Out == out && flow(p.Key) {
				s := m[p.Key]
				m[p.Key] = sighting{t: p.T, seen: s.seen + 1}
			}
		}
		return m
	}
	appOut, appIn := sights(app, true, toDB), sights(app, false, toApp)
	dbIn, dbOut := sights(db, false, toDB), sights(db, true, toApp)
	once := func(m map[PacketKey]sighting, k PacketKey) (int64, bool) {
		s, ok := m[k]
		return s.t, ok && s.seen == 1
	}

	// The database's packets of each connection in its own time order:
	// a packet that arrived, then the first one it sent after it, is a
	// turn.
	type event struct {
		t       int64
		arrived bool
		key     PacketKey
	}
	conns := map[[2]uint16][]event{}
	for k, s := range dbIn {
		conns[ports(k, false)] = append(conns[ports(k, false)], event{t: s.t, arrived: true, key: k})
	}
	for k, s := range dbOut {
		conns[ports(k, true)] = append(conns[ports(k, true)], event{t: s.t, key: k})
	}
	var rt RoundTrips
	var trips []float64
	for _, evs := range conns {
		slices.SortFunc(evs, func(a, b event) int {
			if c := cmp.Compare(a.t, b.t); c != 0 {
				return c
			}
			return cmp.Compare(btoi(!a.arrived), btoi(!b.arrived)) // an arrival first
		})
		var last *event // the packet of the app the database answers next
		for i := range evs {
			e := &evs[i]
			if e.arrived {
				last = e
				continue
			}
			if last == nil {
				continue
			}
			q, p := e.key, last.key
			last = nil
			sent, ok1 := once(appOut, p)
			in, ok2 := once(dbIn, p)
			if !ok1 || !ok2 {
				continue
			}
			rt.Turns++
			out, ok3 := once(dbOut, q)
			back, ok4 := once(appIn, q)
			if !ok3 || !ok4 {
				continue
			}
			trips = append(trips, nsToMs((back-sent)-(out-in)))
		}
	}
	rt.Trips = len(trips)
	rt.P50Ms, rt.P90Ms, rt.P99Ms, rt.MinMs, rt.MaxMs = spreadMs(trips)
	return rt
}

// ports is a TCP packet's connection as (app's port, database's port):
// from the database when fromDB, else to it.
func ports(k PacketKey, fromDB bool) [2]uint16 {
	src := binary.BigEndian.Uint16(k[keyTransport : keyTransport+2])
	dst := binary.BigEndian.Uint16(k[keyTransport+2 : keyTransport+4])
	if fromDB {
		return [2]uint16{dst, src}
	}
	return [2]uint16{src, dst}
}
