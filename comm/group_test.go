package comm_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// worldGroup returns the group of a world of n ranks as held by rank me. A
// World without a deadlock detector starts no goroutine, so group tests
// need no run.
func worldGroup(t testing.TB, n, me int) comm.Group {
	t.Helper()
	w, err := comm.NewWorld(n, comm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w.Comm(me).Group()
}

// groupOK returns a function that unwraps a group constructor's result,
// failing the test on error.
func groupOK(t testing.TB) func(comm.Group, error) comm.Group {
	return func(g comm.Group, err error) comm.Group {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
}

// MPI 3.1 §6.3.2: the group accessors on a communicator's group.
func TestGroupOfComm(t *testing.T) {
	g := worldGroup(t, 5, 3)
	if g.Size() != 5 || g.Rank() != 3 || !slices.Equal(g.WorldRanks(), []int{0, 1, 2, 3, 4}) {
		t.Fatalf("world group %v: size %d rank %d", g, g.Size(), g.Rank())
	}
	var zero comm.Group
	if zero.Size() != 0 || zero.Rank() != comm.Undefined || zero.String() != "group[]" {
		t.Fatalf("zero group: %v size %d rank %d", zero, zero.Size(), zero.Rank())
	}
}

// MPI 3.1 §6.3.2: constructors, checked against hand-computed examples.
func TestGroupAlgebraExamples(t *testing.T) {
	g := worldGroup(t, 8, 3)
	ok := groupOK(t)
	a := ok(g.Incl([]int{5, 1, 3}))
	b := ok(g.Incl([]int{3, 0, 5, 7}))
	cases := []struct {
		name string
		got  comm.Group
		want []int
		rank int // rank of world rank 3, the holder
	}{
		{"incl", a, []int{5, 1, 3}, 2},
		{"incl empty", ok(g.Incl(nil)), nil, comm.Undefined},
		{"excl", ok(g.Excl([]int{0, 2, 4, 6})), []int{1, 3, 5, 7}, 1},
		{"excl none", ok(g.Excl(nil)), []int{0, 1, 2, 3, 4, 5, 6, 7}, 3},
		{"excl all", ok(g.Excl([]int{7, 6, 5, 4, 3, 2, 1, 0})), nil, comm.Undefined},
		{"range incl", ok(g.RangeIncl([][3]int{{0, 6, 3}, {7, 1, -3}})), []int{0, 3, 6, 7, 4, 1}, 1},
		{"range incl single", ok(g.RangeIncl([][3]int{{1, 1, 1}})), []int{1}, comm.Undefined},
		{"range incl stride past last", ok(g.RangeIncl([][3]int{{0, 7, 5}})), []int{0, 5}, comm.Undefined},
		{"range incl down", ok(g.RangeIncl([][3]int{{6, 0, -2}})), []int{6, 4, 2, 0}, comm.Undefined},
		{"range excl", ok(g.RangeExcl([][3]int{{0, 7, 2}})), []int{1, 3, 5, 7}, 1},
		{"range excl two", ok(g.RangeExcl([][3]int{{0, 1, 1}, {7, 5, -1}})), []int{2, 3, 4}, 1},
		{"union", a.Union(b), []int{5, 1, 3, 0, 7}, 2},
		{"union reversed", b.Union(a), []int{3, 0, 5, 7, 1}, 0},
		{"intersection", a.Intersection(b), []int{5, 3}, 1},
		{"intersection reversed", b.Intersection(a), []int{3, 5}, 0},
		{"difference", a.Difference(b), []int{1}, comm.Undefined},
		{"difference reversed", b.Difference(a), []int{0, 7}, comm.Undefined},
		{"union with empty", a.Union(comm.Group{}), []int{5, 1, 3}, 2},
		{"empty union", comm.Group{}.Union(a), []int{5, 1, 3}, 2},
		{"incl of incl", ok(a.Incl([]int{2, 0})), []int{3, 5}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.got.WorldRanks(); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
				t.Errorf("members %v, want %v", got, c.want)
			}
			if c.got.Size() != len(c.want) {
				t.Errorf("size %d, want %d", c.got.Size(), len(c.want))
			}
			if r := c.got.Rank(); r != c.rank {
				t.Errorf("rank %d, want %d", r, c.rank)
			}
		})
	}
}

// MPI 3.1 §6.3.2: invalid ranks, repeated ranks and bad ranges are errors.
func TestGroupAlgebraErrors(t *testing.T) {
	g := worldGroup(t, 8, 0)
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"incl rank too big", second(g.Incl([]int{8})), comm.ErrRank},
		{"incl negative", second(g.Incl([]int{-1})), comm.ErrRank},
		{"incl twice", second(g.Incl([]int{1, 2, 1})), comm.ErrArg},
		{"excl rank too big", second(g.Excl([]int{0, 9})), comm.ErrRank},
		{"excl twice", second(g.Excl([]int{4, 4})), comm.ErrArg},
		{"range stride 0", second(g.RangeIncl([][3]int{{0, 3, 0}})), comm.ErrArg},
		{"range past end", second(g.RangeIncl([][3]int{{0, 8, 1}})), comm.ErrRank},
		{"range negative first", second(g.RangeIncl([][3]int{{-1, 3, 1}})), comm.ErrRank},
		{"range stride away", second(g.RangeIncl([][3]int{{5, 1, 1}})), comm.ErrArg},
		{"range stride away down", second(g.RangeIncl([][3]int{{1, 5, -1}})), comm.ErrArg},
		{"ranges overlap", second(g.RangeIncl([][3]int{{0, 6, 2}, {7, 1, -3}})), comm.ErrArg},
		{"range excl past end", second(g.RangeExcl([][3]int{{2, 9, 1}})), comm.ErrRank},
		{"range excl overlap", second(g.RangeExcl([][3]int{{0, 3, 1}, {3, 4, 1}})), comm.ErrArg},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.err, c.want)
		}
	}
}

