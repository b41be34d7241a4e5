package typed

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
)

// Window is a window of one-sided communication (MPI 4.1 chapter 12): each
// rank of a communicator exposes a slice of T, its part of the window, and
// any rank reads, writes and updates the other ranks' parts with
// [Window.Put], [Window.Get] and the accumulates ([Window.Accumulate],
// [Window.GetAccumulate], [Window.FetchAndOp], [Window.CompareAndSwap])
// without their owners taking part. Displacements and counts are in elements of T.
//
// # Epochs
//
// As in MPI, an origin accesses a target only within an access epoch, and
// an epoch's end is when its operations are complete and visible:
//
//   - [Window.Fence], collective: ends the previous fence epoch and opens
//     the next, to every target (active target);
//   - [Window.Start] ... [Window.Complete] at the origin, matching
//     [Window.Post] ... [Window.Wait] at the targets (generalized active
//     target, over [comm.Group]s);
//   - [Window.Lock] ... [Window.Unlock] of one target, shared or
//     exclusive, and [Window.LockAll] ... [Window.UnlockAll] (passive
//     target: the target makes no call), with [Window.Flush] and its
//     relatives completing operations inside the epoch.
//
// A call outside these rules fails with an error wrapping
// [comm.ErrEpoch]: an operation to a target with no epoch open to it, an
// Unlock without a Lock, a second Lock of one target, a Fence while a lock
// or a Start is open, a Free with an epoch open. An access beyond the end
// of the target's part fails with [comm.ErrArg] and a target outside
// [0, Size) with [comm.ErrRank]; neither touches memory.
//
// The end of an epoch is a happens-before edge, in the sense of the Go
// memory model, from the origin's operations to the target's later reads
// and writes of its part (and from the target's writes before it opened
// the epoch to the origin's operations): a correct program is clean under
// the race detector. Reading or writing one's own part while another rank
// may access it in the same epoch is a race, as in MPI.
//
// # Atomicity
//
// Accumulates to one element are atomic with respect to each other, as
// MPI requires, whichever ranks issue them and whichever op they use
// ([Replace] and [NoOp] included): with ranks in one process (or a shared
// window's processes), an element of 4 or 8 bytes is updated with a
// compare-and-swap of its memory (package sync/atomic), any other under a
// lock of the window's (a word of the shared segment, across processes). Put and
// Get are plain copies: a Put or a Get that overlaps a concurrent Put or
// accumulate of the same element in one epoch is erroneous, as in MPI.
// [Window.CompareAndSwap] compares elements as memory, bit for bit.
//
// # Backends
//
// When all ranks of the communicator run in this process (goroutine
// ranks), the origin reads and writes the target's memory itself: an
// operation costs what copy() or one atomic instruction costs, and passive
// target needs nothing of the target. Window creation is cheap and the
// number of windows unlimited: the ranks exchange references to their
// parts, and a window owns no goroutine.
//
// When they do not (processes over TCP or RDMA), the target side of each
// operation is an active-message handler of the window's own
// [am.Endpoint], which runs on the target's dispatcher goroutine, so
// passive target needs no call of the target's there either. Put and the
// accumulates return once their request is sent (the origin's data is
// copied into it); the end of the epoch, or a Flush, waits for the
// target's acknowledgements.
//
// Over a device with one-sided operations ([comm.Comm.OneSided]: the RDMA
// backend) no handler runs for the data either: each rank's part is
// registered with the device when the window is made (a part of Go memory
// is pinned for the window's life), Put and Get are the fabric's RMA
// writes and reads, and the accumulates are its atomics where the
// provider does every accumulate typed defines on T atomically (integers
// and floats over tcp;ofi_rxm; see backend/rdma for the providers whose
// accumulates stay on the handlers). The choice is made once per window
// and element type, so that accumulates to one element are always atomic
// with respect to each other. A Put returns once its data is copied; a
// Flush, Unlock, Complete or Fence waits until it is in the target's
// memory; an accumulate on this path returns once applied (which keeps
// MPI's ordering of accumulates from one origin). Lock, Unlock, Fence and
// PSCW remain messages to the handlers. MPGO_WINDOW_PATH=am in every
// process's environment keeps windows on the handlers. The ops of accumulates then travel by name:
// typed's predefined operators ([Sum], [Prod], [Max], [Min], [BAnd] …
// [LXor], [Replace], [NoOp]) on numbers, or Replace and NoOp on any
// element type; a user's own Op fails with [comm.ErrNotSupported], as MPI
// allows only predefined operations in accumulates.
//
// A window of [AllocSharedWindow] over processes of one host that the
// shared-memory backend joins is one segment every process maps: its
// operations go straight to memory as between goroutine ranks (any Op
// included), and [Window.SharedQuery] works in every process. Across
// hosts, or over TCP, AllocSharedWindow fails with ErrNotSupported.
//
// A Window may be used by several goroutines of its rank at once, except
// for its collective calls ([Window.Fence], [Window.Free]), which, like a
// communicator's, one goroutine of each rank makes, in the same order on
// every rank. It must not be copied.
type Window[T any] struct {
	wc   *comm.Comm    // private duplicate of the window's communicator
	rank int           // the caller's rank in wc
	n    int           // ranks in wc
	t    comm.Type     // element type code
	sh   *winShared[T] // the ranks' common table (across processes: this rank's entry only)
	rm   *remote[T]    // nil when all ranks are in this process
	mem  []byte        // memory this rank mapped for the window: unmapped by Free
	seg  *comm.Segment // the memory processes share (AllocSharedWindow across processes)
	ep   epochs        // this rank's epochs as an origin and a target

	spare atomic.Pointer[[2]T]      // accumulates' scratch space (see scratch)
	memo  atomic.Pointer[opMemo[T]] // the last accumulate op and its stand-in (see fastOp)
}

