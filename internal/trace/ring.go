package trace

import "sync/atomic"

// DefaultEvents is a ring's capacity in records when none is configured:
// 32768 records, 2 MiB a rank.
const DefaultEvents = 1 << 15

// ring is the most recent records written by one rank's goroutines: its
// own operations, and the receives of other ranks that its sends
// completed (Rank.Received), so that a ping-pong's two cores each write
// a ring of their own and no cache line of a ring moves between them.
// Any goroutine may add to it (a rendezvous send completes on its
// receiver's goroutine, a rank may call from several): a writer takes a
// slot by one atomic add and fills it; slots are read only once the run
// is over (its goroutines joined), so a reader sees every write. When
// more records come than it holds, the oldest are overwritten, and
// dropped counts them by the rank they belonged to.
type ring struct {
	next    atomic.Uint64 // slots taken so far
	mask    uint64
	buf     []Record
	rank    int32           // the world rank whose ring it is
	dropped []atomic.Uint64 // records overwritten, by owner's world rank
}

// newRing returns the ring of world rank rank of a world of n ranks, of
// at least size records (a power of two).
func newRing(size, rank, n int) *ring {
	c := 1
	for c < size {
		c <<= 1
	}
	return &ring{mask: uint64(c - 1), buf: make([]Record, c), rank: int32(rank), dropped: make([]atomic.Uint64, n)}
}

// add writes rec into the next slot.
func (g *ring) add(rec *Record) { *g.slot() = *rec }

// slot takes the next slot, for the caller to fill: a hook writes its
// record in place, without a copy.
func (g *ring) slot() *Record {
	i := g.next.Add(1) - 1
	p := &g.buf[i&g.mask]
	if i > g.mask {
		g.dropped[g.owner(p)].Add(1) // about to be overwritten
	}
	return p
}

// owner returns the world rank whose record rec, one of g's, is: a
// receive's receiver, any other record's g's rank.
func (g *ring) owner(rec *Record) int32 {
	if rec.Op == OpRecv {
		return rec.DstWorld
	}
	return g.rank
}

// records returns the ring's records, oldest first. Call it once the
// writers are done.
func (g *ring) records() []Record {
	n := g.next.Load()
	size := g.mask + 1
	if n <= size {
		return append([]Record(nil), g.buf[:n]...)
	}
	start := n & g.mask
	recs := make([]Record, 0, size)
	recs = append(recs, g.buf[start:]...)
	return append(recs, g.buf[:start]...)
}
