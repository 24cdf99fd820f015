package workers

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rttlab/rttlab/workloads"
)

func rec(w string, start, end int64) Record {
	return Record{Worker: w, StartNS: start, EndNS: end, LatencyNS: (end - start) * 1000}
}

// timeline is a hand-built run on workers A and B (times in ns):
//
//	r0  A [0,10)                 A idle                    -
//	r1  A [5,15)   A busy (r0),  B idle          → collision
//	r2  B [12,20)  B idle                                  -
//	r3  A [14,18)  A busy (r1),  B busy (r2)     busy start
//	r4  B [20,25)  r2 ended at 20: B idle                  -
//	r5  A [22,30)  r3 ended at 18: A idle                  -
//	r6  A [24,26)  A busy (r5),  B busy (r4)     busy start
//	r7  A [26,28)  A busy (r5),  B idle since 25 → collision (not with slack 2)
//	r8  B [40,45)  B idle                                  -
//	r9  B [40,41)  same start as r8, listed after: busy, A idle → collision
//	w   A [100,110) warmup: occupies A, not counted
//	r11 A [105,106) A busy (warmup), B idle      → collision
//	u   measured, no worker stamps               → untimed
func timeline() []Record {
	recs := []Record{
		rec("A", 0, 10), rec("A", 5, 15), rec("B", 12, 20), rec("A", 14, 18),
		rec("B", 20, 25), rec("A", 22, 30), rec("A", 24, 26), rec("A", 26, 28),
		rec("B", 40, 45), rec("B", 40, 41),
	}
	w := rec("A", 100, 110)
	w.Warmup = true
	recs = append(recs, w, rec("A", 105, 106), Record{LatencyNS: 5, Failed: true})
	return recs
}

func TestCollisionsTimeline(t *testing.T) {
	recs := timeline()
	got := Collisions(recs, nil, 0)
	want := CollisionStats{Requests: 11, Collisions: 4, BusyStarts: 6, Untimed: 1}
	if got != want {
		t.Errorf("slack 0: %+v, want %+v", got, want)
	}
	if r := got.Rate(); r != 4.0/11 {
		t.Errorf("rate %v", r)
	}
	// A slack of 2 ns forgives r7: B finished 1 ns before r7 started.
	if got := Collisions(recs, nil, 2); got.Collisions != 3 || got.BusyStarts != 6 {
		t.Errorf("slack 2: %+v", got)
	}
	if got := Collisions(recs, nil, 1); got.Collisions != 4 {
		t.Errorf("slack 1: %+v", got)
	}
	// A third worker that served nothing is idle throughout: every busy
	// start collides.
	if got := Collisions(recs, []string{"A", "B", "C"}, 0); got.Collisions != 6 {
		t.Errorf("with an idle C: %+v", got)
	}
	// Order of the records does not matter, except between simultaneous
	// starts on one worker, where exactly one of the pair is busy.
	rev := make([]Record, len(recs))
	for i := range recs {
		rev[len(recs)-1-i] = recs[i]
	}
	if got := Collisions(rev, nil, 0); got != want {
		t.Errorf("reversed: %+v", got)
	}
	// One worker: never an idle other, so never a collision.
	one := []Record{rec("A", 0, 10), rec("A", 1, 5)}
	if got := Collisions(one, nil, 0); got.Collisions != 0 || got.BusyStarts != 1 {
		t.Errorf("one worker: %+v", got)
	}
}

