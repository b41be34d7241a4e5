package typed

import (
	"fmt"

	"github.com/mpgo/mpgo/comm"
)

// The one-sided operations (MPI 4.1 §12.3). Each checks its target, range
// and epoch before it touches memory; with the target's part in this
// process it is complete when it returns.

// Put writes src into target's part at element disp (MPI_Put).
func (w *Window[T]) Put(src []T, target, disp int) error {
	dst, err := w.part("Put", target, disp, len(src))
	if err != nil {
		return err
	}
	if w.onHandlers() {
		return w.remotePut(src, target, disp)
	}
	copy(dst, src)
	return nil
}

// Get reads len(dst) elements of target's part from element disp into dst
// (MPI_Get).
func (w *Window[T]) Get(dst []T, target, disp int) error {
	src, err := w.part("Get", target, disp, len(dst))
	if err != nil {
		return err
	}
	if w.onHandlers() {
		return w.remoteGet(dst, target, disp)
	}
	copy(dst, src)
	return nil
}

// Accumulate combines src into target's part at element disp with op
// (MPI_Accumulate): each element e of the part becomes op(e, src's),
// atomically with respect to every other accumulate on it. [Replace]
// makes it an atomic Put; op may be any [Op] of T (see [Window] on
// atomicity).
func (w *Window[T]) Accumulate(src []T, target, disp int, op Op[T]) error {
	if op == nil {
		return fmt.Errorf("typed: Window.Accumulate with a nil op: %w", comm.ErrArg)
	}
	if _, err := w.part("Accumulate", target, disp, len(src)); err != nil {
		return err
	}
	if w.onHandlers() {
		return w.remoteAccumulate(src, nil, target, disp, op, "Accumulate")
	}
	s := w.scratch()
	w.sh.accumulate(target, disp, src, nil, w.fastOp(op), s)
	w.unscratch(s)
	return nil
}

// GetAccumulate is [Window.Accumulate] that also returns, in result, the
// elements as they were before (MPI_Get_accumulate), each read and
// updated in one atomic step. With [NoOp] it is an atomic read. src and
// result must be of one length.
func (w *Window[T]) GetAccumulate(src, result []T, target, disp int, op Op[T]) error {
	if op == nil {
		return fmt.Errorf("typed: Window.GetAccumulate with a nil op: %w", comm.ErrArg)
	}
	if len(src) != len(result) {
		return fmt.Errorf("typed: Window.GetAccumulate of %d elements into a result of %d: %w", len(src), len(result), comm.ErrArg)
	}
	if _, err := w.part("GetAccumulate", target, disp, len(src)); err != nil {
		return err
	}
	if w.onHandlers() {
		return w.remoteAccumulate(src, result, target, disp, op, "GetAccumulate")
	}
	s := w.scratch()
	w.sh.accumulate(target, disp, src, result, w.fastOp(op), s)
	w.unscratch(s)
	return nil
}

// FetchAndOp is [Window.GetAccumulate] of one element (MPI_Fetch_and_op):
// it combines v into target's element disp with op and returns the
// element as it was. [Sum] makes a shared counter, [Replace] an atomic
// swap, [NoOp] an atomic read.
func (w *Window[T]) FetchAndOp(v T, target, disp int, op Op[T]) (T, error) {
	var old T
	if op == nil {
		return old, fmt.Errorf("typed: Window.FetchAndOp with a nil op: %w", comm.ErrArg)
	}
	if _, err := w.part("FetchAndOp", target, disp, 1); err != nil {
		return old, err
	}
	if w.onHandlers() {
		res := []T{old}
		err := w.remoteAccumulate([]T{v}, res, target, disp, op, "FetchAndOp")
		return res[0], err
	}
	s := w.scratch()
	old = w.sh.fetchAndOp(target, disp, v, op, s)
	w.unscratch(s)
	return old, nil
}

// CompareAndSwap replaces target's element disp with value if it equals
// compare, bit for bit, and returns the element as it was, in one atomic
// step (MPI_Compare_and_swap).
func (w *Window[T]) CompareAndSwap(compare, value T, target, disp int) (T, error) {
	if _, err := w.part("CompareAndSwap", target, disp, 1); err != nil {
		var zero T
		return zero, err
	}
	if w.onHandlers() {
		return w.remoteCAS(compare, value, target, disp)
	}
	return w.sh.compareAndSwap(target, disp, compare, value), nil
}

// part checks an operation of n elements at disp of target's part and
// returns those elements (nil for a part only handlers reach).
func (w *Window[T]) part(op string, target, disp, n int) ([]T, error) {
	if err := w.checkRank(op, target); err != nil {
		return nil, err
	}
	if err := w.ep.access(target); err != nil {
		return nil, fmt.Errorf("typed: Window.%s: %w", op, err)
	}
	var base []T
	size := 0
	if w.onHandlers() {
		size = w.rm.sizes[target]
	} else {
		base = w.sh.targets[target].base
		size = len(base)
	}
	if disp < 0 || disp > size || n > size-disp {
		return nil, fmt.Errorf("typed: Window.%s of elements [%d, %d) of rank %d, whose part has %d: %w",
			op, disp, disp+n, target, size, comm.ErrArg)
	}
	if base == nil {
		return nil, nil
	}
	return base[disp : disp+n], nil
}
