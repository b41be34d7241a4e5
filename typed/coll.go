package typed

import (
	"sync/atomic"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
)

// The collectives over slices of T: each forwards to the byte-level
// collective of package comm (see its documentation for the contract, the
// algorithms and how mismatched calls fail) with T's element type, and for
// reductions with op applied to views of the bytes as []T (no copy).
// Passing the same slice as send and recv works in place, as MPI_IN_PLACE
// does (for Gather and Allgather the caller's block must be in place
// already).

// Barrier blocks until every member has called it.
func (c *Comm[T]) Barrier() error { return c.c.Barrier() }

// Bcast broadcasts root's buf to every member's buf (all of the same
// length).
func (c *Comm[T]) Bcast(buf []T, root int) error {
	return c.c.Bcast(bytesOf(buf), c.t, root)
}

// Reduce combines the members' send with op, in rank order, into root's
// recv (of the same length; ignored elsewhere).
func (c *Comm[T]) Reduce(send, recv []T, op Op[T], root int) error {
	return c.c.Reduce(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op), root)
}

// Allreduce combines the members' send with op, in rank order, into every
// member's recv (of the same length).
func (c *Comm[T]) Allreduce(send, recv []T, op Op[T]) error {
	return c.c.Allreduce(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op))
}

// Gather collects every member's send at root: rank i's lands at
// recv[i*len(send):].
func (c *Comm[T]) Gather(send, recv []T, root int) error {
	return c.c.Gather(bytesOf(send), bytesOf(recv), c.t, root)
}

// Gatherv is Gather with counts[i] elements from rank i placed at
// displs[i] (nil: packed); counts and displs matter at the root only.
func (c *Comm[T]) Gatherv(send, recv []T, counts, displs []int, root int) error {
	return c.c.Gatherv(bytesOf(send), bytesOf(recv), counts, displs, c.t, root)
}

// Scatter hands block i of root's send (Size blocks of len(recv)) to rank
// i's recv.
func (c *Comm[T]) Scatter(send, recv []T, root int) error {
	return c.c.Scatter(bytesOf(send), bytesOf(recv), c.t, root)
}

// Scatterv is Scatter with counts[i] elements at displs[i] (nil: packed)
// of root's send for rank i.
func (c *Comm[T]) Scatterv(send []T, counts, displs []int, recv []T, root int) error {
	return c.c.Scatterv(bytesOf(send), counts, displs, bytesOf(recv), c.t, root)
}

// Allgather collects every member's send into every member's recv, rank
// i's at recv[i*len(send):].
func (c *Comm[T]) Allgather(send, recv []T) error {
	return c.c.Allgather(bytesOf(send), bytesOf(recv), c.t)
}

// Allgatherv is Allgather with counts[i] elements from rank i placed at
// displs[i] (nil: packed).
func (c *Comm[T]) Allgatherv(send, recv []T, counts, displs []int) error {
	return c.c.Allgatherv(bytesOf(send), bytesOf(recv), counts, displs, c.t)
}

// Alltoall sends block j of send (Size blocks) to rank j, which stores it
// at block i of recv for sender i.
func (c *Comm[T]) Alltoall(send, recv []T) error {
	return c.c.Alltoall(bytesOf(send), bytesOf(recv), c.t)
}

// Alltoallv is Alltoall with counts and displacements per rank on both
// sides (displacements nil: packed).
func (c *Comm[T]) Alltoallv(send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) error {
	return c.c.Alltoallv(bytesOf(send), scounts, sdispls, bytesOf(recv), rcounts, rdispls, c.t)
}

// ReduceScatterBlock combines the members' send (Size blocks of
// len(recv)) with op and leaves block i of the result in rank i's recv.
func (c *Comm[T]) ReduceScatterBlock(send, recv []T, op Op[T]) error {
	return c.c.ReduceScatterBlock(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op))
}

