package trace

import "sync/atomic"

// DefaultEvents is a ring's capacity in records when none is configured:
// 32768 records, 2 MiB a rank.
const DefaultEvents = 1 << 15

// ring is a rank's most recent records. Any goroutine may add to it (a
// send completes on its receiver's goroutine): a writer takes a slot by
// one atomic add and fills it; slots are read only once the run is over
// (its goroutines joined), so a reader sees every write. When more
// records come than it holds, the oldest are overwritten, and dropped
// says how many.
type ring struct {
	next atomic.Uint64 // slots taken so far
	mask uint64
	buf  []Record
}

// newRing returns a ring of at least n records (a power of two).
func newRing(n int) *ring {
	size := 1
	for size < n {
		size <<= 1
	}
	return &ring{mask: uint64(size - 1), buf: make([]Record, size)}
}

// add writes rec into the next slot.
func (g *ring) add(rec *Record) { *g.slot() = *rec }

// slot takes the next slot, for the caller to fill: a hook writes its
// record in place, without a copy.
func (g *ring) slot() *Record {
	i := g.next.Add(1) - 1
	return &g.buf[i&g.mask]
}

// records returns the ring's records, oldest first, and how many older
// ones were overwritten. Call it once the writers are done.
func (g *ring) records() (recs []Record, dropped uint64) {
	n := g.next.Load()
	size := g.mask + 1
	if n <= size {
		return append([]Record(nil), g.buf[:n]...), 0
	}
	start := n & g.mask
	recs = make([]Record, 0, size)
	recs = append(recs, g.buf[start:]...)
	recs = append(recs, g.buf[:start]...)
	return recs, n - size
}
