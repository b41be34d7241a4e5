package typed_test

import (
	"fmt"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Each rank puts its number into its right neighbour's window, between
// two Fences; after the second, every rank finds its left neighbour's.
func ExampleWindow_Fence() {
	got := make([]int64, 4)
	err := mpgo.Run(4, func(w *comm.Comm) error {
		me, n := w.Rank(), w.Size()
		part := make([]int64, 1)
		win, err := typed.NewWindow(w, part)
		if err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if err := win.Put([]int64{int64(me)}, (me+1)%n, 0); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		got[me] = part[0]
		return win.Free()
	})
	fmt.Println(got, err)
	// Output: [3 0 1 2] <nil>
}

// A shared counter at rank 0: each rank takes tickets with FetchAndOp
// inside a passive-target epoch, while rank 0 takes no part in it.
func ExampleWindow_FetchAndOp() {
	err := mpgo.Run(3, func(w *comm.Comm) error {
		win, counter, err := typed.AllocWindow[int64](w, 1)
		if err != nil {
			return err
		}
		if err := win.Lock(0, false); err != nil {
			return err
		}
		for range 5 {
			if _, err := win.FetchAndOp(1, 0, 0, typed.Sum[int64]); err != nil {
				return err
			}
		}
		if err := win.Unlock(0); err != nil {
			return err
		}
		if err := w.Barrier(); err != nil { // every Unlock happened before rank 0 reads
			return err
		}
		if w.Rank() == 0 {
			fmt.Println("tickets taken:", counter[0])
		}
		return win.Free()
	})
	fmt.Println(err)
	// Output:
	// tickets taken: 15
	// <nil>
}

// A mutex from CompareAndSwap: 0 is free, otherwise the holder's rank + 1.
func ExampleWindow_CompareAndSwap() {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		win, _, err := typed.AllocWindow[int32](w, 1)
		if err != nil {
			return err
		}
		if err := win.LockAll(); err != nil {
			return err
		}
		me := int32(w.Rank() + 1)
		for {
			old, err := win.CompareAndSwap(0, me, 0, 0)
			if err != nil {
				return err
			}
			if old == 0 {
				break // acquired
			}
		}
		// … the critical section …
		if _, err := win.FetchAndOp(0, 0, 0, typed.Replace[int32]); err != nil { // release
			return err
		}
		if err := win.UnlockAll(); err != nil {
			return err
		}
		return win.Free()
	})
	fmt.Println(err)
	// Output: <nil>
}
