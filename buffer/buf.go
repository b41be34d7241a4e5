package buffer

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Buf is a block of a [Pool] with an explicit lifetime, after the jbufs of
// Javia-II: the memory is allocated once, viewed as typed slices without
// copying, lent to the library's sends and receives, handed to another
// goroutine without copying, and freed exactly once, by its owner.
//
// # Ownership
//
// A Buf has one owner at a time, the only party allowed to Free it or hand
// it off. [Pool.Alloc]'s caller owns the Buf it returns.
//
//   - Lending: an operation that reads or writes the memory while the owner
//     waits (a send, a receive) brackets its use with [Buf.Acquire] and
//     [Buf.Done]. Ownership does not move; while any Acquire is not yet
//     matched by Done, Free and Handoff fail with [ErrInUse].
//   - Handing off: [Buf.Handoff] ends the owner's handle and returns a new
//     handle to the same memory, never copied. Whoever receives the new
//     handle (through a channel, or a zero-copy send) owns the Buf from
//     then on and must Free it; the old handle fails every method with
//     [ErrFreed].
//   - Freeing: [Buf.Free] gives the memory back to the pool; it fails with
//     [ErrInUse] while transfers are in flight or views are held, and with
//     [ErrDoubleFree] the second time. After it every method fails with
//     [ErrFreed] and the memory must no longer be touched.
//
// # Views
//
// [View] returns the memory as a []T of Len()/sizeof(T) elements. Views of
// one element type at a time: asking for a view as another type while one
// is held fails with [ErrViewType]; asking again for the same type is fine.
// Each View holds until matched by [Buf.Unview]. [Buf.Bytes] is the raw
// memory and is always allowed. Blocks are 8-byte aligned, so every view
// is aligned.
//
// The zero Buf is not usable: every method fails with [ErrInvalid].
//
// # Concurrency
//
// The handle's state (freed, views, transfers in flight) is one atomic
// word: every method is safe for concurrent use, and their rules hold even
// when goroutines race (a Free racing an Acquire either frees, and the
// Acquire fails, or not). The memory itself is not synchronized: who
// writes and reads it when is up to the owner and the operations it lends
// it to, as with any slice.
type Buf struct {
	pool  *Pool  // immutable
	block []byte // immutable; as Get returned it: cap is the block size
	n     int    // immutable
	state atomic.Uint64
}

// The bits of Buf.state.
const (
	bufInFlightMask = 1<<32 - 1 // Acquires not yet Done
	bufViewShift    = 32
	bufViewMask     = 1<<16 - 1 // Views not yet Unviewed
	bufKindShift    = 48        // the Kind viewed while views are held
	bufHandedOff    = 1 << 62
	bufFreed        = 1 << 63
)

// Alloc returns a Buf of n bytes from the pool, owned by the caller (see
// [Buf]). It fails as [Pool.Get] does.
func (p *Pool) Alloc(n int) (*Buf, error) {
	b, err := p.Get(n)
	if err != nil {
		return nil, err
	}
	return &Buf{pool: p, block: b, n: n}, nil
}

// Len returns the size of the Buf in bytes.
func (b *Buf) Len() int { return b.n }

// check returns the error for a handle in state s that is freed or handed
// off, or nil.
func (b *Buf) check(op string, s uint64) error {
	switch {
	case b.pool == nil:
		return fmt.Errorf("buffer: buf %s: not made by Pool.Alloc: %w", op, ErrInvalid)
	case s&bufHandedOff != 0:
		return fmt.Errorf("buffer: buf %s: handle handed off: %w", op, ErrFreed)
	case s&bufFreed != 0:
		return fmt.Errorf("buffer: buf %s: %w", op, ErrFreed)
	}
	return nil
}

// Bytes returns the Buf's memory, len Len(). It fails with [ErrFreed] after
// Free or Handoff.
func (b *Buf) Bytes() ([]byte, error) {
	if err := b.check("bytes", b.state.Load()); err != nil {
		return nil, err
	}
	return b.block[:b.n:b.n], nil
}

