package comm_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// Persistent collectives after their first start, which links the
// members' plans (coll_persistent_linked.go): on 1–17 and 64 ranks, every
// start's result is the reference's for the buffers' contents at that
// start; the requests are waited for by Wait, Test, Done and WaitAny in
// turn (the last three never run the rank's Wait), with one rank late at
// some starts, so that the others sleep.
func TestPersistentLinked(t *testing.T) {
	for _, n := range rankCounts(t) {
		if n > 64 {
			continue
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, func(w *comm.Comm) error {
				me := w.Rank()
				send, sum, bc := make([]byte, 2*esz), garbage(2*esz), garbage(3*esz)
				var rs []*comm.Request
				for _, plan := range []func() (*comm.Request, error){
					func() (*comm.Request, error) { return w.AllreduceInit(send, sum, comm.Complex128, affine) },
					func() (*comm.Request, error) { return w.BcastInit(bc, comm.Complex128, n-1) },
					func() (*comm.Request, error) { return w.BarrierInit() },
				} {
					r, err := plan()
					if err != nil {
						return err
					}
					rs = append(rs, r)
				}
				for it := range 12 {
					copy(send, ref(me, 2, it))
					if me == n-1 {
						copy(bc, ref(me, 3, it))
					}
					if it%3 == 2 && me == it%n {
						time.Sleep(200 * time.Microsecond) // late: the others sleep
					}
					if err := comm.StartAll(rs...); err != nil {
						return fmt.Errorf("rank %d: start %d: %w", me, it, err)
					}
					if err := waitEach(it%4, rs); err != nil {
						return fmt.Errorf("rank %d: start %d: %w", me, it, err)
					}
					if !bytes.Equal(sum, fold(0, n, 2, it)) {
						return fmt.Errorf("rank %d: start %d: Allreduce: wrong result", me, it)
					}
					if !bytes.Equal(bc, ref(n-1, 3, it)) {
						return fmt.Errorf("rank %d: start %d: Bcast: wrong result", me, it)
					}
				}
				for _, r := range rs {
					if err := r.Free(); err != nil {
						return err
					}
					if err := r.Start(); !errors.Is(err, comm.ErrArg) {
						return fmt.Errorf("rank %d: start after Free = %v, want ErrArg", me, err)
					}
				}
				return check(w, fold(0, n, 1, 1)) // still usable
			})
		})
	}
}

// waitEach waits for every request of rs by way (0 Wait, 1 Test, 2 Done
// then Wait, 3 WaitAny) and returns the first error.
func waitEach(way int, rs []*comm.Request) error {
	for _, r := range rs {
		var err error
		switch way {
		case 0:
			_, err = r.Wait()
		case 1:
			for done := false; !done && err == nil; {
				if _, done, err = r.Test(); !done {
					runtime.Gosched()
				}
			}
		case 2:
			<-r.Done()
			_, err = r.Wait()
		case 3:
			_, _, err = comm.WaitAny(r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// A linked start that the deadlock detector fails (rank 2 never starts:
// it waits for a message nobody sends) fails on the members that waited,
// writes nothing, and breaks the plan: the late member's start and every
// later start fail too, without touching a buffer.
func TestPersistentLinkedDeadlock(t *testing.T) {
	late := make(chan error, 1)
	err := mpgo.Run(3, func(w *comm.Comm) error {
		send, recv := input(w.Rank(), 2, 1), garbage(2*esz)
		r, err := w.AllreduceInit(send, recv, comm.Complex128, affine)
		if err != nil {
			return err
		}
		for range 3 { // the first links the plans
			if err := startWaitOnce(r); err != nil {
				return err
			}
		}
		copy(recv, garbage(2*esz))
		if w.Rank() == 2 {
			if _, err := w.Recv(nil, comm.Byte, 0, 5); !errors.Is(err, comm.ErrDeadlock) {
				late <- fmt.Errorf("rank 2: Recv = %v", err)
				return nil
			}
			err := startWaitOnce(r)
			if err != nil && !bytes.Equal(recv, garbage(2*esz)) {
				err = errors.New("recv written by a broken start")
			}
			late <- err
			return nil
		}
		err = startWaitOnce(r)
		if err == nil {
			return errors.New("a start succeeded without rank 2")
		}
		if !bytes.Equal(recv, garbage(2*esz)) {
			return errors.New("recv written by a failed start")
		}
		if again := startWaitOnce(r); !errors.Is(again, comm.ErrDeadlock) {
			return fmt.Errorf("a start after the failed one: %v, want ErrDeadlock", again)
		}
		return err
	})
	if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("Run = %v, want a deadlock", err)
	}
	if err := <-late; err == nil {
		t.Fatal("the late member's start succeeded after the others failed")
	} else if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("the late member's start: %v", err)
	}
}

// A rank that fails while the others wait in a linked start aborts them:
// they return ErrAborted, and nothing is written into their buffers.
func TestPersistentLinkedAbort(t *testing.T) {
	boom := errors.New("boom")
	err := mpgo.Run(3, func(w *comm.Comm) error {
		send, recv := input(w.Rank(), 2, 1), garbage(2*esz)
		r, err := w.AllreduceInit(send, recv, comm.Complex128, affine)
		if err != nil {
			return err
		}
		for range 3 {
			if err := startWaitOnce(r); err != nil {
				return err
			}
		}
		copy(recv, garbage(2*esz))
		if w.Rank() == 2 {
			time.Sleep(5 * time.Millisecond) // the others wait meanwhile
			return boom
		}
		err = startWaitOnce(r)
		if !errors.Is(err, comm.ErrAborted) {
			return fmt.Errorf("rank %d: start = %v, want ErrAborted", w.Rank(), err)
		}
		if !bytes.Equal(recv, garbage(2*esz)) {
			return errors.New("recv written by an aborted start")
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want boom", err)
	}
}

// startWaitOnce starts persistent r and waits for it.
func startWaitOnce(r *comm.Request) error {
	if err := r.Start(); err != nil {
		return err
	}
	_, err := r.Wait()
	return err
}
