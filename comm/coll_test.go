package comm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// Every collective against a sequential reference: rank counts 1–17 and a
// few large ones, roots everywhere, counts including 0 and ones that do not
// divide by the rank count, every algorithm in turn (and the automatic
// choice), the calls of one rank count following each other on one
// communicator. Reductions use a non-commutative operator (composition of
// affine maps on 16-byte elements), so an algorithm that changes the rank
// order fails.

var le = binary.LittleEndian

const esz = 16 // bytes per element: comm.Complex128

// affine composes affine maps x → a·x + b (mod 2^64): inout = inout ∘ in.
// Associative, not commutative.
func affine(inout, in []byte) {
	for i := 0; i+esz <= len(inout); i += esz {
		a1, b1 := le.Uint64(inout[i:]), le.Uint64(inout[i+8:])
		a2, b2 := le.Uint64(in[i:]), le.Uint64(in[i+8:])
		le.PutUint64(inout[i:], a1*a2)
		le.PutUint64(inout[i+8:], a1*b2+b1)
	}
}

// The references are computed once and shared by the ranks (read only):
// under the race detector, computing them on every rank would dominate.
var refs sync.Map // refKey → []byte

type refKey struct{ fold, lo, hi, from, n, salt int }

func memo(k refKey, f func() []byte) []byte {
	if v, ok := refs.Load(k); ok {
		return v.([]byte)
	}
	v, _ := refs.LoadOrStore(k, f())
	return v.([]byte)
}

// input is (a copy of) rank r's n-element vector for case salt.
func input(r, n, salt int) []byte { return slices.Clone(inputAt(r, 0, n, salt)) }

// ref is rank r's n-element vector for case salt (read only).
func ref(r, n, salt int) []byte { return inputAt(r, 0, n, salt) }

// inputAt is elements from..from+n-1 of rank r's vector for case salt
// (read only).
func inputAt(r, from, n, salt int) []byte {
	return memo(refKey{0, r, 0, from, n, salt}, func() []byte { return makeInput(r, from, n, salt) })
}

func makeInput(r, from, n, salt int) []byte {
	b := make([]byte, n*esz)
	for i := 0; i < n; i++ {
		j := from + i
		le.PutUint64(b[i*esz:], uint64(2*(r*7919+j*31+salt)+1))
		le.PutUint64(b[i*esz+8:], uint64(r*1000003+j+salt))
	}
	return b
}

// fold reduces the n-element inputs of ranks lo..hi-1 in order.
func fold(lo, hi, n, salt int) []byte { return foldAt(lo, hi, 0, n, salt) }

// foldAt is fold of elements from..from+n-1 only (read only).
func foldAt(lo, hi, from, n, salt int) []byte {
	return memo(refKey{1, lo, hi, from, n, salt}, func() []byte {
		acc := slices.Clone(inputAt(lo, from, n, salt))
		for r := lo + 1; r < hi; r++ {
			affine(acc, inputAt(r, from, n, salt))
		}
		return acc
	})
}

func garbage(n int) []byte { return bytes.Repeat([]byte{0xA5}, n) }

func rankCounts(t *testing.T) []int {
	ns := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	if !testing.Short() {
		ns = append(ns, 64, 256)
	}
	return ns
}

func rootsFor(n int) []int {
	if n <= 4 {
		rs := make([]int, n)
		for i := range rs {
			rs[i] = i
		}
		return rs
	}
	return []int{0, n / 2, n - 1}
}

// countsFor returns element counts: 0, small, not divisible by n, and for
// some rank counts one large enough for the direct shared-memory variant
// and the rendezvous protocol.
func countsFor(n int) []int {
	cs := []int{0, 1, 3, n + 1, 37}
	if n <= 4 || n == 7 || n == 16 {
		cs = append(cs, 5003)
	}
	if n > 17 {
		cs = []int{0, 3}
	}
	return cs
}

// algsOf returns the algorithms of coll to try, AlgAuto first.
// (AlgHierarchical needs ranks in several processes: coll_hier_test.go.)
func algsOf(coll comm.Collective) []comm.Algorithm {
	algs := append([]comm.Algorithm{comm.AlgAuto}, comm.Algorithms(coll)...)
	return slices.DeleteFunc(algs, func(a comm.Algorithm) bool { return a == comm.AlgHierarchical })
}

