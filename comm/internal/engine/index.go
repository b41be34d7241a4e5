package engine

import (
	"cmp"
	"slices"
)

// The matching queues, and their index by (context, tag).
//
// A queue is searched linearly while its searches stay short: receives
// mostly match in the order they were posted (the oldest entry), and
// there a linear search beats any index. Once its searches have walked
// past more entries than twice what it holds (and more than indexAt) —
// receives matched out of order, or many entries of other tags or
// contexts ahead of the match — the queue switches to indexed: every key
// (context, tag) gets a FIFO of its own (a chain), so a match costs a
// lookup instead of a walk, and a run of out-of-order matches costs n
// instead of n² (BenchmarkMatchOutOfOrder in package comm: 40,000
// receives in reverse tag order took 0.9 s, now 20 ms, as in order). The
// walks a queue makes before it switches cost about as much as building
// its index twice, so a rare long search (a collective's message behind a
// long queue of in-order receives on another communicator) leaves it
// linear, where in-order matching is fastest. A queue that empties goes
// back to linear, its walks forgotten.
//
// MPI's order survives the split because every entry carries the inbox's
// sequence number (its posting or arrival order, match.go's seq), and
// every chain keeps its entries in that order:
//   - a message (ctx, tag) is matched by the receives filed under
//     (ctx, tag) and those filed under (ctx, AnyTag): the older of the two
//     chains' heads wins, as Open MPI's ob1 compares the heads of its
//     specific and wildcard receive lists by sequence; match.go compares
//     the winner with the AnySource receives' queue the same way;
//   - a receive for one tag takes the head of chain (ctx, tag) of the
//     unexpected messages;
//   - a receive for AnyTag takes the oldest message of its context: the
//     unexpected queue keeps all its messages in arrival order in a list
//     as well, in either mode, which the wildcard walks. Wildcards are the
//     one search the index does not shorten.
//
// Both types are plain data structures: the caller provides the locking
// (match.go: the pair's lock, or the inbox's anyMu for AnySource
// receives).

// indexAt is the fewest entries a queue's searches walk past before it
// switches to indexed. Receives that match in posting order never walk,
// however many are posted (osu_bw's window of 64), and stay linear.
const indexAt = 32

// walkedOut reports whether a linear queue holding n entries, whose
// searches have walked past walked entries since it was last empty, is
// to switch to indexed.
func walkedOut(walked, n int) bool { return walked > indexAt && walked > 2*n }

// keyIndex files entries by (context, tag), each key's in a FIFO of their
// own in the order they were added: a chain of nodes, kept in one slice
// of the index (freed nodes are reused), so that filing and taking an
// entry allocates nothing once the slice has grown. Contexts are few (a
// communicator each), so each has a tagIndex found by a linear search;
// tags are mostly small numbers, so a context's chains sit in a slice
// indexed by the tag (dense), sized to the entries filed, and only larger
// tags go to a map (sparse). Receives and messages that match in order
// then walk the dense slice in order too, as the linear queue did.
type keyIndex[E comparable] struct {
	ctxs  []tagIndex
	nodes []node[E] // node k is nodes[k-1]
	free  int32     // first free node, or 0
	n     int       // entries
}

// tagIndex is one context's chains.
type tagIndex struct {
	ctx    uint64
	n      int            // entries
	dense  []chain        // chain of tag t at t+1 (AnyTag at 0)
	sparse map[int]*chain // the tags beyond dense; empty chains are deleted
}

// chain is one key's entries: its first and last node, 0 when none.
type chain struct{ head, tail int32 }

// node is an entry and the next node of its chain, or 0.
type node[E any] struct {
	e    E
	next int32
}

// denseSlots bounds a context's dense slice: at most this many chains per
// entry of the index (and minDense in any case), so that its memory stays
// proportional to what is queued.
const (
	denseSlots = 4
	minDense   = 64
)

// keepCtxs is how many contexts without entries an index keeps, rather
// than dropping them (and their dense slices) at once.
const keepCtxs = 4

