package comm_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
)

// Collectives on ranks spread over processes joined by a device, several ranks
// in each (hybrid): the two-level algorithms give the results of the
// one-level ones, reductions in rank order, every root.
func TestHierarchicalCollectives(t *testing.T) {
	for _, shape := range []struct{ procs, k int }{{2, 2}, {3, 3}, {2, 5}, {4, 1}} {
		t.Run(fmt.Sprintf("%dx%d", shape.procs, shape.k), func(t *testing.T) {
			hybrid := shape.k > 1
			errs := runProcs(t, shape.procs, shape.k, func(w *comm.Comm) error {
				algs := []comm.Algorithm{comm.AlgAuto, comm.AlgHierarchical}
				for _, coll := range []comm.Collective{comm.CollBarrier, comm.CollBcast, comm.CollAllreduce} {
					err := w.SetAlgorithm(coll, comm.AlgHierarchical)
					if !hybrid {
						if !errors.Is(err, comm.ErrNotSupported) {
							return fmt.Errorf("pinning %v to hierarchical with one rank per process: %v, want ErrNotSupported", coll, err)
						}
						algs = algs[:1]
						continue
					}
					if err != nil {
						return err
					}
					if got := w.Algorithm(coll); got != comm.AlgHierarchical {
						return fmt.Errorf("%v pinned to %v", coll, got)
					}
				}
				for _, alg := range algs {
					for _, coll := range []comm.Collective{comm.CollBarrier, comm.CollBcast, comm.CollAllreduce} {
						if err := w.SetAlgorithm(coll, alg); err != nil {
							return err
						}
					}
					if err := hierRound(w); err != nil {
						return fmt.Errorf("%v: %w", alg, err)
					}
				}
				// Communicators split from the world, in reversed rank
				// order and with uneven shares of each process: two
				// levels where a process holds a range, one otherwise.
				for _, color := range []func(r int) int{
					func(r int) int { return min(r*2/w.Size(), 1) },
					func(r int) int { return r % 2 },
				} {
					sub, err := w.Split(color(w.Rank()), -w.Rank())
					if err != nil {
						return err
					}
					if err := hierRound(sub); err != nil {
						return fmt.Errorf("split: %w", err)
					}
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// hierRound runs barriers, broadcasts from every root and allreduces
// (in place too) of several sizes, up to one past the eager limit.
func hierRound(w *comm.Comm) error {
	n, me := w.Size(), w.Rank()
	for range 3 {
		if err := w.Barrier(); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
	}
	for _, cnt := range []int{0, 1, 37, comm.DefaultEagerLimit/esz + 1} {
		for root := range n {
			want := ref(root, cnt, cnt)
			buf := garbage(cnt * esz)
			if me == root {
				copy(buf, want)
			}
			if err := w.Bcast(buf, comm.Complex128, root); err != nil {
				return fmt.Errorf("bcast root %d count %d: %w", root, cnt, err)
			}
			if !bytes.Equal(buf, want) {
				return fmt.Errorf("bcast root %d count %d: wrong data", root, cnt)
			}
		}
		recv := garbage(cnt * esz)
		if err := w.Allreduce(input(me, cnt, cnt), recv, comm.Complex128, affine); err != nil {
			return fmt.Errorf("allreduce count %d: %w", cnt, err)
		}
		if !bytes.Equal(recv, fold(0, n, cnt, cnt)) {
			return fmt.Errorf("allreduce count %d: wrong result", cnt)
		}
		inout := input(me, cnt, cnt+1)
		if err := w.Allreduce(inout, inout, comm.Complex128, affine); err != nil {
			return fmt.Errorf("allreduce in place count %d: %w", cnt, err)
		}
		if !bytes.Equal(inout, fold(0, n, cnt, cnt+1)) {
			return fmt.Errorf("allreduce in place count %d: wrong result", cnt)
		}
	}
	return nil
}

// A rank with a buffer of the wrong length fails, and so does every rank
// whose result depends on it; none hangs, and the communicator still works
// afterwards.
func TestHierarchicalMismatch(t *testing.T) {
	const procs, k = 3, 2
	errs := make([][2]error, procs*k)
	runProcs(t, procs, k, func(w *comm.Comm) error {
		me, n := w.Rank(), w.Size()
		cnt := 5
		if me == 3 {
			cnt = 4
		}
		buf := garbage(cnt * esz)
		errs[me][0] = w.Bcast(buf, comm.Complex128, 0)
		recv := garbage(cnt * esz)
		errs[me][1] = w.Allreduce(input(me, cnt, 1), recv, comm.Complex128, affine)
		// Still usable.
		recv = garbage(2 * esz)
		if err := w.Allreduce(input(me, 2, 2), recv, comm.Complex128, affine); err != nil {
			return fmt.Errorf("the allreduce after: %w", err)
		}
		if !bytes.Equal(recv, fold(0, n, 2, 2)) {
			return errors.New("the allreduce after: wrong result")
		}
		return w.Barrier()
	})
	for r, e := range errs {
		if !errors.Is(e[1], comm.ErrTruncate) {
			t.Errorf("rank %d: allreduce: %v, want ErrTruncate", r, e[1])
		}
		if r == 3 && !errors.Is(e[0], comm.ErrTruncate) {
			t.Errorf("rank 3: bcast: %v, want ErrTruncate", e[0])
		}
		if e[0] != nil && !errors.Is(e[0], comm.ErrTruncate) {
			t.Errorf("rank %d: bcast: %v, want nil or ErrTruncate", r, e[0])
		}
	}
}

// BenchmarkHierarchical times Barrier, Bcast and Allreduce on 2 processes
// of 4 ranks each joined by the in-memory loopback device, two-level against the best one-level
// algorithm, side by side (osu_bcast/osu_allreduce style: rank 0's time
// per call).
func BenchmarkHierarchical(b *testing.B) {
	const procs, k = 2, 4
	cases := []struct {
		coll comm.Collective
		size int
		flat comm.Algorithm
	}{
		{comm.CollBarrier, 0, comm.AlgDissemination},
		{comm.CollBcast, 8, comm.AlgBinomial},
		{comm.CollBcast, 1 << 20, comm.AlgScatterAllgather},
		{comm.CollAllreduce, 8, comm.AlgRecursiveDoubling},
		{comm.CollAllreduce, 1 << 20, comm.AlgRabenseifner},
	}
	for _, tc := range cases {
		for _, alg := range []comm.Algorithm{tc.flat, comm.AlgHierarchical} {
			b.Run(fmt.Sprintf("%v/%d/%v", tc.coll, tc.size, alg), func(b *testing.B) {
				errs := runProcs(b, procs, k, func(w *comm.Comm) error {
					if err := w.SetAlgorithm(tc.coll, alg); err != nil {
						return err
					}
					send, recv := make([]byte, tc.size), make([]byte, tc.size)
					call := func() error {
						switch tc.coll {
						case comm.CollBcast:
							return w.Bcast(send, comm.Byte, 0)
						case comm.CollAllreduce:
							return w.Allreduce(send, recv, comm.Float64, sumFloat64)
						}
						return w.Barrier()
					}
					if err := w.Barrier(); err != nil {
						return err
					}
					if w.Rank() == 0 {
						b.ResetTimer()
					}
					for range b.N {
						if err := call(); err != nil {
							return err
						}
					}
					if w.Rank() == 0 {
						b.StopTimer()
					}
					return w.Barrier()
				})
				for r, err := range errs {
					if err != nil {
						b.Fatalf("rank %d: %v", r, err)
					}
				}
			})
		}
	}
}

func sumFloat64(inout, in []byte) {
	a, x := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(inout))), len(inout)/8),
		unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(in))), len(in)/8)
	for i := range a {
		a[i] += x[i]
	}
}
