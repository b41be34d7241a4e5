package typed_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// The logical operators reduce integers as truth values (0 false, any
// other true) to 1 or 0, against a sequential reference (on one rank the
// input itself, no op applied, as in MPI).
func TestLogicalOps(t *testing.T) {
	ref := map[string]func(a, b bool) bool{
		"LAnd": func(a, b bool) bool { return a && b },
		"LOr":  func(a, b bool) bool { return a || b },
		"LXor": func(a, b bool) bool { return a != b },
	}
	ops := map[string]typed.Op[int32]{"LAnd": typed.LAnd[int32], "LOr": typed.LOr[int32], "LXor": typed.LXor[int32]}
	for _, n := range rankCounts() {
		// Element j of rank r is true when bit r%… of a pattern is: every
		// mix of true and false shows up across the elements.
		input := func(r, j int) int32 {
			if (j>>(r%5))&1 == 1 {
				return int32(-3 + r) // any non-zero, negative ones too
			}
			return 0
		}
		const m = 40
		err := mpgo.Run(n, func(w *comm.Comm) error {
			c := typed.Of[int32](w)
			for _, name := range []string{"LAnd", "LOr", "LXor"} { // one order on every rank
				op := ops[name]
				send := make([]int32, m)
				for j := range send {
					send[j] = input(w.Rank(), j)
				}
				got := make([]int32, m)
				if err := c.Allreduce(send, got, op); err != nil {
					return err
				}
				for j := range got {
					want := input(0, j) != 0
					for r := 1; r < n; r++ {
						want = ref[name](want, input(r, j) != 0)
					}
					wantV := map[bool]int32{false: 0, true: 1}[want]
					if n == 1 {
						wantV = input(0, j) // one rank: no op applied, as in MPI
					}
					if got[j] != wantV {
						return fmt.Errorf("%s element %d on %d ranks: %d, want %v", name, j, n, got[j], want)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// ReduceLocal puts in on the left of op: with a non-commutative op it
// computes in op inout, as a reduction over ranks would with in the lower
// rank's.
func TestReduceLocal(t *testing.T) {
	// Composition of affine maps x -> a*x + b, stored as (a, b) pairs: not
	// commutative.
	compose := func(inout, in [][2]float64) {
		for i := range inout {
			a, b := inout[i], in[i]
			inout[i] = [2]float64{a[0] * b[0], a[0]*b[1] + a[1]}
		}
	}
	in := [][2]float64{{2, 1}}
	inout := [][2]float64{{3, 5}}
	if err := typed.ReduceLocal(in, inout, compose); err != nil {
		t.Fatal(err)
	}
	if want := [2]float64{6, 2*5 + 1}; inout[0] != want {
		t.Fatalf("ReduceLocal = %v, want %v (in applied last)", inout[0], want)
	}
	if err := typed.ReduceLocal(in, nil, compose); !errors.Is(err, comm.ErrArg) {
		t.Fatalf("ReduceLocal of 1 element into 0: %v", err)
	}
	if err := typed.ReduceLocal(in, inout, nil); !errors.Is(err, comm.ErrArg) {
		t.Fatalf("ReduceLocal with a nil op: %v", err)
	}
}

// SendrecvReplace shifts values round a ring through one buffer.
func TestSendrecvReplace(t *testing.T) {
	for _, n := range []int{1, 2, 5, 17} {
		err := mpgo.Run(n, func(w *comm.Comm) error {
			c := typed.Of[int64](w)
			me := w.Rank()
			buf := []int64{int64(me), int64(me * 10)}
			for step := 1; step <= 3; step++ {
				st, err := c.SendrecvReplace(buf, (me+1)%n, 0, (me+n-1)%n, 0)
				if err != nil {
					return err
				}
				from := ((me-step)%n + n) % n
				if buf[0] != int64(from) || buf[1] != int64(from*10) || st.Count != 2 {
					return fmt.Errorf("step %d on %d ranks: %v, status %+v", step, n, buf, st)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// ReduceScatter with uneven counts (zeros among them) against a
// sequential reference; bad counts fail on every rank.
func TestReduceScatter(t *testing.T) {
	for _, n := range rankCounts() {
		counts := make([]int, n)
		total := 0
		for i := range counts {
			counts[i] = (i * 7) % 4 // 0..3, zeros included
			total += counts[i]
		}
		err := mpgo.Run(n, func(w *comm.Comm) error {
			c := typed.Of[float64](w)
			me := w.Rank()
			send := make([]float64, total)
			for j := range send {
				send[j] = float64(me*1000 + j)
			}
			recv := make([]float64, counts[me])
			if err := c.ReduceScatter(send, recv, counts, typed.Sum[float64]); err != nil {
				return err
			}
			lo := 0
			for _, k := range counts[:me] {
				lo += k
			}
			for j, v := range recv {
				want := 0.0
				for r := range n {
					want += float64(r*1000 + lo + j)
				}
				if v != want {
					return fmt.Errorf("rank %d of %d, element %d: %v, want %v", me, n, j, v, want)
				}
			}
			bad := slices.Clone(counts)
			bad[0] = -1
			if err := c.ReduceScatter(send, recv, bad, typed.Sum[float64]); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("a negative count: %v", err)
			}
			if err := c.ReduceScatter(append(send, 1), recv, counts, typed.Sum[float64]); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("a send longer than the counts: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
