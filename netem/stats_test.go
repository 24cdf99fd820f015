package netem

import (
	"encoding/json"
	"testing"
	"time"
)

// The hold of a stamped packet counts from the kernel's receive stamp, so
// the time it waited before the shaper read it is part of the hold.
func TestAccountingStampedHold(t *testing.T) {
	a := newAccounting()
	const realOff = int64(1_700_000_000_000_000_000) // CLOCK_REALTIME - mono
	const delay = int64(375 * time.Microsecond)
	// Packet 10 was received by the kernel at mono 1,000,000 and read 100µs later.
	h := a.arrive(pktInfo{id: 10, rxNs: realOff + 1_000_000}, 1_100_000, realOff, delay)
	if !h.stamped || h.ref != 1_000_000 || h.due != 1_000_000+delay {
		t.Fatalf("held %+v: want ref 1000000, due ref+delay, stamped", h)
	}
	a.release(h, h.due+2_000) // released 2µs late
	// Packet 11 carries no stamp: its hold counts from the read.
	h2 := a.arrive(pktInfo{id: 11}, 2_000_000, realOff, delay)
	if h2.stamped || h2.ref != 2_000_000 || h2.due != 2_000_000+delay {
		t.Fatalf("unstamped %+v", h2)
	}
	a.release(h2, h2.due+1_000)
	// A stamp after the read (a clock step) is not trusted.
	h3 := a.arrive(pktInfo{id: 12, rxNs: realOff + 3_000_000}, 2_500_000, realOff, delay)
	if h3.stamped || h3.ref != 2_500_000 {
		t.Fatalf("implausible stamp used: %+v", h3)
	}
	// Ids 13 and 14 never reached the shaper.
	a.arrive(pktInfo{id: 15}, 2_600_000, realOff, delay)

	st := a.published()
	if st.Packets != 2 || st.Stamped != 1 || st.Gaps != 2 {
		t.Fatalf("packets %d stamped %d gaps %d; want 2 1 2", st.Packets, st.Stamped, st.Gaps)
	}
	if got := st.ReadLag.Quantile(1); !near(got, 100_000) || st.ReadLag.Count() != 1 {
		t.Fatalf("read lag %d (n %d), want 100µs once", got, st.ReadLag.Count())
	}
	if lo, hi := st.Hold.Quantile(0), st.Hold.Quantile(1); !near(lo, delay+1_000) || !near(hi, delay+2_000) {
		t.Fatalf("hold range %d..%d, want %d..%d", lo, hi, delay+1_000, delay+2_000)
	}
	if got := st.Late.Quantile(1); !near(got, 2_000) {
		t.Fatalf("late max %d, want 2µs", got)
	}
}

func TestAccountingGapWraps(t *testing.T) {
	a := newAccounting()
	a.arrive(pktInfo{id: 0xffffffff}, 1, 0, 0)
	a.arrive(pktInfo{id: 1}, 2, 0, 0) // 0 was skipped
	if a.Gaps != 1 {
		t.Fatalf("gaps %d across the id wrap, want 1", a.Gaps)
	}
}

// near allows HdrHistogram's bucket width (3 significant digits).
func near(got, want int64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return d <= want/500+1
}

func TestStatsSubAndJSON(t *testing.T) {
	a := newAccounting()
	for i := range 100 {
		h := a.arrive(pktInfo{id: uint32(i)}, int64(i)*1e6, 0, 500_000)
		a.release(h, h.due+1_000)
	}
	before := a.published()
	for i := 100; i < 150; i++ {
		h := a.arrive(pktInfo{id: uint32(i)}, int64(i)*1e6, 0, 250_000)
		a.release(h, h.due+3_000)
	}
	after := a.published()
	// Round-trip through JSON, as the agent's replies do.
	var b, c Stats
	for _, x := range []struct {
		in  Stats
		out *Stats
	}{{before, &b}, {after, &c}} {
		data, err := json.Marshal(x.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, x.out); err != nil {
			t.Fatal(err)
		}
	}
	d, err := c.Sub(b)
	if err != nil {
		t.Fatal(err)
	}
	if d.Packets != 50 || d.Hold.Count() != 50 {
		t.Fatalf("task packets %d, hold n %d; want 50", d.Packets, d.Hold.Count())
	}
	sm := d.Summarize(0)
	if sm.HoldP50Us < 252.5 || sm.HoldP50Us > 253.5 || sm.LateP99Us < 2.9 || sm.LateP99Us > 3.1 {
		t.Fatalf("task summary %+v: want hold p50 253µs, late p99 3µs", sm)
	}
	if _, err := b.Sub(c); err == nil {
		t.Fatal("subtracting a later snapshot from an earlier one was accepted")
	}
}

func TestParseQueueProc(t *testing.T) {
	data := "    7  1234     0 2 65531     5     9      812  1\n 7274  5678     3 2 65531    11    42    99021  1\n"
	qd, ud, ok := parseQueueProc(data, 7274)
	if !ok || qd != 11 || ud != 42 {
		t.Fatalf("queue 7274: %d %d %v", qd, ud, ok)
	}
	if _, _, ok := parseQueueProc(data, 8); ok {
		t.Fatal("found a queue that is not there")
	}
}

// published is what a's pending counts and durations add up to once the
// loop publishes them into an empty running total.
func (a *accounting) published() Stats {
	var l loopStats
	l.init()
	l.add(&a.pending)
	return l.snapshot()
}

// The loop publishes after every release: the running total holds every
// publication's counts and durations, and a published pending part
// starts again empty.
func TestPublishAccumulates(t *testing.T) {
	var total loopStats
	total.init()
	a := newAccounting()
	for i := range 3 {
		h := a.arrive(pktInfo{id: uint32(i + 1), rxNs: 900}, 1000, 0, 500_000)
		a.release(h, h.due+2_000)
		a.verdict = append(a.verdict, 4_000)
		a.Batches++
		total.add(&a.pending)
		a.reset()
		if a.Packets != 0 || len(a.hold)+len(a.late)+len(a.readLag)+len(a.verdict) != 0 {
			t.Fatalf("pending after publication %d: %+v", i+1, a.pending)
		}
	}
	st := total.snapshot()
	if st.Packets != 3 || st.Stamped != 3 || st.Batches != 3 || st.Hold.Count() != 3 || st.Late.Count() != 3 || st.ReadLag.Count() != 3 || st.Verdict.Count() != 3 {
		t.Fatalf("running total %+v: want 3 of each", st)
	}
	if got := st.Late.Quantile(1); !near(got, 2_000) {
		t.Fatalf("late max %d, want 2µs", got)
	}
}

// BenchmarkPublish is the loop's cost of publishing one released packet,
// which it pays after every release before it reads the next packet.
func BenchmarkPublish(b *testing.B) {
	var total loopStats
	total.init()
	a := newAccounting()
	for i := 0; i < b.N; i++ {
		h := a.arrive(pktInfo{id: uint32(i + 1)}, 1000, 0, 500_000)
		a.release(h, h.due+1_000)
		a.verdict = append(a.verdict, 4_000)
		total.add(&a.pending)
		a.reset()
	}
}
