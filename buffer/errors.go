package buffer

import "errors"

// Sentinel errors. Every error this package returns wraps one of these, with
// context; test for them with [errors.Is]. No bad input makes this package
// panic or corrupt its state: it reports one of these instead.
var (
	// ErrInvalid reports a bad option or argument: a size that is negative,
	// not a power of two or out of range, a nil pool, Done without Acquire.
	ErrInvalid = errors.New("buffer: invalid argument")
	// ErrClosed reports a Get or Alloc on a [Pool] after [Pool.Close].
	ErrClosed = errors.New("buffer: pool closed")
	// ErrNotSupported reports a feature this platform lacks (off-heap
	// regions where there is no mmap).
	ErrNotSupported = errors.New("buffer: not supported on this platform")

	// ErrDoubleFree reports the release of memory that is already free: a
	// second [Pool.Put] of a block, a second [Buf.Free] or [Buffer.Free].
	ErrDoubleFree = errors.New("buffer: double free")
	// ErrForeign reports a [Pool.Put] of a slice whose memory does not lie
	// in any region of the pool.
	ErrForeign = errors.New("buffer: slice not from this pool")
	// ErrNotBlockStart reports a [Pool.Put] of a slice that lies inside the
	// pool but is not a whole block as Get handed it out: its data pointer
	// is not the start of a live block, or its capacity is not the block's.
	ErrNotBlockStart = errors.New("buffer: slice is not a whole block")

	// ErrInUse reports an operation that needs a [Buf] nobody else is using
	// ([Buf.Free], [Buf.Handoff]) while transfers are in flight or typed
	// views are held, or a [Pool.Close] while blocks are still handed out.
	ErrInUse = errors.New("buffer: in use")
	// ErrFreed reports the use of a [Buf] or [Buffer] after Free, or of a
	// Buf handle after [Buf.Handoff].
	ErrFreed = errors.New("buffer: use after free")
	// ErrViewType reports a [View] of a Buf as one element type while a
	// view as another is held.
	ErrViewType = errors.New("buffer: buf viewed as another type")

	// ErrMode reports a write to a [Buffer] in read mode or a read from one
	// in write mode.
	ErrMode = errors.New("buffer: wrong mode")
	// ErrSectionType reports a read of a section whose element type is not
	// the reader's.
	ErrSectionType = errors.New("buffer: section type mismatch")
	// ErrSectionCount reports a read of a section whose element count is
	// not the reader's.
	ErrSectionCount = errors.New("buffer: section count mismatch")
	// ErrValue reports a value that encoding/gob cannot encode, or wire
	// data it cannot decode into the reader's variable; the gob error is
	// wrapped too.
	ErrValue = errors.New("buffer: value not encodable or decodable")
	// ErrEnd reports a read past the last section or value of a Buffer.
	ErrEnd = errors.New("buffer: no more data")
	// ErrBounds reports an index, offset, shape or stride that reaches
	// outside the slice it applies to.
	ErrBounds = errors.New("buffer: index out of range")
	// ErrCorrupt reports wire bytes that are not a well-formed Buffer.
	ErrCorrupt = errors.New("buffer: malformed wire data")
)