// chainOf returns the chain of key (ctx, tag) and the number of its
// context's tagIndex, creating them when create is set; nil when there is
// none and create is not set. The chain stays where it is until the next
// add.
func (x *keyIndex[E]) chainOf(ctx uint64, tag int, create bool) (int, *chain) {
	ti := 0
	for ti < len(x.ctxs) && x.ctxs[ti].ctx != ctx {
		ti++
	}
	if ti == len(x.ctxs) {
		if !create {
			return -1, nil
		}
		x.ctxs = append(x.ctxs, tagIndex{ctx: ctx})
	}
	t := &x.ctxs[ti]
	slot := uint(tag) + 1 // AnyTag (-1) at 0
	if slot < uint(len(t.dense)) {
		return ti, &t.dense[slot]
	}
	if create && slot < uint(max(minDense, denseSlots*(x.n+1))) {
		t.dense = slices.Grow(t.dense, int(slot)+1-len(t.dense)) // len == cap: a new, zeroed array
		t.dense = t.dense[:cap(t.dense)]
		for tg, c := range t.sparse { // now in dense's range: move over
			if s := uint(tg) + 1; s < uint(len(t.dense)) {
				t.dense[s] = *c
				delete(t.sparse, tg)
			}
		}
		return ti, &t.dense[slot]
	}
	c := t.sparse[tag]
	if c == nil && create {
		if t.sparse == nil {
			t.sparse = make(map[int]*chain)
		}
		c = new(chain)
		t.sparse[tag] = c
	}
	return ti, c
}

// add files e as the newest entry of (ctx, tag).
func (x *keyIndex[E]) add(ctx uint64, tag int, e E) {
	k := x.free
	if k > 0 {
		x.free = x.nodes[k-1].next
		x.nodes[k-1] = node[E]{e: e}
	} else {
		x.nodes = append(x.nodes, node[E]{e: e})
		k = int32(len(x.nodes))
	}
	ti, c := x.chainOf(ctx, tag, true)
	if c.head == 0 {
		c.head = k
	} else {
		x.nodes[c.tail-1].next = k
	}
	c.tail = k
	x.ctxs[ti].n++
	x.n++
}

// oldest returns the oldest entry of (ctx, tag).
func (x *keyIndex[E]) oldest(ctx uint64, tag int) (E, bool) {
	if _, c := x.chainOf(ctx, tag, false); c != nil && c.head != 0 {
		return x.nodes[c.head-1].e, true
	}
	var zero E
	return zero, false
}

// remove takes e off the entries of (ctx, tag) — in constant time when e
// is the oldest, the entry every match takes — and reports whether it was
// there.
func (x *keyIndex[E]) remove(ctx uint64, tag int, e E) bool {
	ti, c := x.chainOf(ctx, tag, false)
	if c == nil {
		return false
	}
	prev, k := int32(0), c.head
	for k != 0 && x.nodes[k-1].e != e {
		prev, k = k, x.nodes[k-1].next
	}
	if k == 0 {
		return false
	}
	next := x.nodes[k-1].next
	if prev == 0 {
		c.head = next
	} else {
		x.nodes[prev-1].next = next
	}
	if c.tail == k {
		c.tail = prev
	}
	x.nodes[k-1] = node[E]{next: x.free}
	x.free = k
	x.n--
	t := &x.ctxs[ti]
	t.n--
	if c.head == 0 && uint(tag)+1 >= uint(len(t.dense)) {
		delete(t.sparse, tag)
	}
	if t.n == 0 && len(x.ctxs) > keepCtxs {
		last := len(x.ctxs) - 1
		x.ctxs[ti] = x.ctxs[last]
		x.ctxs[last] = tagIndex{}
		x.ctxs = x.ctxs[:last]
	}
	return true
}

// each calls f with every entry, each key's oldest first.
func (x *keyIndex[E]) each(f func(E)) {
	walk := func(c *chain) {
		for k := c.head; k != 0; k = x.nodes[k-1].next {
			f(x.nodes[k-1].e)
		}
	}
	for i := range x.ctxs {
		t := &x.ctxs[i]
		for j := range t.dense {
			walk(&t.dense[j])
		}
		for _, c := range t.sparse {
			walk(c)
		}
	}
}

// postedQueue holds receives in posting order: a fifo while linear, a
// keyIndex once indexed (see above). Receives that take any tag are filed
// under (ctx, AnyTag), and wild counts them, so that a message's search
// skips that bucket when there are none.
type postedQueue struct {
	list   fifo[*Request]
	idx    *keyIndex[*Request] // nil: linear (list holds the receives)
	wild   int                 // entries in idx filed under AnyTag
	walked int                 // entries first passed over while linear, since list was last empty
}

// len returns the number of receives.
func (q *postedQueue) len() int {
	if q.idx != nil {
		return q.idx.n
	}
	return q.list.len()
}

// push appends r as the newest receive.
func (q *postedQueue) push(r *Request) {
	if q.idx == nil {
		q.list.push(r)
		return
	}
	q.file(r)
}

// file adds r to the index.
func (q *postedQueue) file(r *Request) {
	q.idx.add(r.ctx, r.tag, r)
	if r.tag == AnyTag {
		q.wild++
	}
}