// ReduceScatter combines the members' send with op and scatters the
// result: rank i gets counts[i] elements, those after the first
// counts[0]+…+counts[i-1], in recv (MPI_Reduce_scatter). send holds the
// sum of counts elements on every member, and counts is the same
// everywhere; see [comm.Comm.ReduceScatter] for the errors.
func (c *Comm[T]) ReduceScatter(send, recv []T, counts []int, op Op[T]) error {
	return c.c.ReduceScatter(bytesOf(send), bytesOf(recv), counts, c.t, c.byteOp(op))
}

// Scan leaves in rank i's recv the reduction with op of ranks 0..i's send.
func (c *Comm[T]) Scan(send, recv []T, op Op[T]) error {
	return c.c.Scan(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op))
}

// Exscan leaves in rank i's recv the reduction of ranks 0..i-1's send
// (rank 0's recv is not written).
func (c *Comm[T]) Exscan(send, recv []T, op Op[T]) error {
	return c.c.Exscan(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op))
}

// Ibcast starts a Bcast; buf belongs to it until the request completes.
func (c *Comm[T]) Ibcast(buf []T, root int) (*comm.Request, error) {
	return c.c.Ibcast(bytesOf(buf), c.t, root)
}

// Iallreduce starts an Allreduce; send and recv belong to it until the
// request completes.
func (c *Comm[T]) Iallreduce(send, recv []T, op Op[T]) (*comm.Request, error) {
	return c.c.Iallreduce(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op))
}

// Ibarrier starts a Barrier; the request completes once every member
// has called Ibarrier.
func (c *Comm[T]) Ibarrier() (*comm.Request, error) { return c.c.Ibarrier() }

// Igather starts a Gather; the buffers belong to it until the request
// completes, as for every non-blocking collective.
func (c *Comm[T]) Igather(send, recv []T, root int) (*comm.Request, error) {
	return c.c.Igather(bytesOf(send), bytesOf(recv), c.t, root)
}

// Igatherv starts a Gatherv (counts and displs in elements).
func (c *Comm[T]) Igatherv(send, recv []T, counts, displs []int, root int) (*comm.Request, error) {
	return c.c.Igatherv(bytesOf(send), bytesOf(recv), counts, displs, c.t, root)
}

// Iscatter starts a Scatter.
func (c *Comm[T]) Iscatter(send, recv []T, root int) (*comm.Request, error) {
	return c.c.Iscatter(bytesOf(send), bytesOf(recv), c.t, root)
}

// Iscatterv starts a Scatterv (counts and displs in elements).
func (c *Comm[T]) Iscatterv(send []T, counts, displs []int, recv []T, root int) (*comm.Request, error) {
	return c.c.Iscatterv(bytesOf(send), counts, displs, bytesOf(recv), c.t, root)
}

// Iallgather starts an Allgather.
func (c *Comm[T]) Iallgather(send, recv []T) (*comm.Request, error) {
	return c.c.Iallgather(bytesOf(send), bytesOf(recv), c.t)
}

// Iallgatherv starts an Allgatherv (counts and displs in elements).
func (c *Comm[T]) Iallgatherv(send, recv []T, counts, displs []int) (*comm.Request, error) {
	return c.c.Iallgatherv(bytesOf(send), bytesOf(recv), counts, displs, c.t)
}

// Ialltoall starts an Alltoall.
func (c *Comm[T]) Ialltoall(send, recv []T) (*comm.Request, error) {
	return c.c.Ialltoall(bytesOf(send), bytesOf(recv), c.t)
}

// Ialltoallv starts an Alltoallv (counts and displacements in elements).
func (c *Comm[T]) Ialltoallv(send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*comm.Request, error) {
	return c.c.Ialltoallv(bytesOf(send), scounts, sdispls, bytesOf(recv), rcounts, rdispls, c.t)
}

// Ireduce starts a Reduce.
func (c *Comm[T]) Ireduce(send, recv []T, op Op[T], root int) (*comm.Request, error) {
	return c.c.Ireduce(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op), root)
}

// IreduceScatterBlock starts a ReduceScatterBlock.
func (c *Comm[T]) IreduceScatterBlock(send, recv []T, op Op[T]) (*comm.Request, error) {
	return c.c.IreduceScatterBlock(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op))
}

