package typed_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// The reference for every layout is the list of offsets it selects, in
// order, written down directly from the MPI definitions.

func refVector(count, blocklength, stride int) []int {
	idx := []int{}
	base := 0
	if stride < 0 {
		base = (count - 1) * -stride
	}
	for i := range count {
		for j := range blocklength {
			idx = append(idx, base+i*stride+j)
		}
	}
	return idx
}

func refIndexed(blocklengths, displacements []int) []int {
	idx := []int{}
	for i, n := range blocklengths {
		for j := range n {
			idx = append(idx, displacements[i]+j)
		}
	}
	return idx
}

func refSubarray(sizes, subsizes, starts []int, order typed.Order) []int {
	nd := len(sizes)
	idx := []int{}
	for _, s := range subsizes {
		if s == 0 {
			return idx
		}
	}
	at := make([]int, nd) // multi-index within the subarray
	for {
		off := 0
		if order == typed.RowMajor {
			for k := range nd {
				off = off*sizes[k] + starts[k] + at[k]
			}
		} else {
			for k := nd - 1; k >= 0; k-- {
				off = off*sizes[k] + starts[k] + at[k]
			}
		}
		idx = append(idx, off)
		// Next multi-index: the fastest dimension first.
		k := nd - 1
		step := -1
		if order == typed.ColumnMajor {
			k, step = 0, 1
		}
		for ; k >= 0 && k < nd; k += step {
			at[k]++
			if at[k] < subsizes[k] {
				break
			}
			at[k] = 0
		}
		if k < 0 || k >= nd {
			return idx
		}
	}
}

func refRepeat(idx []int, extent, n int) []int {
	out := []int{}
	for r := range n {
		for _, i := range idx {
			out = append(out, r*extent+i)
		}
	}
	return out
}

func product(xs []int) int {
	p := 1
	for _, x := range xs {
		p *= x
	}
	return p
}

// layoutCase is a layout beside its reference offsets and extent.
type layoutCase struct {
	name   string
	l      typed.Layout
	idx    []int
	extent int
}

// layoutOK returns a function that unwraps a layout constructor's results,
// failing t on an error.
func layoutOK(t testing.TB) func(typed.Layout, error) typed.Layout {
	return func(l typed.Layout, err error) typed.Layout {
		t.Helper()
		return mustLayout(t, l, err)
	}
}

