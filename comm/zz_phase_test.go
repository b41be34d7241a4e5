package comm_test

import (
	"testing"
	"time"

	"github.com/mpgo/mpgo/comm"
)

func BenchmarkZZPhase(b *testing.B) {
	const window = 64
	var post, wait, send, sendw, ackw time.Duration
	run(b, 2, func(w *comm.Comm) error {
		buf, ack := make([]byte, 8), make([]byte, 4)
		reqs := make([]*comm.Request, window)
		w.Barrier()
		for range b.N {
			t0 := time.Now()
			for j := range reqs {
				if w.Rank() == 0 {
					reqs[j], _ = w.Isend(buf, comm.Byte, 1, 1)
				} else {
					reqs[j], _ = w.Irecv(buf, comm.Byte, 0, 1)
				}
			}
			t1 := time.Now()
			comm.WaitAll(reqs...)
			t2 := time.Now()
			if w.Rank() == 0 {
				w.Recv(ack, comm.Byte, 1, 2)
				send += t1.Sub(t0)
				sendw += t2.Sub(t1)
				ackw += time.Since(t2)
			} else {
				w.Send(ack, comm.Byte, 0, 2)
				post += t1.Sub(t0)
				wait += t2.Sub(t1)
			}
		}
		return nil
	})
	n := time.Duration(b.N)
	b.Logf("recv: post %v wait %v | send: isend %v waitall %v ack %v", post/n, wait/n, send/n, sendw/n, ackw/n)
}
