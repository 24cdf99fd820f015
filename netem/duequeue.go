package netem

import "net/netip"

// dueQueue is a FIFO of packets held by the userspace shaper (one per
// peer, see lanes): NFQUEUE
// packet ids with the monotonic time (ns) at which each may leave and the
// time its hold is measured from (the kernel's receive stamp, or the time
// the shaper read it). Packets leave strictly in arrival order, so a packet
// never overtakes an earlier one of its queue even when the delay shrinks
// while packets are queued (a setting that moves a peer to another lane,
// e.g. from one delay for all to a delay per peer, does not keep that
// order across the change). It is a ring buffer that grows by doubling and never
// allocates in steady state.
type dueQueue struct {
	e    []held
	head int // index of the oldest entry
	n    int // number of entries
}

type held struct {
	id      uint32
	stamped bool   // ref is the kernel's receive time
	due     int64  // monotonic ns
	ref     int64  // monotonic ns the hold counts from
	seq     uint64 // arrival order across all lanes (set by lanes.push)
}

func newDueQueue(capacity int) *dueQueue {
	c := 1
	for c < capacity {
		c <<= 1
	}
	return &dueQueue{e: make([]held, c)}
}

// PushRef appends a held packet.
func (q *dueQueue) PushRef(h held) {
	if q.n == len(q.e) {
		q.grow()
	}
	q.e[(q.head+q.n)&(len(q.e)-1)] = h
	q.n++
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

// lanes holds the shaper's packets in one FIFO per peer (the address the
// delay table keyed the packet's delay by; the zero address for a single
// delay). Within a lane packets leave in arrival order, as in dueQueue;
// across lanes a packet due earlier leaves first, so a peer with no delay
// is not held behind another peer's delayed packets, as with the kernel
// backend's band per peer. With one lane it is the single FIFO.
type lanes struct {
	keys []netip.Addr
	qs   []*dueQueue
	seq  uint64
	out  []held // the last popDue's packets, reused
}

func newLanes() *lanes { return &lanes{} }

// push appends h to key's lane, numbering it in arrival order.
func (l *lanes) push(key netip.Addr, h held) {
	l.seq++
	h.seq = l.seq
	for i, k := range l.keys {
		if k == key {
			l.qs[i].PushRef(h)
			return
		}
	}
	// A new peer takes an empty lane if there is one (a lane left by an
	// earlier setting), so lanes do not pile up across settings.
	for i, q := range l.qs {
		if q.n == 0 {
			l.keys[i] = key
			q.PushRef(h)
			return
		}
	}
	l.keys = append(l.keys, key)
	q := newDueQueue(1024)
	q.PushRef(h)
	l.qs = append(l.qs, q)
}

// peek returns the earliest due time of the lanes' heads.
func (l *lanes) peek() (due int64, ok bool) {
	for _, q := range l.qs {
		if q.n > 0 && (!ok || q.e[q.head].due < due) {
			due, ok = q.e[q.head].due, true
		}
	}
	return due, ok
}

// oldest returns the arrival number of the oldest held packet.
func (l *lanes) oldest() (seq uint64, ok bool) {
	for _, q := range l.qs {
		if q.n > 0 && (!ok || q.e[q.head].seq < seq) {
			seq, ok = q.e[q.head].seq, true
		}
	}
	return seq, ok
}

// popDue removes every packet due by now (each lane up to its first
// packet not yet due) and returns them, the id of the newest one and how
// many of them overtook a packet still held in another lane. When
// overtook is 0 the packets are the oldest held ones, and one batch
// verdict on last releases exactly them; otherwise each needs its own.
// The returned slice is reused by the next call.
func (l *lanes) popDue(now int64) (out []held, last uint32, overtook int) {
	l.out = l.out[:0]
	var newest uint64
	for _, q := range l.qs {
		q.PopDueEach(now, func(h held) {
			l.out = append(l.out, h)
			if h.seq > newest {
				newest, last = h.seq, h.id
			}
		})
	}
	if old, ok := l.oldest(); ok {
		for _, h := range l.out {
			if h.seq > old {
				overtook++
			}
		}
	}
	return l.out, last, overtook
}

// popAll removes every packet and returns the id of the newest one.
func (l *lanes) popAll() (last uint32, count int) {
	var newest uint64
	for _, q := range l.qs {
		if q.n > 0 {
			if h := q.e[(q.head+q.n-1)&(len(q.e)-1)]; h.seq > newest {
				newest, last = h.seq, h.id
			}
		}
		_, n := q.PopAll()
		count += n
	}
	return last, count
}
