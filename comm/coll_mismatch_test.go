package comm_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// Mismatched calls fail with an error wrapping a sentinel on the ranks
// concerned, never with a hang, and leave the communicator usable.

// outcome runs fn on n ranks with each algorithm of coll pinned in turn
// and returns each rank's error per algorithm (the ranks return nil to
// Run, so that one rank's failure does not abort the others). After fn,
// the ranks run an Allreduce to check that the communicator still works.
func outcome(t *testing.T, n int, coll comm.Collective, fn func(w *comm.Comm) error) map[comm.Algorithm][]error {
	t.Helper()
	out := map[comm.Algorithm][]error{}
	for _, alg := range algsOf(coll) {
		errs := make([]error, n)
		run(t, n, func(w *comm.Comm) error {
			if err := w.SetAlgorithm(coll, alg); err != nil {
				return err
			}
			errs[w.Rank()] = fn(w)
			send, recv := input(w.Rank(), 3, 9), garbage(3*esz)
			if err := w.Allreduce(send, recv, comm.Complex128, affine); err != nil {
				return fmt.Errorf("%v: the allreduce after: %w", alg, err)
			}
			if string(recv) != string(fold(0, n, 3, 9)) {
				return fmt.Errorf("%v: the allreduce after: wrong result", alg)
			}
			return nil
		})
		out[alg] = errs
	}
	return out
}

// expect checks that the ranks in must failed with target, and that the
// others either succeeded or failed with target too (all of them when the
// algorithm shares memory).
func expect(t *testing.T, res map[comm.Algorithm][]error, target error, must ...int) {
	t.Helper()
	expectExcept(t, res, target, -1, must...)
}

// expectBcast is expect for a broadcast from root, which may have
// succeeded whatever the others did: a shared-memory broadcast's root
// leaves once the others can read its data, before they judge it.
func expectBcast(t *testing.T, res map[comm.Algorithm][]error, target error, root int, must ...int) {
	t.Helper()
	expectExcept(t, res, target, root, must...)
}

// expectExcept is expect, but rank free may have succeeded.
func expectExcept(t *testing.T, res map[comm.Algorithm][]error, target error, free int, must ...int) {
	t.Helper()
	for alg, errs := range res {
		all := alg == comm.AlgSharedMemory || alg == comm.AlgAuto
		for r, err := range errs {
			required := all && r != free
			for _, m := range must {
				required = required || r == m && r != free
			}
			switch {
			case err == nil && required:
				t.Errorf("%v: rank %d succeeded, want an error wrapping %v", alg, r, target)
			case err != nil && !errors.Is(err, target):
				t.Errorf("%v: rank %d: %v, want an error wrapping %v", alg, r, err, target)
			}
		}
	}
}

func TestMismatchBcastCounts(t *testing.T) {
	for _, n := range []int{2, 3, 8, 11} {
		for _, bad := range []int{0, 1, n - 1} {
			for _, size := range []int{10, 5000} {
				t.Run(fmt.Sprint(n, "/", bad, "/", size), func(t *testing.T) {
					res := outcome(t, n, comm.CollBcast, func(w *comm.Comm) error {
						cnt := size
						if w.Rank() == bad {
							cnt = size + 1 + size/2 // a different count, another algorithm's range
						}
						return w.Bcast(garbage(cnt*esz), comm.Complex128, 1%n)
					})
					if bad == 1%n {
						expectBcast(t, res, comm.ErrTruncate, 1%n) // the root's count is the reference
					} else {
						expectBcast(t, res, comm.ErrTruncate, 1%n, bad)
					}
				})
			}
		}
	}
}

