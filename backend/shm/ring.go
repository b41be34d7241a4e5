package shm

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"
)

// The rings: one per ordered pair of processes of a host, in the
// receiver's segment, written by the sender's process and read by the
// receiver's. A ring is a single-producer single-consumer queue of
// records in cache-line cells (as MPICH nemesis's cells and Open MPI
// vader's fast boxes): two sequence numbers, each on a cache line of its
// own, count the bytes ever written (head, written by the producer only)
// and ever consumed (tail, written by the consumer only). A record is a
// header cell and its payload rounded up to whole cells (an eager payload
// of up to inlineMax bytes inside the header cell: one cell); it never wraps
// around the end of the ring: a pad record fills the rest of the ring
// instead.
//
// The producer publishes a record by storing, last, its stamp in its
// header cell: the record's position (head before it) plus one. The
// consumer waits for the stamp its tail expects in the cell at its tail,
// and frees a record by clearing the stamp word of every cell of it and
// then storing tail. So a message costs the consumer one cache line from
// the producer, the cell itself, not the head's line and then the cell
// (two misses one after the other, since the cell is read only once head
// has moved; the stamp is how MPICH's fast boxes and FastForward's
// queue avoid the first); head stays for whoever asks whether a ring is
// empty from outside the consumer. The atomic stores and loads order the
// plain accesses to the cells, across processes as within one (both are
// sequentially consistent on the hardware Go supports).
//
// Invariants:
//   - tail ≤ head ≤ tail + size; both only grow, and only in whole cells.
//   - The cells in [tail, head) hold complete records; the producer never
//     writes there, the consumer never reads outside it.
//   - The stamp word of a cell is zero unless the cell is in [tail, head)
//     (a published record's header holds its stamp; its payload cells
//     hold whatever the payload has there): the consumer clears a
//     record's cells before it moves tail past them, the producer writes
//     only the cells of the record it publishes, and a pad's cells beyond
//     its header are not written at all. So the cell at tail holds the
//     stamp tail+1 exactly once its record is published, never before.
//   - A record (header and payload) is at most size/2 bytes, so that it
//     fits once the ring drains whatever pad precedes it.

// ringVersion numbers the layout of the rings' records; it enters the
// handshake's MACs, so that processes of builds that lay records out
// differently never attach each other. Raise it with any change to it.
const ringVersion = 3

// cell is a ring's unit: a cache line. Records start on cells, so no two
// records share a line that both processes write.
const cell = 64

// ringHeader is the bytes before a ring's cells: head and tail on cache
// lines of their own, so that the producer's and the consumer's stores
// do not contend for one line (false sharing).
const ringHeader = 2 * cell

// Record kinds.
const (
	kindPad   uint8 = iota + 1 // filler to the ring's end
	kindEager                  // a message with its payload
	kindRTS                    // a rendezvous: the payload's address in the sender (payload: 8 bytes)
	kindFIN                    // the receiver read a rendezvous (id): the send completes
	kindCTS                    // the receiver cannot read the sender's memory: send rendezvous id through the ring
	kindData                   // a chunk of rendezvous id's payload at offset source
	kindBye                    // the sender's process finished: nothing more comes
	kindWrite                  // the receiver asks the sender of rendezvous id to write a part of it (split_linux.go)
	kindLast  = kindWrite
)

// header is a record's header cell. Ranks are world ranks; Source and
// Tag as in [device.Envelope].
type header struct {
	kind    uint8
	flags   uint8 // flagSync
	typ     uint8
	fp      uint32
	src     int64 // world rank of the sender
	dst     int64 // world rank of the receiver
	source  int64 // the sender's rank in the communicator (kindData: the chunk's offset)
	tag     int64
	context uint64
	len     uint64 // payload bytes after the header
	id      uint64 // the rendezvous (kindRTS, FIN, CTS, Data)
}

// Header flags.
const (
	flagSync   = 1 << iota // a synchronous send
	flagInline             // kindEager: the payload is in the header cell (inlineAt)
)