// Iscan starts a Scan.
func (c *Comm[T]) Iscan(send, recv []T, op Op[T]) (*comm.Request, error) {
	return c.c.Iscan(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op))
}

// Iexscan starts an Exscan.
func (c *Comm[T]) Iexscan(send, recv []T, op Op[T]) (*comm.Request, error) {
	return c.c.Iexscan(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op))
}

// BarrierInit plans a persistent Barrier, started by Request.Start or
// comm.StartAll (see comm's persistent collectives).
func (c *Comm[T]) BarrierInit() (*comm.Request, error) { return c.c.BarrierInit() }

// BcastInit plans a persistent Bcast of buf.
func (c *Comm[T]) BcastInit(buf []T, root int) (*comm.Request, error) {
	return c.c.BcastInit(bytesOf(buf), c.t, root)
}

// ReduceInit plans a persistent Reduce.
func (c *Comm[T]) ReduceInit(send, recv []T, op Op[T], root int) (*comm.Request, error) {
	return c.c.ReduceInit(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op), root)
}

// AllreduceInit plans a persistent Allreduce.
func (c *Comm[T]) AllreduceInit(send, recv []T, op Op[T]) (*comm.Request, error) {
	return c.c.AllreduceInit(bytesOf(send), bytesOf(recv), c.t, c.byteOp(op))
}

// AllgatherInit plans a persistent Allgather.
func (c *Comm[T]) AllgatherInit(send, recv []T) (*comm.Request, error) {
	return c.c.AllgatherInit(bytesOf(send), bytesOf(recv), c.t)
}

// AlltoallInit plans a persistent Alltoall.
func (c *Comm[T]) AlltoallInit(send, recv []T) (*comm.Request, error) {
	return c.c.AlltoallInit(bytesOf(send), bytesOf(recv), c.t)
}

// byteOp is the package's byteOp of op, made once for the calls with the
// same op of every Comm of the process (opCache).
func (c *Comm[T]) byteOp(op Op[T]) comm.Op {
	if op == nil {
		return nil
	}
	w := funcWord(op)
	slot := &opCache[opSlot(w)]
	if e := slot.Load(); e != nil && e.key == w {
		return e.b
	}
	e := &cachedOp{key: w, b: byteOp(op)}
	slot.Store(e)
	return e.b
}

// opCache holds the comm.Ops last made of Ops, by a hash of the Op's
// word: a direct-mapped cache that the Comms of the process share, so
// that calls with the same few Ops (the usual case: typed.Sum[float64],
// a Max) allocate no closure, and the ranks of a large job read one hot
// entry instead of a cache line of their own each (on 100,000 goroutine
// ranks, a cold line per call is about 3 ms of an Allreduce). Entries
// are replaced whole, atomically. Func values do not compare, but the
// word that holds one points at its code and captured variables: the
// same word is the same func value, so of the same type, and the entry's
// key keeps it alive, so that no other func value takes its address.
var opCache [64]atomic.Pointer[cachedOp]

// cachedOp is the comm.Op made of the Op whose word is key.
type cachedOp struct {
	key unsafe.Pointer
	b   comm.Op
}

// opSlot returns the entry of opCache for the func value whose word is w.
func opSlot(w unsafe.Pointer) int {
	u := uintptr(w)
	return int((u>>3 ^ u>>9 ^ u>>15) % uintptr(len(opCache)))
}

// funcWord is the word that holds a func value.
func funcWord[F any](f F) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&f)) }

// byteOp runs op on views of comm's byte slices as []E. comm hands an Op
// whole elements at offsets that keep them aligned (buffers from []E, or
// its own memory, aligned to 8 bytes), so the views need no copy.
func byteOp[E any](op Op[E]) comm.Op {
	if op == nil {
		return nil
	}
	return func(inout, in []byte) { op(view[E](inout), view[E](in)) }
}

// view sees b as elements of E, without copying.
func view[E any](b []byte) []E {
	if len(b) == 0 {
		return nil
	}
	n := uintptr(len(b)) / unsafe.Sizeof(*new(E))
	return unsafe.Slice((*E)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
