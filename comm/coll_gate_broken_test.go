package comm_test

import (
	"errors"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// After the deadlock detector failed two ranks at a barrier's gate (the
// third was blocked in a receive nobody sends), the gate is broken: the
// next barrier fails on every rank with the deadlock as its cause, where
// the late rank would otherwise count itself in and open the old
// generation, and the others start a new one over slots it still reads.
func TestGateBrokenByDeadlock(t *testing.T) {
	var errs [3][2]error
	err := mpgo.Run(3, func(w *comm.Comm) error {
		if err := w.SetAlgorithm(comm.CollBarrier, comm.AlgSharedMemory); err != nil {
			return err
		}
		r := w.Rank()
		if r == 2 {
			_, errs[r][0] = w.Recv(make([]byte, 1), comm.Byte, 0, 9)
		} else {
			errs[r][0] = w.Barrier()
		}
		errs[r][1] = w.Barrier()
		return nil
	})
	if !errors.Is(err, comm.ErrDeadlock) { // Run reports the deadlock it saw
		t.Fatalf("Run: %v", err)
	}
	for r, e := range errs {
		for i, err := range e {
			if !errors.Is(err, comm.ErrDeadlock) {
				t.Errorf("rank %d, call %d: got %v, want an error wrapping ErrDeadlock", r, i, err)
			}
		}
	}
}
