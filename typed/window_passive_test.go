package typed_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// passiveTarget checks that a window takes path want, and, on the
// one-sided path, that passive target needs nothing of the target: the
// last rank, once an origin (rank 0) holds its lock, computes without
// calling mpgo until a flag appears in its own part, while rank 0 Puts,
// Gets and (with the device's atomics) FetchAndOps and CompareAndSwaps on
// it; not one request reaches the target's window handlers meanwhile
// (their counter stays where it was), and every result is the one the
// operations must give.
// Then every rank adds to one element with FetchAndOp, concurrently: the
// sum is exact.
func passiveTarget(want string) func(c *comm.Comm) error {
	return func(c *comm.Comm) error {
		w, part, err := typed.AllocWindow[int64](c, 64)
		if err != nil {
			return err
		}
		if got := typed.WindowPath(w); got != want {
			return fmt.Errorf("window path %q, want %q", got, want)
		}
		target, me := c.Size()-1, c.Rank()
		if want != "am" {
			if err := busyTarget(c, w, part, target, want == "fabric+atomics"); err != nil {
				return err
			}
		}
		const adds = 50
		if err := w.LockAll(); err != nil {
			return err
		}
		for range adds {
			if _, err := w.FetchAndOp(int64(me+1), target, 20, typed.Sum[int64]); err != nil {
				return err
			}
		}
		if err := w.UnlockAll(); err != nil {
			return err
		}
		if err := w.Fence(); err != nil {
			return err
		}
		if me == target {
			n := int64(c.Size())
			if got, want := atomic.LoadInt64(&part[20]), adds*n*(n+1)/2; got != want {
				return fmt.Errorf("%d concurrent FetchAndOps of %d ranks summed to %d, want %d", adds, n, got, want)
			}
		}
		if err := w.Fence(); err != nil {
			return err
		}
		return w.Free()
	}
}

// busyTarget is passiveTarget's busy phase.
func busyTarget(c *comm.Comm, w *typed.Window[int64], part []int64, target int, atomics bool) error {
	me := c.Rank()
	if me == 0 {
		if err := w.Lock(target, false); err != nil {
			return err
		}
	}
	if err := c.Barrier(); err != nil { // the lock is held: the target goes busy
		return err
	}
	switch me {
	case target:
		served := typed.WindowServed(w)
		deadline := time.Now().Add(30 * time.Second)
		x := 1.0
		for atomic.LoadInt64(&part[63]) == 0 {
			for range 1000 {
				x = x*1.0000001 + 1e-9 // computing, not calling mpgo
			}
			if time.Now().After(deadline) {
				return errors.New("the origin's flag never came into the target's part")
			}
		}
		if got := typed.WindowServed(w); got != served || x == 0 {
			return fmt.Errorf("the target's handlers ran %d data requests while it computed; want none", got-served)
		}
		for i := range 8 {
			if got := atomic.LoadInt64(&part[i]); got != int64(100+i) {
				return fmt.Errorf("element %d is %d after the origin's Put, want %d", i, got, 100+i)
			}
		}
		if got := atomic.LoadInt64(&part[10]); atomics && got != 7 {
			return fmt.Errorf("element 10 is %d after the origin's FetchAndOps and CompareAndSwap, want 7", got)
		}
	case 0:
		if err := originOps(w, target, atomics); err != nil {
			return err
		}
		if err := w.Unlock(target); err != nil {
			return err
		}
	}
	return c.Barrier()
}

// originOps is rank 0's side of busyTarget, inside its lock of target.
func originOps(w *typed.Window[int64], target int, atomics bool) error {
	src := []int64{100, 101, 102, 103, 104, 105, 106, 107}
	if err := w.Put(src, target, 0); err != nil {
		return err
	}
	if err := w.Flush(target); err != nil {
		return err
	}
	got := make([]int64, 8)
	if err := w.Get(got, target, 0); err != nil {
		return err
	}
	for i := range got {
		if got[i] != src[i] {
			return fmt.Errorf("Get after Put and Flush: element %d is %d, want %d", i, got[i], src[i])
		}
	}
	for i := range 3 {
		if !atomics {
			break
		}
		old, err := w.FetchAndOp(10, target, 10, typed.Sum[int64])
		if err != nil {
			return err
		}
		if old != int64(10*i) {
			return fmt.Errorf("FetchAndOp %d found %d, want %d", i, old, 10*i)
		}
	}
	if !atomics { // FetchAndOp and CompareAndSwap would run on the handlers
		return putFlag(w, target)
	}
	if old, err := w.CompareAndSwap(1, 2, target, 10); err != nil || old != 30 {
		return fmt.Errorf("a CompareAndSwap that misses: %d, %v; want 30", old, err)
	}
	if old, err := w.CompareAndSwap(30, 7, target, 10); err != nil || old != 30 {
		return fmt.Errorf("a CompareAndSwap that hits: %d, %v; want 30", old, err)
	}
	return putFlag(w, target)
}

// putFlag puts the flag the target waits for and flushes it.
func putFlag(w *typed.Window[int64], target int) error {
	if err := w.Put([]int64{1}, target, 63); err != nil { // the flag
		return err
	}
	return w.Flush(target)
}
