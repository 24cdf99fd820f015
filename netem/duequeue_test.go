package netem

import "testing"

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
