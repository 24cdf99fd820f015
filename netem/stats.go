package netem

import (
	"fmt"
	"time"
)

// Stats is what a shaper did since it started, cumulative, so that two
// snapshots taken around a task give that task's figures (Stats.Sub).
// The userspace shaper fills every field; the kernel shaper fills
// none (netem's own counters are read from the qdisc instead).
type Stats struct {
	Hook    string `json:"hook,omitempty"` // ingress or egress
	DelayNs int64  `json:"delay_ns"`       // the delay held when the snapshot was taken (with per-peer delays their largest), floor included

	Packets uint64 `json:"packets"` // packets released
	Stamped uint64 `json:"stamped"` // of which held from the kernel's receive stamp
	Batches uint64 `json:"batches"` // releases: one batch verdict each, or one verdict per packet in one send
	// Overtook counts packets let out while an earlier packet for
	// another peer was still held (per-peer delays); a release with any
	// such packet gives every packet of it a verdict of its own.
	Overtook uint64 `json:"overtook,omitempty"`
	Gaps     uint64 `json:"gaps"`     // packet ids the shaper never read: lost between the kernel and the shaper
	Overruns uint64 `json:"overruns"` // times the queue socket overflowed (ENOBUFS)
	// Kernel counters of the queue (/proc/net/netfilter/nfnetlink_queue):
	// packets dropped because the queue was full, and packets the kernel
	// failed to hand to the socket (these also show up as Gaps).
	QueueDropped  uint64 `json:"queue_dropped"`
	UserDropped   uint64 `json:"user_dropped"`
	VerdictErrors uint64 `json:"verdict_errors"`

	// Per packet: release - arrival (the realized one-way hold), release -
	// due (lateness), and read - kernel receive stamp (how long the packet
	// waited before the shaper saw it; stamped packets only).
	Hold    *Hist `json:"hold"`
	Late    *Hist `json:"late"`
	ReadLag *Hist `json:"read_lag"`
	// Verdict: how long each verdict system call took; the kernel passes
	// the released packets on inside it.
	Verdict *Hist `json:"verdict"`

	CPUNs int64 `json:"cpu_ns"` // user + system CPU time of the shaper's process
}

// StatsReporter is an optional add-on of a Shaper that measures itself.
type StatsReporter interface {
	Stats() Stats
}

// Drops counts packets lost by the shaper: ids it never read and packets
// the kernel dropped on a full queue.
func (s Stats) Drops() uint64 { return s.Gaps + s.QueueDropped }

// Sub returns s minus an earlier snapshot prev of the same shaper.
func (s Stats) Sub(prev Stats) (Stats, error) {
	if s.Packets < prev.Packets || s.Gaps < prev.Gaps || s.QueueDropped < prev.QueueDropped {
		return Stats{}, fmt.Errorf("shaper statistics went backwards (%d packets after %d): the shaper restarted", s.Packets, prev.Packets)
	}
	d := s
	d.Packets -= prev.Packets
	d.Stamped -= prev.Stamped
	d.Batches -= prev.Batches
	d.Overtook -= min(prev.Overtook, d.Overtook)
	d.Gaps -= prev.Gaps
	d.Overruns -= prev.Overruns
	d.QueueDropped -= prev.QueueDropped
	d.UserDropped -= min(prev.UserDropped, d.UserDropped)
	d.VerdictErrors -= min(prev.VerdictErrors, d.VerdictErrors)
	d.CPUNs -= prev.CPUNs
	var err error
	for _, h := range []struct {
		dst       **Hist
		cur, prev *Hist
	}{{&d.Hold, s.Hold, prev.Hold}, {&d.Late, s.Late, prev.Late}, {&d.ReadLag, s.ReadLag, prev.ReadLag}, {&d.Verdict, s.Verdict, prev.Verdict}} {
		if h.cur == nil {
			continue
		}
		if *h.dst, err = h.cur.Sub(h.prev); err != nil {
			return Stats{}, err
		}
	}
	return d, nil
}

// Summary is the one-line form of a (per-task) Stats for tables and CSV.
type Summary struct {
	Packets    uint64  `json:"packets"`
	Stamped    uint64  `json:"stamped"`
	Drops      uint64  `json:"drops"`
	Overtook   uint64  `json:"overtook,omitempty"`
	TargetUs   float64 `json:"target_us"`
	HoldP50Us  float64 `json:"hold_p50_us"`
	HoldP99Us  float64 `json:"hold_p99_us"`
	HoldMaxUs  float64 `json:"hold_max_us"`
	LateP50Us  float64 `json:"late_p50_us"`
	LateP99Us  float64 `json:"late_p99_us"`
	ReadLagP50 float64 `json:"read_lag_p50_us"`
	ReadLagP99 float64 `json:"read_lag_p99_us"`
	VerdictP50 float64 `json:"verdict_p50_us"`
	CPUCores   float64 `json:"cpu_cores"` // CPU time / wall time, when a wall time is given
}

