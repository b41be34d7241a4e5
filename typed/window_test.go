package typed_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// One-sided communication against sequential references: what each rank
// should find in its part after a program of Puts, Gets and accumulates,
// computed without communication, on 1-17 and 64 ranks.

// windowRanks are the rank counts the window tests run on: the
// collectives' (1-17, and 64 without -short), 256 left out.
func windowRanks() []int {
	return slices.DeleteFunc(rankCounts(), func(n int) bool { return n > 64 })
}

// onWindowRanks runs body on each rank count of windowRanks.
func onWindowRanks(t *testing.T, body func(w *comm.Comm) error) {
	t.Helper()
	for _, n := range windowRanks() {
		if err := mpgo.Run(n, body); err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
	}
}

// makers are the ways to make a window of n elements: over a slice of the
// rank's (on the Go heap, where the race detector sees it), allocated by
// the library, and shared.
var makers = []struct {
	name string
	make func(c *comm.Comm, n int) (*typed.Window[int64], []int64, error)
}{
	{"NewWindow", func(c *comm.Comm, n int) (*typed.Window[int64], []int64, error) {
		base := make([]int64, n)
		w, err := typed.NewWindow(c, base)
		return w, base, err
	}},
	{"AllocWindow", typed.AllocWindow[int64]},
	{"AllocSharedWindow", typed.AllocSharedWindow[int64]},
}

// TestWindowFencePutGet: every rank Puts its number into every other
// rank's part at its own index, and after a Fence Gets a neighbour's whole
// part: both must equal the reference (element i is i+1).
func TestWindowFencePutGet(t *testing.T) {
	for _, mk := range makers {
		t.Run(mk.name, func(t *testing.T) {
			onWindowRanks(t, fencePutGet(mk.make))
		})
	}
}

// fencePutGet is TestWindowFencePutGet's rank function, on windows mk makes.
func fencePutGet(mk func(c *comm.Comm, n int) (*typed.Window[int64], []int64, error)) func(c *comm.Comm) error {
	return func(c *comm.Comm) error {
		n, me := c.Size(), c.Rank()
		w, part, err := mk(c, n)
		if err != nil {
			return err
		}
		if err := w.Fence(); err != nil {
			return err
		}
		for k := range n {
			if err := w.Put([]int64{int64(me + 1)}, (me+k)%n, me); err != nil {
				return err
			}
		}
		if err := w.Fence(); err != nil {
			return err
		}
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if !slices.Equal(part, want) {
			return fmt.Errorf("rank %d: part %v, want %v", me, part, want)
		}
		got := make([]int64, n)
		if err := w.Get(got, (me+1)%n, 0); err != nil {
			return err
		}
		if err := w.Fence(); err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("rank %d: got %v from rank %d, want %v", me, got, (me+1)%n, want)
		}
		// The parts may be written again after the last Fence.
		for i := range part {
			part[i] = 0
		}
		return w.Free()
	}
}

// TestWindowAccumulateReference runs a program of accumulates (Sum, Max,
// Replace, GetAccumulate with NoOp) from every rank to every rank in one
// fence epoch, and compares each part with the sequential result.
func TestWindowAccumulateReference(t *testing.T) {
	onWindowRanks(t, accumulateReference)
}

