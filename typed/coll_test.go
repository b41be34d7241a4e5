package typed_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// The typed collectives against sequential references, for several element
// types and operators, every algorithm pinned in turn. (package comm's
// tests cover the algorithms in depth with a non-commutative operator on
// bytes.)

func rankCounts() []int {
	ns := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	if !testing.Short() {
		ns = append(ns, 64, 256)
	}
	return ns
}

// each runs body on every rank count (one run each) with every algorithm
// of coll, AlgAuto first.
func each(t *testing.T, coll comm.Collective, body func(w *comm.Comm) error) {
	t.Helper()
	eachOn(t, rankCounts(), coll, body)
}

// eachOn is each on the rank counts ns.
func eachOn(t *testing.T, ns []int, coll comm.Collective, body func(w *comm.Comm) error) {
	t.Helper()
	for _, n := range ns {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			err := mpgo.Run(n, func(w *comm.Comm) error {
				for _, alg := range append([]comm.Algorithm{comm.AlgAuto}, comm.Algorithms(coll)...) {
					if err := w.SetAlgorithm(coll, alg); errors.Is(err, comm.ErrNotSupported) {
						continue // AlgHierarchical: goroutine ranks are one process
					} else if err != nil {
						return err
					}
					if err := body(w); err != nil {
						return fmt.Errorf("%v: rank %d: %w", alg, w.Rank(), err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func counts(n int) []int {
	if n > 17 {
		return []int{0, 3}
	}
	if n <= 3 || n == 7 || n == 16 { // large enough for the direct shared-memory variants
		return []int{0, 1, n + 1, 1000, 9000}
	}
	return []int{0, 1, n + 1, 1000}
}

// val is rank r's element i: small integers, exact in every type used.
func val[T typed.Number](r, i int) T { return table[T]()[(r*31+i*7)%97] }

var tables sync.Map // reflect.Type → []T

// table returns 0..96 as T.
func table[T typed.Number]() []T {
	if tab, ok := tables.Load(reflect.TypeFor[T]()); ok {
		return tab.([]T)
	}
	tab := make([]T, 97)
	for x := range tab {
		rv := reflect.ValueOf(&tab[x]).Elem()
		switch {
		case rv.CanInt():
			rv.SetInt(int64(x))
		case rv.CanUint():
			rv.SetUint(uint64(x))
		case rv.CanFloat():
			rv.SetFloat(float64(x))
		default:
			rv.SetComplex(complex(float64(x), 1))
		}
	}
	tables.Store(reflect.TypeFor[T](), tab)
	return tab
}

func vec[T typed.Number](r, n int) []T {
	tab := table[T]()
	v := make([]T, n)
	for i := range v {
		v[i] = tab[(r*31+i*7)%97]
	}
	return v
}

// last keeps the higher rank's value: associative, not commutative; a
// reduction with it yields the last rank's vector, and a scan each rank's
// own.
func last[T any](inout, in []T) { copy(inout, in) }

func TestTypedBcast(t *testing.T) {
	each(t, comm.CollBcast, func(w *comm.Comm) error {
		n := w.Size()
		for _, cnt := range counts(n) {
			root := cnt % n
			f := make([]float32, cnt)
			c := make([]celsius, cnt)
			if w.Rank() == root {
				f, c = vec[float32](root, cnt), vec[celsius](root, cnt)
			}
			if err := typed.Of[float32](w).Bcast(f, root); err != nil {
				return err
			}
			if err := typed.Of[celsius](w).Bcast(c, root); err != nil {
				return err
			}
			if !slices.Equal(f, vec[float32](root, cnt)) || !slices.Equal(c, vec[celsius](root, cnt)) {
				return fmt.Errorf("count %d: wrong data", cnt)
			}
		}
		return nil
	})
}

func TestTypedReductions(t *testing.T) {
	each(t, comm.CollAllreduce, func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		f := typed.Of[float64](w)
		i := typed.Of[int32](w)
		for _, cnt := range counts(n) {
			want := make([]float64, cnt)
			for r := 0; r < n; r++ {
				typed.Sum(want, vec[float64](r, cnt))
			}
			got := make([]float64, cnt)
			if err := f.Allreduce(vec[float64](me, cnt), got, typed.Sum); err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("sum of %d: wrong result", cnt)
			}
			for _, op := range []struct {
				name string
				op   typed.Op[int32]
			}{{"max", typed.Max[int32]}, {"min", typed.Min[int32]}, {"band", typed.BAnd[int32]},
				{"bor", typed.BOr[int32]}, {"bxor", typed.BXor[int32]}, {"last", last[int32]}} {
				want := vec[int32](0, cnt)
				for r := 1; r < n; r++ {
					op.op(want, vec[int32](r, cnt))
				}
				inPlace := vec[int32](me, cnt)
				if err := i.Allreduce(inPlace, inPlace, op.op); err != nil {
					return err
				}
				if !slices.Equal(inPlace, want) {
					return fmt.Errorf("%s of %d in place: wrong result", op.name, cnt)
				}
			}
		}
		return nil
	})
	each(t, comm.CollReduce, func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		c := typed.Of[complex128](w)
		// Units (1, i, -1, -i): their products are exact in any grouping.
		units := func(r, cnt int) []complex128 {
			v := make([]complex128, cnt)
			for j := range v {
				v[j] = [4]complex128{1, 1i, -1, -1i}[(r+j*3)%4]
			}
			return v
		}
		for _, cnt := range counts(n) {
			root := (cnt + 1) % n
			want := units(0, cnt)
			for r := 1; r < n; r++ {
				typed.Prod(want, units(r, cnt))
			}
			var got []complex128
			if me == root {
				got = make([]complex128, cnt)
			}
			if err := c.Reduce(units(me, cnt), got, typed.Prod, root); err != nil {
				return err
			}
			if me == root && !slices.Equal(got, want) {
				return fmt.Errorf("prod of %d: wrong result", cnt)
			}
		}
		return nil
	})
}

func TestTypedScan(t *testing.T) {
	each(t, comm.CollScan, func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		c := typed.Of[uint16](w)
		for _, cnt := range counts(n) {
			got := make([]uint16, cnt)
			if err := c.Scan(vec[uint16](me, cnt), got, last); err != nil {
				return err
			}
			if !slices.Equal(got, vec[uint16](me, cnt)) {
				return fmt.Errorf("scan of %d: wrong result", cnt)
			}
			want := make([]uint16, cnt)
			for r := 0; r <= me; r++ {
				typed.Sum(want, vec[uint16](r, cnt))
			}
			got = vec[uint16](me, cnt)
			if err := c.Scan(got, got, typed.Sum); err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("sum scan of %d in place: wrong result", cnt)
			}
			got = slices.Repeat([]uint16{7}, cnt)
			if err := c.Exscan(vec[uint16](me, cnt), got, last); err != nil {
				return err
			}
			if me == 0 && !slices.Equal(got, slices.Repeat([]uint16{7}, cnt)) || me > 0 && !slices.Equal(got, vec[uint16](me-1, cnt)) {
				return fmt.Errorf("exscan of %d: wrong result", cnt)
			}
		}
		return nil
	})
	each(t, comm.CollReduceScatter, func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		c := typed.Of[int64](w)
		for _, k := range []int{0, 1, 5} {
			got := make([]int64, k)
			if err := c.ReduceScatterBlock(vec[int64](me, n*k), got, last); err != nil {
				return err
			}
			if !slices.Equal(got, vec[int64](n-1, n*k)[me*k:(me+1)*k]) {
				return fmt.Errorf("block of %d: wrong result", k)
			}
		}
		return nil
	})
}

func TestTypedGatherScatter(t *testing.T) {
	each(t, comm.CollGather, func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		c := typed.Of[int8](w)
		for _, cnt := range counts(n) {
			root := cnt % n
			var all []int8
			if me == root {
				all = make([]int8, n*cnt)
			}
			if err := c.Gather(vec[int8](me, cnt), all, root); err != nil {
				return err
			}
			if me == root {
				for r := 0; r < n; r++ {
					if !slices.Equal(all[r*cnt:(r+1)*cnt], vec[int8](r, cnt)) {
						return fmt.Errorf("gather of %d: rank %d's block is wrong", cnt, r)
					}
				}
			}
		}
		return nil
	})
	each(t, comm.CollScatter, func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		c := typed.Of[float64](w)
		for _, cnt := range counts(n) {
			root := (cnt + 2) % n
			var all []float64
			if me == root {
				for r := 0; r < n; r++ {
					all = append(all, vec[float64](r, cnt)...)
				}
			}
			got := make([]float64, cnt)
			if err := c.Scatter(all, got, root); err != nil {
				return err
			}
			if !slices.Equal(got, vec[float64](me, cnt)) {
				return fmt.Errorf("scatter of %d: wrong block", cnt)
			}
		}
		return nil
	})
}

