package typed_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Two goroutines of each rank call a typed collective on one typed Comm at
// once: one of them fails with comm.ErrConcurrent, the other completes
// with the right result, and nothing the typed Comm keeps (its cache of
// reduction operators) is raced on. The last rank calls only once every
// other rank has seen a failure, so the two calls of a rank overlap.
func TestTypedConcurrentCollectives(t *testing.T) {
	const n = 3
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var failed atomic.Int32
	err := mpgo.Run(n, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		me := w.Rank()
		want := float64(n * (n - 1) / 2)
		if me == n-1 {
			for failed.Load() < n-1 && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			out := make([]float64, 1)
			if err := c.Allreduce([]float64{float64(me)}, out, typed.Sum[float64]); err != nil {
				return err
			}
			if out[0] != want {
				return fmt.Errorf("rank %d: %v, want %v", me, out[0], want)
			}
			return nil
		}
		var wg sync.WaitGroup
		var errs [2]error
		outs := [2][]float64{make([]float64, 1), make([]float64, 1)}
		for g := range 2 {
			wg.Go(func() {
				sum := func(inout, in []float64) { typed.Sum(inout, in) } // a new operator: cached at the call
				errs[g] = c.Allreduce([]float64{float64(me)}, outs[g], sum)
				if errs[g] != nil {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		won := 0
		if errs[0] != nil {
			won = 1
		}
		switch {
		case !errors.Is(errs[1-won], comm.ErrConcurrent):
			return fmt.Errorf("rank %d: %v and %v, want one ErrConcurrent", me, errs[0], errs[1])
		case errs[won] != nil:
			return errs[won]
		case outs[won][0] != want:
			return fmt.Errorf("rank %d: %v, want %v", me, outs[won][0], want)
		}
		return nil
	}, mpgo.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
}