// Summarize reduces s to its Summary; wall, when positive, is the time the
// snapshot covers (for the CPU share).
func (s Stats) Summarize(wall time.Duration) Summary {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	sm := Summary{Packets: s.Packets, Stamped: s.Stamped, Drops: s.Drops(), Overtook: s.Overtook, TargetUs: us(s.DelayNs)}
	if s.Hold != nil {
		sm.HoldP50Us, sm.HoldP99Us, sm.HoldMaxUs = us(s.Hold.Quantile(0.5)), us(s.Hold.Quantile(0.99)), us(s.Hold.Max())
	}
	if s.Late != nil {
		sm.LateP50Us, sm.LateP99Us = us(s.Late.Quantile(0.5)), us(s.Late.Quantile(0.99))
	}
	if s.ReadLag != nil {
		sm.ReadLagP50, sm.ReadLagP99 = us(s.ReadLag.Quantile(0.5)), us(s.ReadLag.Quantile(0.99))
	}
	if s.Verdict != nil {
		sm.VerdictP50 = us(s.Verdict.Quantile(0.5))
	}
	if wall > 0 {
		sm.CPUCores = float64(s.CPUNs) / float64(wall.Nanoseconds())
	}
	return sm
}

// loopStats is the packet loop's running total, which the loop adds to
// under the shaper's lock and Stats copies.
type loopStats struct {
	Packets, Stamped, Batches, Overtook, Gaps, Overruns, VerdictErrors uint64
	Hold, Late, ReadLag, Verdict                                       *Hist
}

func (l *loopStats) init() {
	l.Hold, l.Late, l.ReadLag, l.Verdict = NewHist(), NewHist(), NewHist(), NewHist()
}

// pending is what the loop gathered since it last published: counts and
// the raw durations. Publishing records each duration in the running
// histograms, a cost in the values gathered (one or two packets' worth
// between two releases); merging two histograms instead walks and clears
// every bucket of four 10 s histograms, 186 µs of the loop's time per
// release on this project's 2-vCPU host and milliseconds under
// emulation, during which the next packet waits unread.
type pending struct {
	Packets, Stamped, Batches, Overtook, Gaps, Overruns, VerdictErrors uint64
	hold, late, readLag, verdict                                       []int64
}

// reset clears the counts and durations, keeping the slices' storage.
func (p *pending) reset() {
	*p = pending{hold: p.hold[:0], late: p.late[:0], readLag: p.readLag[:0], verdict: p.verdict[:0]}
}

// add publishes p into the running total.
func (l *loopStats) add(p *pending) {
	l.Packets += p.Packets
	l.Stamped += p.Stamped
	l.Batches += p.Batches
	l.Overtook += p.Overtook
	l.Gaps += p.Gaps
	l.Overruns += p.Overruns
	l.VerdictErrors += p.VerdictErrors
	for _, d := range []struct {
		h  *Hist
		vs []int64
	}{{l.Hold, p.hold}, {l.Late, p.late}, {l.ReadLag, p.readLag}, {l.Verdict, p.verdict}} {
		for _, v := range d.vs {
			d.h.Record(v)
		}
	}
}

func (l *loopStats) snapshot() Stats {
	return Stats{Packets: l.Packets, Stamped: l.Stamped, Batches: l.Batches, Overtook: l.Overtook, Gaps: l.Gaps, Overruns: l.Overruns,
		VerdictErrors: l.VerdictErrors, Hold: l.Hold.Clone(), Late: l.Late.Clone(), ReadLag: l.ReadLag.Clone(), Verdict: l.Verdict.Clone()}
}

// accounting turns the loop's per-packet times into held packets and
// statistics. Times are monotonic ns; kernel stamps are CLOCK_REALTIME ns,
// converted with realOff (CLOCK_REALTIME - monotonic, read just before the
// packet was read).
type accounting struct {
	pending
	lastID   uint32
	haveLast bool
}

func newAccounting() *accounting { return &accounting{} }

// arrive accounts for a packet read at read (monotonic) with the delay
// current then, and returns it as held: due at its arrival + delay, where
// the arrival is the kernel's receive stamp when the packet carries a
// plausible one (not after the read, not more than MaxDelay before it),
// else the read itself. Skipped packet ids count as gaps.
func (a *accounting) arrive(p pktInfo, read, realOff, delay int64) held {
	if a.haveLast && p.id != a.lastID+1 {
		a.Gaps += uint64(p.id - a.lastID - 1) // wrap-safe
	}
	a.lastID, a.haveLast = p.id, true
	h := held{id: p.id, ref: read}
	if p.rxNs != 0 {
		if k := p.rxNs - realOff; k <= read && read-k < int64(MaxDelay) {
			h.ref, h.stamped = k, true
			a.readLag = append(a.readLag, read-k)
		}
	}
	h.due = h.ref + delay
	return h
}

// release accounts for a packet given its verdict at now.
func (a *accounting) release(h held, now int64) {
	a.Packets++
	if h.stamped {
		a.Stamped++
	}
	a.hold = append(a.hold, now-h.ref)
	a.late = append(a.late, now-h.due)
}

// reset clears the counts, keeping the id sequence.
func (a *accounting) reset() { a.pending.reset() }