// accumulateReference is TestWindowAccumulateReference's rank function.
func accumulateReference(c *comm.Comm) error {
	const m = 5
	n, me := c.Size(), c.Rank()
	base := make([]int64, 3*m)
	w, err := typed.NewWindow(c, base)
	if err != nil {
		return err
	}
	if err := w.Fence(); err != nil {
		return err
	}
	for tgt := range n {
		v := make([]int64, m)
		for i := range v {
			v[i] = int64(me*m + i + tgt)
		}
		if err := w.Accumulate(v, tgt, 0, typed.Sum[int64]); err != nil {
			return err
		}
		if err := w.Accumulate(v, tgt, m, typed.Max[int64]); err != nil {
			return err
		}
		if tgt == me {
			if err := w.Accumulate(v, tgt, 2*m, typed.Replace[int64]); err != nil {
				return err
			}
		}
	}
	if err := w.Fence(); err != nil {
		return err
	}
	for i := range m {
		var sum, mx int64
		for r := range n {
			sum += int64(r*m + i + me)
			mx = max(mx, int64(r*m+i+me))
		}
		if base[i] != sum || base[m+i] != mx || base[2*m+i] != int64(me*m+i+me) {
			return fmt.Errorf("rank %d element %d: sum %d max %d replaced %d, want %d %d %d",
				me, i, base[i], base[m+i], base[2*m+i], sum, mx, me*m+i+me)
		}
	}
	// An atomic read of the left neighbour's sums.
	left := (me + n - 1) % n
	got := make([]int64, m)
	if err := w.GetAccumulate(make([]int64, m), got, left, 0, typed.NoOp[int64]); err != nil {
		return err
	}
	for i := range m {
		var sum int64
		for r := range n {
			sum += int64(r*m + i + left)
		}
		if got[i] != sum {
			return fmt.Errorf("rank %d: GetAccumulate(NoOp) of rank %d element %d: %d, want %d", me, left, i, got[i], sum)
		}
	}
	if err := w.Fence(); err != nil {
		return err
	}
	return w.Free()
}

// concurrentSum runs sumBody on 2, 5, 16 and 64 ranks.
func concurrentSum[T any](t *testing.T, one T, add typed.Op[T], count func(T) int) {
	t.Helper()
	for _, n := range []int{2, 5, 16, 64} {
		if err := mpgo.Run(n, sumBody(one, add, count)); err != nil {
			t.Fatal(err)
		}
	}
}

// sumBody has every rank, from several goroutines, accumulate one into
// one element of rank 0's part 100 times each, in a LockAll epoch: the
// element must come out exactly ranks·goroutines·100 (as count reads it),
// whatever the element type (updated by compare-and-swap or under a lock).
func sumBody[T any](one T, add typed.Op[T], count func(T) int) func(c *comm.Comm) error {
	return sumBodyOn(typed.AllocWindow[T], one, add, count)
}