// winShared is what the ranks of a window share, in this process.
//
// Invariants:
//   - Rank 0 makes it and hands it to the others by reference when the
//     window is created; each rank writes only targets[rank], and only
//     before the creation's barrier. After that barrier targets is read
//     only (the memory its bases name is the window's, accessed under the
//     epoch rules).
//   - An accumulate to an element that is not updated by compare-and-swap
//     (see winTarget.atomic) holds the lock of its element's block
//     (stripeOf) while it reads and writes it: a stripe, or, where
//     processes share the window's memory, a word of it (words).
type winShared[T any] struct {
	self    uintptr // this object's address: tells the object from a copy of its bytes
	targets []winTarget[T]
	stripes [stripeCount]stripe
	words   *[stripeCount]lockWord // in the segment; nil unless processes share it
}

// winTarget is one rank's part of a window.
type winTarget[T any] struct {
	base   []T
	t      comm.Type   // the element type the rank made the window with
	want   int         // AllocSharedWindow: the elements the rank asked for
	atomic bool        // elements of 4 or 8 bytes, aligned: accumulated by compare-and-swap
	lock   lockManager // passive-target locks on this part
}

// Window tags on the window's private communicator.
const (
	tagWinSetup    = 1 // rank 0 hands the common table over
	tagWinPost     = 2 // Post to Start
	tagWinComplete = 3 // Complete to Wait
	tagWinGrant    = 4 // tagWinGrant+target: a lock on target granted
)

// NewWindow makes a window of base, which the calling rank exposes to the
// others (MPI_Win_create). Every rank of c calls it, in the same order as
// c's other collectives, each with a slice of its own (of any length, nil
// included) and with one element type T (a type [Of] takes; another fails
// with [comm.ErrType] on every rank). base must not be resized or given to
// another window while the window lives; [Window.Free] ends it.
func NewWindow[T any](c *comm.Comm, base []T) (*Window[T], error) {
	return newWindow(c, base, len(base), nil, "NewWindow", false)
}

// AllocWindow makes a window of n zeroed elements that the library
// allocates for the calling rank (MPI_Win_allocate), and returns them: the
// rank's part, which it reads and writes under the epoch rules. The memory
// is mapped outside the Go heap (never moved, never scanned by the garbage
// collector, registrable with a network card), taken lazily from the
// operating system page by page, and given back by [Window.Free]: a window
// of a gigabyte costs little until it is touched. The slice must not be
// used after Free. n may differ between ranks; a negative n fails with
// [comm.ErrArg].
func AllocWindow[T any](c *comm.Comm, n int) (*Window[T], []T, error) {
	if n < 0 {
		return nil, nil, fmt.Errorf("typed: AllocWindow of %d elements: %w", n, comm.ErrArg)
	}
	if _, err := comm.TypeOf(reflect.TypeFor[T]()); err != nil {
		return nil, nil, fmt.Errorf("typed: AllocWindow: %w", err)
	}
	mem, base, err := mapElems[T](n)
	if err != nil {
		return nil, nil, err
	}
	w, err := newWindow(c, base, n, mem, "AllocWindow", false)
	if err != nil {
		return nil, nil, err
	}
	return w, base, nil
}

// newWindow is the collective creation of a window of base; want is what
// the rank asks for of a shared window (shared); mem, when not nil, is
// memory to unmap when the window is freed (or creation fails).
func newWindow[T any](c *comm.Comm, base []T, want int, mem []byte, op string, shared bool) (w *Window[T], err error) {
	defer func() {
		if err != nil && mem != nil {
			_ = unmapMem(mem)
		}
	}()
	if c == nil {
		return nil, fmt.Errorf("typed: %s on a nil communicator: %w", op, comm.ErrArg)
	}
	t, err := comm.TypeOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, fmt.Errorf("typed: %s: %w", op, err)
	}
	wc, err := c.Dup()
	if err != nil {
		return nil, fmt.Errorf("typed: %s: %w", op, err)
	}
	w = &Window[T]{wc: wc, rank: wc.Rank(), n: wc.Size(), t: t, mem: mem}
	if err := w.share(base, want, op, shared); err != nil {
		_ = wc.Free()
		return nil, err
	}
	return w, nil
}

