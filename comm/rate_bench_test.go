package comm_test

import (
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// BenchmarkWindowRate is osu_bw's loop at 8 bytes on two goroutine ranks:
// rank 0 starts a window of 64 Isends, waits for them all and for rank
// 1's ack; rank 1 posts the window's Irecvs, waits for them and acks.
// ns/msg is the message rate's inverse (issue 17's osu_bw row); allocs/op
// counts both ranks' allocations per window.
func BenchmarkWindowRate(b *testing.B) {
	const window = 64
	b.ReportAllocs()
	run(b, 2, func(w *comm.Comm) error {
		buf, ack := make([]byte, 8), make([]byte, 4)
		reqs := make([]*comm.Request, window)
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == 0 {
			b.ResetTimer()
		}
		for range b.N {
			var err error
			for j := range reqs {
				if w.Rank() == 0 {
					reqs[j], err = w.Isend(buf, comm.Byte, 1, 1)
				} else {
					reqs[j], err = w.Irecv(buf, comm.Byte, 0, 1)
				}
				if err != nil {
					return err
				}
			}
			if err := comm.WaitAll(reqs...); err != nil {
				return err
			}
			if w.Rank() == 0 {
				_, err = w.Recv(ack, comm.Byte, 1, 2)
			} else {
				err = w.Send(ack, comm.Byte, 0, 2)
			}
			if err != nil {
				return err
			}
		}
		if w.Rank() == 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*window), "ns/msg")
		}
		return nil
	})
}
