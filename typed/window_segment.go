package typed

import (
	"fmt"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
)

// Shared windows across the processes of one host (AllocSharedWindow
// over the shared-memory backend): one segment ([comm.Comm.AllocShared])
// that every process maps, which holds the window's accumulate locks
// (lockWord, a page of them) and then every rank's part, rank r's after
// rank r-1's. Each rank's table points into its process's mapping, so
// every operation goes straight to memory as between goroutine ranks:
// Put and Get copy, accumulates update 4- and 8-byte elements by
// compare-and-swap and others under the segment's lock words, which the
// hardware makes atomic across processes as between threads; no handler
// runs. The window's active-message endpoint remains for the
// passive-target lock managers (Lock, Unlock), and Fence and the
// generalized active-target calls synchronise over messages as for any
// window across processes. Each of those calls is a full memory barrier
// (w.edge, an atomic read-modify-write, and the message that passes the
// epoch on is released and acquired through the shared-memory backend's
// rings), so the stores of one epoch are visible to the loads of the
// next in every process.
//
// The race detector sees none of it: the segment lies outside the Go
// heap, where it does not look, and the ranks' own buffers are touched
// by their own process alone. Unlike a window across processes on
// handlers, no goroutine of the library accesses a rank's part on its
// behalf, so no edge within the process is needed to explain one.

// segHead is the segment's head: the lock words, a page.
const segHead = stripeCount * int(unsafe.Sizeof(lockWord{}))

// mapSegment allocates the window's segment for parts of sizes elements
// and points the rank's table into it.
func (w *Window[T]) mapSegment(sizes []int) error {
	sz := elemSize[T]()
	total := 0
	for r, n := range sizes {
		if n < 0 || (sz > 0 && n > (maxWindowBytes-total)/sz) {
			return fmt.Errorf("a part of %d elements of %d bytes on rank %d: %w", n, sz, r, comm.ErrArg)
		}
		total += n * sz
	}
	seg, err := w.wc.AllocShared(segHead + total)
	if err != nil {
		return err
	}
	mem := seg.Bytes()
	w.seg = seg
	w.sh.words = (*[stripeCount]lockWord)(unsafe.Pointer(unsafe.SliceData(mem)))
	off := segHead
	for r, n := range sizes {
		tg := &w.sh.targets[r]
		tg.base = make([]T, n) // an empty part (or of empty elements) owns no bytes
		if n > 0 && sz > 0 {
			tg.base = unsafe.Slice((*T)(unsafe.Pointer(&mem[off])), n)
		}
		tg.t, tg.want, tg.atomic = w.t, n, atomicElems(tg.base)
		off += n * sz
	}
	return nil
}

// unmapSegment gives the segment back, for a creation that failed after
// mapSegment.
func (w *Window[T]) unmapSegment() {
	if w.seg != nil {
		_ = w.seg.Free()
		w.seg = nil
	}
}

// onHandlers reports whether the window's operations run on the targets'
// handlers: across processes that share no memory.
func (w *Window[T]) onHandlers() bool { return w.rm != nil && w.seg == nil }