// forAll runs body on every rank count, in one run per rank count, once
// per algorithm of coll.
func forAll(t *testing.T, coll comm.Collective, body func(w *comm.Comm, alg comm.Algorithm) error) {
	for _, n := range rankCounts(t) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, func(w *comm.Comm) error {
				for _, alg := range algsOf(coll) {
					if err := w.SetAlgorithm(coll, alg); err != nil {
						return err
					}
					if err := body(w, alg); err != nil {
						return fmt.Errorf("%v: %w", alg, err)
					}
				}
				return nil
			})
		})
	}
}

func TestBarrierAlgorithms(t *testing.T) {
	var arrived atomic.Int64 // one per run
	forAll(t, comm.CollBarrier, func(w *comm.Comm, alg comm.Algorithm) error {
		n := int64(w.Size())
		for i := 0; i < 20; i++ {
			if w.Rank() == 0 {
				arrived.Store(0)
			}
			if err := w.BarrierAlg(); err != nil {
				return err
			}
			arrived.Add(1)
			if err := w.BarrierAlg(); err != nil {
				return err
			}
			if got := arrived.Load(); got != n {
				return fmt.Errorf("after the barrier, %d of %d ranks arrived", got, n)
			}
			if err := w.BarrierAlg(); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestBcast(t *testing.T) {
	forAll(t, comm.CollBcast, func(w *comm.Comm, alg comm.Algorithm) error {
		n := w.Size()
		for _, root := range rootsFor(n) {
			for _, cnt := range countsFor(n) {
				want := input(root, cnt, cnt)
				buf := garbage(cnt * esz)
				if w.Rank() == root {
					copy(buf, want)
				}
				if err := w.Bcast(buf, comm.Complex128, root); err != nil {
					return err
				}
				if !bytes.Equal(buf, want) {
					return fmt.Errorf("root %d count %d: rank %d got the wrong data", root, cnt, w.Rank())
				}
			}
		}
		return nil
	})
}

func TestReduce(t *testing.T) {
	forAll(t, comm.CollReduce, func(w *comm.Comm, alg comm.Algorithm) error {
		for _, root := range rootsFor(w.Size()) {
			for _, cnt := range countsFor(w.Size()) {
				for _, inPlace := range []bool{false, true} {
					if err := reduceCase(w, root, cnt, inPlace); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// reduceCase runs one Reduce of cnt elements to root and checks the result.
func reduceCase(w *comm.Comm, root, cnt int, inPlace bool) error {
	n, me := w.Size(), w.Rank()
	send := input(me, cnt, cnt)
	var recv []byte
	if me == root {
		recv = garbage(cnt * esz)
		if inPlace {
			recv = send
		}
	}
	if err := w.Reduce(send, recv, comm.Complex128, affine, root); err != nil {
		return err
	}
	if me == root && !bytes.Equal(recv, fold(0, n, cnt, cnt)) {
		return fmt.Errorf("reduce to %d count %d in place %v: wrong result", root, cnt, inPlace)
	}
	return nil
}

func TestAllreduce(t *testing.T) {
	forAll(t, comm.CollAllreduce, func(w *comm.Comm, alg comm.Algorithm) error {
		for _, cnt := range countsFor(w.Size()) {
			for _, inPlace := range []bool{false, true} {
				if err := allreduceCase(w, cnt, inPlace); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// allreduceCase runs one Allreduce of cnt elements and checks the result.
func allreduceCase(w *comm.Comm, cnt int, inPlace bool) error {
	n, me := w.Size(), w.Rank()
	send := input(me, cnt, cnt)
	recv := garbage(cnt * esz)
	if inPlace {
		recv = send
	}
	if err := w.Allreduce(send, recv, comm.Complex128, affine); err != nil {
		return err
	}
	if !bytes.Equal(recv, fold(0, n, cnt, cnt)) {
		return fmt.Errorf("allreduce count %d in place %v: rank %d: wrong result", cnt, inPlace, me)
	}
	return nil
}

// Reductions on more ranks than the replicated shared-memory variant
// serves: vectors short enough for the combined variant (counts 1 and 4),
// one just too long for it (5, direct) and none; roots first, in the
// middle and last; in place and not.
func TestReduceManyRanks(t *testing.T) {
	const n = 1100 // 1100 × 16 bytes: beyond the replicated variant
	run(t, n, func(w *comm.Comm) error {
		for _, cnt := range []int{0, 1, 4, 5} {
			for _, inPlace := range []bool{false, true} {
				if err := allreduceCase(w, cnt, inPlace); err != nil {
					return err
				}
				for _, root := range []int{0, n / 2, n - 1} {
					if err := reduceCase(w, root, cnt, inPlace); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

func TestReduceScatterBlock(t *testing.T) {
	forAll(t, comm.CollReduceScatter, func(w *comm.Comm, alg comm.Algorithm) error {
		n, me := w.Size(), w.Rank()
		for _, k := range []int{0, 1, 3, 700} {
			if n > 17 && k > 3 {
				continue
			}
			for _, inPlace := range []bool{false, true} {
				send := input(me, n*k, k)
				recv := garbage(k * esz)
				if inPlace {
					recv = send
				}
				if err := w.ReduceScatterBlock(send, recv, comm.Complex128, affine); err != nil {
					return err
				}
				want := foldAt(0, n, me*k, k, k)
				if !bytes.Equal(recv[:k*esz], want) {
					return fmt.Errorf("block %d in place %v: rank %d: wrong result", k, inPlace, me)
				}
			}
		}
		return nil
	})
}

func TestScan(t *testing.T) {
	forAll(t, comm.CollScan, func(w *comm.Comm, alg comm.Algorithm) error {
		n, me := w.Size(), w.Rank()
		for _, cnt := range countsFor(n) {
			for _, inPlace := range []bool{false, true} {
				send := input(me, cnt, cnt)
				recv := garbage(cnt * esz)
				if inPlace {
					recv = send
				}
				if err := w.Scan(send, recv, comm.Complex128, affine); err != nil {
					return err
				}
				if !bytes.Equal(recv, fold(0, me+1, cnt, cnt)) {
					return fmt.Errorf("scan count %d in place %v: rank %d: wrong result", cnt, inPlace, me)
				}
				send = input(me, cnt, cnt)
				recv = garbage(cnt * esz)
				if inPlace {
					recv = send
				}
				if err := w.Exscan(send, recv, comm.Complex128, affine); err != nil {
					return err
				}
				switch {
				case me == 0 && !inPlace && !bytes.Equal(recv, garbage(cnt*esz)):
					return fmt.Errorf("exscan count %d: rank 0's buffer was written", cnt)
				case me > 0 && !bytes.Equal(recv, fold(0, me, cnt, cnt)):
					return fmt.Errorf("exscan count %d in place %v: rank %d: wrong result", cnt, inPlace, me)
				}
			}
		}
		return nil
	})
}

// blocksOf returns the concatenated inputs of every rank, rank i with
// count cnt(i) (a fresh copy).
func blocksOf(n, salt int, cnt func(int) int) []byte {
	var all []byte
	for r := 0; r < n; r++ {
		all = append(all, inputAt(r, 0, cnt(r), salt)...)
	}
	return all
}

func TestGather(t *testing.T) {
	forAll(t, comm.CollGather, func(w *comm.Comm, alg comm.Algorithm) error {
		n, me := w.Size(), w.Rank()
		for _, root := range rootsFor(n) {
			for _, cnt := range countsFor(n) {
				for _, inPlace := range []bool{false, true} {
					send := input(me, cnt, cnt)
					var recv, want []byte
					if me == root {
						want = blocksOf(n, cnt, func(int) int { return cnt })
						recv = garbage(n * cnt * esz)
						if inPlace {
							copy(recv[me*cnt*esz:], send)
							send = recv
						}
					}
					if err := w.Gather(send, recv, comm.Complex128, root); err != nil {
						return err
					}
					if me == root && !bytes.Equal(recv, want) {
						return fmt.Errorf("gather root %d count %d in place %v: wrong result", root, cnt, inPlace)
					}
				}
				// Gatherv: rank i sends i%4+cnt%3 elements, in reverse order.
				vc := func(i int) int { return i%4 + cnt%3 }
				counts, displs := make([]int, n), make([]int, n)
				at := 0
				for i := n - 1; i >= 0; i-- {
					counts[i], displs[i] = vc(i), at
					at += vc(i)
				}
				send := input(me, vc(me), cnt)
				var recv []byte
				if me == root {
					recv = garbage(at * esz)
				}
				if err := w.Gatherv(send, recv, counts, displs, comm.Complex128, root); err != nil {
					return err
				}
				if me == root {
					for i := 0; i < n; i++ {
						if !bytes.Equal(recv[displs[i]*esz:(displs[i]+counts[i])*esz], ref(i, vc(i), cnt)) {
							return fmt.Errorf("gatherv root %d: rank %d's block is wrong", root, i)
						}
					}
				}
			}
		}
		return nil
	})
}

func TestScatter(t *testing.T) {
	forAll(t, comm.CollScatter, func(w *comm.Comm, alg comm.Algorithm) error {
		n, me := w.Size(), w.Rank()
		for _, root := range rootsFor(n) {
			for _, cnt := range countsFor(n) {
				for _, inPlace := range []bool{false, true} {
					var send []byte
					recv := garbage(cnt * esz)
					if me == root {
						send = blocksOf(n, cnt, func(int) int { return cnt })
						if inPlace {
							recv = send
						}
					}
					if err := w.Scatter(send, recv, comm.Complex128, root); err != nil {
						return err
					}
					got := recv
					if me == root && inPlace {
						got = recv[me*cnt*esz : (me+1)*cnt*esz]
					}
					if !bytes.Equal(got, ref(me, cnt, cnt)) {
						return fmt.Errorf("scatter root %d count %d in place %v: rank %d: wrong block", root, cnt, inPlace, me)
					}
				}
				vc := func(i int) int { return (i+cnt)%5 + cnt%2 }
				counts := make([]int, n)
				for i := range counts {
					counts[i] = vc(i)
				}
				var send []byte
				if me == root {
					send = blocksOf(n, cnt, vc)
				}
				recv := garbage(vc(me) * esz)
				if err := w.Scatterv(send, counts, nil, recv, comm.Complex128, root); err != nil {
					return err
				}
				if !bytes.Equal(recv, ref(me, vc(me), cnt)) {
					return fmt.Errorf("scatterv root %d: rank %d: wrong block", root, me)
				}
			}
		}
		return nil
	})
}

func TestAllgather(t *testing.T) {
	forAll(t, comm.CollAllgather, func(w *comm.Comm, alg comm.Algorithm) error {
		n, me := w.Size(), w.Rank()
		for _, cnt := range countsFor(n) {
			if n > 17 && cnt == 0 { // n² messages per call: a few calls only
				continue
			}
			for _, inPlace := range []bool{false, true} {
				if n > 17 && inPlace {
					continue
				}
				want := blocksOf(n, cnt, func(int) int { return cnt })
				send := input(me, cnt, cnt)
				recv := garbage(n * cnt * esz)
				if inPlace {
					copy(recv[me*cnt*esz:], send)
					send = recv
				}
				if err := w.Allgather(send, recv, comm.Complex128); err != nil {
					return err
				}
				if !bytes.Equal(recv, want) {
					return fmt.Errorf("allgather count %d in place %v: rank %d: wrong result", cnt, inPlace, me)
				}
			}
			vc := func(i int) int { return (i*3+cnt)%7 + cnt%3 }
			counts := make([]int, n)
			for i := range counts {
				counts[i] = vc(i)
			}
			recv := garbage(len(blocksOf(n, cnt, vc)))
			if err := w.Allgatherv(input(me, vc(me), cnt), recv, counts, nil, comm.Complex128); err != nil {
				return err
			}
			if !bytes.Equal(recv, blocksOf(n, cnt, vc)) {
				return fmt.Errorf("allgatherv count %d: rank %d: wrong result", cnt, me)
			}
		}
		return nil
	})
}

func TestAlltoall(t *testing.T) {
	forAll(t, comm.CollAlltoall, func(w *comm.Comm, alg comm.Algorithm) error {
		n, me := w.Size(), w.Rank()
		// Block j of rank i's send: input(i*n+j, k, salt).
		for _, k := range []int{0, 1, 3, 19, 700} {
			if n > 17 && k != 3 { // n² messages per call: a few calls only
				continue
			}
			for _, inPlace := range []bool{false, true} {
				if n > 17 && inPlace {
					continue
				}
				send := blocksOf(n, k, func(j int) int { return k })
				for j := 0; j < n; j++ {
					copy(send[j*k*esz:], makeInput(me*n+j, 0, k, k))
				}
				recv := garbage(len(send))
				if inPlace {
					recv = send
				}
				if err := w.Alltoall(send, recv, comm.Complex128); err != nil {
					return err
				}
				for i := 0; i < n; i++ {
					if !bytes.Equal(recv[i*k*esz:(i+1)*k*esz], makeInput(i*n+me, 0, k, k)) {
						return fmt.Errorf("alltoall block %d in place %v: rank %d: block from %d is wrong", k, inPlace, me, i)
					}
				}
			}
			// Alltoallv: rank i sends (i+j)%3+k%2 elements to rank j,
			// packed in reverse rank order on the receiving side.
			vc := func(i, j int) int { return (i+j)%3 + k%2 }
			scounts, rcounts, rdispls := make([]int, n), make([]int, n), make([]int, n)
			var send []byte
			for j := 0; j < n; j++ {
				scounts[j] = vc(me, j)
				send = append(send, makeInput(me*n+j, 0, vc(me, j), k)...)
			}
			at := 0
			for i := n - 1; i >= 0; i-- {
				rcounts[i], rdispls[i] = vc(i, me), at
				at += vc(i, me)
			}
			recv := garbage(at * esz)
			if err := w.Alltoallv(send, scounts, nil, recv, rcounts, rdispls, comm.Complex128); err != nil {
				return err
			}
			for i := 0; i < n; i++ {
				if !bytes.Equal(recv[rdispls[i]*esz:(rdispls[i]+rcounts[i])*esz], makeInput(i*n+me, 0, vc(i, me), k)) {
					return fmt.Errorf("alltoallv %d: rank %d: block from %d is wrong", k, me, i)
				}
			}
		}
		return nil
	})
}

type vpoint struct {
	Name string
	X, Y int
}

func TestCollValues(t *testing.T) {
	for _, n := range []int{1, 2, 5, 16} {
		for _, alg := range []comm.Algorithm{comm.AlgAuto, comm.AlgBinomial, comm.AlgFlat} {
			t.Run(fmt.Sprint(n, alg), func(t *testing.T) {
				run(t, n, func(w *comm.Comm) error {
					if alg != comm.AlgAuto {
						if err := w.SetAlgorithm(comm.CollBcast, alg); err != nil {
							return err
						}
						if err := w.SetAlgorithm(comm.CollGather, alg); err != nil {
							return err
						}
					}
					for root := 0; root < n; root += 3 {
						var p vpoint
						if w.Rank() == root {
							p = vpoint{"root", root, -root}
						}
						if err := w.BcastValue(&p, root); err != nil {
							return err
						}
						if p != (vpoint{"root", root, -root}) {
							return fmt.Errorf("rank %d got %+v", w.Rank(), p)
						}
						var all []vpoint
						if err := w.GatherValue(vpoint{fmt.Sprint(w.Rank()), w.Rank(), root}, &all, root); err != nil {
							return err
						}
						if w.Rank() == root {
							if len(all) != n {
								return fmt.Errorf("gathered %d values", len(all))
							}
							for i, q := range all {
								if q != (vpoint{fmt.Sprint(i), i, root}) {
									return fmt.Errorf("value %d is %+v", i, q)
								}
							}
						}
					}
					return nil
				})
			})
		}
	}
}

// The collectives of a communicator whose members are not all in this
// process (two worlds joined by a device) use the point-to-point family.
func TestCollectivesAcrossDevice(t *testing.T) {
	for _, n := range []int{2, 5, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			runPiped(t, n, n/2, func(w *comm.Comm) error {
				if w.SharedMemory() {
					return errors.New("a piped world counts as shared memory")
				}
				if err := w.SetAlgorithm(comm.CollBcast, comm.AlgSharedMemory); !errors.Is(err, comm.ErrNotSupported) {
					return fmt.Errorf("SetAlgorithm(shared memory) = %v", err)
				}
				me := w.Rank()
				for _, cnt := range []int{0, 5, 6000} {
					buf := garbage(cnt * esz)
					if me == 1 {
						copy(buf, input(1, cnt, 1))
					}
					if err := w.Bcast(buf, comm.Complex128, 1); err != nil {
						return err
					}
					if !bytes.Equal(buf, ref(1, cnt, 1)) {
						return fmt.Errorf("bcast %d: wrong data", cnt)
					}
					recv := garbage(cnt * esz)
					if err := w.Allreduce(input(me, cnt, 2), recv, comm.Complex128, affine); err != nil {
						return err
					}
					if !bytes.Equal(recv, fold(0, n, cnt, 2)) {
						return fmt.Errorf("allreduce %d: wrong result", cnt)
					}
					all := garbage(n * cnt * esz)
					if err := w.Allgather(input(me, cnt, 3), all, comm.Complex128); err != nil {
						return err
					}
					if !bytes.Equal(all, blocksOf(n, 3, func(int) int { return cnt })) {
						return fmt.Errorf("allgather %d: wrong result", cnt)
					}
				}
				var s string
				if me == 0 {
					s = "hello"
				}
				if err := w.BcastValue(&s, 0); err != nil || s != "hello" {
					return fmt.Errorf("bcast value: %q, %v", s, err)
				}
				return w.BarrierAlg()
			})
		})
	}
}
