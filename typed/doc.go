// Package typed is mpgo's generic API: [Comm] sends and receives slices of
// numbers over a [comm.Comm] without per-element conversion, with at most
// one copy between the sender's slice and the receiver's, and hands slices
// over with no copy at all ([Comm.SendOwned], [Comm.RecvOwned]).
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
package typed
