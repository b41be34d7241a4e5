// Package typed is mpgo's generic API: [Comm] sends and receives slices of
// numbers, and of structs and arrays of numbers, over a [comm.Comm]
// without per-element conversion, with at most one copy between the
// sender's slice and the receiver's, and hands slices over with no copy
// at all ([Comm.SendOwned], [Comm.RecvOwned]).
//
// # Usage
//
//	err := mpgo.Run(2, func(w *comm.Comm) error {
//		c := typed.Of[float64](w)
//		if w.Rank() == 0 {
//			return c.Send([]float64{1, 2, 3}, 1, 0)
//		}
//		buf := make([]float64, 3)
//		_, err := c.Recv(buf, 0, 0)
//		return err
//	})
//
// # Element types
//
// A Comm's element type is a [Number], or any fixed-size type without
// pointers — a struct or an array of numbers, bools and such structs and
// arrays — which travels as its memory, as MPI's derived datatypes do:
//
//	type Particle struct {
//		X, Y, Z float64
//		ID      int32
//		Kind    uint8
//	}
//	c := typed.Of[Particle](w) // point to point, collectives, layouts, neighborhoods
//	err := c.Allreduce(mine, all, func(inout, in []Particle) { … })
//
// Generics cannot require "no pointers", so [Of] checks the type at run
// time (the verdict is kept per type) and panics on one it cannot send
// (see [comm.TypeOf], which checks without panicking). A struct type is
// identified by its memory layout: a receive of another layout, or of a
// number type, fails with [comm.ErrType] in every process, while two Go
// types of one layout are interchangeable. The reductions take any [Op]
// on it; the arithmetic operators ([Sum], [Prod], [Max], …) stay for
// numbers, checked at compile time. Elements travel with their padding in
// the sender's byte order: the processes of a job share one architecture.
//
// # One-sided communication
//
// A [Window] exposes a slice of each rank's to the others, which read,
// write and update it with [Window.Put], [Window.Get] and the atomic
// accumulates ([Window.Accumulate], [Window.FetchAndOp],
// [Window.CompareAndSwap], …) within epochs ([Window.Fence], Lock and
// Unlock, Post/Start/Complete/Wait), as MPI's windows do:
//
//	win, counter, err := typed.AllocWindow[int64](w, 1)
//	err = win.Lock(0, false)
//	next, err := win.FetchAndOp(1, 0, 0, typed.Sum[int64]) // rank 0's counter, atomically
//	err = win.Unlock(0)
//	err = win.Free()
//
// Between goroutine ranks the origin accesses the target's memory itself;
// between processes, the window's active-message handlers do it for it.
package typed