// View returns the memory of b as a []T of b.Len()/sizeof(T) elements (the
// remaining bytes, if any, are not in the view), and holds a view as T until
// [Buf.Unview]. It fails with [ErrViewType] while a view as another type is
// held, with [ErrFreed] after Free or Handoff.
func View[T Number](b *Buf) ([]T, error) {
	k := KindOf[T]()
	for {
		s := b.state.Load()
		if err := b.check("view", s); err != nil {
			return nil, err
		}
		views := s >> bufViewShift & bufViewMask
		if held := Kind(s >> bufKindShift); views > 0 && held != k {
			return nil, fmt.Errorf("buffer: buf viewed as %s, view wants %s: %w", held, k, ErrViewType)
		}
		if views == bufViewMask {
			return nil, fmt.Errorf("buffer: buf view: %d views held: %w", views, ErrInvalid)
		}
		ns := s&^(0xff<<bufKindShift|bufViewMask<<bufViewShift) | uint64(k)<<bufKindShift | (views+1)<<bufViewShift
		if b.state.CompareAndSwap(s, ns) {
			break
		}
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b.block))), b.n/int(unsafe.Sizeof(z))), nil
}

// Unview releases one view taken by [View]; when none is left, b may be
// viewed as another type. Unview without a view held fails with
// [ErrInvalid].
func (b *Buf) Unview() error {
	for {
		s := b.state.Load()
		if err := b.check("unview", s); err != nil {
			return err
		}
		views := s >> bufViewShift & bufViewMask
		if views == 0 {
			return fmt.Errorf("buffer: buf unview: no view held: %w", ErrInvalid)
		}
		ns := s&^(bufViewMask<<bufViewShift) | (views-1)<<bufViewShift
		if views == 1 {
			ns &^= 0xff << bufKindShift
		}
		if b.state.CompareAndSwap(s, ns) {
			return nil
		}
	}
}

// Acquire records one more operation using b's memory in flight (a send or
// a receive); [Buf.Done] ends it. It fails with [ErrFreed] after Free or
// Handoff.
func (b *Buf) Acquire() error {
	for {
		s := b.state.Load()
		if err := b.check("acquire", s); err != nil {
			return err
		}
		if s&bufInFlightMask == bufInFlightMask {
			return fmt.Errorf("buffer: buf acquire: too many in flight: %w", ErrInvalid)
		}
		if b.state.CompareAndSwap(s, s+1) {
			return nil
		}
	}
}

// Done ends an operation recorded by [Buf.Acquire]. Done without a matching
// Acquire fails with [ErrInvalid].
func (b *Buf) Done() error {
	for {
		s := b.state.Load()
		if err := b.check("done", s); err != nil {
			return err
		}
		if s&bufInFlightMask == 0 {
			return fmt.Errorf("buffer: buf done: nothing in flight: %w", ErrInvalid)
		}
		if b.state.CompareAndSwap(s, s-1) {
			return nil
		}
	}
}

// InFlight returns the number of operations acquired and not yet done.
func (b *Buf) InFlight() int { return int(b.state.Load() & bufInFlightMask) }

// idle claims b for Free or Handoff: it sets flag if nothing is in flight and
// no view is held.
func (b *Buf) idle(op string, flag uint64) error {
	for {
		s := b.state.Load()
		if b.pool == nil {
			return b.check(op, s)
		}
		if s&bufFreed != 0 && s&bufHandedOff == 0 && op == "free" {
			return fmt.Errorf("buffer: buf free: %w", ErrDoubleFree)
		}
		if err := b.check(op, s); err != nil {
			return err
		}
		if n := s & bufInFlightMask; n > 0 {
			return fmt.Errorf("buffer: buf %s: %d transfers in flight: %w", op, n, ErrInUse)
		}
		if v := s >> bufViewShift & bufViewMask; v > 0 {
			return fmt.Errorf("buffer: buf %s: %d views as %s held: %w", op, v, Kind(s>>bufKindShift), ErrInUse)
		}
		if b.state.CompareAndSwap(s, flag) {
			return nil
		}
	}
}

// Free gives b's memory back to its pool. It fails with [ErrInUse] while
// transfers are in flight or views are held, with [ErrDoubleFree] if b was
// freed already, and with [ErrFreed] on a handle that was handed off.
func (b *Buf) Free() error {
	if err := b.idle("free", bufFreed); err != nil {
		return err
	}
	return b.pool.Put(b.block)
}

// Handoff transfers ownership: it ends this handle (every method on it then
// fails with [ErrFreed]) and returns a new handle to the same memory, which
// the receiver owns and must Free. Nothing is copied. It fails with
// [ErrInUse] while transfers are in flight or views are held.
func (b *Buf) Handoff() (*Buf, error) {
	if err := b.idle("handoff", bufFreed|bufHandedOff); err != nil {
		return nil, err
	}
	return &Buf{pool: b.pool, block: b.block, n: b.n}, nil
}
