package engine

// ringLen is the number of entries a queue holds inline before it spills
// into its overflow slice. Most pairs have only a few messages or receives
// outstanding; the ring keeps those without allocating.
const ringLen = 8

// fifo is a first-in first-out queue kept in a fixed ring that overflows
// into a slice. It is a plain data structure: the caller provides locking.
//
// Invariants:
//   - every entry in ring precedes (is older than) every entry in over, so
//     the logical order is ring[head..head+n) followed by over[oh:];
//   - while over holds entries, pushes go to over; when the ring has room
//     again, removal refills it from the front of over;
//   - vacated slots are zeroed so the queue keeps nothing alive.
type fifo[E any] struct {
	ring    [ringLen]E
	head, n int
	over    []E
	oh      int // first live entry of over
}

// len returns the number of entries.
func (q *fifo[E]) len() int { return q.n + len(q.over) - q.oh }

// at returns the i-th oldest entry.
func (q *fifo[E]) at(i int) E {
	if i < q.n {
		return q.ring[(q.head+i)%ringLen]
	}
	return q.over[q.oh+i-q.n]
}

// push appends e as the newest entry.
func (q *fifo[E]) push(e E) {
	if q.n < ringLen && q.oh == len(q.over) {
		q.ring[(q.head+q.n)%ringLen] = e
		q.n++
		return
	}
	q.over = append(q.over, e)
}

// remove deletes and returns the i-th oldest entry, keeping the order of the
// others.
func (q *fifo[E]) remove(i int) E {
	var zero E
	if i >= q.n {
		j := q.oh + i - q.n
		e := q.over[j]
		if j == q.oh {
			q.over[j] = zero
			q.oh++
		} else {
			copy(q.over[j:], q.over[j+1:])
			q.over[len(q.over)-1] = zero
			q.over = q.over[:len(q.over)-1]
		}
		q.compact()
		return e
	}
	e := q.ring[(q.head+i)%ringLen]
	if i == 0 {
		q.ring[q.head] = zero
		q.head = (q.head + 1) % ringLen
	} else {
		for k := i; k < q.n-1; k++ {
			q.ring[(q.head+k)%ringLen] = q.ring[(q.head+k+1)%ringLen]
		}
		q.ring[(q.head+q.n-1)%ringLen] = zero
	}
	q.n--
	// Refill the ring from the overflow to keep ring-before-over order.
	if q.oh < len(q.over) {
		q.ring[(q.head+q.n)%ringLen] = q.over[q.oh]
		q.over[q.oh] = zero
		q.oh++
		q.n++
		q.compact()
	}
	return e
}

// compact releases the overflow slice's dead prefix.
func (q *fifo[E]) compact() {
	if q.oh == len(q.over) {
		q.over, q.oh = q.over[:0], 0
		if cap(q.over) > 64 {
			q.over = nil
		}
	}
}