// first returns the oldest receive that accepts a message (ctx, tag), and
// where it is for take (its position while linear), or nil. Long walks
// switch q to indexed.
func (q *postedQueue) first(ctx uint64, tag int) (*Request, int) {
	if q.idx == nil {
		n, i := q.list.len(), 0
		for i < n && !q.list.at(i).matches(ctx, tag) {
			i++
		}
		if q.walked += i; !walkedOut(q.walked, n) {
			if i == n {
				return nil, -1
			}
			return q.list.at(i), i
		}
		q.index()
	}
	r, _ := q.idx.oldest(ctx, tag)
	if q.wild > 0 {
		if w, ok := q.idx.oldest(ctx, AnyTag); ok && (r == nil || w.seq < r.seq) {
			return w, -1
		}
	}
	return r, -1
}

// take removes r, which first returned with i (its position while q is
// linear).
func (q *postedQueue) take(r *Request, i int) {
	if q.idx == nil {
		q.removeAt(i)
		return
	}
	q.idx.remove(r.ctx, r.tag, r)
	q.unfiled(r)
}

// unfiled counts r out of the index, which it just left.
func (q *postedQueue) unfiled(r *Request) {
	if r.tag == AnyTag {
		q.wild--
	}
	if q.idx.n == 0 {
		q.idx = nil
	}
}

// delete removes r wherever it is in q and reports whether it was there
// (Cancel, the deadlock detector).
func (q *postedQueue) delete(r *Request) bool {
	if q.idx != nil {
		if !q.idx.remove(r.ctx, r.tag, r) {
			return false
		}
		q.unfiled(r)
		return true
	}
	for i, n := 0, q.list.len(); i < n; i++ {
		if q.list.at(i) == r {
			q.removeAt(i)
			return true
		}
	}
	return false
}

// removeAt removes the receive at position i of linear q's list and
// returns it; a queue that empties forgets its walks.
func (q *postedQueue) removeAt(i int) *Request {
	r := q.list.remove(i)
	if q.list.len() == 0 {
		q.walked = 0
	}
	return r
}

// drain removes every receive and appends them to rs, oldest first.
func (q *postedQueue) drain(rs []*Request) []*Request {
	for q.list.len() > 0 {
		rs = append(rs, q.removeAt(0))
	}
	if q.idx != nil {
		k := len(rs)
		q.idx.each(func(r *Request) { rs = append(rs, r) })
		slices.SortFunc(rs[k:], func(a, b *Request) int { return cmp.Compare(a.seq, b.seq) })
		q.idx, q.wild = nil, 0
	}
	return rs
}

// index switches q from linear to indexed.
func (q *postedQueue) index() {
	q.idx = &keyIndex[*Request]{nodes: make([]node[*Request], 0, 2*q.list.len())}
	q.walked = 0
	for q.list.len() > 0 {
		q.file(q.list.remove(0))
	}
}

// unexpQueue holds messages in arrival order: a list linked through
// msg.prev and msg.next in either mode, and a keyIndex besides once
// indexed (see above).
type unexpQueue struct {
	head, tail *msg
	n          int
	bytes      int64           // what its messages cost the eager buffer (msg.cost)
	idx        *keyIndex[*msg] // nil: linear
	walked     int             // messages first passed over for receives with a tag while linear, since q was last empty
}

// len returns the number of messages.
func (q *unexpQueue) len() int { return q.n }

// push appends m as the newest message.
func (q *unexpQueue) push(m *msg) {
	m.prev, m.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = m
	} else {
		q.head = m
	}
	q.tail = m
	q.n++
	q.bytes += m.cost()
	if q.idx != nil {
		q.idx.add(m.ctx, m.tag, m)
	}
}

// first returns the oldest message that r accepts, or nil. Long walks
// for receives with a tag switch q to indexed; a receive for AnyTag
// always walks (the index would not shorten its search).
func (q *unexpQueue) first(r *Request) *msg {
	if r.tag != AnyTag && q.idx != nil {
		m, _ := q.idx.oldest(r.ctx, r.tag)
		return m
	}
	i, m := 0, q.head
	for m != nil && !m.matchedBy(r) {
		m = m.next
		i++
	}
	if r.tag != AnyTag {
		if q.walked += i; walkedOut(q.walked, q.n) {
			q.index()
		}
	}
	return m
}

// remove takes m, which is in q, off it.
func (q *unexpQueue) remove(m *msg) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		q.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		q.tail = m.prev
	}
	m.prev, m.next = nil, nil
	q.n--
	q.bytes -= m.cost()
	if q.idx != nil {
		q.idx.remove(m.ctx, m.tag, m)
	}
	if q.n == 0 {
		q.idx, q.walked = nil, 0
	}
}

// index switches q to indexed.
func (q *unexpQueue) index() {
	q.idx = &keyIndex[*msg]{nodes: make([]node[*msg], 0, 2*q.n)}
	q.walked = 0
	for m := q.head; m != nil; m = m.next {
		q.idx.add(m.ctx, m.tag, m)
	}
}
