package typed

import (
	"bytes"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Element-wise atomicity of accumulates (MPI 4.1 §12.7.1): concurrent
// accumulates to one element, from any ranks and goroutines, behave as if
// they happened one after the other. An element of 4 or 8 bytes, aligned,
// is read, combined and written back with a compare-and-swap of its
// memory, retried if another update came between (the op runs on copies
// of the bits, so any Op works, user ops included). Any other element is
// updated under a lock: the window has stripeCount of them, each covering
// the blocks of stripeSpan elements that hash to it, so accumulates to
// distant elements rarely wait on each other and one accumulate holds one
// lock at a time.

const (
	// stripeCount is the number of accumulate locks of a window.
	stripeCount = 64
	// stripeSpan is the number of consecutive elements one lock covers.
	stripeSpan = 64
	// stripePad fills a stripe to a cache line of its own, so that ranks
	// updating different blocks do not take each other's lines.
	stripePad = 64 - 8
)

// stripe is one accumulate lock.
type stripe struct {
	sync.Mutex
	_ [stripePad]byte
}

// stripeOf returns the lock of element i of target's part.
func (sh *winShared[T]) stripeOf(target, i int) *stripe {
	return &sh.stripes[uint(target*31+i/stripeSpan)%stripeCount]
}

// accumulate combines src into target's elements from disp with op, each
// element atomically; old, when not nil, receives their values before.
// The range is checked.
func (sh *winShared[T]) accumulate(target, disp int, src, old []T, op Op[T]) {
	tg := &sh.targets[target]
	dst := tg.base[disp : disp+len(src)]
	if tg.atomic {
		pair := make([]T, 2) // the element's old bits, then the operand
		for i := range src {
			o := casUpdate(&dst[i], pair, func(cur []T) { op(cur, src[i:i+1]) })
			if old != nil {
				old[i] = o
			}
		}
		return
	}
	for lo := 0; lo < len(src); {
		i := disp + lo
		hi := min(len(src), lo+stripeSpan-i%stripeSpan)
		s := sh.stripeOf(target, i)
		s.Lock()
		if old != nil {
			copy(old[lo:hi], dst[lo:hi])
		}
		op(dst[lo:hi], src[lo:hi])
		s.Unlock()
		lo = hi
	}
}

// fetchAndOp combines v into target's element disp and returns it as it
// was, atomically.
func (sh *winShared[T]) fetchAndOp(target, disp int, v T, op Op[T]) T {
	tg := &sh.targets[target]
	e := &tg.base[disp]
	in := []T{v}
	if tg.atomic {
		return casUpdate(e, make([]T, 1), func(cur []T) { op(cur, in) })
	}
	s := sh.stripeOf(target, disp)
	s.Lock()
	defer s.Unlock()
	o := *e
	op(unsafe.Slice(e, 1), in)
	return o
}

// compareAndSwap replaces target's element disp with value if its bits
// are compare's, and returns it as it was, atomically.
func (sh *winShared[T]) compareAndSwap(target, disp int, compare, value T) T {
	tg := &sh.targets[target]
	e := &tg.base[disp]
	if tg.atomic {
		var o T
		switch unsafe.Sizeof(o) {
		case 4:
			p, c, v := (*uint32)(unsafe.Pointer(e)), *(*uint32)(unsafe.Pointer(&compare)), *(*uint32)(unsafe.Pointer(&value))
			for {
				cur := atomic.LoadUint32(p)
				if cur != c || atomic.CompareAndSwapUint32(p, cur, v) {
					*(*uint32)(unsafe.Pointer(&o)) = cur
					return o
				}
			}
		default:
			p, c, v := (*uint64)(unsafe.Pointer(e)), *(*uint64)(unsafe.Pointer(&compare)), *(*uint64)(unsafe.Pointer(&value))
			for {
				cur := atomic.LoadUint64(p)
				if cur != c || atomic.CompareAndSwapUint64(p, cur, v) {
					*(*uint64)(unsafe.Pointer(&o)) = cur
					return o
				}
			}
		}
	}
	s := sh.stripeOf(target, disp)
	s.Lock()
	defer s.Unlock()
	o := *e
	if bytes.Equal(bytesOf([]T{o}), bytesOf([]T{compare})) {
		*e = value
	}
	return o
}

// casUpdate replaces *e, an element of 4 or 8 bytes aligned to its size,
// by update's result on a copy of it (cur, a scratch slice of at least
// one element), retrying until no other update came in between, and
// returns *e as it was. An update that changes nothing (NoOp, a Max that
// loses) does not write: it is an atomic read, which a load of the
// element's owner in the same epoch does not race with.
func casUpdate[T any](e *T, cur []T, update func(cur []T)) T {
	cur = cur[:1]
	if unsafe.Sizeof(*e) == 4 {
		p := (*uint32)(unsafe.Pointer(e))
		c := (*uint32)(unsafe.Pointer(&cur[0]))
		for {
			o := atomic.LoadUint32(p)
			*c = o
			update(cur)
			if *c == o || atomic.CompareAndSwapUint32(p, o, *c) {
				*c = o
				return cur[0]
			}
		}
	}
	p := (*uint64)(unsafe.Pointer(e))
	c := (*uint64)(unsafe.Pointer(&cur[0]))
	for {
		o := atomic.LoadUint64(p)
		*c = o
		update(cur)
		if *c == o || atomic.CompareAndSwapUint64(p, o, *c) {
			*c = o
			return cur[0]
		}
	}
}
