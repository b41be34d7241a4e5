package comm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// IsLocal: every rank of a goroutine world is local; with processes, the
// ranks of the caller's own process are; ranks out of range are not.
func TestIsLocal(t *testing.T) {
	run(t, 3, func(w *comm.Comm) error {
		for r := range w.Size() {
			if !w.IsLocal(r) {
				return fmt.Errorf("rank %d: IsLocal(%d) = false in a goroutine world", w.Rank(), r)
			}
		}
		if w.IsLocal(-1) || w.IsLocal(w.Size()) || w.IsLocal(comm.AnySource) {
			return fmt.Errorf("IsLocal of a rank out of range")
		}
		return nil
	})
	var nilComm *comm.Comm
	if nilComm.IsLocal(0) {
		t.Error("IsLocal on a nil communicator")
	}
	const procs, k = 2, 2
	for r, err := range runProcs(t, procs, k, func(w *comm.Comm) error {
		for q := range w.Size() {
			if got, want := w.IsLocal(q), q/k == w.Rank()/k; got != want {
				return fmt.Errorf("IsLocal(%d) = %v, want %v", q, got, want)
			}
		}
		return nil
	}) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// WaitQuiet returns the request's outcome on a helper goroutine, and a
// helper waiting there does not hide a deadlock of its rank: with rank
// 0's own goroutine and rank 1 blocked for good, the run is reported.
func TestWaitQuiet(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			return w.Send(payload(8, 7), comm.Byte, 0, 3)
		}
		buf := make([]byte, 8)
		r, err := w.Go(func() error {
			q, err := w.Irecv(buf, comm.Byte, 1, 3)
			if err != nil {
				return err
			}
			_, err = q.WaitQuiet()
			return err
		})
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil || val(buf) != 7 {
			return fmt.Errorf("WaitQuiet: %v, received %d", err, val(buf))
		}
		var nilReq *comm.Request
		if _, err := nilReq.WaitQuiet(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("WaitQuiet on nil: %v", err)
		}
		return nil
	})

	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if _, err := w.Go(func() error {
				q, err := w.Irecv(nil, comm.Byte, 1, 9)
				if err != nil {
					return err
				}
				_, err = q.WaitQuiet()
				return err
			}); err != nil {
				return err
			}
		}
		_, err := w.Recv(nil, comm.Byte, 1-w.Rank(), 1)
		return err
	})
	if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("Run returned %v, want a deadlock", err)
	}
}
