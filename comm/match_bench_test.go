package comm_test

import (
	"fmt"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// BenchmarkMatchOutOfOrder: n messages of 8 bytes, each with a tag of its
// own, matched in the order of their tags (in) and in reverse (rev).
// posted: rank 1 posts its n Irecvs first, then rank 0 sends, so every
// arrival searches the posted receives; unexp: rank 0 sends first, then
// rank 1 posts, so every receive searches the unexpected messages. ns/op
// is the whole batch; matching that searches linearly makes rev grow as
// n² (issue 23, item 9).
func BenchmarkMatchOutOfOrder(b *testing.B) {
	for _, n := range []int{1000, 40000} {
		for _, side := range []string{"posted", "unexp"} {
			for _, order := range []string{"in", "rev"} {
				b.Run(fmt.Sprintf("%s/%s/%d", side, order, n), func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						if err := mpgo.Run(2, func(w *comm.Comm) error {
							return matchBatch(w, n, side == "posted", order == "rev")
						}); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/msg")
				})
			}
		}
	}
}

// matchBatch moves n tagged messages from rank 0 to rank 1 with the
// receives posted before the sends (postedFirst) or after, the sends in
// ascending tag order and the receives in ascending or (rev) descending.
func matchBatch(w *comm.Comm, n int, postedFirst, rev bool) error {
	tag := func(i int) int {
		if rev {
			return n - 1 - i
		}
		return i
	}
	if w.Rank() == 0 {
		if postedFirst {
			if err := w.Barrier(); err != nil {
				return err
			}
		}
		buf := make([]byte, 8)
		for i := 0; i < n; i++ {
			if err := w.Send(buf, comm.Byte, 1, i); err != nil {
				return err
			}
		}
		if !postedFirst {
			return w.Barrier()
		}
		return nil
	}
	if !postedFirst {
		if err := w.Barrier(); err != nil {
			return err
		}
	}
	bufs := make([]byte, 8*n)
	reqs := make([]*comm.Request, n)
	for i := range reqs {
		t := tag(i)
		var err error
		if reqs[i], err = w.Irecv(bufs[8*t:8*t+8], comm.Byte, 0, t); err != nil {
			return err
		}
	}
	if postedFirst {
		if err := w.Barrier(); err != nil {
			return err
		}
	}
	return comm.WaitAll(reqs...)
}
