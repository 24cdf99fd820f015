package workloads

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/rttlab/rttlab/results/stats"
)

// Directions of the wire between an app and its database.
const (
	DirAppToDB = "app->db"
	DirDBToApp = "db->app"
)

// OneWay is what two captures on one clock show for the packets one side
// sent to the other: how many the receiver saw and how long after.
type OneWay struct {
	From, To netip.Addr
	// Sent counts the packets from From to To that the sender's capture
	// saw leave while the receiver's capture ran.
	Sent int
	// Matched counts those the receiver's capture saw arrive, paired
	// one to one by their key; Share is Matched / Sent (0 for none sent).
	Matched int
	Share   float64
	// Ambiguous counts sent packets left out because their key repeats
	// in a way that could pair them wrongly (a copy sent before the
	// previous one arrived, a packet seen arriving twice, one of several
	// copies lost). Lost counts the others the receiver never saw.
	Ambiguous int
	Lost      int
	// Outside counts packets the sender's capture saw leave before the
	// receiver's capture started or after it ended: not in Sent.
	Outside int
	// One-way delay of the matched packets, receiver's stamp minus the
	// sender's, in milliseconds; zero when nothing matched.
	P50Ms, P90Ms, P99Ms, MinMs, MaxMs float64
	// Truncated: either capture hit its packet cap. Drops: packets the
	// kernel dropped on the two capture sockets (seen by neither).
	Truncated bool
	Drops     int
}

// stamp is one sighting of a packet: when, and whether at the receiver.
type stamp struct {
	t    int64
	recv bool
}

// MatchOneWay pairs each packet the sender's capture saw leave (outgoing,
// from sender.Local to sender.Peer) with the same packet arriving in the
// receiver's capture (incoming), by PacketKey. Packets of other flows and
// the other direction are ignored. A key seen once on each side pairs
// those two; a repeated key pairs its copies in time order only where
// every copy arrived before the next one left, and is otherwise left out
// as ambiguous (see pairStamps).
func MatchOneWay(sender, receiver Capture) OneWay {
	ow := OneWay{From: sender.Local, To: sender.Peer, Truncated: sender.Truncated || receiver.Truncated, Drops: sender.Drops + receiver.Drops}
	flow := func(k PacketKey) bool { return k.Src() == ow.From && k.Dst() == ow.To }
	seen := map[PacketKey][]stamp{}
	for _, p := range sender.Packets {
		if !p.Out || !flow(p.Key) {
			continue
		}
		if p.T < receiver.StartNs || p.T > receiver.EndNs {
			ow.Outside++
			continue
		}
		ow.Sent++
		seen[p.Key] = append(seen[p.Key], stamp{t: p.T})
	}
	for _, p := range receiver.Packets {
		if p.Out || !flow(p.Key) {
			continue
		}
		if s, ok := seen[p.Key]; ok {
			seen[p.Key] = append(s, stamp{t: p.T, recv: true})
		}
	}
	var delays []float64
	for _, s := range seen {
		d, ambiguous := pairStamps(s)
		delays = append(delays, d...)
		ow.Ambiguous += ambiguous
	}
	ow.Matched = len(delays)
	ow.Lost = ow.Sent - ow.Matched - ow.Ambiguous
	ow.Share = stats.Share(ow.Matched, ow.Sent)
	ow.P50Ms, ow.P90Ms, ow.P99Ms, ow.MinMs, ow.MaxMs = spreadMs(delays)
	return ow
}

// spreadMs sorts ms and returns its p50, p90, p99, least and largest;
// all zero for none.
func spreadMs(ms []float64) (p50, p90, p99, least, largest float64) {
	if len(ms) == 0 {
		return 0, 0, 0, 0, 0
	}
	slices.Sort(ms)
	return stats.Percentile(ms, 0.5), stats.Percentile(ms, 0.9), stats.Percentile(ms, 0.99), ms[0], ms[len(ms)-1]
}

// pairStamps pairs the sightings of one key: sends and receives. One of
// each pair whatever their order (the delay may come out negative, which
// says the stamps are wrong, not the pairing). Otherwise, in time order
// (a send before a receive at the same instant), the sightings form
// alternating runs of sends and of receives: a single send followed by a
// single receive is a pair; a run of several sends followed by receives,
// or one send followed by several receives, cannot be paired safely and
// its sends count as ambiguous; sends followed by no receive are lost.
// It returns the delays in milliseconds and the ambiguous sends.
func pairStamps(s []stamp) ([]float64, int) {
	if len(s) == 2 && s[0].recv != s[1].recv {
		snd, rcv := s[0], s[1]
		if snd.recv {
			snd, rcv = rcv, snd
		}
		return []float64{nsToMs(rcv.t - snd.t)}, 0
	}
	slices.SortStableFunc(s, func(a, b stamp) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(btoi(a.recv), btoi(b.recv))
	})
	var delays []float64
	ambiguous := 0
	for i := 0; i < len(s); {
		if s[i].recv { // a receive before any send of its run: unpaired
			i++
			continue
		}
		sends := runEnd(s, i) - i
		recvs := runEnd(s, i+sends) - (i + sends)
		switch {
		case recvs == 0: // lost
		case sends == 1 && recvs == 1:
			delays = append(delays, nsToMs(s[i+1].t-s[i].t))
		default:
			ambiguous += sends
		}
		i += sends + recvs
	}
	return delays, ambiguous
}

// runEnd returns the index after the run of sightings of s[i]'s kind.
func runEnd(s []stamp, i int) int {
	if i >= len(s) {
		return i
	}
	j := i
	for j < len(s) && s[j].recv == s[i].recv {
		j++
	}
	return j
}

func nsToMs(ns int64) float64 { return float64(ns) / 1e6 }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