// MPI 3.1 §6.3.2 MPI_Group_translate_ranks: Undefined where the rank is
// absent, ProcNull for ProcNull.
func TestGroupTranslateRanks(t *testing.T) {
	g := worldGroup(t, 8, 0)
	ok := groupOK(t)
	a := ok(g.Incl([]int{5, 1, 3}))
	b := ok(g.Incl([]int{3, 0, 5, 7}))
	got, err := a.TranslateRanks([]int{0, 1, 2, comm.ProcNull}, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, comm.Undefined, 0, comm.ProcNull}; !slices.Equal(got, want) {
		t.Fatalf("translate a→b: %v, want %v", got, want)
	}
	got, err = b.TranslateRanks([]int{3, 2, 1, 0}, g)
	if err != nil || !slices.Equal(got, []int{7, 5, 0, 3}) {
		t.Fatalf("translate b→world: %v, %v", got, err)
	}
	if _, err := a.TranslateRanks([]int{3}, b); !errors.Is(err, comm.ErrRank) {
		t.Fatalf("rank 3 of a group of 3: %v", err)
	}
	if _, err := a.TranslateRanks([]int{-1}, b); !errors.Is(err, comm.ErrRank) {
		t.Fatalf("rank -1: %v", err)
	}
}

// MPI 3.1 §6.3.1 MPI_Group_compare: Ident, Similar, Unequal.
func TestGroupCompare(t *testing.T) {
	g := worldGroup(t, 6, 0)
	ok := groupOK(t)
	a := ok(g.Incl([]int{5, 1, 3}))
	cases := []struct {
		name string
		x, y comm.Group
		want int
	}{
		{"same", a, a, comm.Ident},
		{"rebuilt", a, ok(g.Incl([]int{5, 1, 3})), comm.Ident},
		{"reordered", a, ok(g.Incl([]int{3, 5, 1})), comm.Similar},
		{"subset", a, ok(g.Incl([]int{5, 1})), comm.Unequal},
		{"other members", a, ok(g.Incl([]int{5, 1, 2})), comm.Unequal},
		{"empties", comm.Group{}, ok(g.Incl(nil)), comm.Ident},
		{"world and itself", g, worldGroup(t, 6, 4), comm.Ident},
	}
	for _, c := range cases {
		if got := c.x.Compare(c.y); got != c.want {
			t.Errorf("%s: Compare = %d, want %d", c.name, got, c.want)
		}
		if got := c.y.Compare(c.x); got != c.want {
			t.Errorf("%s (swapped): Compare = %d, want %d", c.name, got, c.want)
		}
	}
}

// Groups are values: operations never change their operands.
func TestGroupImmutable(t *testing.T) {
	g := worldGroup(t, 6, 2)
	ok := groupOK(t)
	a := ok(g.Incl([]int{4, 2, 0}))
	before := a.WorldRanks()
	a.WorldRanks()[0] = 99
	_ = a.Union(g)
	_ = a.Difference(g)
	_, _ = a.Excl([]int{0})
	if !slices.Equal(a.WorldRanks(), before) {
		t.Fatalf("group changed: %v, was %v", a.WorldRanks(), before)
	}
}

// randomGroup returns a random subset of g in random order.
func randomGroup(t testing.TB, rng *rand.Rand, g comm.Group) comm.Group {
	perm := rng.Perm(g.Size())
	return groupOK(t)(g.Incl(perm[:rng.IntN(g.Size()+1)]))
}

func members(g comm.Group) map[int]bool {
	m := map[int]bool{}
	for _, w := range g.WorldRanks() {
		m[w] = true
	}
	return m
}

