package device

// OneSided is an optional interface of a [Device] that reads, writes and
// updates the memory of other processes itself (RDMA: the RDMA backend's
// fi_write, fi_read and fi_atomic on registered memory), so that a window
// of one-sided communication progresses without the target process's
// ranks, or any handler of theirs, taking part. Windows find it by type
// assertion (comm.Comm.OneSided); over a device without it they run on
// active messages through Send and Arrive.
//
// Ranks are world ranks in other processes (a device reaches no other).
// Each operation completes exactly once, through done, called from a
// goroutine of the device's (its progress): with nil when it is complete
// at the target as well as here, with an error wrapping [ErrPeerLost] or
// [ErrClosed] otherwise, also when the world aborts or the device closes
// first. An operation the call itself fails (bad arguments, the device
// closed) returns the error and never calls done. Safe for concurrent
// use.
type OneSided interface {
	// Expose registers mem, memory of this process, for the other
	// processes' one-sided access, until the Exposure is closed. mem must
	// stay valid, and neither be moved nor be freed (memory off the Go
	// heap, or a Go object pinned with runtime.Pinner), until then.
	Expose(mem []byte) (Exposure, error)
	// Write copies src into dst's process's memory at at. src is copied
	// before Write returns; done follows once the bytes are in the
	// target's memory (remote completion, as MPI_Win_flush needs).
	Write(dst int, src []byte, at Remote, done func(error)) error
	// Read copies len(into) bytes of dst's process's memory at at into
	// into, which must stay valid, and untouched, until done.
	Read(dst int, into []byte, at Remote, done func(error)) error
	// Atomic applies a to the elements at at, each atomically with
	// respect to every other Atomic on it, from any process (the target
	// process's own included, which must go through Atomic too); done
	// follows once a is applied at the target and a.Result, if any, is
	// filled. The caller checks a with Atomics first.
	Atomic(dst int, a Atomic, at Remote, done func(error)) error
	// Atomics reports whether the device applies op to elements of t as
	// an atomic operation of kind.
	Atomics(kind AtomicKind, t AtomicType, op AtomicOp) bool
}

// Remote names memory of another process that it exposed: the address
// of a byte of it, as the device understands it (the exposure's own
// Remote plus an offset in bytes), and the key that grants access.
type Remote struct {
	Addr, Key uint64
}

// Offset returns the Remote of the byte off bytes further.
func (r Remote) Offset(off int) Remote { return Remote{Addr: r.Addr + uint64(off), Key: r.Key} }

// Exposure is memory exposed by [OneSided.Expose].
type Exposure interface {
	// Remote returns where other processes reach the memory's first byte.
	Remote() Remote
	// Close ends the exposure. Operations on it must be over.
	Close() error
}

// Atomic is an atomic operation on Len(Operand)/size(Type) elements.
type Atomic struct {
	Kind    AtomicKind
	Type    AtomicType
	Op      AtomicOp
	Operand []byte // the operands, copied before Atomic returns (ignored by AtomicRead, but sized)
	Compare []byte // AtomicCompare: the values to compare with, copied likewise
	Result  []byte // AtomicFetch, AtomicCompare: receives the old values
}

// AtomicKind is the kind of an [Atomic].
type AtomicKind uint8

// Atomic kinds.
const (
	AtomicPlain   AtomicKind = iota // element = op(element, operand)
	AtomicFetch                     // the same, returning the old element
	AtomicCompare                   // Op AtomicCSwap: element = operand if element == compare; the old one back
)

// AtomicType is an element type of an [Atomic].
type AtomicType uint8

// Atomic element types.
const (
	AtomicInt8 AtomicType = iota
	AtomicUint8
	AtomicInt16
	AtomicUint16
	AtomicInt32
	AtomicUint32
	AtomicInt64
	AtomicUint64
	AtomicFloat32
	AtomicFloat64
	AtomicComplex64
	AtomicComplex128
)

// Size returns the bytes of one element of t.
func (t AtomicType) Size() int {
	return [...]int{1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8, 16}[t]
}

// AtomicOp is the operation of an [Atomic].
type AtomicOp uint8

// Atomic operations: MPI's predefined reductions, and Replace, Read
// (a fetch that changes nothing: MPI_NO_OP) and CSwap.
const (
	AtomicSum AtomicOp = iota
	AtomicProd
	AtomicMin
	AtomicMax
	AtomicBAnd
	AtomicBOr
	AtomicBXor
	AtomicLAnd
	AtomicLOr
	AtomicLXor
	AtomicReplace
	AtomicRead
	AtomicCSwap
)
