package comm_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// TestGateStress runs many shared-memory barriers back to back, with
// ranks that arrive late by a yield or a sleep at random, so that waiters
// go through every path of the gate (open while polling, asleep on
// another sleeper's request, opened between the poll and the sleep), and
// checks that no rank ever leaves a barrier before every rank reached it.
func TestGateStress(t *testing.T) {
	iters := 3000
	if testing.Short() {
		iters = 500
	}
	for _, n := range []int{2, 3, 5, 17, 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			arrived := make([]atomic.Int32, iters)
			err := mpgo.Run(n, func(w *comm.Comm) error {
				if err := w.SetAlgorithm(comm.CollBarrier, comm.AlgSharedMemory); err != nil {
					return err
				}
				rng := rand.New(rand.NewPCG(uint64(w.Rank()), 7))
				for i := range iters {
					switch rng.IntN(16) {
					case 0:
						time.Sleep(time.Duration(rng.IntN(40)) * time.Microsecond)
					case 1, 2:
						runtime.Gosched()
					}
					arrived[i].Add(1)
					if err := w.Barrier(); err != nil {
						return err
					}
					if got := arrived[i].Load(); got != int32(n) {
						return fmt.Errorf("barrier %d: rank %d left with %d of %d ranks arrived", i, w.Rank(), got, n)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
