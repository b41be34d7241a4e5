package comm_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

func TestIbarrier(t *testing.T) {
	for _, n := range []int{1, 2, 5, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var late atomic.Bool
			run(t, n, func(w *comm.Comm) error {
				if w.Rank() == 0 {
					time.Sleep(20 * time.Millisecond) // running, not blocked: no deadlock
					late.Store(true)
				}
				r, err := w.Ibarrier()
				if err != nil {
					return err
				}
				// Point-to-point traffic meanwhile, on the same communicator.
				next, prev := (w.Rank()+1)%n, (w.Rank()-1+n)%n
				if _, err := w.Sendrecv(payload(8, 1), comm.Byte, next, 0, make([]byte, 8), comm.Byte, prev, 0); err != nil {
					return err
				}
				if _, err := r.Wait(); err != nil {
					return err
				}
				if !late.Load() {
					return errors.New("the barrier completed before rank 0 called it")
				}
				return nil
			})
		})
	}
}

func TestIbcastIallreduce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8, 13} {
		for _, cnt := range []int{0, 5, 9000} {
			for _, mode := range nbModes {
				t.Run(fmt.Sprint(n, "/", cnt, "/", mode), func(t *testing.T) {
					testIbcastIallreduce(t, n, cnt, mode)
				})
			}
		}
	}
}

// testIbcastIallreduce is TestIbcastIallreduce's case, on the
// communicator of mode (nbModes).
func testIbcastIallreduce(t *testing.T, n, cnt int, mode string) {
	run(t, n, func(w *comm.Comm) error {
		w, err := nbComm(w, mode)
		if err != nil {
			return err
		}
		me := w.Rank()
		root := n / 2
		// Three operations in flight at once, completed in another order.
		buf := garbage(cnt * esz)
		if me == root {
			copy(buf, ref(root, cnt, 1))
		}
		rb, err := w.Ibcast(buf, comm.Complex128, root)
		if err != nil {
			return err
		}
		send, recv := input(me, cnt, 2), garbage(cnt*esz)
		ra, err := w.Iallreduce(send, recv, comm.Complex128, affine)
		if err != nil {
			return err
		}
		inPlace := input(me, cnt, 3)
		ri, err := w.Iallreduce(inPlace, inPlace, comm.Complex128, affine)
		if err != nil {
			return err
		}
		select {
		case <-ri.Done():
		case <-time.After(10 * time.Second):
			return errors.New("Done never closed")
		}
		if i, _, err := comm.WaitAny(ra, rb); err != nil || i < 0 {
			return fmt.Errorf("WaitAny: %d, %v", i, err)
		}
		if err := comm.WaitAll(ra, rb, ri); err != nil {
			return err
		}
		if _, ok, err := ra.Test(); !ok || err != nil {
			return fmt.Errorf("Test after Wait: %v %v", ok, err)
		}
		switch {
		case !bytes.Equal(buf, ref(root, cnt, 1)):
			return fmt.Errorf("ibcast: rank %d: wrong data", me)
		case !bytes.Equal(recv, fold(0, n, cnt, 2)):
			return fmt.Errorf("iallreduce: rank %d: wrong result", me)
		case !bytes.Equal(inPlace, fold(0, n, cnt, 3)):
			return fmt.Errorf("iallreduce in place: rank %d: wrong result", me)
		}
		return nil
	})
}

// Non-blocking collectives use the pinned point-to-point algorithm.
func TestNonBlockingAlgorithms(t *testing.T) {
	run(t, 6, func(w *comm.Comm) error {
		for _, alg := range []comm.Algorithm{comm.AlgBinomial, comm.AlgScatterAllgather, comm.AlgFlat, comm.AlgSharedMemory} {
			if err := w.SetAlgorithm(comm.CollBcast, alg); err != nil {
				return err
			}
			buf := garbage(300 * esz)
			if w.Rank() == 4 {
				copy(buf, ref(4, 300, 5))
			}
			r, err := w.Ibcast(buf, comm.Complex128, 4)
			if err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
			if !bytes.Equal(buf, ref(4, 300, 5)) {
				return fmt.Errorf("%v: wrong data", alg)
			}
		}
		for _, alg := range []comm.Algorithm{comm.AlgRecursiveDoubling, comm.AlgRabenseifner} {
			if err := w.SetAlgorithm(comm.CollAllreduce, alg); err != nil {
				return err
			}
			recv := garbage(1000 * esz)
			r, err := w.Iallreduce(input(w.Rank(), 1000, 6), recv, comm.Complex128, affine)
			if err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
			if !bytes.Equal(recv, fold(0, 6, 1000, 6)) {
				return fmt.Errorf("%v: wrong result", alg)
			}
		}
		return nil
	})
}

