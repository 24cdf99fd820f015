package workers

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/rttlab/rttlab/results/stats"
	"github.com/rttlab/rttlab/workloads"
)

// Record is one request of a run as the analysis needs it.
type Record struct {
	// Worker is the serving worker's PID ("" when the response did not
	// say, e.g. a request that failed before reaching a worker).
	Worker string `json:"worker,omitempty"`
	Thread string `json:"thread,omitempty"`
	// StartNS and EndNS are when the worker began and finished the
	// request, on the workers' shared clock.
	StartNS int64 `json:"start_ns,omitempty"`
	EndNS   int64 `json:"end_ns,omitempty"`
	// LatencyNS is the client's latency from the scheduled send time.
	LatencyNS int64 `json:"latency_ns"`
	Failed    bool  `json:"failed,omitempty"`
	// Warmup requests count in no figure but occupy their worker in the
	// collision timeline.
	Warmup bool `json:"warmup,omitempty"`
}

// Timed reports whether the record places the request on a worker's
// timeline.
func (r Record) Timed() bool {
	return r.Worker != "" && r.EndNS >= r.StartNS && (r.StartNS != 0 || r.EndNS != 0)
}

// RecordFromOpen turns an open-loop result (run with CopyHeaders =
// WorkerHeaders()) into a Record; missing or unreadable worker headers
// leave the record untimed.
func RecordFromOpen(r workloads.OpenResult) Record {
	rec := Record{LatencyNS: r.LatencyNS, Failed: r.Failed(), Warmup: r.Warmup}
	// Behind the front proxy every worker is its own single-mode process
	// (in its own container, where PIDs repeat): the upstream the proxy
	// names identifies it.
	rec.Worker = r.Tags[HeaderPID]
	if w := r.Tags[HeaderWorker]; w != "" {
		rec.Worker = w
	}
	rec.Thread = r.Tags[HeaderThread]
	s, err1 := strconv.ParseInt(r.Tags[HeaderStartNS], 10, 64)
	e, err2 := strconv.ParseInt(r.Tags[HeaderEndNS], 10, 64)
	if err1 == nil && err2 == nil {
		rec.StartNS, rec.EndNS = s, e
	}
	return rec
}

// CollisionStats counts the collisions of measured requests.
type CollisionStats struct {
	// Requests counts the measured timed requests (failed ones included:
	// a collision is about assignment, not about the response).
	Requests int `json:"requests"`
	// Collisions counts those that started on a busy worker while another
	// worker was idle.
	Collisions int `json:"collisions"`
	// BusyStarts counts those that started on a busy worker, whatever the
	// other workers were doing (at saturation every worker is busy and
	// such a start is no scheduling fault).
	BusyStarts int `json:"busy_starts"`
	// Untimed counts measured requests with no worker or times.
	Untimed int `json:"untimed"`
}

// Rate is Collisions / Requests (NaN without requests).
func (c CollisionStats) Rate() float64 {
	if c.Requests == 0 {
		return math.NaN()
	}
	return float64(c.Collisions) / float64(c.Requests)
}

// Add sums two counts.
func (c CollisionStats) Add(o CollisionStats) CollisionStats {
	return CollisionStats{c.Requests + o.Requests, c.Collisions + o.Collisions, c.BusyStarts + o.BusyStarts, c.Untimed + o.Untimed}
}

// Collisions counts, over the measured requests of one run, those that
// started on a worker already running another request while some other
// worker was idle at that instant. Precisely, for a timed measured
// request r on worker w starting at s:
//
//   - w is busy when another request q on w (warmup ones included) has
//     q.start ≤ s < q.end; of requests starting at the same nanosecond on
//     one worker, the earlier in recs counts as already running, so a
//     simultaneous pair makes one collision, not two;
//   - worker v ≠ w is idle when no request on v has start ≤ s and
//     end > s − slack, i.e. v has run nothing during [s − slack, s]. With
//     slack 0 this is "nothing in progress at s" (the definition).
//     A positive slack asks that v have been idle for that long, which
//     forgives a decision made on slightly stale knowledge: the proxy
//     counts a request in flight until its response has come back, a
//     little after the worker finished it;
//   - r collides when w is busy and some v is idle.
//
// A request is in progress from its start up to, not including, its end.
// workers lists every worker of the run (e.g. the cluster's PIDs), so
// that one that served nothing still counts as idle; workers seen in recs
// are added to it, and nil means just those.
func Collisions(recs []Record, workers []string, slack time.Duration) CollisionStats {
	all, by, st := timedByWorker(recs, workers)
	wt := newWorkerTimes(by)
	slackNS := int64(slack)
	for w, ivs := range by {
		for pos, x := range ivs {
			if recs[x.idx].Warmup {
				continue
			}
			st.Requests++
			if !wt.busyBefore(w, pos, x.start) {
				continue
			}
			st.BusyStarts++
			for _, v := range all {
				if v == w {
					continue
				}
				if len(by[v]) == 0 || !wt.busyBefore(v, wt.upTo(v, x.start), x.start-slackNS) {
					st.Collisions++
					break
				}
			}
		}
	}
	return st
}