func TestTypedAllgatherAlltoall(t *testing.T) {
	each(t, comm.CollAllgather, func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		c := typed.Of[uint64](w)
		for _, cnt := range counts(n) {
			all := make([]uint64, n*cnt)
			copy(all[me*cnt:], vec[uint64](me, cnt))
			if err := c.Allgather(all, all); err != nil { // in place
				return err
			}
			for r := 0; r < n; r++ {
				if !slices.Equal(all[r*cnt:(r+1)*cnt], vec[uint64](r, cnt)) {
					return fmt.Errorf("allgather of %d: rank %d's block is wrong", cnt, r)
				}
			}
		}
		return nil
	})
	each(t, comm.CollAlltoall, func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		c := typed.Of[complex64](w)
		for _, k := range []int{0, 1, 4} {
			send := make([]complex64, n*k)
			for j := 0; j < n; j++ {
				copy(send[j*k:], vec[complex64](me*n+j, k))
			}
			got := make([]complex64, n*k)
			if err := c.Alltoall(send, got); err != nil {
				return err
			}
			for r := 0; r < n; r++ {
				if !slices.Equal(got[r*k:(r+1)*k], vec[complex64](r*n+me, k)) {
					return fmt.Errorf("alltoall of %d: block from %d is wrong", k, r)
				}
			}
		}
		return nil
	})
}

