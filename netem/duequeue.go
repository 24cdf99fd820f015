package netem

// dueQueue is the FIFO of packets held by the userspace shaper: NFQUEUE
// packet ids with the monotonic time (ns) at which each may leave. Packets
// leave strictly in arrival order, so a packet never overtakes an earlier
// one even when the delay shrinks while packets are queued. It is a ring
// buffer that grows by doubling and never allocates in steady state.
type dueQueue struct {
	ids  []uint32
	due  []int64
	head int // index of the oldest entry
	n    int // number of entries
}

func newDueQueue(capacity int) *dueQueue {
	c := 1
	for c < capacity {
		c <<= 1
	}
	return &dueQueue{ids: make([]uint32, c), due: make([]int64, c)}
}

// Len reports the number of held packets.
func (q *dueQueue) Len() int { return q.n }

// Push appends a packet that may leave at due.
func (q *dueQueue) Push(id uint32, due int64) {
	if q.n == len(q.ids) {
		q.grow()
	}
	i := (q.head + q.n) & (len(q.ids) - 1)
	q.ids[i], q.due[i] = id, due
	q.n++
}

// Peek returns the oldest packet without removing it.
func (q *dueQueue) Peek() (id uint32, due int64, ok bool) {
	if q.n == 0 {
		return 0, 0, false
	}
	return q.ids[q.head], q.due[q.head], true
}

// PopDue removes every packet at the head whose due time is <= now and
// returns the id of the last one removed and how many were removed. It
// stops at the first packet not yet due (FIFO: later packets wait behind
// it even if their own due time has passed).
func (q *dueQueue) PopDue(now int64) (lastID uint32, count int) {
	mask := len(q.ids) - 1
	for q.n > 0 && q.due[q.head] <= now {
		lastID = q.ids[q.head]
		q.head = (q.head + 1) & mask
		q.n--
		count++
	}
	return lastID, count
}

// PopAll removes every packet and returns the id of the newest one.
func (q *dueQueue) PopAll() (lastID uint32, count int) {
	if q.n == 0 {
		return 0, 0
	}
	lastID = q.ids[(q.head+q.n-1)&(len(q.ids)-1)]
	count = q.n
	q.head, q.n = 0, 0
	return lastID, count
}

func (q *dueQueue) grow() {
	c := len(q.ids) * 2
	if c == 0 {
		c = 1
	}
	ids := make([]uint32, c)
	due := make([]int64, c)
	mask := len(q.ids) - 1
	for i := 0; i < q.n; i++ {
		j := (q.head + i) & mask
		ids[i], due[i] = q.ids[j], q.due[j]
	}
	q.ids, q.due, q.head = ids, due, 0
}
