package typed_test

import (
	"sync/atomic"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// BenchmarkWindow times one-sided operations on goroutine ranks, each with
// its Flush, as osu_put_latency, osu_get_latency and osu_fop_latency do
// (rank 0 locks rank 1's part once; rank 1 waits in a barrier), beside the
// baselines of what they do to memory: copy() of 8 bytes and an atomic
// add.
func BenchmarkWindow(b *testing.B) {
	ops := []struct {
		name string
		op   func(w *typed.Window[int64], buf []int64) error
	}{
		{"Put8B", func(w *typed.Window[int64], buf []int64) error { return w.Put(buf, 1, 0) }},
		{"Get8B", func(w *typed.Window[int64], buf []int64) error { return w.Get(buf, 1, 0) }},
		{"Accumulate8B", func(w *typed.Window[int64], buf []int64) error { return w.Accumulate(buf, 1, 0, typed.Sum[int64]) }},
		{"FetchAndOp", func(w *typed.Window[int64], _ []int64) error {
			_, err := w.FetchAndOp(1, 1, 0, typed.Sum[int64])
			return err
		}},
		{"CompareAndSwap", func(w *typed.Window[int64], _ []int64) error {
			_, err := w.CompareAndSwap(0, 0, 1, 0)
			return err
		}},
	}
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			err := mpgo.Run(2, func(c *comm.Comm) error {
				w, _, err := typed.AllocWindow[int64](c, 1)
				if err != nil {
					return err
				}
				if c.Rank() == 0 {
					if err := w.Lock(1, false); err != nil {
						return err
					}
					buf := []int64{1}
					b.ResetTimer()
					for range b.N {
						if err := o.op(w, buf); err != nil {
							return err
						}
						if err := w.Flush(1); err != nil {
							return err
						}
					}
					b.StopTimer()
					if err := w.Unlock(1); err != nil {
						return err
					}
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				return w.Free()
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("baseline/copy8B", func(b *testing.B) {
		src, dst := []int64{1}, make([]int64, 1)
		for range b.N {
			copy(dst, src)
		}
	})
	b.Run("baseline/atomicAdd", func(b *testing.B) {
		var v atomic.Int64
		for range b.N {
			v.Add(1)
		}
	})
}

// BenchmarkWindowCreate times the collective creation and freeing of a
// window on 4 goroutine ranks: over a slice, and allocated (1 KiB and
// 1 GiB a rank, the latter never touched: mapped lazily).
func BenchmarkWindowCreate(b *testing.B) {
	for _, bc := range []struct {
		name string
		n    int
	}{{"New", -1}, {"Alloc1KiB", 128}, {"Alloc1GiB", 1 << 27}} {
		b.Run(bc.name, func(b *testing.B) {
			err := mpgo.Run(4, func(c *comm.Comm) error {
				base := make([]int64, 128)
				for range b.N {
					var w *typed.Window[int64]
					var err error
					if bc.n < 0 {
						w, err = typed.NewWindow(c, base)
					} else {
						w, _, err = typed.AllocWindow[int64](c, bc.n)
					}
					if err != nil {
						return err
					}
					if err := w.Free(); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
