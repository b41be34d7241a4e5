package typed_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// runEach runs fn on n ranks and returns each rank's error; the run itself
// must end cleanly (no deadlock, no abort): a bad argument on one rank
// leaves none of the others waiting.
func runEach(t *testing.T, n int, fn func(w *comm.Comm) error) []error {
	t.Helper()
	errs := make([]error, n)
	err := mpgo.Run(n, func(w *comm.Comm) error {
		errs[w.Rank()] = fn(w)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return errs
}

// Counts and displacements in elements of T whose size in bytes
// overflows an int fail with ErrArg, in the typed v-collectives as in
// comm's.
func TestTypedVectorOverflow(t *testing.T) {
	errs := runEach(t, 3, func(w *comm.Comm) error {
		c := typed.Of[complex128](w)
		return c.Allgatherv([]complex128{1}, make([]complex128, 3), []int{1, 1, 1}, []int{0, 1, 1 << 60})
	})
	for r, err := range errs {
		if !errors.Is(err, comm.ErrArg) {
			t.Errorf("Allgatherv, displacement 1<<60 of complex128: rank %d: %v, want ErrArg", r, err)
		}
	}
	errs = runEach(t, 3, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		r, err := c.Igatherv([]float64{1}, make([]float64, 3), []int{1, 1, 1<<61 + 1}, nil, 0)
		if err != nil {
			return err
		}
		_, err = r.Wait()
		return err
	})
	if !errors.Is(errs[0], comm.ErrArg) {
		t.Errorf("Igatherv, count 1<<61+1 of float64: the root: %v, want ErrArg", errs[0])
	}
}

// ReduceScatter's counts: one rank's that overflow fail there with ErrArg,
// and the other ranks fail too instead of waiting for it.
func TestReduceScatterOverflow(t *testing.T) {
	const n = 3
	for _, bad := range [][]int{{1, 1 << 61, 1}, {1, -1, 3}, {1 << 62, 1 << 62, 1 << 62}} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			errs := runEach(t, n, func(w *comm.Comm) error {
				c := typed.Of[float64](w)
				counts := []int{1, 1, 1}
				if w.Rank() == 1 {
					counts = bad
				}
				err := c.ReduceScatter([]float64{1, 2, 3}, make([]float64, 1), counts, typed.Sum[float64])
				if err := c.Barrier(); err != nil { // still usable
					return err
				}
				return err
			})
			if !errors.Is(errs[1], comm.ErrArg) {
				t.Errorf("rank 1: %v, want ErrArg", errs[1])
			}
			for r, err := range errs {
				if err == nil {
					t.Errorf("rank %d succeeded", r)
				}
			}
		})
	}
}

// Layouts whose element count overflows fail with ErrArg: repeating a
// layout whose count exceeds its extent (overlapping blocks).
func TestLayoutOverflow(t *testing.T) {
	v, err := typed.Vector(1<<40, 1, 0) // 2^40 elements, all the first: extent 1
	if err != nil {
		t.Fatal(err)
	}
	if r, err := v.Repeat(1 << 40); !errors.Is(err, comm.ErrArg) {
		t.Errorf("Repeat(1<<40) of %v: %v (count %d), want ErrArg", v, err, r.Count())
	}
	ix, err := typed.Indexed([]int{1 << 57, 1 << 57}, []int{0, 0}) // 2^58 elements, extent 2^57
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ix.Repeat(3); !errors.Is(err, comm.ErrArg) { // 3·2^58 elements: 16 bytes each overflow an int
		t.Errorf("Repeat(3) of %v: %v (count %d), want ErrArg", ix, err, r.Count())
	}
}

// A neighbourhood v-collective whose counts are bad on one rank (they
// overflow, or overrun its buffer) fails there with ErrArg, and its
// neighbours fail too instead of waiting for its blocks: blocking,
// non-blocking and persistent forms.
func TestNeighborVectorBadOnOneRank(t *testing.T) {
	const n = 4
	for _, form := range []string{"blocking", "non-blocking", "persistent"} {
		t.Run(form, func(t *testing.T) {
			errs := runEach(t, n, func(w *comm.Comm) error {
				ring, err := w.CartCreate([]int{n}, []bool{true}, false)
				if err != nil {
					return err
				}
				send, recv := []int32{1, 2}, make([]int32, 4)
				counts := []int{2, 2}
				if w.Rank() == 2 {
					counts = []int{2, 1 << 62}
				}
				var r *comm.Request
				switch form {
				case "blocking":
					err = typed.NeighborAllgatherv(ring, send, recv, counts, nil)
				case "non-blocking":
					r, err = typed.IneighborAllgatherv(ring, send, recv, counts, nil)
				default:
					if r, err = typed.NeighborAllgathervInit(ring, send, recv, counts, nil); err == nil {
						err = r.Start()
					}
				}
				if err == nil && r != nil {
					_, err = r.Wait()
				}
				if err := ring.Barrier(); err != nil { // still usable
					return err
				}
				return err
			})
			if !errors.Is(errs[2], comm.ErrArg) {
				t.Errorf("rank 2: %v, want ErrArg", errs[2])
			}
			for _, r := range []int{1, 3} { // rank 2's neighbours
				if errs[r] == nil {
					t.Errorf("rank %d (a neighbour of rank 2) succeeded", r)
				}
			}
		})
	}
}
