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

// A persistent ring exchange, started every iteration: each start sends
// the buffer's contents of that moment and receives into the same
// receive buffer, at every protocol size, on goroutine ranks and across
// processes.
func TestPersistentRing(t *testing.T) {
	for _, size := range []int{0, 8, 64 << 10, 256 << 10} {
		for _, procs := range []int{1, 3} {
			t.Run(fmt.Sprintf("size=%d/procs=%d", size, procs), func(t *testing.T) {
				fn := func(w *comm.Comm) error { return persistentRing(w, size, 20) }
				if procs == 1 {
					run(t, 3, fn)
					return
				}
				for r, err := range runProcs(t, procs, 1, fn) {
					if err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
				}
			})
		}
	}
}

func persistentRing(w *comm.Comm, size, iters int) error {
	n, me := w.Size(), w.Rank()
	next, prev := (me+1)%n, (me+n-1)%n
	out, in := make([]byte, max(size, 8)), make([]byte, max(size, 8))
	s, err := w.SendInit(out[:size], comm.Byte, next, 4)
	if err != nil {
		return err
	}
	r, err := w.RecvInit(in[:size], comm.Byte, prev, 4)
	if err != nil {
		return err
	}
	for i := range iters {
		copy(out, payload(len(out), uint64(me*1000+i)))
		if err := comm.StartAll(r, s); err != nil {
			return err
		}
		if err := comm.WaitAll(s, r); err != nil {
			return err
		}
		st, err := r.Wait() // inactive now: the same outcome again
		if err != nil || st.Source != prev || st.Count != size {
			return fmt.Errorf("iteration %d: status %+v, %v", i, st, err)
		}
		if size >= 8 && val(in) != uint64(prev*1000+i) {
			return fmt.Errorf("iteration %d: received %d", i, val(in))
		}
	}
	return nil
}

// A persistent request is inactive before its first start (Wait returns
// at once, empty); starting an active one, or one that is not persistent,
// fails with ErrArg; Done works start after start.
func TestPersistentStates(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		peer := 1 - w.Rank()
		b := make([]byte, 8)
		r, err := w.RecvInit(b, comm.Byte, peer, 0)
		if err != nil {
			return err
		}
		if st, err := r.Wait(); err != nil || st != (comm.Status{}) {
			return fmt.Errorf("Wait before any start: %+v, %v", st, err)
		}
		if w.Rank() == 0 {
			if err := r.Start(); err != nil {
				return err
			}
			if err := r.Start(); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("Start of an active request: %v", err)
			}
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == 1 {
			for i := range 3 {
				if err := w.Send(payload(8, uint64(i)), comm.Byte, 0, 0); err != nil {
					return err
				}
			}
			return nil
		}
		for i := range 3 {
			if i > 0 {
				if err := r.Start(); err != nil {
					return err
				}
			}
			<-r.Done()
			if st, ok, err := r.Test(); !ok || err != nil || st.Source != 1 || val(b) != uint64(i) {
				return fmt.Errorf("start %d: %+v %v %v, received %d", i, st, ok, err, val(b))
			}
		}
		plain, err := w.Irecv(b, comm.Byte, 1, 9)
		if err != nil {
			return err
		}
		if err := plain.Start(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Start of a plain Irecv: %v", err)
		}
		if err := plain.Cancel(); err != nil {
			return err
		}
		var nilReq *comm.Request
		if err := nilReq.Start(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Start of nil: %v", err)
		}
		return nil
	})
}

// Persistent operations with the null rank complete at every start, and
// bad arguments fail at planning time.
func TestPersistentNullAndArgs(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		s, err := w.SendInit(make([]byte, 4), comm.Byte, comm.ProcNull, 1)
		if err != nil {
			return err
		}
		r, err := w.RecvInit(make([]byte, 4), comm.Byte, comm.ProcNull, comm.AnyTag)
		if err != nil {
			return err
		}
		for range 3 {
			if err := comm.StartAll(s, r); err != nil {
				return err
			}
			if st, err := r.Wait(); err != nil || st.Source != comm.ProcNull || st.Count != 0 {
				return fmt.Errorf("null receive: %+v, %v", st, err)
			}
			if _, err := s.Wait(); err != nil {
				return err
			}
		}
		if _, err := w.SendInit(nil, comm.Byte, 7, 0); !errors.Is(err, comm.ErrRank) {
			return fmt.Errorf("SendInit to rank 7 of 2: %v", err)
		}
		if _, err := w.RecvInit(nil, comm.Byte, 0, -5); !errors.Is(err, comm.ErrTag) {
			return fmt.Errorf("RecvInit with tag -5: %v", err)
		}
		return nil
	})
}

// A persistent send's start fails, and completes the request with the
// error, once the communicator is freed.
func TestPersistentStartAfterFree(t *testing.T) {
	run(t, 1, func(w *comm.Comm) error {
		d, err := w.Dup()
		if err != nil {
			return err
		}
		s, err := d.SendInit(make([]byte, 8), comm.Byte, 0, 0)
		if err != nil {
			return err
		}
		if err := d.Free(); err != nil {
			return err
		}
		if err := s.Start(); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("Start on a freed communicator: %v", err)
		}
		if _, err := s.Wait(); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("Wait after the failed start: %v", err)
		}
		return nil
	})
}