func mustLayout(t testing.TB, l typed.Layout, err error) typed.Layout {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// layoutCases returns fixed cases and random ones from rng.
func layoutCases(t testing.TB, rng *rand.Rand) []layoutCase {
	var cs []layoutCase
	add := func(name string, l typed.Layout, err error, idx []int, extent int) {
		cs = append(cs, layoutCase{name, mustLayout(t, l, err), idx, extent})
	}
	vec := func(count, bl, stride int) {
		l, err := typed.Vector(count, bl, stride)
		ext := 0
		if count > 0 && bl > 0 {
			ext = (count-1)*max(stride, -stride) + bl
		}
		add(fmt.Sprintf("vector(%d,%d,%d)", count, bl, stride), l, err, refVector(count, bl, stride), ext)
	}
	ind := func(bls, disps []int) {
		l, err := typed.Indexed(bls, disps)
		ext := 0
		for i, n := range bls {
			if n > 0 {
				ext = max(ext, disps[i]+n)
			}
		}
		add(fmt.Sprintf("indexed(%v,%v)", bls, disps), l, err, refIndexed(bls, disps), ext)
	}
	sub := func(sizes, subsizes, starts []int, o typed.Order) {
		l, err := typed.Subarray(sizes, subsizes, starts, o)
		add(fmt.Sprintf("subarray(%v,%v,%v,%v)", sizes, subsizes, starts, o), l, err,
			refSubarray(sizes, subsizes, starts, o), product(sizes))
	}
	for _, n := range []int{0, 1, 7, 100} {
		l, err := typed.Contiguous(n)
		add(fmt.Sprintf("contiguous(%d)", n), l, err, refVector(1, n, 0), n)
	}
	vec(0, 3, 5)
	vec(4, 0, 5)
	vec(1, 3, 5)
	vec(5, 1, 3)
	vec(5, 2, 2) // contiguous
	vec(6, 3, 10)
	vec(6, 3, -10)
	vec(4, 2, -2)
	vec(3, 4, 2) // overlapping: sendable only
	vec(3, 2, 0)
	ind([]int{}, []int{})
	ind([]int{0, 0}, []int{3, 9})
	ind([]int{2, 0, 3}, []int{5, 100, 0})
	ind([]int{1, 1, 1, 1}, []int{0, 1, 2, 3}) // contiguous
	ind([]int{8, 7, 6, 5, 4, 3, 2, 1}, []int{0, 9, 18, 27, 36, 45, 54, 63})
	ind([]int{3, 2}, []int{0, 1}) // overlapping
	sub([]int{10}, []int{4}, []int{3}, typed.RowMajor)
	sub([]int{6, 8}, []int{3, 5}, []int{2, 1}, typed.RowMajor)
	sub([]int{6, 8}, []int{3, 5}, []int{2, 1}, typed.ColumnMajor)
	sub([]int{6, 8}, []int{3, 8}, []int{2, 0}, typed.RowMajor) // rows: contiguous
	sub([]int{4, 5, 6}, []int{2, 3, 4}, []int{1, 2, 1}, typed.RowMajor)
	sub([]int{4, 5, 6}, []int{2, 3, 4}, []int{1, 2, 1}, typed.ColumnMajor)
	sub([]int{4, 5, 6}, []int{2, 0, 4}, []int{1, 2, 1}, typed.RowMajor)
	sub([]int{3, 1, 4, 1}, []int{2, 1, 2, 1}, []int{1, 0, 2, 0}, typed.RowMajor)

	for range 40 {
		switch rng.IntN(3) {
		case 0:
			vec(rng.IntN(9), rng.IntN(5), rng.IntN(15)-7)
		case 1:
			n := rng.IntN(7)
			bls, disps := make([]int, n), make([]int, n)
			for i := range n {
				bls[i], disps[i] = rng.IntN(5), rng.IntN(30)
			}
			ind(bls, disps)
		case 2:
			nd := 1 + rng.IntN(4)
			sizes, subs, starts := make([]int, nd), make([]int, nd), make([]int, nd)
			for k := range nd {
				sizes[k] = 1 + rng.IntN(6)
				subs[k] = rng.IntN(sizes[k] + 1)
				starts[k] = rng.IntN(sizes[k] - subs[k] + 1)
			}
			sub(sizes, subs, starts, typed.Order(rng.IntN(2)))
		}
	}
	// Repetitions of some of the above.
	base := len(cs)
	for i := 0; i < base; i += 3 {
		c := cs[i]
		for _, n := range []int{0, 1, 3} {
			l, err := c.l.Repeat(n)
			cs = append(cs, layoutCase{fmt.Sprintf("%s×%d", c.name, n), mustLayout(t, l, err),
				refRepeat(c.idx, c.extent, n), n * c.extent})
		}
	}
	return cs
}

func overlaps(idx []int) bool {
	s := slices.Clone(idx)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return true
		}
	}
	return false
}

// checkPack checks Pack and Unpack of one layout, whole and partial,
// against its reference on random data of T.
func checkPack[T typed.Number](t *testing.T, c layoutCase, gen func() T) {
	t.Helper()
	if got := c.l.Count(); got != len(c.idx) {
		t.Fatalf("%s: Count %d, want %d", c.name, got, len(c.idx))
	}
	if got := c.l.Extent(); got != c.extent {
		t.Fatalf("%s: Extent %d, want %d", c.name, got, c.extent)
	}
	src := make([]T, c.extent+3)
	for i := range src {
		src[i] = gen()
	}
	want := make([]T, len(c.idx))
	for i, j := range c.idx {
		want[i] = src[j]
	}
	for _, n := range []int{len(c.idx), len(c.idx) / 2, max(len(c.idx)-1, 0)} {
		got := make([]T, n)
		k, err := typed.Pack(got, src[:c.extent], c.l)
		if err != nil || k != n || !equal(got, want[:n]) {
			t.Fatalf("%s: Pack of %d: %v, %d, %v; want %v", c.name, n, got, k, err, want[:n])
		}
	}
	if _, err := typed.Pack(want, src[:max(c.extent-1, 0)], c.l); c.extent > 0 && !errors.Is(err, comm.ErrArg) {
		t.Errorf("%s: Pack from a short slice: %v, want ErrArg", c.name, err)
	}
	if overlaps(c.idx) {
		if _, err := typed.Unpack(make([]T, c.extent), want, c.l); !errors.Is(err, comm.ErrArg) {
			t.Errorf("%s: Unpack through an overlapping layout: %v, want ErrArg", c.name, err)
		}
		return
	}
	for _, n := range []int{len(c.idx), len(c.idx) / 2} {
		dst := make([]T, c.extent+3)
		ref := make([]T, c.extent+3)
		fill := gen()
		for i := range dst {
			dst[i], ref[i] = fill, fill
		}
		for i, j := range c.idx[:n] {
			ref[j] = want[i]
		}
		k, err := typed.Unpack(dst[:c.extent], want[:n], c.l)
		if err != nil || k != n || !equal(dst, ref) {
			t.Fatalf("%s: Unpack of %d: %v, %d, %v; want %v", c.name, n, dst, k, err, ref)
		}
	}
	if _, err := typed.Unpack(make([]T, max(c.extent-1, 0)), want, c.l); c.extent > 0 && !errors.Is(err, comm.ErrArg) {
		t.Errorf("%s: Unpack into a short slice: %v, want ErrArg", c.name, err)
	}
}

func TestLayoutPackMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := layoutCases(t, rng)
	for _, c := range cases {
		checkPack(t, c, rng.NormFloat64)
		checkPack(t, c, rng.Int32)
		checkPack(t, c, func() complex128 { return complex(rng.NormFloat64(), rng.NormFloat64()) })
		checkPack(t, c, func() uint8 { return uint8(rng.Uint32()) })
		checkPack(t, c, func() celsius { return celsius(rng.Float64()) })
	}
}

func TestLayoutZero(t *testing.T) {
	var l typed.Layout
	if l.Count() != 0 || l.Extent() != 0 {
		t.Fatalf("zero Layout: count %d extent %d", l.Count(), l.Extent())
	}
	if n, err := typed.Pack([]int{1}, nil, l); n != 0 || err != nil {
		t.Fatalf("Pack through the zero Layout: %d %v", n, err)
	}
	l, err := l.Repeat(5)
	if err != nil || l.Count() != 0 || l.Extent() != 0 {
		t.Fatalf("zero Layout repeated: %v %v", l, err)
	}
	sub, err := typed.Subarray([]int{3, 4}, []int{0, 2}, []int{1, 1}, typed.RowMajor)
	sub = mustLayout(t, sub, err)
	if sub.Count() != 0 || sub.Extent() != 12 {
		t.Fatalf("empty subarray: count %d extent %d, want 0 and 12", sub.Count(), sub.Extent())
	}
}

func TestLayoutInvalid(t *testing.T) {
	big := 1 << 62
	for _, tc := range []struct {
		name string
		f    func() (typed.Layout, error)
	}{
		{"contiguous(-1)", func() (typed.Layout, error) { return typed.Contiguous(-1) }},
		{"contiguous(huge)", func() (typed.Layout, error) { return typed.Contiguous(big) }},
		{"vector count -1", func() (typed.Layout, error) { return typed.Vector(-1, 1, 1) }},
		{"vector blocklength -1", func() (typed.Layout, error) { return typed.Vector(1, -1, 1) }},
		{"vector extent overflow", func() (typed.Layout, error) { return typed.Vector(1<<20, 1, 1<<50) }},
		{"vector most negative stride", func() (typed.Layout, error) { return typed.Vector(2, 1, -1<<63) }},
		{"vector count overflow", func() (typed.Layout, error) { return typed.Vector(1<<40, 1<<40, 1<<40) }},
		{"indexed lengths differ", func() (typed.Layout, error) { return typed.Indexed([]int{1, 2}, []int{0}) }},
		{"indexed negative length", func() (typed.Layout, error) { return typed.Indexed([]int{1, -2}, []int{0, 5}) }},
		{"indexed negative displacement", func() (typed.Layout, error) { return typed.Indexed([]int{1, 2}, []int{0, -5}) }},
		{"indexed displacement overflow", func() (typed.Layout, error) { return typed.Indexed([]int{4}, []int{big}) }},
		{"indexed count overflow", func() (typed.Layout, error) {
			return typed.Indexed([]int{1 << 58, 1 << 58}, []int{0, 0})
		}},
		{"subarray no dimensions", func() (typed.Layout, error) { return typed.Subarray(nil, nil, nil, typed.RowMajor) }},
		{"subarray lengths differ", func() (typed.Layout, error) {
			return typed.Subarray([]int{4, 4}, []int{2}, []int{0, 0}, typed.RowMajor)
		}},
		{"subarray size 0", func() (typed.Layout, error) { return typed.Subarray([]int{0}, []int{0}, []int{0}, typed.RowMajor) }},
		{"subarray subsize > size", func() (typed.Layout, error) { return typed.Subarray([]int{4}, []int{5}, []int{0}, typed.RowMajor) }},
		{"subarray out of range", func() (typed.Layout, error) { return typed.Subarray([]int{4}, []int{2}, []int{3}, typed.RowMajor) }},
		{"subarray negative start", func() (typed.Layout, error) { return typed.Subarray([]int{4}, []int{2}, []int{-1}, typed.RowMajor) }},
		{"subarray negative subsize", func() (typed.Layout, error) { return typed.Subarray([]int{4}, []int{-1}, []int{0}, typed.RowMajor) }},
		{"subarray too large", func() (typed.Layout, error) {
			return typed.Subarray([]int{1 << 31, 1 << 31}, []int{1, 1}, []int{0, 0}, typed.RowMajor)
		}},
		{"subarray too many dimensions", func() (typed.Layout, error) {
			ones := make([]int, 33)
			for i := range ones {
				ones[i] = 1
			}
			return typed.Subarray(ones, ones, make([]int, 33), typed.RowMajor)
		}},
		{"subarray bad order", func() (typed.Layout, error) { return typed.Subarray([]int{4}, []int{2}, []int{0}, typed.Order(7)) }},
		{"repeat -1", func() (typed.Layout, error) {
			l, _ := typed.Contiguous(3)
			return l.Repeat(-1)
		}},
		{"repeat overflow", func() (typed.Layout, error) {
			l, _ := typed.Vector(2, 1, 1<<40)
			return l.Repeat(1 << 30)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tc.f()
			if !errors.Is(err, comm.ErrArg) {
				t.Fatalf("got %v, %v; want an error wrapping ErrArg", l, err)
			}
		})
	}
}