// workerIv is one timed request on its worker: in progress from start up
// to, not including, end; idx is its index in the records.
type workerIv struct {
	start, end int64
	idx        int
}

// timedByWorker returns every worker (workers, then those first seen in
// recs), the timed records per worker in record order, and the stats with
// the untimed measured requests counted.
func timedByWorker(recs []Record, workers []string) ([]string, map[string][]workerIv, CollisionStats) {
	var all []string
	all = append(all, workers...)
	by := map[string][]workerIv{}
	var st CollisionStats
	for i, r := range recs {
		if !r.Timed() {
			if !r.Warmup {
				st.Untimed++
			}
			continue
		}
		if _, ok := by[r.Worker]; !ok && !slices.Contains(all, r.Worker) {
			all = append(all, r.Worker)
		}
		by[r.Worker] = append(by[r.Worker], workerIv{r.StartNS, r.EndNS, i})
	}
	return all, by, st
}

// workerTimes holds per worker its intervals in (start, index) order and
// the running maximum of their ends, so "is anything on w in progress
// after t among those starting up to s" is one binary search.
type workerTimes struct {
	by      map[string][]workerIv
	prefMax map[string][]int64
}

// newWorkerTimes sorts each worker's intervals in by, in place, and
// computes the running maxima of their ends.
func newWorkerTimes(by map[string][]workerIv) *workerTimes {
	prefMax := map[string][]int64{}
	for w, ivs := range by {
		slices.SortFunc(ivs, func(a, b workerIv) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.idx, b.idx)) })
		pm := make([]int64, len(ivs))
		for i, x := range ivs {
			pm[i] = x.end
			if i > 0 {
				pm[i] = max(pm[i], pm[i-1])
			}
		}
		prefMax[w] = pm
	}
	return &workerTimes{by: by, prefMax: prefMax}
}

// busyBefore reports whether some interval on w that comes before
// position pos in w's order ends after t.
func (wt *workerTimes) busyBefore(w string, pos int, t int64) bool {
	return pos > 0 && wt.prefMax[w][pos-1] > t
}

// upTo returns how many intervals on w start at or before s.
func (wt *workerTimes) upTo(w string, s int64) int {
	n, _ := slices.BinarySearchFunc(wt.by[w], s, func(x workerIv, s int64) int {
		if x.start <= s {
			return -1
		}
		return 1
	})
	return n
}

// WorkerShare is one worker's part of a run's measured requests.
type WorkerShare struct {
	Worker string    `json:"worker"`
	Count  int       `json:"count"`
	Share  stats.Num `json:"share"`
}

// Shares returns each worker's share of the measured requests that name a
// worker (failed ones included), busiest first (ties by name); workers
// lists workers to include with a zero share when they served nothing.
func Shares(recs []Record, workers []string) []WorkerShare {
	counts := map[string]int{}
	for _, w := range workers {
		counts[w] = 0
	}
	total := 0
	for _, r := range recs {
		if r.Warmup || r.Worker == "" {
			continue
		}
		counts[r.Worker]++
		total++
	}
	out := make([]WorkerShare, 0, len(counts))
	for w, c := range counts {
		s := math.NaN()
		if total > 0 {
			s = float64(c) / float64(total)
		}
		out = append(out, WorkerShare{Worker: w, Count: c, Share: stats.Num(s)})
	}
	slices.SortFunc(out, func(a, b WorkerShare) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Worker, b.Worker))
	})
	return out
}

// HeldWhileIdle checks, from the proxy's recorded holds (each request's
// assignment and release in the proxy's event order), the decisions of
// one policy: a decision violates when its worker held another request
// at the moment of the assignment while some other worker held none.
// This reconstructs every worker's state from all requests' intervals,
// independently of the in-flight counts the decision logged. workers is
// the number of upstreams; decisions never assigned are skipped.
func HeldWhileIdle(decs []Decision, policy string, workers int) (checked, violations int) {
	type hold struct {
		idx      int
		from, to uint64
	}
	var holds []hold
	for _, d := range decs {
		if d.AssignedEv > 0 && d.Index >= 0 {
			to := d.ReleasedEv
			if to == 0 {
				to = ^uint64(0) // never released: held to the end
			}
			holds = append(holds, hold{d.Index, d.AssignedEv, to})
		}
	}
	for _, d := range decs {
		if d.Policy != policy || d.AssignedEv == 0 || d.Index < 0 {
			continue
		}
		checked++
		held := make([]int, max(workers, d.Index+1))
		for _, h := range holds {
			if h.from < d.AssignedEv && d.AssignedEv < h.to && h.idx < len(held) {
				held[h.idx]++
			}
		}
		if held[d.Index] > 0 && slices.Contains(held, 0) {
			violations++
		}
	}
	return checked, violations
}
