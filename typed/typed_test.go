package typed_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

type celsius float64

// roundTrip sends vals from rank 0 to rank 1 four ways (blocking, Isend,
// Ssend, owned) and checks that they arrive bit for bit with Count in
// elements.
func roundTrip[T typed.Number](t *testing.T, vals []T) {
	t.Helper()
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[T](w)
		if w.Rank() == 0 {
			if err := c.Send(vals, 1, 0); err != nil {
				return err
			}
			r, err := c.Isend(vals, 1, 1)
			if err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
			if err := c.Ssend(vals, 1, 2); err != nil {
				return err
			}
			return c.SendOwned(append([]T(nil), vals...), 1, 3)
		}
		for tag := 0; tag < 3; tag++ {
			got := make([]T, len(vals)+1)
			st, err := c.Recv(got, 0, tag)
			if err != nil {
				return err
			}
			if st.Count != len(vals) || !equal(got[:st.Count], vals) {
				return fmt.Errorf("tag %d: got %v (count %d), want %v", tag, got, st.Count, vals)
			}
		}
		got, st, err := c.RecvOwned(0, 3)
		if err != nil || st.Count != len(vals) || !equal(got, vals) {
			return fmt.Errorf("owned: %v %v %v", got, st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAllNumericTypes(t *testing.T) {
	t.Run("int8", func(t *testing.T) { roundTrip(t, []int8{math.MinInt8, -1, 0, 1, math.MaxInt8}) })
	t.Run("int16", func(t *testing.T) { roundTrip(t, []int16{math.MinInt16, -1, 0, math.MaxInt16}) })
	t.Run("int32", func(t *testing.T) { roundTrip(t, []int32{math.MinInt32, -1, 0, math.MaxInt32}) })
	t.Run("int64", func(t *testing.T) { roundTrip(t, []int64{math.MinInt64, -1, 0, math.MaxInt64}) })
	t.Run("int", func(t *testing.T) { roundTrip(t, []int{math.MinInt, -1, 0, math.MaxInt}) })
	t.Run("uint8", func(t *testing.T) { roundTrip(t, []uint8{0, 1, 255}) })
	t.Run("uint16", func(t *testing.T) { roundTrip(t, []uint16{0, 1, math.MaxUint16}) })
	t.Run("uint32", func(t *testing.T) { roundTrip(t, []uint32{0, 1, math.MaxUint32}) })
	t.Run("uint64", func(t *testing.T) { roundTrip(t, []uint64{0, 1, math.MaxUint64}) })
	t.Run("uint", func(t *testing.T) { roundTrip(t, []uint{0, 1, math.MaxUint}) })
	t.Run("uintptr", func(t *testing.T) { roundTrip(t, []uintptr{0, 1, ^uintptr(0)}) })
	t.Run("float32", func(t *testing.T) {
		roundTrip(t, []float32{0, -1.5, math.MaxFloat32, float32(math.Inf(-1)), math.SmallestNonzeroFloat32})
	})
	t.Run("float64", func(t *testing.T) {
		roundTrip(t, []float64{0, -1.5, math.MaxFloat64, math.Inf(1), math.SmallestNonzeroFloat64})
	})
	t.Run("complex64", func(t *testing.T) { roundTrip(t, []complex64{0, 1 + 2i, -3.5i}) })
	t.Run("complex128", func(t *testing.T) { roundTrip(t, []complex128{0, 1 + 2i, complex(math.MaxFloat64, -1)}) })
	t.Run("named", func(t *testing.T) { roundTrip(t, []celsius{-40, 100}) })
	t.Run("empty", func(t *testing.T) { roundTrip(t, []float64{}) })
	t.Run("large", func(t *testing.T) {
		v := make([]float64, 300_000)
		for i := range v {
			v[i] = float64(i) * 0.5
		}
		roundTrip(t, v)
	})
}

// A named type travels as its underlying kind.
func TestNamedTypeMatchesUnderlying(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return typed.Of[celsius](w).Send([]celsius{21.5}, 1, 0)
		}
		got := make([]float64, 1)
		_, err := typed.Of[float64](w).Recv(got, 0, 0)
		if got[0] != 21.5 {
			return fmt.Errorf("got %v", got)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTypeCheckAndBytes(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		f := typed.Of[float64](w)
		if w.Rank() == 0 {
			for i := 0; i < 3; i++ {
				if err := f.Send([]float64{1, 2}, 1, 0); err != nil {
					return err
				}
			}
			return nil
		}
		if _, err := typed.Of[int32](w).Recv(make([]int32, 4), 0, 0); !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("float64 as int32: %v", err)
		}
		st, err := f.Probe(0, 0)
		if err != nil || st.Count != 2 {
			return fmt.Errorf("probe: %v %v", st, err)
		}
		b := make([]byte, 16)
		st, err = typed.Of[byte](w).Recv(b, 0, 0)
		if err != nil || st.Count != 16 || *(*float64)(unsafe.Pointer(&b[8])) != 2 {
			return fmt.Errorf("as bytes: %v %v", st, err)
		}
		if _, err := f.Recv(make([]float64, 1), 0, 0); !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("truncation: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSendrecvRing(t *testing.T) {
	const n = 7
	err := mpgo.Run(n, func(w *comm.Comm) error {
		c := typed.Of[int64](w)
		r := w.Rank()
		send := []int64{int64(r), int64(r * r)}
		recv := make([]int64, 2)
		st, err := c.Sendrecv(send, (r+1)%n, 1, recv, (r-1+n)%n, 1)
		if err != nil {
			return err
		}
		p := int64((r - 1 + n) % n)
		if st.Count != 2 || recv[0] != p || recv[1] != p*p {
			return fmt.Errorf("rank %d got %v", r, recv)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Blocking typed Send/Recv allocate nothing in steady state; non-blocking
// operations allocate the Request and nothing else.
func TestAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a normal build")
	}
	for _, size := range []int{1, 1 << 10, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			var blocking, nonblocking float64
			err := mpgo.Run(2, func(w *comm.Comm) error {
				c := typed.Of[float64](w)
				buf := make([]float64, size)
				peer := 1 - w.Rank()
				if w.Rank() == 1 {
					for i := 0; i < 2*(200+1); i++ {
						if _, err := c.Recv(buf, 0, 0); err != nil {
							return err
						}
						if err := c.Send(buf, 0, 0); err != nil {
							return err
						}
					}
					return nil
				}
				var err error
				blocking = testing.AllocsPerRun(200, func() {
					if e := c.Send(buf, peer, 0); e != nil {
						err = e
					}
					if _, e := c.Recv(buf, peer, 0); e != nil {
						err = e
					}
				})
				nonblocking = testing.AllocsPerRun(200, func() {
					s, e1 := c.Isend(buf, peer, 0)
					r, e2 := c.Irecv(buf, peer, 0)
					if e := errors.Join(e1, e2, comm.WaitAll(s, r)); e != nil {
						err = e
					}
				})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if blocking != 0 {
				t.Errorf("blocking Send+Recv: %v allocations, want 0", blocking)
			}
			if nonblocking > 2 {
				t.Errorf("Isend+Irecv+WaitAll: %v allocations, want at most 2", nonblocking)
			}
		})
	}
}

// Eager messages that arrive before their receive are copied into the
// world's buffer.Pool: steady state allocates nothing on either side (the
// runtime's count covers both ranks; rank 1 keeps step with rank 0's
// AllocsPerRun, which makes one warm-up call and then runs).
func TestEagerUnexpectedAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a normal build")
	}
	const runs = 300
	var allocs float64
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		buf := make([]float64, 512) // 4 KiB: eager
		var err error
		if w.Rank() == 0 {
			allocs = testing.AllocsPerRun(runs, func() {
				if e := c.Send(buf, 1, 1); e != nil {
					err = e
				}
				if _, e := c.Recv(buf[:0], 1, 2); e != nil {
					err = e
				}
			})
			return err
		}
		for i := 0; i < runs+1; i++ {
			if _, err := c.Probe(0, 1); err != nil { // the message waits as unexpected
				return err
			}
			if _, err := c.Recv(buf, 0, 1); err != nil {
				return err
			}
			if err := c.Send(buf[:0], 0, 2); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("eager unexpected path: %v allocations per message, want 0", allocs)
	}
}
