package comm_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// BenchmarkCollBarrier times small-message barriers as osu_barrier does
// (average per call, maximum over ranks: the osu-ns metric): Barrier as it
// is, and the barrier with a choice of algorithm (BarrierAlg), each
// algorithm pinned; beside a barrier of plain goroutines on a sync.Cond
// broadcast, the floor for waking n goroutines.
func BenchmarkCollBarrier(b *testing.B) {
	for _, n := range []int{2, 8, 64} {
		b.Run(fmt.Sprintf("n=%d/cond", n), func(b *testing.B) { condBarrier(b, n) })
		b.Run(fmt.Sprintf("n=%d/Barrier", n), func(b *testing.B) {
			osuBarrier(b, n, comm.AlgAuto, false)
		})
		for _, alg := range comm.Algorithms(comm.CollBarrier) {
			if alg == comm.AlgHierarchical {
				continue // needs ranks in several processes: BenchmarkHierarchical
			}
			b.Run(fmt.Sprintf("n=%d/%v", n, alg), func(b *testing.B) {
				osuBarrier(b, n, alg, true)
			})
		}
	}
}

// condBarrier: n goroutines meet b.N times at a barrier made of a mutex,
// a counter and a sync.Cond broadcast.
func condBarrier(b *testing.B, n int) {
	var (
		mu         sync.Mutex
		cond       = sync.NewCond(&mu)
		count, gen int
		wg         sync.WaitGroup
	)
	elapsed := make([]time.Duration, n)
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				mu.Lock()
				if count++; count == n {
					count, gen = 0, gen+1
					cond.Broadcast()
				} else {
					for g := gen; g == gen; {
						cond.Wait()
					}
				}
				mu.Unlock()
			}
			elapsed[r] = time.Since(start)
		}()
	}
	wg.Wait()
	var worst time.Duration
	for _, e := range elapsed {
		worst = max(worst, e)
	}
	b.ReportMetric(float64(worst.Nanoseconds())/float64(b.N), "osu-ns")
}

func osuBarrier(b *testing.B, n int, alg comm.Algorithm, choice bool) {
	elapsed := make([]time.Duration, n)
	err := mpgo.Run(n, func(w *comm.Comm) error {
		barrier := w.Barrier
		if choice {
			if err := w.SetAlgorithm(comm.CollBarrier, alg); err != nil {
				return err
			}
			barrier = w.BarrierAlg
		}
		for i := 0; i < 10; i++ {
			if err := barrier(); err != nil {
				return err
			}
		}
		if w.Rank() == 0 {
			b.ResetTimer()
		}
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := barrier(); err != nil {
				return err
			}
		}
		elapsed[w.Rank()] = time.Since(start)
		if w.Rank() == 0 {
			b.StopTimer()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var worst time.Duration
	for _, e := range elapsed {
		worst = max(worst, e)
	}
	b.ReportMetric(float64(worst.Nanoseconds())/float64(b.N), "osu-ns")
}
