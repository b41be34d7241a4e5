package comm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// Two goroutines of a rank that call collectives on one communicator at
// once: the second fails at once with ErrConcurrent (an ErrArg), the first
// completes with the other ranks' calls, and the communicator works
// afterwards. Issue 23 found both calls hanging, unseen by the deadlock
// detector (or meeting the other ranks' calls in the wrong order).
//
// On ranks 0..n-2 one goroutine calls first and another, once the first
// is inside (Busy), calls second; rank n-1 calls first only after every
// other rank's second call has failed, so that no first call can have
// completed before the second began.
func TestConcurrentCollectives(t *testing.T) {
	const n, cnt = 4, 5
	// Each collective leaves fold(0, n, cnt, 1) in out when it works.
	collectives := map[string]func(w *comm.Comm, out []byte) error{
		"allreduce": func(w *comm.Comm, out []byte) error {
			return w.Allreduce(input(w.Rank(), cnt, 1), out, comm.Complex128, affine)
		},
		"barrier": func(w *comm.Comm, out []byte) error {
			copy(out, fold(0, n, cnt, 1))
			return w.Barrier()
		},
		"allgatherv": func(w *comm.Comm, out []byte) error {
			copy(out, fold(0, n, cnt, 1))
			return w.Allgatherv(input(w.Rank(), 1, 1), garbage(n*esz), []int{1, 1, 1, 1}, nil, comm.Complex128)
		},
		"allgather value": func(w *comm.Comm, out []byte) error {
			copy(out, fold(0, n, cnt, 1))
			var all []int
			return w.AllgatherValue(w.Rank(), &all)
		},
		"ibarrier": func(w *comm.Comm, out []byte) error {
			copy(out, fold(0, n, cnt, 1))
			r, err := w.Ibarrier()
			if err == nil {
				_, err = r.Wait()
			}
			return err
		},
		"split": func(w *comm.Comm, out []byte) error {
			copy(out, fold(0, n, cnt, 1))
			_, err := w.Split(0, w.Rank())
			return err
		},
	}
	for _, pair := range [][2]string{
		{"allreduce", "allreduce"}, {"barrier", "barrier"}, {"allgatherv", "allgatherv"},
		{"allgather value", "allgather value"}, {"allreduce", "ibarrier"}, {"barrier", "split"},
		{"allgather value", "barrier"},
	} {
		first, second := collectives[pair[0]], collectives[pair[1]]
		for _, p2p := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s+%s/p2p=%v", pair[0], pair[1], p2p), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var failed atomic.Int32 // ranks whose second call has failed
				err := mpgo.Run(n, func(w *comm.Comm) error {
					if p2p {
						for k, alg := range map[comm.Collective]comm.Algorithm{
							comm.CollBarrier: comm.AlgDissemination, comm.CollAllreduce: comm.AlgRecursiveDoubling, comm.CollAllgather: comm.AlgRing,
						} {
							if err := w.SetAlgorithm(k, alg); err != nil {
								return err
							}
						}
					}
					me := w.Rank()
					out := garbage(cnt * esz)
					if me == n-1 {
						for failed.Load() < n-1 && ctx.Err() == nil {
							time.Sleep(time.Millisecond)
						}
						if err := first(w, out); err != nil {
							return err
						}
						return check(w, out)
					}
					var err1, err2 error
					var wg sync.WaitGroup
					wg.Go(func() { err1 = first(w, out) })
					wg.Go(func() {
						for !w.Busy() && ctx.Err() == nil {
							time.Sleep(100 * time.Microsecond)
						}
						err2 = second(w, garbage(cnt*esz))
						if err2 != nil {
							failed.Add(1)
						}
					})
					wg.Wait()
					switch {
					case !errors.Is(err2, comm.ErrConcurrent) || !errors.Is(err2, comm.ErrArg):
						return fmt.Errorf("rank %d: the second call returned %v, want ErrConcurrent", me, err2)
					case err1 != nil:
						return fmt.Errorf("rank %d: the first call failed: %w", me, err1)
					}
					return check(w, out)
				}, mpgo.WithContext(ctx))
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// check checks a collective's result and that w works afterwards.
func check(w *comm.Comm, out []byte) error {
	n := w.Size()
	if !bytes.Equal(out, fold(0, n, len(out)/esz, 1)) {
		return fmt.Errorf("rank %d: wrong result", w.Rank())
	}
	recv := garbage(3 * esz)
	if err := w.Allreduce(input(w.Rank(), 3, 2), recv, comm.Complex128, affine); err != nil {
		return fmt.Errorf("rank %d: the allreduce after: %w", w.Rank(), err)
	}
	if !bytes.Equal(recv, fold(0, n, 3, 2)) {
		return fmt.Errorf("rank %d: the allreduce after: wrong result", w.Rank())
	}
	return nil
}

// Point-to-point calls from several goroutines of a rank, meanwhile, are
// fine; so are several non-blocking collectives in flight at once, waited
// for from other goroutines, beside a blocking collective.
func TestConcurrentPointToPointAndNonBlocking(t *testing.T) {
	const n = 3
	run(t, n, func(w *comm.Comm) error {
		me := w.Rank()
		reqs := make([]*comm.Request, 4)
		outs := make([][]byte, 4)
		for i := range reqs {
			outs[i] = garbage(2 * esz)
			r, err := w.Iallreduce(input(me, 2, i), outs[i], comm.Complex128, affine)
			if err != nil {
				return err
			}
			reqs[i] = r
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range 4 {
			wg.Go(func() { _, errs[i] = reqs[i].Wait() })
		}
		for g := range 3 {
			wg.Go(func() {
				next, prev := (me+1)%n, (me-1+n)%n
				_, errs[4+g] = w.Sendrecv(payload(8, uint64(g)), comm.Byte, next, g, make([]byte, 8), comm.Byte, prev, g)
			})
		}
		errs[7] = w.Barrier()
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		for i, out := range outs {
			if !bytes.Equal(out, fold(0, n, 2, i)) {
				return fmt.Errorf("rank %d: iallreduce %d: wrong result", me, i)
			}
		}
		return nil
	})
}

// An intercommunicator's collectives are guarded as a communicator's: two
// goroutines of each even rank in ic.Allreduce at once, one fails with
// ErrConcurrent and takes no part (the leaders' exchange included), the
// other completes with both groups and the right result.
func TestConcurrentIntercommCollectives(t *testing.T) {
	const n = 4
	var failed atomic.Int32
	sum := func(inout, in []byte) { copy(inout, payload(8, val(inout)+val(in))) }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := onIntercomm(t, n, func(w *comm.Comm, ic *comm.Intercomm, even bool) error {
		want := uint64(1 + 3) // the odd group's world ranks
		if !even {
			want = 0 + 2
		}
		allreduce := func() error {
			got := make([]byte, 8)
			if err := ic.Allreduce(payload(8, uint64(w.Rank())), got, comm.Byte, sum); err != nil {
				return err
			}
			if val(got) != want {
				return fmt.Errorf("rank %d: %d, want %d", w.Rank(), val(got), want)
			}
			return nil
		}
		if !even { // one call each, once both even ranks have seen a failure
			for start := time.Now(); failed.Load() < 2 && time.Since(start) < 10*time.Second; {
				time.Sleep(time.Millisecond)
			}
			if err := allreduce(); err != nil {
				return err
			}
			return allreduce() // as the others
		}
		var wg sync.WaitGroup
		var errs [2]error
		for g := range 2 {
			wg.Go(func() {
				if errs[g] = allreduce(); errs[g] != nil {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		if !errors.Is(errs[0], comm.ErrConcurrent) && !errors.Is(errs[1], comm.ErrConcurrent) || errs[0] != nil && errs[1] != nil {
			return fmt.Errorf("rank %d: the two calls returned %v and %v, want nil and ErrConcurrent", w.Rank(), errs[0], errs[1])
		}
		return allreduce() // still usable
	}, mpgo.WithContext(ctx))
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