func TestMismatchRootOutOfRange(t *testing.T) {
	for _, n := range []int{1, 4} {
		for _, coll := range []comm.Collective{comm.CollBcast, comm.CollReduce, comm.CollGather, comm.CollScatter} {
			res := outcome(t, n, coll, func(w *comm.Comm) error {
				buf := garbage(2 * esz)
				switch coll {
				case comm.CollBcast:
					return w.Bcast(buf, comm.Complex128, n)
				case comm.CollReduce:
					return w.Reduce(buf, garbage(2*esz), comm.Complex128, affine, -1)
				case comm.CollGather:
					return w.Gather(buf, garbage(2*n*esz), comm.Complex128, n+3)
				default:
					return w.Scatter(garbage(2*n*esz), buf, comm.Complex128, n)
				}
			})
			for alg, errs := range res {
				for r, err := range errs {
					if !errors.Is(err, comm.ErrRank) {
						t.Errorf("%v %v: rank %d: %v, want ErrRank", coll, alg, r, err)
					}
				}
			}
		}
	}
}

func TestMismatchRecvTooSmall(t *testing.T) {
	const n = 5
	for _, root := range []int{0, 3} {
		res := outcome(t, n, comm.CollGather, func(w *comm.Comm) error {
			var recv []byte
			if w.Rank() == root {
				recv = garbage((n*4 - 1) * esz)
			}
			return w.Gather(input(w.Rank(), 4, 1), recv, comm.Complex128, root)
		})
		expect(t, res, comm.ErrTruncate, root)
		res = outcome(t, n, comm.CollAllgather, func(w *comm.Comm) error {
			size := n * 4
			if w.Rank() == root {
				size--
			}
			return w.Allgather(input(w.Rank(), 4, 1), garbage(size*esz), comm.Complex128)
		})
		expect(t, res, comm.ErrTruncate, root)
	}
}

func TestMismatchAllreduce(t *testing.T) {
	for _, n := range []int{2, 5, 8} {
		// One rank's recv differs from its send: ErrArg, on every rank.
		res := outcome(t, n, comm.CollAllreduce, func(w *comm.Comm) error {
			recv := garbage(6 * esz)
			if w.Rank() == n-1 {
				recv = garbage(5 * esz)
			}
			return w.Allreduce(input(w.Rank(), 6, 1), recv, comm.Complex128, affine)
		})
		expectAll(t, res, comm.ErrArg)
		// One rank sends another count: ErrTruncate, on every rank.
		res = outcome(t, n, comm.CollAllreduce, func(w *comm.Comm) error {
			cnt := 600
			if w.Rank() == 1 {
				cnt = 601
			}
			return w.Allreduce(input(w.Rank(), cnt, 1), garbage(cnt*esz), comm.Complex128, affine)
		})
		expectAll(t, res, comm.ErrTruncate)
		// One rank passes another element type (of the same size).
		res = outcome(t, n, comm.CollAllreduce, func(w *comm.Comm) error {
			typ := comm.Complex128
			if w.Rank() == 0 {
				typ = comm.Int64
			}
			return w.Allreduce(input(w.Rank(), 4, 1), garbage(4*esz), typ, affine)
		})
		expectAll(t, res, comm.ErrType)
	}
}

// expectAll checks that every rank failed with target.
func expectAll(t *testing.T, res map[comm.Algorithm][]error, target error) {
	t.Helper()
	for alg, errs := range res {
		for r, err := range errs {
			if !errors.Is(err, target) {
				t.Errorf("%v: rank %d: %v, want an error wrapping %v", alg, r, err, target)
			}
		}
	}
}

func TestMismatchAlltoall(t *testing.T) {
	for _, n := range []int{3, 8} {
		res := outcome(t, n, comm.CollAlltoall, func(w *comm.Comm) error {
			send := garbage(2 * n * esz)
			recv := garbage(2 * n * esz)
			if w.Rank() == 2 {
				recv = recv[:len(recv)-esz]
			}
			return w.Alltoall(send, recv, comm.Complex128)
		})
		expectAll(t, res, comm.ErrArg)
	}
}

// Ranks that call different collectives at the same point fail, on every
// rank, when the collectives share memory.
func TestMismatchDifferentCollectives(t *testing.T) {
	const n = 4
	errs := make([]error, n)
	run(t, n, func(w *comm.Comm) error {
		buf := garbage(4 * esz)
		if w.Rank() == 2 {
			errs[2] = w.Bcast(buf, comm.Complex128, 0)
		} else {
			errs[w.Rank()] = w.Allreduce(input(w.Rank(), 4, 1), buf, comm.Complex128, affine)
		}
		return w.BarrierAlg()
	})
	for r, err := range errs {
		if !errors.Is(err, comm.ErrArg) {
			t.Errorf("rank %d: %v, want ErrArg", r, err)
		}
	}
}