// upperTriangle returns the layout of the upper triangle, diagonal
// included, of an n×n row-major matrix.
func upperTriangle(t testing.TB, n int) typed.Layout {
	bls, disps := make([]int, n), make([]int, n)
	for i := range n {
		bls[i], disps[i] = n-i, i*n+i
	}
	return layoutOK(t)(typed.Indexed(bls, disps))
}

func TestLayoutUpperTriangle(t *testing.T) {
	const n = 9
	tri := upperTriangle(t, n)
	if tri.Count() != n*(n+1)/2 || tri.Extent() != n*n {
		t.Fatalf("count %d extent %d", tri.Count(), tri.Extent())
	}
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			a[i*n+j] = float64(10*i + j)
		}
	}
	// Transfer the triangle to a zeroed matrix through the same layout,
	// and as a packed vector.
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		if w.Rank() == 0 {
			if err := c.SendLayout(a, tri, 1, 0); err != nil {
				return err
			}
			return c.SendLayout(a, tri, 1, 1)
		}
		b := make([]float64, n*n)
		st, err := c.RecvLayout(b, tri, 0, 0)
		if err != nil || st.Count != tri.Count() {
			return fmt.Errorf("recv: %v %v", st, err)
		}
		for i := range n {
			for j := range n {
				want := 0.0
				if j >= i {
					want = a[i*n+j]
				}
				if b[i*n+j] != want {
					return fmt.Errorf("b[%d][%d] = %v, want %v", i, j, b[i*n+j], want)
				}
			}
		}
		packed := make([]float64, tri.Count())
		if _, err := c.Recv(packed, 0, 1); err != nil {
			return err
		}
		k := 0
		for i := range n {
			for j := i; j < n; j++ {
				if packed[k] != a[i*n+j] {
					return fmt.Errorf("packed[%d] = %v, want a[%d][%d] = %v", k, packed[k], i, j, a[i*n+j])
				}
				k++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// crossTransfer sends src through sl from rank 0 and receives it through
// rl on rank 1 (blocking, then non-blocking), checking the receiver's
// buffer against the reference offsets.
func crossTransfer[T typed.Number](t *testing.T, sl, rl layoutCase, gen func() T) {
	t.Helper()
	src := make([]T, sl.extent)
	for i := range src {
		src[i] = gen()
	}
	fill := gen()
	want := make([]T, rl.extent)
	for i := range want {
		want[i] = fill
	}
	for i, j := range rl.idx {
		want[j] = src[sl.idx[i]]
	}
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[T](w)
		if w.Rank() == 0 {
			if err := c.SendLayout(src, sl.l, 1, 0); err != nil {
				return err
			}
			r, err := c.IsendLayout(src, sl.l, 1, 1)
			if err != nil {
				return err
			}
			_, err = r.Wait()
			return err
		}
		for tag := range 2 {
			dst := make([]T, rl.extent)
			for i := range dst {
				dst[i] = fill
			}
			var st comm.Status
			var err error
			if tag == 0 {
				st, err = c.RecvLayout(dst, rl.l, 0, tag)
			} else {
				var r *typed.LayoutRequest
				if r, err = c.IrecvLayout(dst, rl.l, comm.AnySource, comm.AnyTag); err == nil {
					<-r.Done()
					st, err = r.Wait()
				}
			}
			if err != nil {
				return err
			}
			if st.Count != len(rl.idx) || st.Source != 0 || st.Tag != tag || !equal(dst, want) {
				return fmt.Errorf("%s → %s, tag %d: got %v (%v), want %v", sl.name, rl.name, tag, dst, st, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLayoutCrossTransfers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func(name string, l typed.Layout, err error, idx []int) layoutCase {
		l = mustLayout(t, l, err)
		return layoutCase{name, l, idx, l.Extent()}
	}
	const rows, cols = 6, 8
	contig := func(n int) layoutCase {
		l, err := typed.Contiguous(n)
		return mk(fmt.Sprintf("contiguous(%d)", n), l, err, refVector(1, n, 0))
	}
	vecL, vecErr := typed.Vector(rows, 1, cols) // a column
	column := mk("column", vecL, vecErr, refVector(rows, 1, cols))
	rv, rvErr := typed.Vector(rows, 2, -cols)
	backwards := mk("vector(6,2,-8)", rv, rvErr, refVector(rows, 2, -cols))
	sa, saErr := typed.Subarray([]int{rows, cols}, []int{3, 4}, []int{1, 2}, typed.RowMajor)
	block := mk("subarray 3×4", sa, saErr, refSubarray([]int{rows, cols}, []int{3, 4}, []int{1, 2}, typed.RowMajor))
	sc, scErr := typed.Subarray([]int{rows, cols}, []int{4, 3}, []int{0, 5}, typed.ColumnMajor)
	blockF := mk("subarray 4×3 column-major", sc, scErr, refSubarray([]int{rows, cols}, []int{4, 3}, []int{0, 5}, typed.ColumnMajor))
	il, ilErr := typed.Indexed([]int{5, 0, 3, 4}, []int{30, 2, 0, 12})
	indexed := mk("indexed 12", il, ilErr, refIndexed([]int{5, 0, 3, 4}, []int{30, 2, 0, 12}))
	tri := upperTriangle(t, 3) // 6 elements
	triC := layoutCase{"triangle 3", tri, refIndexed([]int{3, 2, 1}, []int{0, 4, 8}), 9}
	cv, cvErr := typed.Vector(3, 2, 5)
	cv2, err := cv.Repeat(2)
	if err != nil {
		t.Fatal(err)
	}
	vecRep := mk("vector(3,2,5)×2", cv2, cvErr, refRepeat(refVector(3, 2, 5), 12, 2))

	pairs := [][2]layoutCase{
		{column, contig(rows)},
		{contig(rows), column},
		{column, triC},
		{backwards, block},
		{block, indexed},
		{indexed, blockF},
		{blockF, backwards},
		{triC, column},
		{vecRep, block},
		{block, vecRep},
		{contig(0), contig(0)},
	}
	for _, p := range pairs {
		t.Run(p[0].name+"→"+p[1].name, func(t *testing.T) {
			if p[0].l.Count() != p[1].l.Count() {
				t.Fatalf("counts %d and %d", p[0].l.Count(), p[1].l.Count())
			}
			crossTransfer(t, p[0], p[1], rng.NormFloat64)
			crossTransfer(t, p[0], p[1], rng.Int32)
			crossTransfer(t, p[0], p[1], func() complex128 { return complex(rng.NormFloat64(), 1) })
			crossTransfer(t, p[0], p[1], func() uint8 { return uint8(rng.Uint32()) })
		})
	}
}

// A layout message is an ordinary message: plain sends and receives of the
// packed elements interoperate with layout ones, and mismatches behave as
// for plain receives.
func TestLayoutInterop(t *testing.T) {
	col := layoutOK(t)(typed.Vector(4, 1, 3)) // column 0 of a 4×3 matrix
	m := []float64{0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		if w.Rank() == 0 {
			steps := []func() error{
				func() error { return c.SendLayout(m, col, 1, 0) },          // → plain Recv
				func() error { return c.Send([]float64{5, 6, 7, 8}, 1, 1) }, // → RecvLayout
				func() error { return c.SendLayout(m, col, 1, 2) },          // → RecvOwned
				func() error { return c.Send([]float64{1, 2, 3, 4, 5}, 1, 3) },
				func() error { return c.Send([]float64{9, 9}, 1, 4) },
				func() error { return typed.Of[int32](w).Send([]int32{1, 2, 3, 4}, 1, 5) },
				func() error { return c.SendLayout(m, col, 1, 6) }, // → bytes
				func() error { return c.Send([]float64{1, 2, 3, 4, 5}, 1, 7) },
				func() error { return c.Send(make([]float64, 50_000), 1, 8) }, // rendezvous → RecvLayout
			}
			for i, s := range steps {
				if err := s(); err != nil {
					return fmt.Errorf("step %d: %w", i, err)
				}
			}
			return nil
		}
		got := make([]float64, 4)
		if st, err := c.Recv(got, 0, 0); err != nil || st.Count != 4 || !equal(got, []float64{0, 10, 20, 30}) {
			return fmt.Errorf("plain Recv of a layout send: %v %v %v", got, st, err)
		}
		b := make([]float64, 12)
		if st, err := c.RecvLayout(b, col, 0, 1); err != nil || st.Count != 4 ||
			!equal(b, []float64{5, 0, 0, 6, 0, 0, 7, 0, 0, 8, 0, 0}) {
			return fmt.Errorf("RecvLayout of a plain send: %v %v %v", b, st, err)
		}
		owned, st, err := c.RecvOwned(0, 2)
		if err != nil || st.Count != 4 || !equal(owned, []float64{0, 10, 20, 30}) {
			return fmt.Errorf("RecvOwned of a layout send: %v %v %v", owned, st, err)
		}
		// Longer: truncated and consumed. Shorter: the first places filled.
		if st, err := c.RecvLayout(b, col, 0, 3); !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("RecvLayout of 5 into 4: %v %v, want ErrTruncate", st, err)
		}
		clear(b)
		if st, err := c.RecvLayout(b, col, 0, 4); err != nil || st.Count != 2 ||
			!equal(b, []float64{9, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0}) {
			return fmt.Errorf("RecvLayout of 2 into 4: %v %v %v", b, st, err)
		}
		if _, err := c.RecvLayout(b, col, 0, 5); !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("RecvLayout of int32: %v, want ErrType", err)
		}
		raw := make([]byte, 32)
		if st, err := typed.Of[byte](w).Recv(raw, 0, 6); err != nil || st.Count != 32 {
			return fmt.Errorf("bytes of a layout send: %v %v", st, err)
		}
		r, err := c.IrecvLayout(b, col, 0, 7)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("IrecvLayout of 5 into 4: %v, want ErrTruncate", err)
		}
		big := layoutOK(t)(typed.Vector(50_000, 1, 2))
		if st, err := c.RecvLayout(make([]float64, big.Extent()), big, 0, 8); err != nil || st.Count != 50_000 {
			return fmt.Errorf("RecvLayout of a rendezvous send: %v %v", st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Bad buffers and layouts fail with ErrArg before anything is sent or
// received.
func TestLayoutArgErrors(t *testing.T) {
	col := layoutOK(t)(typed.Vector(4, 1, 3))
	ov := layoutOK(t)(typed.Indexed([]int{2, 2}, []int{0, 1}))
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		short := make([]float64, col.Extent()-1)
		if w.Rank() == 0 {
			if err := c.SendLayout(short, col, 1, 0); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("SendLayout of a short buffer: %v", err)
			}
			if _, err := c.IsendLayout(short, col, 1, 0); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("IsendLayout of a short buffer: %v", err)
			}
			if err := c.SendLayout(make([]float64, 12), col, 5, 0); !errors.Is(err, comm.ErrRank) {
				return fmt.Errorf("SendLayout to rank 5: %v", err)
			}
			// Overlapping layouts may send: the message carries element 1
			// and 2 twice.
			if err := c.SendLayout([]float64{1, 2, 3}, ov, 1, 1); err != nil {
				return err
			}
			return w.Barrier()
		}
		if _, err := c.RecvLayout(short, col, 0, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("RecvLayout into a short buffer: %v", err)
		}
		if _, err := c.IrecvLayout(short, col, 0, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("IrecvLayout into a short buffer: %v", err)
		}
		if _, err := c.RecvLayout(make([]float64, 3), ov, 0, 1); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("RecvLayout through an overlapping layout: %v", err)
		}
		got := make([]float64, 4)
		if _, err := c.Recv(got, 0, 1); err != nil || !equal(got, []float64{1, 2, 2, 3}) {
			return fmt.Errorf("overlapping send: %v %v", got, err)
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		// Nothing else was sent.
		if _, ok, err := c.Iprobe(comm.AnySource, comm.AnyTag); ok || err != nil {
			return fmt.Errorf("a message arrived after failed sends: %v %v", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Layouts of one run travel as plain messages; ProcNull sends and receives
// complete at once.
func TestLayoutProcNull(t *testing.T) {
	col := layoutOK(t)(typed.Vector(4, 1, 3))
	err := mpgo.Run(1, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		buf := make([]float64, 12)
		if err := c.SendLayout(buf, col, comm.ProcNull, 0); err != nil {
			return err
		}
		r, err := c.IsendLayout(buf, col, comm.ProcNull, 0)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		st, err := c.RecvLayout(buf, col, comm.ProcNull, 0)
		if err != nil || st.Count != 0 {
			return fmt.Errorf("RecvLayout from ProcNull: %v %v", st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A cancelled IrecvLayout leaves its buffer alone.
func TestLayoutIrecvCancel(t *testing.T) {
	col := layoutOK(t)(typed.Vector(4, 1, 3))
	err := mpgo.Run(1, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		buf := make([]float64, 12)
		r, err := c.IrecvLayout(buf, col, 0, 9)
		if err != nil {
			return err
		}
		if err := r.Cancel(); err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, comm.ErrCanceled) {
			return fmt.Errorf("Wait after Cancel: %v", err)
		}
		if _, ok, err := r.Test(); !ok || !errors.Is(err, comm.ErrCanceled) {
			return fmt.Errorf("Test after Cancel: %v %v", ok, err)
		}
		for _, v := range buf {
			if v != 0 {
				return fmt.Errorf("buffer touched: %v", buf)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Many ranks exchange layout messages around a ring at once, blocking and
// non-blocking, sharing the package's pooled storage: run under -race.
func TestLayoutHammer(t *testing.T) {
	iters := 2000
	if testing.Short() {
		iters = 100
	}
	for _, procs := range []int{1, 2, 4} {
		for _, ranks := range []int{2, 5} {
			t.Run(fmt.Sprintf("procs=%d/ranks=%d", procs, ranks), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				layoutHammer(t, ranks, iters)
			})
		}
	}
}

func layoutHammer(t *testing.T, ranks, iters int) {
	vec := layoutOK(t)(typed.Vector(40, 3, 7))
	tri4 := layoutOK(t)(upperTriangle(t, 8).Repeat(4))
	sub := layoutOK(t)(typed.Subarray([]int{12, 30}, []int{12, 10}, []int{0, 5}, typed.RowMajor))
	err := mpgo.Run(ranks, func(w *comm.Comm) error {
		c := typed.Of[int64](w)
		me, n := w.Rank(), w.Size()
		next, prev := (me+1)%n, (me+n-1)%n
		fill := func(buf []int64, rank, it int) {
			for i := range buf {
				buf[i] = int64(rank*1_000_000 + it*1000 + i)
			}
		}
		src := make([]int64, max(vec.Extent(), tri4.Extent()))
		theirs := make([]int64, len(src))
		dst := make([]int64, max(sub.Extent(), tri4.Extent()))
		want := make([]int64, max(vec.Count(), tri4.Count()))
		got := make([]int64, len(want))
		for it := range iters {
			fill(src, me, it)
			sl, rl := vec, sub
			if it%2 == 0 {
				if err := c.SendLayout(src, vec, next, it); err != nil {
					return err
				}
				if _, err := c.RecvLayout(dst, sub, prev, it); err != nil {
					return err
				}
			} else {
				sl, rl = tri4, tri4
				r, err := c.IrecvLayout(dst, tri4, prev, it)
				if err != nil {
					return err
				}
				s, err := c.IsendLayout(src, tri4, next, it)
				if err != nil {
					return err
				}
				if err := comm.WaitAll(s); err != nil {
					return err
				}
				if _, err := r.Wait(); err != nil {
					return err
				}
			}
			// What prev sent, read back through the receive layout.
			fill(theirs, prev, it)
			k, _ := typed.Pack(want, theirs, sl)
			typed.Pack(got, dst, rl)
			if !equal(got[:k], want[:k]) {
				return fmt.Errorf("rank %d iteration %d: got %v, want %v", me, it, got[:k], want[:k])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Steady-state layout transfers allocate nothing: the packed storage is
// recycled from the receiver to the next send.
func TestLayoutAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a normal build")
	}
	tri := upperTriangle(t, 8)
	for _, count := range []int{1, 64, 8192} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			l, err := tri.Repeat(count)
			if err != nil {
				t.Fatal(err)
			}
			var allocs float64
			err = mpgo.Run(2, func(w *comm.Comm) error {
				c := typed.Of[float64](w)
				buf := make([]float64, l.Extent())
				if w.Rank() == 1 {
					for range 100 + 1 {
						if _, err := c.RecvLayout(buf, l, 0, 0); err != nil {
							return err
						}
						if err := c.SendLayout(buf, l, 0, 0); err != nil {
							return err
						}
					}
					return nil
				}
				var err error
				allocs = testing.AllocsPerRun(100, func() {
					if e := c.SendLayout(buf, l, 1, 0); e != nil {
						err = e
					}
					if _, e := c.RecvLayout(buf, l, 1, 0); e != nil {
						err = e
					}
				})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Errorf("SendLayout+RecvLayout: %v allocations, want 0", allocs)
			}
		})
	}
}

// FuzzLayout builds vectors, indexed layouts and subarrays from fuzzed
// numbers and checks Pack and Unpack against the reference: whatever the
// numbers, construction either fails with ErrArg or gives a layout that
// agrees with it.
func FuzzLayout(f *testing.F) {
	f.Add(uint8(0), int16(5), int16(2), int16(7), uint8(3), []byte{})
	f.Add(uint8(0), int16(4), int16(3), int16(-5), uint8(0), []byte{})
	f.Add(uint8(1), int16(0), int16(0), int16(0), uint8(2), []byte{3, 0, 2, 9, 1, 4})
	f.Add(uint8(2), int16(0), int16(0), int16(0), uint8(1), []byte{4, 2, 1, 5, 3, 0})
	f.Add(uint8(2), int16(1), int16(0), int16(0), uint8(2), []byte{3, 3, 0, 1, 1, 0, 4, 2, 1})
	f.Fuzz(func(t *testing.T, kind uint8, a, b, s int16, reps uint8, data []byte) {
		if len(data) > 60 {
			data = data[:60]
		}
		var (
			l      typed.Layout
			err    error
			idx    []int
			extent int
		)
		switch kind % 3 {
		case 0:
			count, bl, stride := int(a)%50, int(b)%20, int(s)%100
			l, err = typed.Vector(count, bl, stride)
			if count >= 0 && bl >= 0 {
				idx = refVector(count, bl, stride)
				if count > 0 && bl > 0 {
					extent = (count-1)*max(stride, -stride) + bl
				}
			}
		case 1:
			n := len(data) / 2
			bls, disps := make([]int, n), make([]int, n)
			for i := range n {
				bls[i], disps[i] = int(int8(data[2*i]))%16, int(int8(data[2*i+1]))
			}
			l, err = typed.Indexed(bls, disps)
			idx = refIndexed(bls, disps)
			for i, n := range bls {
				if n > 0 {
					extent = max(extent, disps[i]+n)
				}
			}
		case 2:
			nd := min(len(data)/3, 5)
			sizes, subs, starts := make([]int, nd), make([]int, nd), make([]int, nd)
			for k := range nd {
				sizes[k], subs[k], starts[k] = int(data[3*k]%8), int(data[3*k+1]%8), int(data[3*k+2]%8)
			}
			o := typed.Order(a & 1)
			l, err = typed.Subarray(sizes, subs, starts, o)
			if err == nil {
				idx, extent = refSubarray(sizes, subs, starts, o), product(sizes)
			}
		}
		if err != nil {
			if !errors.Is(err, comm.ErrArg) {
				t.Fatalf("error %v does not wrap ErrArg", err)
			}
			return
		}
		if idx == nil {
			t.Fatalf("accepted invalid arguments: %v", l)
		}
		if r := int(reps % 4); r != 1 {
			rl, err := l.Repeat(r)
			if err != nil {
				t.Fatal(err)
			}
			l, idx, extent = rl, refRepeat(idx, extent, r), r*extent
		}
		rng := rand.New(rand.NewPCG(uint64(len(idx)), 7))
		checkPack(t, layoutCase{"fuzzed", l, idx, extent}, rng.Int64)
	})
}
