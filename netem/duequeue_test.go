package netem

import (
	"net/netip"
	"testing"
)

func TestDueQueueFIFO(t *testing.T) {
	q := newDueQueue(2)
	if _, _, ok := q.Peek(); ok {
		t.Fatal("empty queue has a head")
	}
	if _, n := q.PopDue(1 << 62); n != 0 {
		t.Fatal("popped from empty queue")
	}
	// The delay shrinks while packets are held: packet 3 is due before
	// packet 2 but must wait behind it.
	q.Push(1, 100)
	q.Push(2, 300)
	q.Push(3, 150)
	q.Push(4, 400)
	if id, due, ok := q.Peek(); !ok || id != 1 || due != 100 {
		t.Fatalf("Peek = %d %d %v", id, due, ok)
	}
	if id, n := q.PopDue(99); n != 0 || id != 0 {
		t.Fatalf("PopDue(99) = %d, %d", id, n)
	}
	if id, n := q.PopDue(200); n != 1 || id != 1 {
		t.Fatalf("PopDue(200) = %d, %d; want 1, 1", id, n)
	}
	if id, n := q.PopDue(300); n != 2 || id != 3 {
		t.Fatalf("PopDue(300) = %d, %d; want 3, 2", id, n)
	}
	if q.Len() != 1 {
		t.Fatalf("Len = %d", q.Len())
	}
	if id, n := q.PopAll(); n != 1 || id != 4 {
		t.Fatalf("PopAll = %d, %d", id, n)
	}
	if q.Len() != 0 {
		t.Fatal("not empty after PopAll")
	}
}

func TestDueQueueWrapAndGrow(t *testing.T) {
	q := newDueQueue(4)
	next, want := uint32(0), uint32(0)
	// Interleave pushes and pops so the ring wraps many times and grows.
	for round := range 200 {
		for range round%7 + 1 {
			q.Push(next, int64(next))
			next++
		}
		id, n := q.PopDue(int64(next) - 3)
		for range n {
			want++
		}
		if n > 0 && id != want-1 {
			t.Fatalf("round %d: last popped %d, want %d", round, id, want-1)
		}
		if q.Len() != int(next-want) {
			t.Fatalf("round %d: Len %d, want %d", round, q.Len(), next-want)
		}
		if hid, _, ok := q.Peek(); ok && hid != want {
			t.Fatalf("round %d: head %d, want %d", round, hid, want)
		}
	}
	if id, n := q.PopAll(); id != next-1 || n != int(next-want) {
		t.Fatalf("PopAll = %d, %d", id, n)
	}
}

func TestLanesPerPeer(t *testing.T) {
	far, near := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	l := newLanes()
	if _, ok := l.peek(); ok {
		t.Fatal("empty lanes have a head")
	}
	// far's packets are held 20 units, near's none: near's packets 2 and
	// 4 arrive behind far's 1 and 3 and must not wait for them.
	l.push(far, held{id: 1, due: 20})
	l.push(near, held{id: 2, due: 1})
	l.push(far, held{id: 3, due: 22})
	l.push(near, held{id: 4, due: 3})
	if due, ok := l.peek(); !ok || due != 1 {
		t.Fatalf("peek = %d %v, want 1", due, ok)
	}
	out, last, overtook := l.popDue(5)
	if len(out) != 2 || out[0].id != 2 || out[1].id != 4 || last != 4 || overtook != 2 {
		t.Fatalf("popDue(5) = %+v last %d overtook %d; want 2 and 4, both overtaking 1", out, last, overtook)
	}
	// Within a lane, FIFO holds even when the delay shrinks.
	l.push(far, held{id: 5, due: 21})
	if out, _, _ := l.popDue(20); len(out) != 1 || out[0].id != 1 {
		t.Fatalf("popDue(20) = %+v, want 1 alone", out)
	}
	// Now 3 and 5 are the oldest held: a batch on 5 releases exactly them.
	out, last, overtook = l.popDue(22)
	if len(out) != 2 || last != 5 || overtook != 0 {
		t.Fatalf("popDue(22) = %+v last %d overtook %d; want 3 and 5 as one batch", out, last, overtook)
	}
	// One lane behaves as the single FIFO: never an overtaking packet.
	l.push(netip.Addr{}, held{id: 6, due: 30})
	l.push(netip.Addr{}, held{id: 7, due: 25})
	if out, last, overtook := l.popDue(30); len(out) != 2 || last != 7 || overtook != 0 {
		t.Fatalf("one lane: %+v last %d overtook %d", out, last, overtook)
	}
	// Every lane is empty now: a new peer takes one of them.
	lanesBefore := len(l.qs)
	l.push(netip.MustParseAddr("10.0.0.3"), held{id: 10, due: 40})
	if len(l.qs) != lanesBefore {
		t.Fatalf("a new peer added lane %d instead of taking an empty one", len(l.qs))
	}
	if out, _, _ := l.popDue(40); len(out) != 1 || out[0].id != 10 {
		t.Fatalf("reused lane: %+v", out)
	}
	l.push(far, held{id: 8, due: 100})
	l.push(near, held{id: 9, due: 50})
	if last, n := l.popAll(); last != 9 || n != 2 || l.Len() != 0 {
		t.Fatalf("popAll = %d, %d (left %d); want 9, 2, 0", last, n, l.Len())
	}
}
