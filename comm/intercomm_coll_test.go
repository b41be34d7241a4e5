package comm_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// The intercommunicator collectives between the even and the odd world
// ranks, groups of unequal sizes included, against their definitions:
// each group gets the other's data.
func TestIntercommCollectives(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		var entered atomic.Int32
		err := mpgo.Run(n, func(w *comm.Comm) error {
			local, ic, even, err := halves(w)
			if err != nil {
				return err
			}
			me, rn := ic.Rank(), ic.RemoteSize()
			// The world rank of remote rank r.
			remoteWorld := func(r int) int {
				if even {
					return 2*r + 1
				}
				return 2 * r
			}
			entered.Add(1)
			if err := ic.Barrier(); err != nil {
				return err
			}
			if got := entered.Load(); got != int32(n) {
				return fmt.Errorf("left the barrier with %d of %d ranks in", got, n)
			}
			// Bcast from even rank 0 to the odd group, then from odd rank
			// rn-1 (or local-1) to the even group.
			for _, from := range []bool{true, false} {
				buf := make([]byte, 8)
				root := comm.ProcNull
				switch {
				case even == from && me == 0:
					root = comm.Root
					copy(buf, payload(8, 77))
				case even == from:
				default:
					root = 0
				}
				if err := ic.Bcast(buf, comm.Byte, root); err != nil {
					return err
				}
				if even != from && val(buf) != 77 {
					return fmt.Errorf("Bcast received %d", val(buf))
				}
			}
			// Allreduce: the sum of the other group's world ranks.
			send := payload(8, uint64(w.Rank()))
			recv := make([]byte, 8)
			sumOp := func(inout, in []byte) {
				copy(inout, payload(8, val(inout)+val(in)))
			}
			if err := ic.Allreduce(send, recv, comm.Byte, sumOp); err != nil {
				return err
			}
			want := uint64(0)
			for r := range rn {
				want += uint64(remoteWorld(r))
			}
			if val(recv) != want {
				return fmt.Errorf("Allreduce: %d, want %d", val(recv), want)
			}
			// Allgather: the other group's world ranks, in their order.
			all := make([]byte, 8*rn)
			if err := ic.Allgather(send, all, comm.Byte); err != nil {
				return err
			}
			for r := range rn {
				if val(all[8*r:]) != uint64(remoteWorld(r)) {
					return fmt.Errorf("Allgather block %d: %d", r, val(all[8*r:]))
				}
			}
			// Alltoall: block j names (sender, j).
			out := make([]byte, 8*rn)
			for j := range rn {
				copy(out[8*j:], payload(8, uint64(w.Rank()*100+j)))
			}
			back := make([]byte, 8*rn)
			if err := ic.Alltoall(out, back, comm.Byte); err != nil {
				return err
			}
			for i := range rn {
				if val(back[8*i:]) != uint64(remoteWorld(i)*100+me) {
					return fmt.Errorf("Alltoall block %d: %d", i, val(back[8*i:]))
				}
			}
			return local.Free()
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
	}
}

// Lengths that differ between the groups fail the collective on every
// rank of both, and the intercomm goes on working.
func TestIntercommCollectiveErrors(t *testing.T) {
	run(t, 5, func(w *comm.Comm) error {
		_, ic, even, err := halves(w)
		if err != nil {
			return err
		}
		k := 8
		if even {
			k = 16
		}
		recv := make([]byte, k)
		err = ic.Allreduce(make([]byte, k), recv, comm.Byte, func(inout, in []byte) {})
		if !errors.Is(err, comm.ErrTruncate) && !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("rank %d: Allreduce of %d bytes against the other group's: %v", w.Rank(), k, err)
		}
		if err := ic.Alltoall(make([]byte, 8*ic.RemoteSize()+1), make([]byte, 8*ic.RemoteSize()), comm.Byte); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Alltoall of a send buffer that is not whole blocks: %v", err)
		}
		if err := ic.Barrier(); err != nil {
			return fmt.Errorf("Barrier after the failures: %v", err)
		}
		var nilIC *comm.Intercomm
		if err := nilIC.Barrier(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Barrier on nil: %v", err)
		}
		return nil
	})
}