// A rank that calls Barrier where the others call another collective
// fails, and so do they, whichever rank arrives last (here the barrier's,
// then another), and however many vectors the collective moves.
func TestMismatchBarrierAndCollective(t *testing.T) {
	const n = 4
	for _, size := range []int{1, 4, 1000} {
		for _, late := range []int{3, 0} {
			t.Run(fmt.Sprint(size, "/", late), func(t *testing.T) {
				errs := make([]error, n)
				run(t, n, func(w *comm.Comm) error {
					if w.Rank() == late {
						time.Sleep(10 * time.Millisecond) // arrive last
					}
					if w.Rank() == 3 {
						errs[3] = w.Barrier()
					} else {
						errs[w.Rank()] = w.Allreduce(input(w.Rank(), size, 1), garbage(size*esz), comm.Complex128, affine)
					}
					return w.BarrierAlg()
				})
				for r, err := range errs {
					if !errors.Is(err, comm.ErrArg) {
						t.Errorf("rank %d: %v, want ErrArg", r, err)
					}
				}
			})
		}
	}
}

// On many ranks, where a short reduction is combined by the last arriver,
// one rank passing another count fails every rank, whether its count
// takes it to the same variant (4 against 3 elements) or to the direct
// one (5 against 4), and whoever arrives last.
func TestMismatchReductionManyRanks(t *testing.T) {
	const n = 1100
	for _, c := range []struct{ cnt, bad, late int }{{3, 4, 0}, {3, 4, 7}, {4, 5, 7}, {4, 5, n - 1}} {
		t.Run(fmt.Sprint(c.cnt, "/", c.bad, "/", c.late), func(t *testing.T) {
			errs := make([]error, n)
			run(t, n, func(w *comm.Comm) error {
				cnt := c.cnt
				if w.Rank() == 7 {
					cnt = c.bad
				}
				if w.Rank() == c.late {
					time.Sleep(10 * time.Millisecond) // arrive last
				}
				errs[w.Rank()] = w.Allreduce(input(w.Rank(), cnt, 1), garbage(cnt*esz), comm.Complex128, affine)
				return w.Barrier()
			})
			for r, err := range errs {
				if !errors.Is(err, comm.ErrTruncate) {
					t.Fatalf("rank %d: %v, want ErrTruncate", r, err)
				}
			}
		})
	}
}

// A rank that never arrives at a collective is reported as a deadlock, and
// the waiting ranks are woken.
func TestCollectiveDeadlock(t *testing.T) {
	for _, alg := range []comm.Algorithm{comm.AlgSharedMemory, comm.AlgDissemination} {
		t.Run(alg.String(), func(t *testing.T) {
			err := mpgo.Run(4, func(w *comm.Comm) error {
				if err := w.SetAlgorithm(comm.CollBarrier, alg); err != nil {
					return err
				}
				if w.Rank() == 3 {
					_, err := w.Recv(nil, comm.Byte, 0, 99)
					return err
				}
				return w.BarrierAlg()
			})
			if !errors.Is(err, comm.ErrDeadlock) {
				t.Fatalf("Run = %v, want a deadlock", err)
			}
			if !strings.Contains(err.Error(), "rank 3") {
				t.Errorf("the report does not name rank 3: %v", err)
			}
		})
	}
}

// A rank that fails aborts the others, also while they wait at a gate.
func TestCollectiveAbort(t *testing.T) {
	got := make(chan error, 8)
	err := mpgo.Run(8, func(w *comm.Comm) error {
		if w.Rank() == 5 {
			time.Sleep(10 * time.Millisecond)
			return errBoom
		}
		err := w.Allreduce(input(w.Rank(), 100000, 1), garbage(100000*esz), comm.Complex128, affine)
		got <- err
		return err
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Run = %v", err)
	}
	allAborted(t, got, "allreduce")
}