func TestTypedLoc(t *testing.T) {
	for _, n := range []int{1, 2, 7, 16} {
		err := mpgo.Run(n, func(w *comm.Comm) error {
			c := typed.Of[float64](w)
			me := w.Rank()
			// Element 0: a unique maximum at rank n/2; element 1: every rank
			// ties (the lowest index wins); element 2: minimum at the last rank.
			v := []typed.Pair[float64]{
				{Val: -math.Abs(float64(me - n/2)), Idx: me},
				{Val: 1, Idx: 100 + me},
				{Val: float64(n - me), Idx: me},
			}
			got := make([]typed.Pair[float64], 3)
			if err := typed.AllreduceLoc(c, v, got, typed.MaxLoc); err != nil {
				return err
			}
			if got[0] != (typed.Pair[float64]{Val: 0, Idx: n / 2}) || got[1].Idx != 100 || got[2].Idx != 0 {
				return fmt.Errorf("maxloc: %v", got)
			}
			var low []typed.Pair[float64]
			if me == 0 {
				low = make([]typed.Pair[float64], 3)
			}
			if err := typed.ReduceLoc(c, v, low, typed.MinLoc, 0); err != nil {
				return err
			}
			if me == 0 && (low[1].Idx != 100 || low[2] != (typed.Pair[float64]{Val: 1, Idx: n - 1})) {
				return fmt.Errorf("minloc: %v", low)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestTypedNonBlocking(t *testing.T) {
	err := mpgo.Run(5, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		buf := make([]float64, 3)
		if w.Rank() == 2 {
			buf = []float64{1, 2, 3}
		}
		rb, err := c.Ibcast(buf, 2)
		if err != nil {
			return err
		}
		sum := make([]float64, 1)
		ra, err := c.Iallreduce([]float64{float64(w.Rank())}, sum, typed.Sum)
		if err != nil {
			return err
		}
		if err := comm.WaitAll(rb, ra); err != nil {
			return err
		}
		if !slices.Equal(buf, []float64{1, 2, 3}) || sum[0] != 10 {
			return fmt.Errorf("got %v and %v", buf, sum)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTypedMismatch(t *testing.T) {
	err := mpgo.Run(3, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		n := 4
		if w.Rank() == 1 {
			n = 5
		}
		// The root may have returned before the others judged the call
		// (Comm.Bcast): it may succeed.
		if err := c.Bcast(make([]float64, n), 0); !errors.Is(err, comm.ErrTruncate) && (err != nil || w.Rank() != 0) {
			return fmt.Errorf("bcast of different counts: %v", err)
		}
		if err := c.Allreduce(make([]float64, 2), make([]float64, 3), typed.Sum); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("allreduce of 2 into 3: %v", err)
		}
		if err := c.Allreduce(make([]float64, 2), make([]float64, 2), nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("allreduce with a nil op: %v", err)
		}
		// A float64 call meeting an int64 one.
		var e error
		if w.Rank() == 2 {
			e = typed.Of[int64](w).Bcast(make([]int64, 2), 0)
		} else {
			e = c.Bcast(make([]float64, 2), 0)
		}
		if !errors.Is(e, comm.ErrType) && (e != nil || w.Rank() != 0) {
			return fmt.Errorf("bcast of different types: %v", e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Collectives called again with the same operator allocate nothing on one
// rank (no closure per call for the operator, no per-call state), and the
// operator is the one passed, not the last one cached.
func TestCollectiveAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a normal build")
	}
	err := mpgo.Run(1, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		s, r, b := []float64{3}, make([]float64, 1), make([]float64, 4)
		var err error
		allocs := testing.AllocsPerRun(100, func() {
			err = errors.Join(err, c.Allreduce(s, r, typed.Sum[float64]), c.Bcast(b, 0), c.Barrier(),
				c.Reduce(s, r, typed.Max[float64], 0))
		})
		if err != nil {
			return err
		}
		if allocs != 0 {
			return fmt.Errorf("%v allocations per Allreduce+Bcast+Barrier+Reduce, want 0", allocs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = mpgo.Run(3, func(w *comm.Comm) error {
		c := typed.Of[int](w)
		r := make([]int, 1)
		for i, op := range []typed.Op[int]{typed.Sum[int], typed.Max[int], typed.Sum[int],
			func(inout, in []int) { inout[0] = inout[0]*10 + in[0] }} {
			if err := c.Allreduce([]int{w.Rank() + 1}, r, op); err != nil {
				return err
			}
			if want := []int{6, 3, 6, 123}[i]; r[0] != want {
				return fmt.Errorf("operator %d: %d, want %d", i, r[0], want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The comm.Ops made of Ops are cached once per process, by the Op's func
// value: many distinct closures (of two element types, on communicators
// of two runs at once), which share and replace the cache's entries,
// each reduce with themselves.
func TestCollectiveOpCacheShared(t *testing.T) {
	run := func(seed int) error {
		return mpgo.Run(3, func(w *comm.Comm) error {
			ci, cf := typed.Of[int](w), typed.Of[float64](w)
			ri, rf := make([]int, 1), make([]float64, 1)
			for k := range 300 {
				m := seed + k // captured: a func value of its own each round
				if err := ci.Allreduce([]int{w.Rank() + 1}, ri, func(inout, in []int) { inout[0] = inout[0]*m + in[0] }); err != nil {
					return err
				}
				if want := (1*m+2)*m + 3; ri[0] != want {
					return fmt.Errorf("int op %d: %d, want %d", m, ri[0], want)
				}
				if err := cf.Allreduce([]float64{1}, rf, func(inout, in []float64) { inout[0] += in[0] * float64(m) }); err != nil {
					return err
				}
				if want := 1 + 2*float64(m); rf[0] != want {
					return fmt.Errorf("float op %d: %v, want %v", m, rf[0], want)
				}
			}
			return nil
		})
	}
	errs := make(chan error, 2)
	for _, seed := range []int{2, 1000} {
		go func() { errs <- run(seed) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
