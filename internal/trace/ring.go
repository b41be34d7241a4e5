package trace

import (
	"runtime"
	"unsafe"
)

// DefaultEvents is the records a rank keeps when no other number is
// configured: 32768 records of 64 bytes, 2 MiB.
const DefaultEvents = 1 << 15

// ring is the most recent records written on one P (the runtime's
// processor: a goroutine that records pins itself to its P, pin.go), by
// whichever rank's goroutine ran there. A P runs one goroutine at a time
// and a pinned one is not preempted, so a ring has one writer at a time
// and takes its slots by plain stores (slot_*.go): no atomic, and its
// cache lines stay on the core that runs the P, where a ring per rank
// moved between the cores of a ping-pong with every message (a rank's
// goroutine runs on either core, and its send completes the peer's
// receive). Slots are read only once the run is over (its goroutines
// joined), so a reader sees every write. When more records come than it
// holds, the oldest are overwritten, and dropped counts them by the rank
// they belonged to.
type ring struct {
	next    uint64 // slots taken so far
	mask    uint64
	buf     []Record
	dropped []uint64        // records overwritten, by world rank (Record.Rank)
	_       [cacheLine]byte // the next P's ring is another core's
}

// newRing returns a ring of at least size records (a power of two) for a
// world of n ranks.
func newRing(size, n int) *ring {
	c := 1
	for c < size {
		c <<= 1
	}
	return &ring{mask: uint64(c - 1), buf: make([]Record, c), dropped: make([]uint64, n)}
}

// add writes rec into the next slot.
func (g *ring) add(rec *Record) { *g.slot() = *rec }

// records returns the ring's records, oldest first. Call it once the
// writers are done.
func (g *ring) records() []Record {
	n := g.next
	size := g.mask + 1
	if n <= size {
		return append([]Record(nil), g.buf[:n]...)
	}
	start := n & g.mask
	recs := make([]Record, 0, size)
	recs = append(recs, g.buf[start:]...)
	return append(recs, g.buf[:start]...)
}

// ringSize is the records of each P's ring of a set of local ranks
// keeping events records each: enough that ranks spread over the Ps keep
// theirs, and a rank that runs on one P keeps its events.
func ringSize(events, local int) int {
	procs := runtime.GOMAXPROCS(0)
	return events * ((local + procs - 1) / procs)
}

// A record fills one cache line: a slot never straddles two (a ring's
// buffer is a large allocation, page-aligned).
var (
	_ [cacheLine - unsafe.Sizeof(Record{})]struct{}
	_ [unsafe.Sizeof(Record{}) - cacheLine]struct{}
)