// A header cell: kind, flags, typ, a byte (an inline payload's length),
// fp in 32 bits, the stamp at stampAt (written by tryPut and cleared by
// next, not by put), src and dst in 32 bits each (world ranks), then
//   - a full header: source, tag, context, len and id in 64 bits each;
//   - an inline one (an eager message of up to inlineMax bytes, whose
//     source and tag fit 32 bits): source and tag in 32 bits, context,
//     then the payload from inlineAt. The sender writes one cache line
//     and the receiver reads one, half of what a header and a payload
//     cell take.
const (
	stampAt   = 8
	inlineAt  = 40
	inlineMax = cell - inlineAt
)

// fitsInline reports whether h, an eager message's header, and a payload
// of n bytes fit one cell.
func (h *header) fitsInline(n int) bool {
	return h.kind == kindEager && n <= inlineMax && uint64(h.source) <= math.MaxUint32 && uint64(h.tag) <= math.MaxUint32
}

// span is the bytes of h's record in the ring: its header and payload
// cells.
func (h *header) span() uint64 {
	if h.flags&flagInline != 0 {
		return cell
	}
	return uint64(cell + cells(int(h.len)))
}

// putCommon writes the fields every header cell has, but its stamp.
func (h *header) putCommon(c []byte, b3 uint8) {
	c[0], c[1], c[2], c[3] = h.kind, h.flags, h.typ, b3
	ne := binary.NativeEndian
	ne.PutUint32(c[4:], h.fp)
	ne.PutUint32(c[16:], uint32(h.src))
	ne.PutUint32(c[20:], uint32(h.dst))
}

// putInline writes h, an eager message's header (fitsInline), and its
// payload p (len(p) ≤ inlineMax) into the cell c.
func (h *header) putInline(c, p []byte) {
	_ = c[cell-1]
	h.putCommon(c, uint8(len(p)))
	ne := binary.NativeEndian
	ne.PutUint32(c[24:], uint32(h.source))
	ne.PutUint32(c[28:], uint32(h.tag))
	ne.PutUint64(c[32:], h.context)
	copy(c[inlineAt:], p)
}

// put writes h into the cell c.
func (h *header) put(c []byte) {
	_ = c[cell-1]
	h.putCommon(c, 0)
	ne := binary.NativeEndian
	ne.PutUint64(c[24:], uint64(h.source))
	ne.PutUint64(c[32:], uint64(h.tag))
	ne.PutUint64(c[40:], h.context)
	ne.PutUint64(c[48:], h.len)
	ne.PutUint64(c[56:], h.id)
}

// get reads h from the cell c.
func (h *header) get(c []byte) {
	_ = c[cell-1]
	ne := binary.NativeEndian
	*h = header{kind: c[0], flags: c[1], typ: c[2], fp: ne.Uint32(c[4:]),
		src: int64(ne.Uint32(c[16:])), dst: int64(ne.Uint32(c[20:]))}
	if c[1]&flagInline != 0 {
		h.len, h.source, h.tag, h.context = uint64(c[3]), int64(ne.Uint32(c[24:])), int64(ne.Uint32(c[28:])), ne.Uint64(c[32:])
		return
	}
	h.source, h.tag, h.context = int64(ne.Uint64(c[24:])), int64(ne.Uint64(c[32:])), ne.Uint64(c[40:])
	h.len, h.id = ne.Uint64(c[48:]), ne.Uint64(c[56:])
}

// stamp is the stamp word of the cell at pos.
func (r *ring) stamp(pos uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&r.data[pos+stampAt]))
}

// cells rounds n bytes up to whole cells.
func cells(n int) int { return (n + cell - 1) &^ (cell - 1) }

// ring is one side's view of a ring in mapped memory: the producer's in
// the sender's process, the consumer's in the receiver's. Neither side's
// methods are safe for concurrent use: the device serialises each side.
//
// Each side keeps its own sequence number in process memory, and the
// producer the last value it read of tail (as Lamport's queue with cached
// indices does): it reads tail only when its cached value says the ring
// is full, so that while messages flow the two cache lines are not
// pulled back and forth at every record. The consumer never reads head
// (it waits for stamps).
type ring struct {
	head, tail *atomic.Uint64
	data       []byte
	size       uint64
	mine       uint64 // the producer's head, or the consumer's tail
	theirs     uint64 // the producer's: tail, as last read
}