// bruteCollisions is the definition written out directly.
func bruteCollisions(recs []Record, workers []string, slack int64) CollisionStats {
	all := append([]string(nil), workers...)
	for _, r := range recs {
		if r.Timed() && !contains(all, r.Worker) {
			all = append(all, r.Worker)
		}
	}
	var st CollisionStats
	for i, r := range recs {
		if r.Warmup {
			continue
		}
		if !r.Timed() {
			st.Untimed++
			continue
		}
		st.Requests++
		s := r.StartNS
		busy := false
		for j, q := range recs {
			if j == i || !q.Timed() || q.Worker != r.Worker {
				continue
			}
			before := q.StartNS < s || (q.StartNS == s && j < i)
			if before && q.EndNS > s {
				busy = true
			}
		}
		if !busy {
			continue
		}
		st.BusyStarts++
		for _, v := range all {
			if v == r.Worker {
				continue
			}
			idle := true
			for _, q := range recs {
				if q.Timed() && q.Worker == v && q.StartNS <= s && q.EndNS > s-slack {
					idle = false
				}
			}
			if idle {
				st.Collisions++
				break
			}
		}
	}
	return st
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

func TestCollisionsMatchDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		nw := 1 + rng.IntN(4)
		var recs []Record
		for range 1 + rng.IntN(60) {
			w := fmt.Sprintf("w%d", rng.IntN(nw))
			s := int64(rng.IntN(200))
			r := rec(w, s, s+int64(rng.IntN(30)))
			r.Warmup = rng.IntN(8) == 0
			if rng.IntN(20) == 0 {
				r.Worker = ""
			}
			recs = append(recs, r)
		}
		workers := []string{"w0", "w1", "w2", "w3", "w4"}[:nw+rng.IntN(2)]
		slack := int64(rng.IntN(5))
		got := Collisions(recs, workers, timeDur(slack))
		want := bruteCollisions(recs, workers, slack)
		if got != want {
			t.Fatalf("trial %d: %+v, definition %+v\n%+v", trial, got, want, recs)
		}
	}
}

func TestShares(t *testing.T) {
	recs := timeline()
	sh := Shares(recs, []string{"A", "B", "C"})
	if len(sh) != 3 || sh[0].Worker != "A" || sh[0].Count != 7 || sh[1].Worker != "B" || sh[1].Count != 4 || sh[2].Count != 0 {
		t.Fatalf("shares %+v", sh)
	}
	if sh[0].Share != 7.0/11 {
		t.Errorf("share %v", sh[0].Share)
	}
}

func TestRecordFromOpen(t *testing.T) {
	r := workloads.OpenResult{Result: workloads.Result{LatencyNS: 7e6, Status: 200}, Tags: map[string]string{
		HeaderPID: "123", HeaderThread: "t1", HeaderStartNS: "1000", HeaderEndNS: "5000"}}
	got := RecordFromOpen(r)
	if got.Worker != "123" || got.Thread != "t1" || got.StartNS != 1000 || got.EndNS != 5000 || got.LatencyNS != 7e6 || got.Failed || !got.Timed() {
		t.Errorf("%+v", got)
	}
	bad := RecordFromOpen(workloads.OpenResult{Result: workloads.Result{Status: 502, Error: "x"}})
	if bad.Timed() || !bad.Failed {
		t.Errorf("%+v", bad)
	}
}

func timeDur(ns int64) time.Duration { return time.Duration(ns) }

// The proxy's recorded holds: each worker's state at an assignment is
// rebuilt from every request's [assigned, released] events.
func TestHeldWhileIdle(t *testing.T) {
	jsq := ProxyJSQ.String()
	d := func(idx int, from, to uint64) Decision {
		return Decision{Policy: jsq, Index: idx, AssignedEv: from, ReleasedEv: to}
	}
	for name, c := range map[string]struct {
		decs       []Decision
		violations int
	}{
		// 1 on w0, 2 on w1 (w0 busy, w1 idle: fine), 3 on w0 after 1
		// released (w0 idle again).
		"spread": {[]Decision{d(0, 1, 4), d(1, 2, 6), d(0, 5, 7)}, 0},
		// 2 joins 1 on w0 while w1 holds nothing.
		"piled": {[]Decision{d(0, 1, 4), d(0, 2, 3)}, 1},
		// Both busy: joining either is least-busy, not a violation.
		"both busy": {[]Decision{d(0, 1, 9), d(1, 2, 9), d(0, 3, 9)}, 0},
		// A release at event 3 frees w0 before the assignment at 4.
		"released first": {[]Decision{d(0, 1, 3), d(1, 2, 8), d(0, 4, 5)}, 0},
		// A request never released holds its worker to the end.
		"never released": {[]Decision{d(0, 1, 0), d(0, 2, 3)}, 1},
	} {
		checked, v := HeldWhileIdle(c.decs, jsq, 2)
		if checked != len(c.decs) || v != c.violations {
			t.Errorf("%s: checked %d, violations %d, want %d", name, checked, v, c.violations)
		}
	}
	// Other policies and unassigned requests are not checked.
	other := []Decision{{Policy: "proxy:round-robin", Index: 0, AssignedEv: 1, ReleasedEv: 3}, {Policy: jsq, Index: -1}}
	if checked, _ := HeldWhileIdle(other, jsq, 2); checked != 0 {
		t.Errorf("checked %d", checked)
	}
}