func TestNonBlockingErrors(t *testing.T) {
	run(t, 3, func(w *comm.Comm) error {
		if _, err := w.Ibcast(nil, comm.Byte, 3); !errors.Is(err, comm.ErrRank) {
			return fmt.Errorf("Ibcast with root 3 of 3: %v", err)
		}
		if _, err := w.Iallreduce(nil, nil, comm.Byte, nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Iallreduce with a nil op: %v", err)
		}
		// Every form rejects what is invalid on its own at once, as its
		// blocking form does.
		for name, start := range map[string]func() (*comm.Request, error){
			"Igather root 3":      func() (*comm.Request, error) { return w.Igather(nil, nil, comm.Byte, 3) },
			"Iscatterv root -1":   func() (*comm.Request, error) { return w.Iscatterv(nil, nil, nil, nil, comm.Byte, -1) },
			"Ireduce nil op":      func() (*comm.Request, error) { return w.Ireduce(nil, nil, comm.Byte, nil, 0) },
			"Ireduce root 3":      func() (*comm.Request, error) { return w.Ireduce(nil, nil, comm.Byte, affine, 3) },
			"Iscan nil op":        func() (*comm.Request, error) { return w.Iscan(nil, nil, comm.Byte, nil) },
			"Ialltoall Value":     func() (*comm.Request, error) { return w.Ialltoall(nil, nil, comm.Value) },
			"Iallgatherv type 99": func() (*comm.Request, error) { return w.Iallgatherv(nil, nil, nil, nil, comm.Type(99)) },
		} {
			if r, err := start(); err == nil || r != nil {
				return fmt.Errorf("%s: request %v, error %v; want an error at once", name, r, err)
			} else if !errors.Is(err, comm.ErrArg) && !errors.Is(err, comm.ErrRank) {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
		// A count mismatch fails every rank's request.
		cnt := 10
		if w.Rank() == 1 {
			cnt = 11
		}
		r, err := w.Iallreduce(input(w.Rank(), cnt, 1), garbage(cnt*esz), comm.Complex128, affine)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("rank %d: mismatched Iallreduce: %v", w.Rank(), err)
		}
		return nil
	})
}

// nbStarts are non-blocking collectives the failure tests start on every
// rank (of 4): point-to-point ones, short ones that the shared table
// completes where it is used (coll_nonblocking_meet.go), persistent
// ones (planned and started once), and a long
// Iallreduce, which goroutine ranks run through shared memory
// (coll_nonblocking_shm.go).
var nbStarts = map[string]func(w *comm.Comm) (*comm.Request, error){
	"Ibarrier": func(w *comm.Comm) (*comm.Request, error) { return w.Ibarrier() },
	"Ibcast":   func(w *comm.Comm) (*comm.Request, error) { return w.Ibcast(garbage(100), comm.Byte, 0) },
	"Iallreduce short": func(w *comm.Comm) (*comm.Request, error) {
		return w.Iallreduce(input(w.Rank(), 5, 1), garbage(5*esz), comm.Complex128, affine)
	},
	"AllreduceInit short": func(w *comm.Comm) (*comm.Request, error) {
		return started(w.AllreduceInit(input(w.Rank(), 5, 1), garbage(5*esz), comm.Complex128, affine))
	},
	"BarrierInit": func(w *comm.Comm) (*comm.Request, error) { return started(w.BarrierInit()) },
	"Igather": func(w *comm.Comm) (*comm.Request, error) {
		return w.Igather(input(w.Rank(), 5, 1), garbage(4*5*esz), comm.Complex128, 0)
	},
	"Iallreduce shared": func(w *comm.Comm) (*comm.Request, error) {
		return w.Iallreduce(input(w.Rank(), 5000, 1), garbage(5000*esz), comm.Complex128, affine)
	},
}

// A rank that never joins a non-blocking collective is reported as a
// deadlock, and the goroutines of the others end with the run.
func TestNonBlockingDeadlock(t *testing.T) { eachNBStart(t, testNonBlockingDeadlock) }

// eachNBStart runs test on every start of nbStarts in every mode of
// nbModes, each a subtest.
func eachNBStart(t *testing.T, test func(t *testing.T, start func(w *comm.Comm) (*comm.Request, error), mode string)) {
	for name, start := range nbStarts {
		for _, mode := range nbModes {
			t.Run(name+"/"+mode, func(t *testing.T) { test(t, start, mode) })
		}
	}
}

// testNonBlockingDeadlock is TestNonBlockingDeadlock's case, on the
// communicator of mode (nbModes).
func testNonBlockingDeadlock(t *testing.T, start func(w *comm.Comm) (*comm.Request, error), mode string) {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		w, err := nbComm(w, mode)
		if err != nil {
			return err
		}
		if w.Rank() == 2 {
			_, err := w.Recv(nil, comm.Byte, 0, 5)
			return err
		}
		return startWait(w, start)
	})
	if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("Run = %v, want a deadlock", err)
	}
}