// newRing views mem, ringHeader bytes and a power of two of cells, as a
// ring.
func newRing(mem []byte) ring {
	return ring{
		head: (*atomic.Uint64)(unsafe.Pointer(&mem[0])),
		tail: (*atomic.Uint64)(unsafe.Pointer(&mem[cell])),
		data: mem[ringHeader:],
		size: uint64(len(mem) - ringHeader),
	}
}

// maxRecord is the largest record (header included) a ring of size bytes
// carries.
func maxRecord(size int) int { return size / 2 }

// tryPut writes a record of h with payload p (len(p) == h.len) and
// publishes it, or reports false when the ring has no room for it now.
// The caller is the ring's only producer; the record must fit
// maxRecord.
func (r *ring) tryPut(h *header, p []byte) bool {
	if h.fitsInline(len(p)) {
		h.flags |= flagInline
	}
	total := h.span()
	head := r.mine
	pos := head % r.size
	pad := uint64(0)
	if pos+total > r.size {
		pad = r.size - pos
	}
	if head+pad+total-r.theirs > r.size {
		r.theirs = r.tail.Load()
		if head+pad+total-r.theirs > r.size {
			return false
		}
	}
	if pad > 0 {
		(&header{kind: kindPad, len: pad - cell}).put(r.data[pos : pos+cell])
		r.stamp(pos).Store(head + 1)
		head, pos = head+pad, 0
	}
	if h.flags&flagInline != 0 {
		h.putInline(r.data[pos:pos+cell], p)
	} else {
		// The payload first, the header cell last, just before its
		// stamp: a consumer polling the header cell would otherwise take
		// its line back between the header's stores and the stamp's.
		copy(r.data[pos+cell:], p)
		h.put(r.data[pos : pos+cell])
	}
	r.stamp(pos).Store(head + 1)
	r.mine = head + total
	r.head.Store(r.mine)
	return true
}

// empty reports whether the ring holds no record; any goroutine may ask.
func (r *ring) empty() bool { return r.tail.Load() == r.head.Load() }

// peek reads the oldest record into h and returns its payload, in the
// ring's memory (valid until next), and whether there is one. Pads are
// consumed on the way. An error reports a record that cannot be (the
// producer wrote garbage): the ring is unusable from then on.
func (r *ring) peek(h *header) ([]byte, bool, error) {
	for {
		tail := r.mine
		pos := tail % r.size
		if r.stamp(pos).Load() != tail+1 {
			return nil, false, nil
		}
		h.get(r.data[pos : pos+cell])
		inline := h.flags&flagInline != 0
		if h.kind == 0 || h.kind > kindLast || !inline && h.len > r.size-pos-cell || inline && (h.kind != kindEager || h.len > inlineMax) {
			return nil, false, fmt.Errorf("shm: a malformed record (kind %d, %d bytes) at %d", h.kind, h.len, tail)
		}
		if h.kind == kindPad {
			binary.NativeEndian.PutUint64(r.data[pos+stampAt:], 0) // the pad's other cells were never written: clear already
			r.mine = tail + r.size - pos
			r.tail.Store(r.mine)
			continue
		}
		if inline {
			return r.data[pos+inlineAt : pos+inlineAt+h.len], true, nil
		}
		// The payload's lines come from the producer's cache: ask for
		// them now, so that they arrive while the engine matches the
		// message, before it copies them (1 KiB under mpiexec -n 2:
		// 0.361 -> 0.342 us a round trip).
		if h.len > 0 {
			prefetch(unsafe.Pointer(&r.data[pos+cell]), uintptr(min(h.len, prefetchMax)))
		}
		return r.data[pos+cell : pos+cell+h.len], true, nil
	}
}

// prefetchMax bounds the payload bytes peek asks for ahead: the
// hardware's own prefetcher follows a copy's stream beyond them.
const prefetchMax = 4 << 10

// next frees the record peek returned last, of header h: it clears the
// stamp word of each of its cells (a payload cell may hold anything
// there, and one of them may be a later record's header cell), by plain
// stores, which the store of tail publishes.
func (r *ring) next(h *header) {
	pos, n := r.mine%r.size, h.span()
	for c := pos; c < pos+n; c += cell {
		binary.NativeEndian.PutUint64(r.data[c+stampAt:], 0)
	}
	r.mine += n
	r.tail.Store(r.mine)
}
