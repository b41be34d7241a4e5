package buffer

import (
	"math/bits"
	"unsafe"
)

// A region is one contiguous piece of memory managed by Knuth's buddy system
// (TAOCP vol. 1, 2.5, Algorithms R and S), or, when dedicated, a single block
// for one request larger than a region.
//
// Invariants (for a buddy region, with its owner shard locked):
//   - The region is exactly covered by blocks. A block of level l is
//     minBlock<<l bytes long and starts at a multiple of its own size; its
//     buddy is the block at offset XOR size.
//   - state[i] describes minimum block i: stInterior unless a block starts
//     there; otherwise the block's kind (free, used, cached) and level.
//   - A free block is on exactly one list, head[level], linked through
//     link[]; avail has bit l set iff head[l] is not empty, and nfree[l]
//     counts the list.
//   - Two free buddies of the same level never both exist: freeing merges
//     (Algorithm S). Cached blocks (freed, held by the shard's cache) are
//     not free for merging; they count in cached.
//   - used and nused count the bytes and blocks handed out, cached the
//     bytes held in the shard cache; the region is empty iff its whole
//     memory is one free block (state[0] == stFree|top).
//
// The metadata lives beside the memory, never in it, so a user writing to a
// freed block can corrupt only data, never the allocator, and the race
// detector sees no allocator accesses to user memory.
type region struct {
	mem    []byte   // the whole region; never resliced
	base   uintptr  // address of mem[0]
	size   int      // len(mem)
	heap   []uint64 // the Go heap backing of mem (keeps it alive); nil if mapped
	mapped bool     // mem came from mmap and must be munmapped
	shift  uint     // log2 of the minimum block size

	owner     *shard // the shard whose lock guards this region; nil if dedicated
	dedicated bool   // one block, the whole region, for an oversized request

	// Guarded by owner.mu, or by Pool.mu for a dedicated region.
	released bool // the memory is gone; lookups that still find it must fail
	counted  bool // counted in Pool.empty as a retained empty region
	used     int  // bytes in blocks handed out
	nused    int  // blocks handed out
	cached   int  // bytes in blocks held by the owner's cache

	// Buddy metadata, guarded by owner.mu; nil for a dedicated region.
	top   int         // level of the whole region
	state []uint8     // one entry per minimum block
	link  []blockLink // free-list links, one per minimum block
	head  [maxLevels]int32
	nfree [maxLevels]int32
	avail uint32
}

// blockLink holds the free-list neighbours of a free block, as indexes of
// minimum blocks (nilBlock for none).
type blockLink struct{ next, prev int32 }

// Block states in region.state: the high three bits say what starts at a
// minimum block, the low five the level of the block that starts there.
const (
	stInterior uint8 = 0 << 5 // no block starts here
	stFree     uint8 = 1 << 5 // a free block, on head[level]
	stUsed     uint8 = 2 << 5 // a block handed out
	stCached   uint8 = 3 << 5 // a freed block held in the owner's cache
	stKindMask uint8 = 7 << 5
	stLevel    uint8 = 1<<5 - 1

	// maxLevels bounds the number of levels (region size / min block ≤ 2^30).
	maxLevels = 31
	nilBlock  = -1
)

// newBuddyRegion wraps mem (size bytes, a power of two) as a buddy region
// with levels 0..top; the whole region starts as one free block.
func newBuddyRegion(mem []byte, heap []uint64, mapped bool, top int) *region {
	shift := uint(bits.TrailingZeros(uint(len(mem)))) - uint(top)
	nmin := len(mem) >> shift
	r := &region{
		shift:  shift,
		mem:    mem,
		base:   uintptr(unsafe.Pointer(unsafe.SliceData(mem))),
		size:   len(mem),
		heap:   heap,
		mapped: mapped,
		top:    top,
		state:  make([]uint8, nmin),
		link:   make([]blockLink, nmin),
	}
	for l := range r.head {
		r.head[l] = nilBlock
	}
	r.push(top, 0)
	return r
}

// push puts the free block idx of level l on its list.
func (r *region) push(l int, idx int32) {
	r.state[idx] = stFree | uint8(l)
	h := r.head[l]
	r.link[idx] = blockLink{next: h, prev: nilBlock}
	if h != nilBlock {
		r.link[h].prev = idx
	}
	r.head[l] = idx
	r.avail |= 1 << l
	r.nfree[l]++
}

// remove takes the free block idx of level l off its list; its state is left
// for the caller to set.
func (r *region) remove(l int, idx int32) {
	lk := r.link[idx]
	if lk.prev != nilBlock {
		r.link[lk.prev].next = lk.next
	} else {
		r.head[l] = lk.next
	}
	if lk.next != nilBlock {
		r.link[lk.next].prev = lk.prev
	}
	if r.head[l] == nilBlock {
		r.avail &^= 1 << l
	}
	r.nfree[l]--
}

// fit returns the smallest level ≥ l with a free block, or maxLevels if
// none.
func (r *region) fit(l int) int {
	m := r.avail >> l
	if m == 0 {
		return maxLevels
	}
	return l + bits.TrailingZeros32(m)
}

// take hands out a block of level l (Algorithm R): the first free block of
// the smallest level ≥ l that has one, split down to l, the upper halves
// going onto the free lists. It reports false when the region has no free
// block large enough.
func (r *region) take(l int) (int32, bool) {
	m := r.avail >> l
	if m == 0 {
		return 0, false
	}
	k := l + bits.TrailingZeros32(m)
	idx := r.head[k]
	r.remove(k, idx)
	for k > l {
		k--
		r.push(k, idx+1<<k)
	}
	r.state[idx] = stUsed | uint8(l)
	r.used += 1 << (r.shift + uint(l))
	r.nused++
	return idx, true
}

// release frees block idx of level l, whose state the caller has already
// checked, merging it with its buddy for as long as the buddy is free
// (Algorithm S). It reports whether the region is now empty.
func (r *region) release(idx int32, l int) bool {
	for l < r.top {
		buddy := idx ^ 1<<l
		if r.state[buddy] != stFree|uint8(l) {
			break
		}
		r.remove(l, buddy)
		hi := idx | 1<<l
		r.state[hi] = stInterior
		idx &^= 1 << l
		l++
	}
	r.push(l, idx)
	return l == r.top
}

// empty reports whether the whole region is one free block.
func (r *region) empty() bool { return r.state[0] == stFree|uint8(r.top) }

// block returns the slice for block idx of level l holding n bytes: len n,
// cap the block size.
func (r *region) block(idx int32, l, n int) []byte {
	off := int(idx) << r.shift
	return r.mem[off : off+n : off+1<<(r.shift+uint(l))]
}