// sumBodyOn is sumBody on windows alloc makes.
func sumBodyOn[T any](alloc func(c *comm.Comm, n int) (*typed.Window[T], []T, error), one T, add typed.Op[T], count func(T) int) func(c *comm.Comm) error {
	const goroutines, reps = 3, 100
	return func(c *comm.Comm) error {
		n := c.Size()
		w, part, err := alloc(c, 3)
		if err != nil {
			return err
		}
		if err := w.LockAll(); err != nil {
			return err
		}
		var wg sync.WaitGroup
		errs := make([]error, goroutines)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range reps {
					if err := w.Accumulate([]T{one}, 0, 1, add); err != nil {
						errs[g] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if err := w.UnlockAll(); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if got, want := count(part[1]), n*goroutines*reps; got != want || count(part[0]) != 0 || count(part[2]) != 0 {
				return fmt.Errorf("%d ranks: element 1 is %d, want %d (neighbours %d, %d)", n, got, want, count(part[0]), count(part[2]))
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		return w.Free()
	}
}

// triple is a 12-byte element: accumulated under the window's locks.
type triple struct{ A, B, C int32 }

// pair is an 8-byte struct element: accumulated by compare-and-swap.
type pair struct{ A, B int32 }

func TestWindowConcurrentAccumulate(t *testing.T) {
	t.Run("int64", func(t *testing.T) { concurrentSum(t, int64(1), typed.Sum[int64], func(v int64) int { return int(v) }) })
	t.Run("int32", func(t *testing.T) { concurrentSum(t, int32(1), typed.Sum[int32], func(v int32) int { return int(v) }) })
	t.Run("float64", func(t *testing.T) { concurrentSum(t, 1.0, typed.Sum[float64], func(v float64) int { return int(v) }) })
	t.Run("float32", func(t *testing.T) {
		concurrentSum(t, float32(1), typed.Sum[float32], func(v float32) int { return int(v) })
	})
	t.Run("uint16", func(t *testing.T) {
		concurrentSum(t, uint16(1), typed.Sum[uint16], func(v uint16) int { return int(v) })
	})
	t.Run("complex128", func(t *testing.T) {
		concurrentSum(t, complex(1, 0), typed.Sum[complex128], func(v complex128) int { return int(real(v)) })
	})
	t.Run("pair", func(t *testing.T) { concurrentSum(t, pair{1, 1}, addPair, countPair) })
	t.Run("triple", func(t *testing.T) { concurrentSum(t, triple{1, 2, 3}, addTriple, countTriple) })
}

// addPair is a user op on pairs: A counts up, B down.
func addPair(inout, in []pair) {
	for i := range inout {
		inout[i].A += in[i].A
		inout[i].B -= in[i].B
	}
}

// countPair reads addPair's count, -1 when A and B disagree (a torn update).
func countPair(v pair) int {
	if v.A != -v.B {
		return -1
	}
	return int(v.A)
}

// addTriple is a user op on triples.
func addTriple(inout, in []triple) {
	for i := range inout {
		inout[i].A += in[i].A
		inout[i].B += in[i].B
		inout[i].C += in[i].C
	}
}

// countTriple reads addTriple's count of triple{1, 2, 3}s, -1 when torn.
func countTriple(v triple) int {
	if v.B != 2*v.A || v.C != 3*v.A {
		return -1
	}
	return int(v.A)
}

// TestWindowCounter hands out work items with FetchAndOp on a counter at
// rank 0: every item is handed out exactly once.
func TestWindowCounter(t *testing.T) {
	for _, n := range []int{1, 3, 8, 17} {
		if err := mpgo.Run(n, counterBody(500)); err != nil {
			t.Fatal(err)
		}
	}
}

// counterBody hands out items with FetchAndOp at rank 0 and checks, by an
// Allreduce of who took what, that each was taken once.
func counterBody(items int) func(c *comm.Comm) error {
	return counterBodyOn(typed.AllocWindow[int64], items)
}

// counterBodyOn is counterBody on windows mk makes.
func counterBodyOn(mk func(c *comm.Comm, n int) (*typed.Window[int64], []int64, error), items int) func(c *comm.Comm) error {
	return func(c *comm.Comm) error {
		w, _, err := mk(c, 1)
		if err != nil {
			return err
		}
		if err := w.Lock(0, false); err != nil {
			return err
		}
		took := make([]int64, items)
		for {
			i, err := w.FetchAndOp(1, 0, 0, typed.Sum[int64])
			if err != nil {
				return err
			}
			if i >= int64(items) {
				break
			}
			took[i]++
		}
		if err := w.Unlock(0); err != nil {
			return err
		}
		all := make([]int64, items)
		if err := typed.Of[int64](c).Allreduce(took, all, typed.Sum[int64]); err != nil {
			return err
		}
		for i, k := range all {
			if k != 1 {
				return fmt.Errorf("%d ranks: item %d handed out %d times", c.Size(), i, k)
			}
		}
		return w.Free()
	}
}

// TestWindowCompareAndSwapMutex builds a mutex on CompareAndSwap and
// guards with it a read-modify-write of another element by Get and Put:
// no increment may be lost.
func TestWindowCompareAndSwapMutex(t *testing.T) {
	for _, n := range []int{2, 4, 16} {
		if err := mpgo.Run(n, casMutex); err != nil {
			t.Fatal(err)
		}
	}
}

// casMutex is TestWindowCompareAndSwapMutex's rank function.
func casMutex(c *comm.Comm) error { return casMutexOn(c, makers[0].make) }

// casMutexOn is casMutex on windows mk makes.
func casMutexOn(c *comm.Comm, mk func(c *comm.Comm, n int) (*typed.Window[int64], []int64, error)) error {
	const reps = 50
	n := c.Size()
	w, base, err := mk(c, 2) // rank 0's: the mutex, the counter
	if err != nil {
		return err
	}
	if err := w.LockAll(); err != nil {
		return err
	}
	for range reps {
		for {
			old, err := w.CompareAndSwap(0, int64(c.Rank()+1), 0, 0)
			if err != nil {
				return err
			}
			if old == 0 {
				break
			}
			runtime.Gosched()
		}
		v := make([]int64, 1)
		if err := w.Get(v, 0, 1); err != nil {
			return err
		}
		v[0]++
		if err := w.Put(v, 0, 1); err != nil {
			return err
		}
		if err := w.Flush(0); err != nil {
			return err
		}
		if old, err := w.FetchAndOp(0, 0, 0, typed.Replace[int64]); err != nil || old != int64(c.Rank()+1) {
			return fmt.Errorf("rank %d: released a mutex held by %d (%v)", c.Rank(), old-1, err)
		}
	}
	if err := w.UnlockAll(); err != nil {
		return err
	}
	if err := w.Fence(); err != nil {
		return err
	}
	if c.Rank() == 0 && base[1] != int64(n*reps) {
		return fmt.Errorf("%d ranks: counter %d, want %d", n, base[1], n*reps)
	}
	return w.Free()
}

// TestWindowPassiveTargetBusy: rank 0 computes without calling mpgo while
// every other rank locks its part exclusively, adds to it with a Get and a
// Put, and unlocks: the target's cooperation is not needed, and the
// exclusive locks keep the read-modify-writes apart.
func TestWindowPassiveTargetBusy(t *testing.T) {
	for _, n := range []int{2, 5, 17} {
		if err := mpgo.Run(n, passiveBusy); err != nil {
			t.Fatal(err)
		}
	}
}

// passiveBusy is TestWindowPassiveTargetBusy's rank function.
func passiveBusy(c *comm.Comm) error {
	n := c.Size()
	w, part, err := typed.AllocWindow[int64](c, 2)
	if err != nil {
		return err
	}
	if c.Rank() == 0 {
		// Busy: wait for the others' updates by reading memory, calling
		// nothing of mpgo's.
		for atomic.LoadInt64(&part[1]) < int64(n-1) {
			runtime.Gosched()
		}
	} else {
		for range 20 {
			if err := w.Lock(0, true); err != nil {
				return err
			}
			v := make([]int64, 1)
			if err := w.Get(v, 0, 0); err != nil {
				return err
			}
			v[0] += int64(c.Rank())
			if err := w.Put(v, 0, 0); err != nil {
				return err
			}
			if err := w.Unlock(0); err != nil {
				return err
			}
		}
		if err := w.Lock(0, false); err != nil {
			return err
		}
		if _, err := w.FetchAndOp(1, 0, 1, typed.Sum[int64]); err != nil {
			return err
		}
		if err := w.Unlock(0); err != nil {
			return err
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if c.Rank() == 0 {
		if want := int64(20 * n * (n - 1) / 2); part[0] != want {
			return fmt.Errorf("%d ranks: sum %d, want %d", n, part[0], want)
		}
	}
	return w.Free()
}

// TestWindowPSCW: a ring by generalized active target: each rank exposes
// its part to its left neighbour and accesses its right one's.
func TestWindowPSCW(t *testing.T) {
	onWindowRanks(t, pscwRing)
}

// pscwRing is TestWindowPSCW's rank function.
func pscwRing(c *comm.Comm) error {
	n, me := c.Size(), c.Rank()
	base := make([]int64, 1)
	w, err := typed.NewWindow(c, base)
	if err != nil {
		return err
	}
	g := c.Group()
	left, err := g.Incl([]int{(me + n - 1) % n})
	if err != nil {
		return err
	}
	right, err := g.Incl([]int{(me + 1) % n})
	if err != nil {
		return err
	}
	for round := range 3 {
		if err := w.Post(left); err != nil {
			return err
		}
		if err := w.Start(right); err != nil {
			return err
		}
		if err := w.Put([]int64{int64(100*round + me)}, (me+1)%n, 0); err != nil {
			return err
		}
		if err := w.Complete(); err != nil {
			return err
		}
		if err := w.Wait(); err != nil {
			return err
		}
		if want := int64(100*round + (me+n-1)%n); base[0] != want {
			return fmt.Errorf("rank %d round %d: %d, want %d", me, round, base[0], want)
		}
	}
	return w.Free()
}

// TestWindowShared: parts of different lengths, one block of memory; each
// rank reads its neighbours' parts directly after a Fence.
func TestWindowShared(t *testing.T) {
	onWindowRanks(t, func(c *comm.Comm) error {
		n, me := c.Size(), c.Rank()
		w, part, err := typed.AllocSharedWindow[int32](c, me%3)
		if err != nil {
			return err
		}
		if len(part) != me%3 {
			return fmt.Errorf("rank %d: part of %d elements, want %d", me, len(part), me%3)
		}
		for i := range part {
			part[i] = int32(1000*me + i)
		}
		if err := w.Fence(); err != nil {
			return err
		}
		for r := range n {
			p, err := w.SharedQuery(r)
			if err != nil {
				return err
			}
			if len(p) != r%3 {
				return fmt.Errorf("rank %d: rank %d's part has %d elements, want %d", me, r, len(p), r%3)
			}
			for i, v := range p {
				if v != int32(1000*r+i) {
					return fmt.Errorf("rank %d: rank %d's element %d is %d", me, r, i, v)
				}
			}
		}
		if err := w.Fence(); err != nil {
			return err
		}
		return w.Free()
	})
}

// TestWindowOnSplit: windows on the halves of a split communicator are
// independent, ranked in their halves, and run the reference programs.
func TestWindowOnSplit(t *testing.T) {
	err := mpgo.Run(7, func(c *comm.Comm) error {
		half, err := c.Split(c.Rank()%2, -c.Rank()) // reversed order within each half
		if err != nil {
			return err
		}
		if err := accumulateReference(half); err != nil {
			return fmt.Errorf("half of rank %d: %w", c.Rank(), err)
		}
		if err := pscwRing(half); err != nil {
			return fmt.Errorf("half of rank %d: %w", c.Rank(), err)
		}
		return counterBody(100)(half)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWindowAccumulateBytes: accumulates of bytes with Sum (which run
// eight bytes at a time) against the element-wise reference, for every
// length up to 40 at every offset up to 9, signed and unsigned, wrapping
// around.
func TestWindowAccumulateBytes(t *testing.T) {
	err := mpgo.Run(2, func(c *comm.Comm) error {
		w, part, err := typed.AllocWindow[uint8](c, 64)
		if err != nil {
			return err
		}
		ws, sparts, err := typed.AllocWindow[int8](c, 64)
		if err != nil {
			return err
		}
		if err := w.Fence(); err != nil {
			return err
		}
		if err := ws.Fence(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			for n := range 41 {
				for off := range 10 {
					want := make([]uint8, 64)
					for i := range part {
						part[i] = uint8(i*37 + n)
						sparts[i] = int8(part[i])
						want[i] = part[i]
					}
					src := make([]uint8, n)
					ssrc := make([]int8, n)
					for i := range src {
						src[i] = uint8(200 + i*13 + off)
						ssrc[i] = int8(src[i])
						want[off+i] += src[i]
					}
					if err := w.Accumulate(src, 0, off, typed.Sum[uint8]); err != nil {
						return err
					}
					if err := ws.Accumulate(ssrc, 0, off, typed.Sum[int8]); err != nil {
						return err
					}
					for i := range want {
						if part[i] != want[i] || uint8(sparts[i]) != want[i] {
							return fmt.Errorf("%d bytes at %d: element %d is %d (signed %d), want %d", n, off, i, part[i], sparts[i], want[i])
						}
					}
				}
			}
		}
		if err := w.Fence(); err != nil {
			return err
		}
		if err := ws.Fence(); err != nil {
			return err
		}
		if err := w.Free(); err != nil {
			return err
		}
		return ws.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
}
