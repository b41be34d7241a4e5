// Package memcopy moves large payloads between goroutine ranks: Copy keeps
// a copy in cache for the reader that follows, and Shared lets two
// goroutines split one copy between their cores.
//
// Why not copy(): on amd64 the runtime's memmove switches to non-temporal
// stores for copies of 1 MiB and more (runtime/memmove_amd64.s,
// gobble_big_data_fwd), which write around the caches to memory. That pays
// for a copy nobody reads soon; a message is read by its receiver at once,
// and the next message of a ping-pong reuses the same buffers, so every
// copy then runs at memory speed instead of cache speed: copying 1 MiB there
// and back on one goroutine took 88 µs with copy() and 38 µs in 128 KiB
// pieces on the 2-core EPYC this was measured on (32 MiB L3), 4 MiB 340 µs
// against 140. Once the buffers of both ranks outgrow the cache,
// non-temporal stores win again (CachedLimit), as glibc's memcpy also
// decides by the size of the last-level cache. Elsewhere (arm64's memmove
// has no such switch) the pieces cost one call each and change nothing.
package memcopy

// Chunk is the piece a large copy is cut into: below the runtime's
// non-temporal threshold (1 MiB), large enough that the cost of a call
// (and, shared, an atomic add) per piece is noise, and small enough that
// two goroutines sharing a copy finish within microseconds of each other
// (about 4 µs of copying each).
const Chunk = 128 << 10

// CachedLimit is the most bytes that copies done in one go (a message, or
// a collective's blocks into one receive buffer) keep in cache. A copy
// leaves its source and its destination in cache, and both ranks of a
// ping-pong or an alltoall hold theirs: measured on the 2-core EPYC with
// 32 MiB of L3, cut copies beat copy() for messages up to 4 MiB (osu_latency
// 4 MiB 143 -> 95 µs, osu_alltoall 2 MiB blocks, 4 MiB a rank, 371 -> 259 µs)
// and lose from 8 MiB (osu_latency 8 MiB 265 -> 284 µs, 16 MiB 653 -> 761;
// osu_alltoall 4 MiB blocks 802 -> 978 µs).
const CachedLimit = 4 << 20

// ntMin is the size from which the runtime's memmove uses non-temporal
// stores on amd64 (runtime/memmove_amd64.s compares with 0x100000).
const ntMin = 1 << 20

// Copy is copy(dst, src) for a payload that is about to be read: it
// returns the number of bytes copied, min(len(dst), len(src)), and, for
// copies of up to CachedLimit bytes, copies in pieces of Chunk bytes so
// that the bytes stay in cache. dst and src must not overlap (a message
// never overlaps its receive buffer).
func Copy(dst, src []byte) int {
	return CopyPart(dst, src, min(len(dst), len(src)))
}

// CopyPart is Copy for one of several copies that write total bytes
// between them (a collective's blocks into one buffer): it keeps this one
// in cache only if all of them fit.
func CopyPart(dst, src []byte, total int) int {
	n := min(len(dst), len(src))
	if n < ntMin || total > CachedLimit { // copy() stays in cache below ntMin
		return copy(dst, src)
	}
	for off := 0; off < n; off += Chunk {
		end := min(off+Chunk, n)
		copy(dst[off:end], src[off:end])
	}
	return n
}
