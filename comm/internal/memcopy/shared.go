package memcopy

import (
	"runtime"
	"sync/atomic"
)

// Shared is one copy that several goroutines may work on at once: each
// claims the next piece of Chunk bytes from an atomic counter, so whoever
// is free copies the next piece, and the copy is complete when every
// piece is done. The pieces stay in cache, as Copy's do: share copies of
// up to CachedLimit (above it one goroutine's non-temporal copy() was as
// fast as two goroutines' either way, or faster). The goroutine that made
// it calls Run, which copies alongside the helpers and returns only once
// every piece is written; helpers call Help, which may run at any time,
// even after Run returned (a helper that starts late finds nothing left
// and touches neither slice).
//
// Invariants:
//   - next counts pieces claimed (it may run past the number of pieces:
//     a claim beyond the last one is no claim); each piece is claimed
//     exactly once, by the goroutine whose Add returned its number.
//   - done counts pieces written; a goroutine adds to it only after its
//     copy of the piece, so an atomic load of done that reads all pieces
//     happens after every write to dst and every read of src (the Go
//     memory model orders atomics as sequentially consistent operations).
//   - Run returns only after such a load: once it returns, no goroutine
//     reads src or writes dst again, and the owner may complete the
//     message (the sender may reuse src, the receiver read dst).
type Shared struct {
	dst, src []byte
	pieces   int64
	next     atomic.Int64
	done     atomic.Int64
}

// NewShared prepares a shared copy of src into dst (as copy(): min of the
// two lengths). dst and src must not overlap, and must not be touched by
// anyone else until Run returns.
func NewShared(dst, src []byte) *Shared {
	n := min(len(dst), len(src))
	return &Shared{dst: dst[:n], src: src[:n], pieces: int64((n + Chunk - 1) / Chunk)}
}

// Help copies pieces until none is left to claim. Safe to call from any
// number of goroutines, at any time.
func (s *Shared) Help() {
	for {
		i := s.next.Add(1) - 1
		if i >= s.pieces {
			return
		}
		off := int(i) * Chunk
		end := min(off+Chunk, len(s.dst))
		copy(s.dst[off:end], s.src[off:end])
		s.done.Add(1)
	}
}

// Run copies alongside any helpers and returns, with the number of bytes
// copied, once every piece is written. Call it once, from the goroutine
// that made s.
func (s *Shared) Run() int {
	s.Help()
	// Every piece is claimed; the ones still being copied belong to
	// helpers that are running (or were preempted: yielding lets them
	// finish on this P). A piece takes microseconds.
	for s.done.Load() < s.pieces {
		runtime.Gosched()
	}
	return len(s.dst)
}
