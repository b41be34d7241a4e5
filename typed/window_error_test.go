package typed_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Calls the epoch rules forbid, and accesses outside a part, fail with an
// error wrapping their sentinel, touch nothing, and leave the window
// usable: each case runs on a fresh window of 2 ranks, on rank 0, while
// rank 1 waits at the final Free.

func TestWindowErrors(t *testing.T) {
	type W = typed.Window[int64]
	cases := []struct {
		name string
		call func(w *W) error
		want error
	}{
		{"PutOutsideEpoch", func(w *W) error { return w.Put([]int64{1}, 1, 0) }, comm.ErrEpoch},
		{"GetOutsideEpoch", func(w *W) error { return w.Get(make([]int64, 1), 1, 0) }, comm.ErrEpoch},
		{"AccumulateOutsideEpoch", func(w *W) error { return w.Accumulate([]int64{1}, 0, 0, typed.Sum[int64]) }, comm.ErrEpoch},
		{"FetchAndOpOutsideEpoch", func(w *W) error { _, err := w.FetchAndOp(1, 1, 0, typed.Sum[int64]); return err }, comm.ErrEpoch},
		{"CompareAndSwapOutsideEpoch", func(w *W) error { _, err := w.CompareAndSwap(0, 1, 1, 0); return err }, comm.ErrEpoch},
		{"PutToOtherTargetThanLocked", func(w *W) error {
			if err := w.Lock(0, true); err != nil {
				return err
			}
			defer w.Unlock(0)
			return w.Put([]int64{1}, 1, 0)
		}, comm.ErrEpoch},
		{"UnlockWithoutLock", func(w *W) error { return w.Unlock(1) }, comm.ErrEpoch},
		{"SecondLock", func(w *W) error {
			if err := w.Lock(1, false); err != nil {
				return err
			}
			defer w.Unlock(1)
			return w.Lock(1, true)
		}, comm.ErrEpoch},
		{"LockInsideLockAll", func(w *W) error {
			if err := w.LockAll(); err != nil {
				return err
			}
			defer w.UnlockAll()
			return w.Lock(1, false)
		}, comm.ErrEpoch},
		{"UnlockAllWithoutLockAll", func(w *W) error { return w.UnlockAll() }, comm.ErrEpoch},
		{"FlushWithoutLock", func(w *W) error { return w.Flush(1) }, comm.ErrEpoch},
		{"FlushAllWithoutLock", func(w *W) error { return w.FlushAll() }, comm.ErrEpoch},
		{"FlushLocalWithoutLock", func(w *W) error { return w.FlushLocal(1) }, comm.ErrEpoch},
		{"FlushLocalAllWithoutLock", func(w *W) error { return w.FlushLocalAll() }, comm.ErrEpoch},
		{"FlushOfAnotherTarget", func(w *W) error {
			if err := w.Lock(0, false); err != nil {
				return err
			}
			defer w.Unlock(0)
			return w.Flush(1)
		}, comm.ErrEpoch},
		{"StartTwice", func(w *W) error {
			self, err := w.Group().Incl([]int{w.Rank()})
			if err != nil {
				return err
			}
			if err := w.Post(self); err != nil {
				return err
			}
			if err := w.Start(self); err != nil {
				return err
			}
			err = w.Start(self)
			if e := w.Complete(); e != nil {
				return e
			}
			if e := w.Wait(); e != nil {
				return e
			}
			return err
		}, comm.ErrEpoch},
		{"FenceInsideLock", func(w *W) error {
			if err := w.Lock(1, false); err != nil {
				return err
			}
			defer w.Unlock(1)
			return w.Fence()
		}, comm.ErrEpoch},
		{"FreeInsideLock", func(w *W) error {
			if err := w.Lock(1, false); err != nil {
				return err
			}
			defer w.Unlock(1)
			return w.Free()
		}, comm.ErrEpoch},
		{"CompleteWithoutStart", func(w *W) error { return w.Complete() }, comm.ErrEpoch},
		{"WaitWithoutPost", func(w *W) error { return w.Wait() }, comm.ErrEpoch},
		{"PutPastTheEnd", func(w *W) error {
			if err := w.Lock(1, false); err != nil {
				return err
			}
			defer w.Unlock(1)
			return w.Put([]int64{1, 2}, 1, 3)
		}, comm.ErrArg},
		{"GetBeforeTheStart", func(w *W) error {
			if err := w.Lock(1, false); err != nil {
				return err
			}
			defer w.Unlock(1)
			return w.Get(make([]int64, 1), 1, -1)
		}, comm.ErrArg},
		{"FetchAndOpPastTheEnd", func(w *W) error {
			if err := w.LockAll(); err != nil {
				return err
			}
			defer w.UnlockAll()
			_, err := w.FetchAndOp(1, 1, 4, typed.Sum[int64])
			return err
		}, comm.ErrArg},
		{"NilOp", func(w *W) error {
			if err := w.LockAll(); err != nil {
				return err
			}
			defer w.UnlockAll()
			return w.Accumulate([]int64{1}, 1, 0, nil)
		}, comm.ErrArg},
		{"GetAccumulateLengths", func(w *W) error {
			if err := w.LockAll(); err != nil {
				return err
			}
			defer w.UnlockAll()
			return w.GetAccumulate([]int64{1}, make([]int64, 2), 1, 0, typed.Sum[int64])
		}, comm.ErrArg},
		{"TargetOutOfRange", func(w *W) error { return w.Put([]int64{1}, 2, 0) }, comm.ErrRank},
		{"LockOutOfRange", func(w *W) error { return w.Lock(-1, false) }, comm.ErrRank},
		{"SharedQueryOutOfRange", func(w *W) error { _, err := w.SharedQuery(5); return err }, comm.ErrRank},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := mpgo.Run(2, func(c *comm.Comm) error {
				w, part, err := typed.AllocWindow[int64](c, 4)
				if err != nil {
					return err
				}
				if c.Rank() == 0 {
					err := tc.call(w)
					if !errors.Is(err, tc.want) {
						return fmt.Errorf("got %v, want an error wrapping %v", err, tc.want)
					}
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				for i, v := range part {
					if v != 0 {
						return fmt.Errorf("rank %d: element %d became %d", c.Rank(), i, v)
					}
				}
				// Still usable: a correct epoch works.
				if err := w.Fence(); err != nil {
					return err
				}
				if err := w.Put([]int64{7}, 1-c.Rank(), 3); err != nil {
					return err
				}
				if err := w.Fence(); err != nil {
					return err
				}
				if part[3] != 7 {
					return fmt.Errorf("rank %d: Put after the error did not arrive", c.Rank())
				}
				return w.Free()
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWindowFreed: every call on a freed window fails with ErrClosed.
func TestWindowFreed(t *testing.T) {
	err := mpgo.Run(2, func(c *comm.Comm) error {
		w, _, err := typed.AllocWindow[int64](c, 1)
		if err != nil {
			return err
		}
		if err := w.Free(); err != nil {
			return err
		}
		for name, err := range map[string]error{
			"Put":   w.Put([]int64{1}, 0, 0),
			"Lock":  w.Lock(0, true),
			"Fence": w.Fence(),
			"Free":  w.Free(),
		} {
			if !errors.Is(err, comm.ErrClosed) {
				return fmt.Errorf("%s on a freed window: %v, want ErrClosed", name, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWindowCreationErrors: arguments that cannot make a window fail on
// every rank alike.
func TestWindowCreationErrors(t *testing.T) {
	err := mpgo.Run(3, func(c *comm.Comm) error {
		if _, _, err := typed.AllocWindow[int64](c, -1); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("AllocWindow(-1): %v, want ErrArg", err)
		}
		if _, _, err := typed.AllocSharedWindow[int64](c, -1); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("AllocSharedWindow(-1): %v, want ErrArg", err)
		}
		if _, err := typed.NewWindow[int64](nil, nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("NewWindow(nil): %v, want ErrArg", err)
		}
		if _, err := typed.NewWindow(c, []*int{nil}); !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("NewWindow of pointers: %v, want ErrType", err)
		}
		// Ranks that disagree on the element type all fail.
		var err error
		if c.Rank() == 1 {
			_, err = typed.NewWindow(c, make([]float64, 2))
		} else {
			_, err = typed.NewWindow(c, make([]int64, 2))
		}
		if !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("rank %d: windows of different types: %v, want ErrType", c.Rank(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWindowLockWaitDeadlock: a rank waiting for a lock that is never
// released gets an error (ErrDeadlock once every rank waits), not a hang.
func TestWindowLockWaitDeadlock(t *testing.T) {
	err := mpgo.Run(2, func(c *comm.Comm) error {
		w, _, err := typed.AllocWindow[int64](c, 1)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := w.Lock(0, true); err != nil {
				return err
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			_, err := c.Recv(nil, comm.Byte, 1, 99) // never sent
			return err
		}
		return w.Lock(0, true) // waits for rank 0's Unlock
	})
	if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("got %v, want ErrDeadlock", err)
	}
}

// TestWindowLockModes: shared locks of one target are held at once (two
// origins meet at a barrier while both hold one: were they exclusive,
// that would deadlock), and an exclusive lock asked for meanwhile waits
// for them: it sees what they wrote before their Unlocks.
func TestWindowLockModes(t *testing.T) {
	err := mpgo.Run(3, func(c *comm.Comm) error {
		w, part, err := typed.AllocWindow[int64](c, 2)
		if err != nil {
			return err
		}
		pair, err := c.Split(map[bool]int{true: 0, false: comm.Undefined}[c.Rank() > 0], 0)
		if err != nil {
			return err
		}
		if pair != nil { // ranks 1 and 2
			if err := w.Lock(0, false); err != nil {
				return err
			}
			if err := pair.Barrier(); err != nil { // both hold the shared lock
				return err
			}
			if c.Rank() == 1 { // tell rank 0 to ask for its exclusive lock
				if err := c.Send(nil, comm.Byte, 0, 7); err != nil {
					return err
				}
			}
			time.Sleep(time.Millisecond) // give rank 0 time to queue
			if err := w.Put([]int64{int64(c.Rank())}, 0, c.Rank()-1); err != nil {
				return err
			}
			if err := w.Unlock(0); err != nil {
				return err
			}
		} else {
			if _, err := c.Recv(nil, comm.Byte, 1, 7); err != nil {
				return err
			}
			if err := w.Lock(0, true); err != nil {
				return err
			}
			got := make([]int64, 2)
			if err := w.Get(got, 0, 0); err != nil {
				return err
			}
			if err := w.Unlock(0); err != nil {
				return err
			}
			if got[0] != 1 || got[1] != 2 || part[0] != 1 || part[1] != 2 {
				return fmt.Errorf("exclusive lock after the shared ones reads %v, want [1 2]", got)
			}
		}
		return w.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
}
