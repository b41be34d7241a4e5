package typed_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// BenchmarkOverlap is osu_iallreduce's and osu_ialltoall's overlap
// figure (OSU Micro-Benchmarks 7): every rank times the non-blocking
// collective started and waited for at once (pure), then started, a
// computation of that same length, and waited for (total); overlap % =
// 100·(1 − (total − compute)/pure): 100 when the collective progressed
// entirely behind the computation, 0 when it progressed only in Wait. The
// metric is rank 0's; ns/op is one start-compute-wait round.
//
// The computation is a busy loop, as OSU's dummy_compute: where ranks
// outnumber cores (4 ranks on this 2-core machine) the collective can
// only progress on a core a computing rank leaves, so the figure says
// how much spare core time the machine has as much as how well the
// collective progresses.
//
//	go test -run x -bench Overlap -benchtime 20x ./typed/
func BenchmarkOverlap(b *testing.B) {
	const size = 1 << 20
	for _, name := range []string{"Iallreduce", "Ialltoall"} {
		b.Run(fmt.Sprintf("%s/n=4/%dKiB", name, size>>10), func(b *testing.B) {
			var pure, total, compute time.Duration
			err := mpgo.Run(4, func(w *comm.Comm) error {
				c := typed.Of[float64](w)
				send, recv := make([]float64, size/8), make([]float64, size/8)
				start := func() (*comm.Request, error) {
					if name == "Iallreduce" {
						return c.Iallreduce(send, recv, typed.Sum[float64])
					}
					return c.Ialltoall(send, recv)
				}
				round := func(work time.Duration) (time.Duration, error) {
					if err := w.Barrier(); err != nil {
						return 0, err
					}
					t0 := time.Now()
					r, err := start()
					if err != nil {
						return 0, err
					}
					for t1 := time.Now(); time.Since(t1) < work; {
					}
					_, err = r.Wait()
					return time.Since(t0), err
				}
				for range 3 { // warm-up
					if _, err := round(0); err != nil {
						return err
					}
				}
				var p time.Duration
				for range b.N {
					d, err := round(0)
					if err != nil {
						return err
					}
					p += d
				}
				p /= time.Duration(b.N)
				if w.Rank() == 0 {
					b.ResetTimer()
				}
				var tot time.Duration
				for range b.N {
					d, err := round(p)
					if err != nil {
						return err
					}
					tot += d
				}
				if w.Rank() == 0 {
					pure, total, compute = p, tot/time.Duration(b.N), p
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			overlap := 100 * (1 - float64(total-compute)/float64(pure))
			b.ReportMetric(max(overlap, 0), "overlap-%")
			b.ReportMetric(float64(pure.Nanoseconds()), "pure-ns")
		})
	}
}