// Property tests of the group algebra on random groups: set laws, the
// orders MPI prescribes, and Rank/TranslateRanks consistency.
func TestGroupAlgebraProperties(t *testing.T) {
	const n = 16
	rng := rand.New(rand.NewPCG(1, 2))
	g := worldGroup(t, n, 7)
	ok := groupOK(t)
	iters := 2000
	if testing.Short() {
		iters = 200
	}
	for it := 0; it < iters; it++ {
		a, b := randomGroup(t, rng, g), randomGroup(t, rng, g)
		ma, mb := members(a), members(b)
		u, x, d := a.Union(b), a.Intersection(b), a.Difference(b)
		// Union: a in a's order, then b's members not in a, in b's order.
		want := a.WorldRanks()
		for _, w := range b.WorldRanks() {
			if !ma[w] {
				want = append(want, w)
			}
		}
		if !slices.Equal(u.WorldRanks(), want) {
			t.Fatalf("%v ∪ %v = %v, want %v", a, b, u, want)
		}
		// Intersection and difference: a's members, in a's order.
		var wantX, wantD []int
		for _, w := range a.WorldRanks() {
			if mb[w] {
				wantX = append(wantX, w)
			} else {
				wantD = append(wantD, w)
			}
		}
		if !slices.Equal(x.WorldRanks(), wantX) || !slices.Equal(d.WorldRanks(), wantD) {
			t.Fatalf("%v ∩ %v = %v, ∖ = %v", a, b, x, d)
		}
		if u.Size()+x.Size() != a.Size()+b.Size() {
			t.Fatalf("|a∪b|+|a∩b| != |a|+|b| for %v, %v", a, b)
		}
		if c := d.Intersection(b); c.Size() != 0 {
			t.Fatalf("(a∖b)∩b = %v", c)
		}
		if c := d.Union(x).Compare(a); c != comm.Similar && c != comm.Ident {
			t.Fatalf("(a∖b)∪(a∩b) vs a: %d", c)
		}
		if c := u.Compare(b.Union(a)); c != comm.Similar && c != comm.Ident {
			t.Fatalf("a∪b vs b∪a: %d", c)
		}
		// Excl is Incl of the complement, in order.
		var ex, rest []int
		for r := 0; r < a.Size(); r++ {
			if rng.IntN(2) == 0 {
				ex = append(ex, r)
			} else {
				rest = append(rest, r)
			}
		}
		rng.Shuffle(len(ex), func(i, j int) { ex[i], ex[j] = ex[j], ex[i] })
		if e, i := ok(a.Excl(ex)), ok(a.Incl(rest)); e.Compare(i) != comm.Ident {
			t.Fatalf("%v excl %v = %v, incl %v = %v", a, ex, e, rest, i)
		}
		// Rank: the holder's (world rank 7) position or Undefined.
		if r := a.Rank(); r != slices.Index(a.WorldRanks(), 7) && !(r == comm.Undefined && !ma[7]) {
			t.Fatalf("rank of 7 in %v: %d", a, r)
		}
		// TranslateRanks: a's member i is b's member tr[i], or absent.
		all := make([]int, a.Size())
		for i := range all {
			all[i] = i
		}
		tr, err := a.TranslateRanks(all, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range tr {
			w := a.WorldRanks()[i]
			if r == comm.Undefined {
				if mb[w] {
					t.Fatalf("translate %v→%v: %d absent but present", a, b, w)
				}
			} else if b.WorldRanks()[r] != w {
				t.Fatalf("translate %v→%v: %d→%d", a, b, i, r)
			}
		}
		// RangeIncl is Incl of the expanded triplets.
		first, last := rng.IntN(n), rng.IntN(n)
		stride := 1 + rng.IntN(4)
		if first > last {
			stride = -stride
		}
		var exp []int
		for r := first; stride > 0 && r <= last || stride < 0 && r >= last; r += stride {
			exp = append(exp, r)
		}
		ri := ok(g.RangeIncl([][3]int{{first, last, stride}}))
		if !slices.Equal(ri.WorldRanks(), exp) {
			t.Fatalf("range (%d,%d,%d) = %v, want %v", first, last, stride, ri, exp)
		}
		if re := ok(g.RangeExcl([][3]int{{first, last, stride}})); re.Compare(g.Difference(ri)) != comm.Ident {
			t.Fatalf("range excl (%d,%d,%d) = %v", first, last, stride, re)
		}
	}
}

// Groups from a communicator: holder's rank in a derived group, and Create
// from it.
func ExampleGroup() {
	err := mpgo.Run(6, func(w *comm.Comm) error {
		g := w.Group()
		evens, err := g.RangeIncl([][3]int{{0, 5, 2}}) // ranks 0, 2, 4
		if err != nil {
			return err
		}
		low, err := g.Incl([]int{0, 1, 2})
		if err != nil {
			return err
		}
		c, err := w.Create(evens) // collective over w; nil on odd ranks
		if err != nil {
			return err
		}
		if w.Rank() == 4 {
			tr, _ := evens.TranslateRanks([]int{0, 1, 2}, low)
			fmt.Println("evens:", evens.WorldRanks(), "my rank:", evens.Rank())
			fmt.Println("evens ∪ low:", evens.Union(low).WorldRanks())
			fmt.Println("evens ∩ low:", evens.Intersection(low).WorldRanks())
			fmt.Println("evens ∖ low:", evens.Difference(low).WorldRanks())
			fmt.Println("evens in low:", tr[0], tr[1], tr[2] == comm.Undefined)
			fmt.Println("new communicator:", c.Rank(), "of", c.Size())
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// evens: [0 2 4] my rank: 2
	// evens ∪ low: [0 2 4 1]
	// evens ∩ low: [0 2]
	// evens ∖ low: [4]
	// evens in low: 0 2 true
	// new communicator: 2 of 3
}
