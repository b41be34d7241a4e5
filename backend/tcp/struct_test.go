package tcp_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/typed"
)

// Struct element types between processes over TCP, through package
// typed: the layout's fingerprint crosses the wire, so particles arrive as
// particles (point to point, eager and rendezvous, and in collectives with
// a user operator), while a receive of another layout fails with
// comm.ErrType in the receiving process, and so does a collective whose
// ranks disagree, on every rank.
func TestTCPStructTypes(t *testing.T) {
	type particle struct {
		X, Y, Z float64
		ID      int32
		Kind    uint8
	}
	type reordered struct {
		ID      int32
		Kind    uint8
		X, Y, Z float64
	}
	mk := func(r, n int) []particle {
		ps := make([]particle, n)
		for i := range ps {
			ps[i] = particle{X: float64(r), Y: float64(i), ID: int32(1000*r + i), Kind: uint8(r)}
		}
		return ps
	}
	for _, s := range []devicetest.Shape{{Procs: 3, Ranks: 1}, {Procs: 2, Ranks: 2, Eager: 1024}} {
		t.Run(s.String(), func(t *testing.T) {
			errs := playTCP(t, s, func(w *comm.Comm) error {
				c := typed.Of[particle](w)
				n, me := w.Size(), w.Rank()
				next, prev := (me+1)%n, (me+n-1)%n
				for _, k := range []int{3, 10000} { // eager, rendezvous
					got := make([]particle, k)
					st, err := c.Sendrecv(mk(me, k), next, 1, got, prev, 1)
					if err != nil {
						return err
					}
					if want := mk(prev, k); st.Count != k || got[k-1] != want[k-1] || got[0] != want[0] {
						return fmt.Errorf("ring of %d: %v, got %+v, want %+v", k, st, got[k-1], want[k-1])
					}
					// The same particles, received as another layout.
					r, err := c.Isend(mk(me, k), next, 2)
					if err != nil {
						return err
					}
					_, err = typed.Of[reordered](w).Recv(make([]reordered, k), prev, 2)
					if !errors.Is(err, comm.ErrType) {
						return fmt.Errorf("particles of %d received as another layout: %v, want ErrType", k, err)
					}
					if _, err := r.Wait(); err != nil {
						return err
					}
				}
				// A user reduction over every process.
				sum := make([]particle, 1)
				err := c.Allreduce(mk(me, 1), sum, func(inout, in []particle) {
					for i := range inout {
						inout[i].X += in[i].X
						inout[i].ID = max(inout[i].ID, in[i].ID)
					}
				})
				if err != nil || sum[0].X != float64(n*(n-1)/2) || sum[0].ID != int32(1000*(n-1)) {
					return fmt.Errorf("allreduce: %+v %v", sum[0], err)
				}
				// Disagreeing ranks: ErrType everywhere.
				if me == n-1 {
					err = typed.Of[reordered](w).Allgather(make([]reordered, 2), make([]reordered, 2*n))
				} else {
					err = c.Allgather(mk(me, 2), make([]particle, 2*n))
				}
				if !errors.Is(err, comm.ErrType) {
					return fmt.Errorf("allgather of two layouts: %v, want ErrType", err)
				}
				return w.Barrier()
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}
