package comm_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// A shared-memory broadcast's root whose data is staged returns as soon as
// the others can read it, and ends the call in its next collective on the
// communicator (coll_shm.go: leave, settleLeft). These tests hold the
// others back so that the root leaves, and check what it may then run
// into.

// late holds the ranks but root back for a moment, so that root arrives
// first and leaves.
func late(w *comm.Comm, root int) {
	if w.Rank() != root {
		time.Sleep(2 * time.Millisecond)
	}
}

// The root runs ahead of late members by whole calls: each broadcast's
// data stays its own while the others still read the one before it, and
// the collectives after it (staging, combined rows, slots by parity)
// do not overwrite what a member has not read yet.
func TestBcastRootLeaves(t *testing.T) {
	for _, n := range []int{2, 3, 8} {
		run(t, n, func(w *comm.Comm) error {
			if err := w.SetAlgorithm(comm.CollBcast, comm.AlgSharedMemory); err != nil {
				return err
			}
			for i := range 40 {
				root := i % n
				if i%3 == 0 {
					late(w, root)
				}
				size := []int{8, 200, 4 << 10}[i%3]
				buf := garbage(size)
				if w.Rank() == root {
					buf = payload(size, uint64(1000*i+root))
				}
				if err := w.Bcast(buf, comm.Byte, root); err != nil {
					return fmt.Errorf("bcast %d: %w", i, err)
				}
				if string(buf) != string(payload(size, uint64(1000*i+root))) {
					return fmt.Errorf("bcast %d: rank %d got the wrong data", i, w.Rank())
				}
				switch i % 4 {
				case 1: // staged inputs, by parity
					recv := garbage(3 * esz)
					if err := w.Allreduce(input(w.Rank(), 3, i), recv, comm.Complex128, affine); err != nil {
						return fmt.Errorf("allreduce after bcast %d: %w", i, err)
					}
					if string(recv) != string(fold(0, n, 3, i)) {
						return fmt.Errorf("allreduce after bcast %d: rank %d: wrong result", i, w.Rank())
					}
				case 2:
					all := garbage(8 * n)
					if err := w.Allgather(payload(8, uint64(i*n+w.Rank())), all, comm.Byte); err != nil {
						return fmt.Errorf("allgather after bcast %d: %w", i, err)
					}
					for r := range n {
						if val(all[8*r:]) != uint64(i*n+r) {
							return fmt.Errorf("allgather after bcast %d: rank %d: block %d wrong", i, w.Rank(), r)
						}
					}
				case 3:
					if err := w.Barrier(); err != nil {
						return fmt.Errorf("barrier after bcast %d: %w", i, err)
					}
				}
			}
			return nil
		})
	}
}

// A member that disagrees with a root that left fails alone; the root's
// call succeeded, and the communicator goes on working. The mismatch
// that sends the other member to the call's second gate (it names itself
// root, with a buffer read in place) is passed by the root in its next
// call.
func TestBcastRootLeavesMismatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bcast func(w *comm.Comm) error // rank 1's call; rank 0's is Bcast(8 bytes, root 0)
		want  error
	}{
		{"count", func(w *comm.Comm) error { return w.Bcast(garbage(16), comm.Byte, 0) }, comm.ErrTruncate},
		{"type", func(w *comm.Comm) error { return w.Bcast(garbage(8), comm.Int64, 0) }, comm.ErrType},
		{"root, in place", func(w *comm.Comm) error { return w.Bcast(garbage(1<<20), comm.Byte, 1) }, comm.ErrArg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := make([]error, 2)
			run(t, 2, func(w *comm.Comm) error {
				if err := w.SetAlgorithm(comm.CollBcast, comm.AlgSharedMemory); err != nil {
					return err
				}
				late(w, 0)
				if w.Rank() == 0 {
					errs[0] = w.Bcast(payload(8, 7), comm.Byte, 0)
				} else {
					errs[1] = tc.bcast(w)
				}
				send, recv := input(w.Rank(), 3, 9), garbage(3*esz)
				if err := w.Allreduce(send, recv, comm.Complex128, affine); err != nil {
					return fmt.Errorf("the allreduce after: %w", err)
				}
				if string(recv) != string(fold(0, 2, 3, 9)) {
					return errors.New("the allreduce after: wrong result")
				}
				return nil
			})
			if errs[0] != nil {
				t.Errorf("root: %v, want nil (it left before rank 1 arrived)", errs[0])
			}
			if !errors.Is(errs[1], tc.want) {
				t.Errorf("rank 1: %v, want an error wrapping %v", errs[1], tc.want)
			}
		})
	}
}

// A root that left a call a member never reaches learns it in its next
// collective: it fails there, when the member's rank fails, and a
// deadlock there is reported, never a hang.
func TestBcastRootLeavesPeerGone(t *testing.T) {
	t.Run("failed", func(t *testing.T) {
		var rootErr error
		left := make(chan struct{}) // the root's Bcast returned: rank 1 fails only then
		err := mpgo.Run(2, func(w *comm.Comm) error {
			if w.Rank() == 1 {
				<-left
				return errors.New("rank 1 gives up")
			}
			err := w.Bcast(payload(8, 1), comm.Byte, 0)
			close(left)
			if err != nil {
				return err
			}
			rootErr = w.Barrier()
			return nil
		})
		if err == nil || rootErr == nil {
			t.Fatalf("run: %v, root's barrier: %v; want both to fail", err, rootErr)
		}
		if !errors.Is(rootErr, comm.ErrAborted) {
			t.Errorf("root's barrier: %v, want an error wrapping ErrAborted", rootErr)
		}
	})
	t.Run("deadlock", func(t *testing.T) {
		errs := make([]error, 2)
		mpgo.Run(2, func(w *comm.Comm) error { //nolint:errcheck // the ranks' errors are checked
			if w.Rank() == 1 {
				time.Sleep(2 * time.Millisecond)
				_, errs[1] = w.Recv(garbage(8), comm.Byte, 0, 0)
				return errs[1]
			}
			if err := w.Bcast(payload(8, 1), comm.Byte, 0); err != nil {
				return err
			}
			errs[0] = w.Barrier()
			return errs[0]
		})
		for r, err := range errs {
			if !errors.Is(err, comm.ErrDeadlock) {
				t.Errorf("rank %d: %v, want an error wrapping ErrDeadlock", r, err)
			}
		}
	})
}