// nbModes are the ways non-blocking collectives run on goroutine ranks
// (coll_nonblocking_meet.go): on the world communicator, whose calls
// meet in its table from the start; on a duplicate, whose calls meet in
// a table found through the world's until a blocking collective sets its
// own up; on a duplicate after a Barrier (its own table); and on a
// communicator made by Create, whose calls start on goroutines of their
// own until a blocking collective sets its table up.
var nbModes = []string{"world", "dup", "dup-barrier", "create"}

// nbComm returns the communicator of mode (nbModes) made from w.
func nbComm(w *comm.Comm, mode string) (*comm.Comm, error) {
	switch mode {
	case "world":
		return w, nil
	case "create":
		return w.Create(w.Group())
	}
	d, err := w.Dup()
	if err == nil && mode == "dup-barrier" {
		err = d.Barrier()
	}
	return d, err
}

// started starts a persistent request just planned (nbStarts).
func started(r *comm.Request, err error) (*comm.Request, error) {
	if err != nil {
		return nil, err
	}
	return r, r.Start()
}

// startWait starts a non-blocking collective and waits for it.
func startWait(w *comm.Comm, start func(w *comm.Comm) (*comm.Request, error)) error {
	r, err := start(w)
	if err != nil {
		return err
	}
	_, err = r.Wait()
	return err
}

// A run that ends with non-blocking collectives never completed (a rank
// left without joining) leaves no goroutine behind (TestMain checks).
func TestNonBlockingAbandoned(t *testing.T) {
	err := mpgo.Run(3, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return nil
		}
		_, err := w.Iallreduce(input(w.Rank(), 4, 1), garbage(4*esz), comm.Complex128, affine)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A rank that fails aborts the others' non-blocking collectives.
func TestNonBlockingAbort(t *testing.T) { eachNBStart(t, testNonBlockingAbort) }

// testNonBlockingAbort is TestNonBlockingAbort's case, on the
// communicator of mode (nbModes).
func testNonBlockingAbort(t *testing.T, start func(w *comm.Comm) (*comm.Request, error), mode string) {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		w, err := nbComm(w, mode)
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			time.Sleep(5 * time.Millisecond)
			return errBoom
		}
		r, err := start(w)
		if err != nil {
			return err
		}
		_, err = r.Wait()
		if !errors.Is(err, comm.ErrAborted) {
			return fmt.Errorf("Wait = %v, want ErrAborted", err)
		}
		// The error is the collective's, not that of the request's
		// stand-in peer and tag ("comm: recv from rank 0 tag 0: …").
		if strings.HasPrefix(err.Error(), "comm: recv from") {
			t.Errorf("rank %d: Wait = %v, named as a receive", w.Rank(), err) // Run returns rank 0's error only
		}
		return nil
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Run = %v", err)
	}
}

// A long reduction on the collective's goroutine, while every rank's own
// goroutine waits for it, is progress, not a deadlock.
func TestNonBlockingLongReduction(t *testing.T) {
	slow := func(inout, in []byte) {
		time.Sleep(15 * time.Millisecond) // longer than the detector's interval
		affine(inout, in)
	}
	run(t, 4, func(w *comm.Comm) error {
		if err := w.SetAlgorithm(comm.CollAllreduce, comm.AlgRecursiveDoubling); err != nil {
			return err
		}
		recv := garbage(10 * esz)
		r, err := w.Iallreduce(input(w.Rank(), 10, 1), recv, comm.Complex128, slow)
		if err != nil {
			return err
		}
		_, err = r.Wait()
		return err
	})
}
