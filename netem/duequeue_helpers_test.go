package netem

// Helpers the queue tests use; the shaper's loop goes through lanes.

// Len reports the number of held packets.
func (q *dueQueue) Len() int { return q.n }

// Push appends a packet that may leave at due.
func (q *dueQueue) Push(id uint32, due int64) { q.PushRef(held{id: id, due: due, ref: due}) }

// Peek returns the oldest packet without removing it.
func (q *dueQueue) Peek() (id uint32, due int64, ok bool) {
	if q.n == 0 {
		return 0, 0, false
	}
	h := q.e[q.head]
	return h.id, h.due, true
}

// PopDue is PopDueEach without the callback.
func (q *dueQueue) PopDue(now int64) (lastID uint32, count int) { return q.PopDueEach(now, nil) }

// Len reports the number of held packets of every lane.
func (l *lanes) Len() int {
	n := 0
	for _, q := range l.qs {
		n += q.Len()
	}
	return n
}
