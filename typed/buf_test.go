package typed_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/buffer"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// A Buf passed around a ring with SendBuf/RecvBuf is the same memory at
// every stop, and the steady-state pipeline allocates nothing.
func TestBufPipeline(t *testing.T) {
	const n, laps = 4, 50
	pool, err := buffer.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	err = mpgo.Run(n, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		next, prev := (w.Rank()+1)%n, (w.Rank()+n-1)%n
		var b *buffer.Buf
		if w.Rank() == 0 {
			var err error
			if b, err = pool.Alloc(1024 * 8); err != nil {
				return err
			}
			v, _ := buffer.View[float64](b)
			v[0] = 0
			b.Unview()
		}
		for lap := 0; lap < laps; lap++ {
			if w.Rank() != 0 || lap > 0 {
				got, st, err := c.RecvBuf(prev, 0)
				if err != nil {
					return err
				}
				if st.Count != 1024 || (b != nil && got != b) {
					return fmt.Errorf("lap %d: got %p (count %d), want the Buf %p", lap, got, st.Count, b)
				}
				b = got
			}
			v, err := buffer.View[float64](b)
			if err != nil {
				return err
			}
			v[0]++
			b.Unview()
			if err := c.SendBuf(b, next, 0); err != nil {
				return err
			}
		}
		if w.Rank() == 0 {
			b, _, err := c.RecvBuf(prev, 0)
			if err != nil {
				return err
			}
			v, _ := buffer.View[float64](b)
			if v[0] != n*laps {
				return fmt.Errorf("token %v, want %d", v[0], n*laps)
			}
			b.Unview()
			return b.Free()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := pool.Stats(); st.InUse != 0 {
		t.Errorf("pool has %d bytes in use after the pipeline", st.InUse)
	}
}

func TestBufHandoffAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a normal build")
	}
	const runs = 300
	var allocs float64
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[int64](w)
		if w.Rank() == 1 {
			for i := 0; i < runs+1; i++ {
				b, _, err := c.RecvBuf(0, 0)
				if err != nil {
					return err
				}
				if err := c.SendBuf(b, 0, 0); err != nil {
					return err
				}
			}
			return nil
		}
		pool, err := buffer.NewPool()
		if err != nil {
			return err
		}
		defer pool.Close()
		b, err := pool.Alloc(4096)
		if err != nil {
			return err
		}
		allocs = testing.AllocsPerRun(runs, func() {
			if e := c.SendBuf(b, 1, 0); e != nil {
				err = e
			}
			if b, _, err = c.RecvBuf(1, 0); err != nil {
				return
			}
		})
		if err != nil {
			return err
		}
		return b.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("SendBuf+RecvBuf round trip: %v allocations, want 0", allocs)
	}
}

// A Buf received by a plain Recv is copied from and freed by mpgo; a
// plain send received with RecvBuf arrives in a Buf of the run's own.
func TestBufMixedWithCopies(t *testing.T) {
	pool, _ := buffer.NewPool()
	defer pool.Close()
	var sent *buffer.Buf
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[int32](w)
		if w.Rank() == 0 {
			b, err := pool.Alloc(16)
			if err != nil {
				return err
			}
			v, _ := buffer.View[int32](b)
			copy(v, []int32{1, 2, 3, 4})
			b.Unview()
			sent = b
			if err := c.SendBuf(b, 1, 0); err != nil {
				return err
			}
			return c.Send([]int32{5, 6}, 1, 1)
		}
		got := make([]int32, 4)
		if _, err := c.Recv(got, 0, 0); err != nil || got[3] != 4 {
			return fmt.Errorf("plain receive of a Buf: %v %v", got, err)
		}
		b, st, err := c.RecvBuf(0, 1)
		if err != nil || st.Count != 2 {
			return fmt.Errorf("RecvBuf of a plain send: %v %v", st, err)
		}
		v, _ := buffer.View[int32](b)
		if v[0] != 5 || v[1] != 6 {
			return fmt.Errorf("RecvBuf copy: %v", v)
		}
		b.Unview()
		return b.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sent.Free(); !errors.Is(err, buffer.ErrDoubleFree) && !errors.Is(err, buffer.ErrFreed) {
		t.Errorf("the Buf a plain receive copied from should be freed already: Free = %v", err)
	}
	if st := pool.Stats(); st.InUse != 0 {
		t.Errorf("pool has %d bytes in use", st.InUse)
	}
}

func TestSendBufErrors(t *testing.T) {
	err := mpgo.Run(1, func(w *comm.Comm) error {
		c := typed.Of[byte](w)
		if err := c.SendBuf(nil, 0, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("nil Buf: %v", err)
		}
		pool, _ := buffer.NewPool()
		defer pool.Close()
		b, _ := pool.Alloc(8)
		b.Free()
		if err := c.SendBuf(b, 0, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("freed Buf: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