// share exchanges the ranks' parts: rank 0 makes the common table and
// hands it to the others, each fills in its own entry, and a barrier
// publishes them all. Ranks not all in this process set up the message
// path instead (shareRemote).
func (w *Window[T]) share(base []T, want int, op string, shared bool) error {
	for r := range w.n {
		if !w.wc.IsLocal(r) {
			// The same verdict on every rank: a job spanning processes
			// has, on each rank, a rank in another process.
			return w.shareRemote(base, want, op, shared)
		}
	}
	sh, err := w.exchange()
	if err != nil {
		return fmt.Errorf("typed: %s: %w", op, err)
	}
	w.sh = sh
	me := &sh.targets[w.rank]
	me.base, me.t, me.want = base, w.t, want
	me.atomic = atomicElems(base)
	if err := w.wc.Barrier(); err != nil {
		return fmt.Errorf("typed: %s: %w", op, err)
	}
	for r := range sh.targets {
		if sh.targets[r].t != w.t {
			return fmt.Errorf("typed: %s of %s on rank %d, of another element type on rank %d: %w",
				op, reflect.TypeFor[T](), w.rank, r, comm.ErrType)
		}
	}
	return nil
}

// exchange hands rank 0's new table to every rank, by reference.
func (w *Window[T]) exchange() (*winShared[T], error) {
	if w.rank == 0 {
		sh := &winShared[T]{targets: make([]winTarget[T], w.n)}
		sh.self = uintptr(unsafe.Pointer(sh))
		ref := unsafe.Slice((*byte)(unsafe.Pointer(sh)), unsafe.Sizeof(*sh))
		for r := 1; r < w.n; r++ {
			if err := w.wc.SendOwned(ref, comm.Byte, r, tagWinSetup); err != nil {
				return nil, err
			}
		}
		return sh, nil
	}
	b, _, err := w.wc.RecvOwned(comm.Byte, 0, tagWinSetup)
	if err != nil {
		return nil, err
	}
	// A rank of another element type than rank 0's reads the table as its
	// own type: winShared's layout does not depend on T (T appears only in
	// slice headers), and the type check after the barrier fails them all.
	var sh *winShared[T]
	if uintptr(len(b)) == unsafe.Sizeof(winShared[T]{}) {
		sh = (*winShared[T])(unsafe.Pointer(unsafe.SliceData(b)))
	}
	if sh == nil || sh.self != uintptr(unsafe.Pointer(sh)) || len(sh.targets) != w.n {
		return nil, fmt.Errorf("window table from rank 0 came as a copy: %w", comm.ErrNotSupported)
	}
	return sh, nil
}

// atomicElems reports whether base's elements can be updated by
// compare-and-swap: 4 or 8 bytes each, aligned to their size.
func atomicElems[T any](base []T) bool {
	sz := unsafe.Sizeof(*new(T))
	if sz != 4 && sz != 8 {
		return false
	}
	if len(base) == 0 {
		return true
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(base)))%sz == 0
}

// Group returns the group of the window's ranks (MPI_Win_get_group): the
// group of the communicator it was made on.
func (w *Window[T]) Group() comm.Group { return w.wc.Group() }

// Rank returns the calling rank's number in the window.
func (w *Window[T]) Rank() int { return w.rank }

// Size returns the number of ranks of the window.
func (w *Window[T]) Size() int { return w.n }

// Free ends the window (MPI_Win_free): collective, it returns on each rank
// once every rank called it, so no rank accesses a part afterwards; then
// memory that [AllocWindow] or [AllocSharedWindow] mapped is given back.
// A rank with an epoch still open (a Lock, a Start, a Post) gets an error
// wrapping [comm.ErrEpoch] and the window stays usable; later calls on a
// freed window fail with [comm.ErrClosed].
func (w *Window[T]) Free() error {
	w.edge()
	if err := w.ep.closing(); err != nil {
		return fmt.Errorf("typed: Window.Free: %w", err)
	}
	if w.rm != nil {
		if err := w.rm.flush(-1); err != nil {
			w.ep.reopen()
			return fmt.Errorf("typed: Window.Free: %w", err)
		}
	}
	if err := w.wc.Barrier(); err != nil {
		w.ep.reopen()
		return fmt.Errorf("typed: Window.Free: %w", err)
	}
	var err error
	if w.rm != nil {
		err = w.rm.ep.Close()
		if fp := w.rm.fab; fp != nil {
			if e := fp.close(); err == nil {
				err = e
			}
		}
	}
	if w.seg != nil {
		if e := w.seg.Free(); err == nil {
			err = e
		}
	}
	if w.mem != nil {
		if e := unmapMem(w.mem); err == nil {
			err = e
		}
		w.mem = nil
	}
	if e := w.wc.Free(); err == nil {
		err = e
	}
	return err
}