// Started every iteration, a persistent exchange of eager messages
// allocates nothing (MPI's promise for persistent requests).
func TestPersistentAllocatesNothing(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("reads the allocation counter of a whole run (the race detector's sync.Pool drops items)")
	}
	const iters = 2000
	n := mallocsOver(t, 100, iters, func(w *comm.Comm) (func(i int) error, error) {
		peer := 1 - w.Rank()
		out, in := make([]byte, 8), make([]byte, 8)
		s, err := w.SendInit(out, comm.Byte, peer, 0)
		if err != nil {
			return nil, err
		}
		r, err := w.RecvInit(in, comm.Byte, peer, 0)
		if err != nil {
			return nil, err
		}
		reqs := []*comm.Request{r, s}
		return func(i int) error {
			out[0] = byte(i)
			if err := comm.StartAll(reqs...); err != nil {
				return err
			}
			if err := comm.WaitAll(reqs...); err != nil {
				return err
			}
			if in[0] != byte(i) {
				return fmt.Errorf("iteration %d received %d", i, in[0])
			}
			return nil
		}, nil
	})
	if n > 20 {
		t.Errorf("%d allocations in %d iterations of a persistent exchange", n, iters)
	}
}

// mallocsOver runs, on 2 ranks, the step that setup returns warm times,
// then iters times, and returns the allocations of the process in the
// latter, as rank 0 counts them. Rank 1 may still be in its last
// iterations, or returning, when rank 0 reads the counter: callers allow
// a handful of allocations, not one per iteration.
func mallocsOver(t *testing.T, warm, iters int, setup func(w *comm.Comm) (func(i int) error, error)) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	run(t, 2, func(w *comm.Comm) error {
		step, err := setup(w)
		if err != nil {
			return err
		}
		for i := range warm + iters {
			if i == warm && w.Rank() == 0 {
				runtime.ReadMemStats(&before)
			}
			if err := step(i); err != nil {
				return err
			}
		}
		if w.Rank() == 0 {
			runtime.ReadMemStats(&after)
		}
		return nil
	}, mpgo.WithoutDeadlockDetection())
	return after.Mallocs - before.Mallocs
}

// BenchmarkPersistent: an 8-byte exchange between two ranks (each sends
// to the other and receives), planned once and started every iteration,
// beside the same exchange by Isend and Irecv; allocs/op is the point.
func BenchmarkPersistent(b *testing.B) {
	for _, persistent := range []bool{false, true} {
		name := "Isend-Irecv"
		if persistent {
			name = "Start"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			run(b, 2, func(w *comm.Comm) error {
				peer := 1 - w.Rank()
				out, in := make([]byte, 8), make([]byte, 8)
				reqs := make([]*comm.Request, 2)
				if persistent {
					var err error
					if reqs[0], err = w.RecvInit(in, comm.Byte, peer, 0); err != nil {
						return err
					}
					if reqs[1], err = w.SendInit(out, comm.Byte, peer, 0); err != nil {
						return err
					}
				}
				if err := w.Barrier(); err != nil {
					return err
				}
				if w.Rank() == 0 {
					b.ResetTimer()
				}
				for range b.N {
					var err error
					if persistent {
						err = comm.StartAll(reqs...)
					} else if reqs[0], err = w.Irecv(in, comm.Byte, peer, 0); err == nil {
						reqs[1], err = w.Isend(out, comm.Byte, peer, 0)
					}
					if err != nil {
						return err
					}
					if err := comm.WaitAll(reqs...); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// A persistent collective progresses for a rank that never parks: one
// that polls it with Test or TestAll, or waits on its Done channel in a
// select (outside mpgo), each start (it hung before: the start waited for
// the rank to park somewhere in mpgo).
func TestPersistentProgressWithoutWait(t *testing.T) {
	for name, await := range map[string]func(r *comm.Request) error{
		"Test": func(r *comm.Request) error {
			for {
				if _, ok, err := r.Test(); ok || err != nil {
					return err
				}
			}
		},
		"TestAll": func(r *comm.Request) error {
			for {
				if ok, err := comm.TestAll(r); ok || err != nil {
					return err
				}
			}
		},
		"Done": func(r *comm.Request) error {
			select {
			case <-r.Done():
				_, err := r.Wait()
				return err
			case <-time.After(20 * time.Second):
				return errors.New("Done never closed")
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			run(t, 3, func(w *comm.Comm) error {
				recv := garbage(10 * esz)
				r, err := w.AllreduceInit(input(w.Rank(), 10, 1), recv, comm.Complex128, affine)
				if err != nil {
					return err
				}
				for range 3 {
					if err := r.Start(); err != nil {
						return err
					}
					if err := await(r); err != nil {
						return err
					}
					if !bytes.Equal(recv, fold(0, 3, 10, 1)) {
						return errors.New("wrong result")
					}
				}
				return r.Free()
			})
		})
	}
}
