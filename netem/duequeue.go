package netem

// dueQueue is the FIFO of packets held by the userspace shaper: NFQUEUE
// packet ids with the monotonic time (ns) at which each may leave and the
// time its hold is measured from (the kernel's receive stamp, or the time
// the shaper read it). Packets leave strictly in arrival order, so a packet
// never overtakes an earlier one even when the delay shrinks while packets
// are queued. It is a ring buffer that grows by doubling and never
// allocates in steady state.
type dueQueue struct {
	e    []held
	head int // index of the oldest entry
	n    int // number of entries
}

type held struct {
	id      uint32
	stamped bool  // ref is the kernel's receive time
	due     int64 // monotonic ns
	ref     int64 // monotonic ns the hold counts from
}

func newDueQueue(capacity int) *dueQueue {
	c := 1
	for c < capacity {
		c <<= 1
	}
	return &dueQueue{e: make([]held, c)}
}

// Len reports the number of held packets.
func (q *dueQueue) Len() int { return q.n }

// Push appends a packet that may leave at due.
func (q *dueQueue) Push(id uint32, due int64) { q.PushRef(held{id: id, due: due, ref: due}) }

// PushRef appends a held packet.
func (q *dueQueue) PushRef(h held) {
	if q.n == len(q.e) {
		q.grow()
	}
	q.e[(q.head+q.n)&(len(q.e)-1)] = h
	q.n++
}

// Peek returns the oldest packet without removing it.
func (q *dueQueue) Peek() (id uint32, due int64, ok bool) {
	if q.n == 0 {
		return 0, 0, false
	}
	h := q.e[q.head]
	return h.id, h.due, true
}

// PopDueEach removes every packet at the head whose due time is <= now and
// returns the id of the last one removed and how many were removed. It
// stops at the first packet not yet due (FIFO: later packets wait behind
// it even if their own due time has passed). each, when not nil, sees
// every removed packet.
func (q *dueQueue) PopDueEach(now int64, each func(held)) (lastID uint32, count int) {
	mask := len(q.e) - 1
	for q.n > 0 && q.e[q.head].due <= now {
		h := q.e[q.head]
		if each != nil {
			each(h)
		}
		lastID = h.id
		q.head = (q.head + 1) & mask
		q.n--
		count++
	}
	return lastID, count
}

// PopDue is PopDueEach without the callback.
func (q *dueQueue) PopDue(now int64) (lastID uint32, count int) { return q.PopDueEach(now, nil) }

// PopAll removes every packet and returns the id of the newest one.
func (q *dueQueue) PopAll() (lastID uint32, count int) {
	if q.n == 0 {
		return 0, 0
	}
	lastID = q.e[(q.head+q.n-1)&(len(q.e)-1)].id
	count = q.n
	q.head, q.n = 0, 0
	return lastID, count
}

func (q *dueQueue) grow() {
	c := len(q.e) * 2
	if c == 0 {
		c = 1
	}
	e := make([]held, c)
	mask := len(q.e) - 1
	for i := 0; i < q.n; i++ {
		e[i] = q.e[(q.head+i)&mask]
	}
	q.e, q.head = e, 0
}
