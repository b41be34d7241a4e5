package comm_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// MPI 3.1 §7.5.2 MPI_Dims_create, with the standard's examples first.
func TestDimsCreate(t *testing.T) {
	cases := []struct {
		n    int
		dims []int
		want []int // nil: ErrArg
	}{
		{6, []int{0, 0}, []int{3, 2}},
		{7, []int{0, 0}, []int{7, 1}},
		{6, []int{0, 3, 0}, []int{2, 3, 1}},
		{7, []int{0, 3, 0}, nil},
		{1, []int{0, 0}, []int{1, 1}},
		{12, []int{0, 0, 0}, []int{3, 2, 2}},
		{16, []int{0, 0, 0}, []int{4, 2, 2}},
		{24, []int{0, 0, 0, 0}, []int{3, 2, 2, 2}},
		{30, []int{0, 0, 0}, []int{5, 3, 2}},
		{36, []int{0, 0}, []int{6, 6}},
		{64, []int{0, 0, 0}, []int{4, 4, 4}},
		{8, []int{2, 0, 0}, []int{2, 2, 2}},
		{12, []int{0, 1, 0}, []int{4, 1, 3}},
		{6, []int{2, 3}, []int{2, 3}},
		{6, []int{2, 2}, nil},
		{4, []int{8, 0}, nil},
		{0, []int{0}, nil},
		{-4, []int{0}, nil},
		{4, []int{-1, 0}, nil},
		{1, []int{}, []int{}},
		{2, []int{}, nil},
		{1 << 20, []int{0, 0}, []int{1 << 10, 1 << 10}},
		{1_000_003, []int{0, 0, 0}, []int{1_000_003, 1, 1}}, // prime
	}
	for _, c := range cases {
		dims := slices.Clone(c.dims)
		err := comm.DimsCreate(c.n, dims)
		if c.want == nil {
			if !errors.Is(err, comm.ErrArg) {
				t.Errorf("DimsCreate(%d, %v) = %v, %v; want ErrArg", c.n, c.dims, dims, err)
			}
			if !slices.Equal(dims, c.dims) {
				t.Errorf("DimsCreate(%d, %v) changed dims to %v on error", c.n, c.dims, dims)
			}
			continue
		}
		if err != nil || !slices.Equal(dims, c.want) {
			t.Errorf("DimsCreate(%d, %v) = %v, %v; want %v", c.n, c.dims, dims, err, c.want)
		}
	}
}

// DimsCreate against exhaustive search: the product is right, the filled
// dimensions are non-increasing and their largest is as small as any
// factorization's.
func TestDimsCreateOptimal(t *testing.T) {
	var best func(m, k, limit int) int // smallest possible largest factor
	best = func(m, k, limit int) int {
		if k == 1 {
			if m <= limit {
				return m
			}
			return -1
		}
		res := -1
		for d := 1; d <= min(m, limit); d++ {
			if m%d == 0 {
				if sub := best(m/d, k-1, d); sub >= 0 && (res < 0 || d < res) {
					res = d
				}
			}
		}
		return res
	}
	for n := 1; n <= 240; n++ {
		for k := 1; k <= 4; k++ {
			dims := make([]int, k)
			if err := comm.DimsCreate(n, dims); err != nil {
				t.Fatalf("DimsCreate(%d, %d zeros): %v", n, k, err)
			}
			p := 1
			for _, d := range dims {
				p *= d
			}
			if p != n || !slices.IsSortedFunc(dims, func(a, b int) int { return b - a }) {
				t.Fatalf("DimsCreate(%d, %d zeros) = %v", n, k, dims)
			}
			if want := best(n, k, n); dims[0] != want {
				t.Fatalf("DimsCreate(%d, %d zeros) = %v: largest %d, could be %d", n, k, dims, dims[0], want)
			}
		}
	}
}

// cartWant computes by hand what a grid should report: the coordinates of
// each rank (row-major) and the shift neighbors.
type cartWant struct {
	dims    []int
	periods []bool
}

func (g cartWant) size() int {
	n := 1
	for _, d := range g.dims {
		n *= d
	}
	return n
}

func (g cartWant) coords(r int) []int {
	c := make([]int, len(g.dims))
	for d := len(g.dims) - 1; d >= 0; d-- {
		c[d] = r % g.dims[d]
		r /= g.dims[d]
	}
	return c
}

func (g cartWant) rank(c []int) int {
	r := 0
	for d, x := range c {
		r = r*g.dims[d] + x
	}
	return r
}

// step returns the rank disp steps from r along dim, or ProcNull.
func (g cartWant) step(r, dim, disp int) int {
	c := g.coords(r)
	x := c[dim] + disp
	if g.periods[dim] {
		x = ((x % g.dims[dim]) + g.dims[dim]) % g.dims[dim]
	} else if x < 0 || x >= g.dims[dim] {
		return comm.ProcNull
	}
	c[dim] = x
	return g.rank(c)
}

var grids = []cartWant{
	{[]int{3, 4}, []bool{true, true}},
	{[]int{3, 4}, []bool{false, false}},
	{[]int{3, 4}, []bool{true, false}},
	{[]int{2, 3, 2}, []bool{false, true, false}},
	{[]int{12}, []bool{true}},
	{[]int{1, 5}, []bool{true, false}},
	{[]int{2, 2}, []bool{true, true}},
	{[]int{}, []bool{}},
}

// MPI 3.1 §7.5.1, §7.5.5, §7.5.6: MPI_Cart_create, MPI_Cart_coords,
// MPI_Cart_rank and MPI_Cart_shift on several grids, periodic and not;
// ranks beyond the grid get nil.
func TestCartCoordsRankShift(t *testing.T) {
	for _, g := range grids {
		t.Run(fmt.Sprint(g.dims, g.periods), func(t *testing.T) {
			n := g.size() + 1 // one rank left out
			run(t, n, func(w *comm.Comm) error {
				ct, err := w.CartCreate(g.dims, g.periods, true)
				if err != nil {
					return err
				}
				if w.Rank() >= g.size() {
					if ct != nil {
						return fmt.Errorf("rank %d beyond the grid got %v", w.Rank(), ct.Comm)
					}
					return nil
				}
				if ct.Size() != g.size() || ct.Rank() != w.Rank() {
					return fmt.Errorf("rank %d of %d", ct.Rank(), ct.Size())
				}
				if !slices.Equal(ct.Dims(), g.dims) || !slices.Equal(ct.Periods(), g.periods) {
					return fmt.Errorf("dims %v periods %v", ct.Dims(), ct.Periods())
				}
				for r := 0; r < g.size(); r++ {
					c, err := ct.Coords(r)
					if err != nil || !slices.Equal(c, g.coords(r)) {
						return fmt.Errorf("coords of %d: %v %v", r, c, err)
					}
					back, err := ct.RankOf(c)
					if err != nil || back != r {
						return fmt.Errorf("rank of %v: %d %v", c, back, err)
					}
				}
				for dim := range g.dims {
					for _, disp := range []int{1, -1, 2, 5, -7, 0} {
						src, dst, err := ct.Shift(dim, disp)
						if err != nil {
							return err
						}
						ws, wd := g.step(ct.Rank(), dim, -disp), g.step(ct.Rank(), dim, disp)
						if src != ws || dst != wd {
							return fmt.Errorf("shift(%d, %d) = %d, %d; want %d, %d", dim, disp, src, dst, ws, wd)
						}
					}
					// Coordinates outside a periodic dimension wrap.
					c := g.coords(ct.Rank())
					c[dim] += 3 * g.dims[dim]
					r, err := ct.RankOf(c)
					if g.periods[dim] && (err != nil || r != ct.Rank()) {
						return fmt.Errorf("wrapped rank of %v: %d %v", c, r, err)
					}
					if !g.periods[dim] && !errors.Is(err, comm.ErrRank) {
						return fmt.Errorf("rank of %v outside a line: %d %v", c, r, err)
					}
				}
				return ct.Barrier()
			})
		})
	}
}

// A shift along a non-periodic line: Shift's ProcNull ends make one
// Sendrecv per rank correct at the edges too.
func TestCartShiftSendrecv(t *testing.T) {
	for _, periodic := range []bool{false, true} {
		t.Run(fmt.Sprint("periodic=", periodic), func(t *testing.T) {
			const n = 5
			run(t, n, func(w *comm.Comm) error {
				ct, err := w.CartCreate([]int{n}, []bool{periodic}, false)
				if err != nil {
					return err
				}
				src, dst, err := ct.Shift(0, 1)
				if err != nil {
					return err
				}
				in := payload(8, 12345)
				st, err := ct.Sendrecv(payload(8, uint64(ct.Rank())), comm.Byte, dst, 0, in, comm.Byte, src, 0)
				if err != nil {
					return err
				}
				switch {
				case ct.Rank() == 0 && !periodic:
					if st.Source != comm.ProcNull || val(in) != 12345 {
						return fmt.Errorf("left end: %v %d", st, val(in))
					}
				default:
					want := (ct.Rank() + n - 1) % n
					if st.Source != want || val(in) != uint64(want) {
						return fmt.Errorf("rank %d: %v %d", ct.Rank(), st, val(in))
					}
				}
				return nil
			})
		})
	}
}

// MPI 3.1 §7.5.7 MPI_Cart_sub: the sub-grids keep the chosen dimensions,
// ranked in row-major order, with contexts of their own.
func TestCartSub(t *testing.T) {
	g := cartWant{[]int{2, 3, 2}, []bool{true, false, true}}
	cases := []struct {
		remain []bool
		dims   []int
	}{
		{[]bool{true, false, true}, []int{2, 2}},
		{[]bool{false, true, false}, []int{3}},
		{[]bool{true, true, true}, []int{2, 3, 2}},
		{[]bool{false, false, false}, nil},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.remain), func(t *testing.T) {
			run(t, g.size(), func(w *comm.Comm) error {
				ct, err := w.CartCreate(g.dims, g.periods, false)
				if err != nil {
					return err
				}
				sub, err := ct.Sub(c.remain)
				if err != nil {
					return err
				}
				if !slices.Equal(sub.Dims(), c.dims) && len(c.dims)+len(sub.Dims()) > 0 {
					return fmt.Errorf("sub dims %v", sub.Dims())
				}
				// Members: the ranks that share my dropped coordinates, in
				// rank order.
				mine := g.coords(w.Rank())
				var want []int
				for r := 0; r < g.size(); r++ {
					rc := g.coords(r)
					same := true
					for d, keep := range c.remain {
						if !keep && rc[d] != mine[d] {
							same = false
						}
					}
					if same {
						want = append(want, r)
					}
				}
				if got := sub.Group().WorldRanks(); !slices.Equal(got, want) {
					return fmt.Errorf("sub group %v, want %v", got, want)
				}
				if sub.Rank() != slices.Index(want, w.Rank()) {
					return fmt.Errorf("sub rank %d", sub.Rank())
				}
				// Sub coordinates are the kept ones.
				sc, err := sub.Coords(sub.Rank())
				if err != nil {
					return err
				}
				var kept []int
				for d, keep := range c.remain {
					if keep {
						kept = append(kept, mine[d])
					}
				}
				if !slices.Equal(sc, kept) && len(sc)+len(kept) > 0 {
					return fmt.Errorf("sub coords %v, want %v", sc, kept)
				}
				// Each sub-grid has its own context: a wildcard ring in it
				// sees only its own members.
				n := sub.Size()
				buf := make([]byte, 8)
				st, err := sub.Sendrecv(payload(8, uint64(w.Rank())), comm.Byte, (sub.Rank()+1)%n, 0,
					buf, comm.Byte, comm.AnySource, comm.AnyTag)
				if err != nil || int(val(buf)) != want[st.Source] {
					return fmt.Errorf("sub ring: %v %d %v", st, val(buf), err)
				}
				return nil
			})
		})
	}
}

// Bad arguments to the Cartesian calls fail with the comm sentinels, on
// every member for the collective ones.
func TestCartErrors(t *testing.T) {
	run(t, 4, func(w *comm.Comm) error {
		checks := []struct {
			name string
			err  error
			want error
		}{
			{"dims/periods lengths", second(w.CartCreate([]int{2, 2}, []bool{true}, false)), comm.ErrArg},
			{"zero dim", second(w.CartCreate([]int{0, 2}, []bool{true, true}, false)), comm.ErrArg},
			{"too big", second(w.CartCreate([]int{3, 2}, []bool{true, true}, false)), comm.ErrArg},
			{"overflow", second(w.CartCreate([]int{1 << 40, 1 << 40}, []bool{true, true}, false)), comm.ErrArg},
		}
		for _, c := range checks {
			if !errors.Is(c.err, c.want) {
				return fmt.Errorf("%s: %v", c.name, c.err)
			}
		}
		// Arguments that differ between members: every member fails.
		dims := []int{2, 2}
		if w.Rank() == 3 {
			dims = []int{4, 1}
		}
		if _, err := w.CartCreate(dims, []bool{false, false}, false); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("inconsistent dims: %v", err)
		}
		// One member with a bad argument: every member fails, nobody hangs.
		dims = []int{2, 2}
		if w.Rank() == 1 {
			dims = []int{2, -2}
		}
		if _, err := w.CartCreate(dims, []bool{false, false}, false); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("one bad member: %v", err)
		}
		ct, err := w.CartCreate([]int{2, 2}, []bool{false, true}, false)
		if err != nil {
			return err
		}
		checks = []struct {
			name string
			err  error
			want error
		}{
			{"coords of -1", second(ct.Coords(-1)), comm.ErrRank},
			{"coords of 4", second(ct.Coords(4)), comm.ErrRank},
			{"rank of short coords", second(ct.RankOf([]int{1})), comm.ErrArg},
			{"rank outside line", second(ct.RankOf([]int{2, 0})), comm.ErrRank},
			{"rank below line", second(ct.RankOf([]int{-1, 0})), comm.ErrRank},
			{"shift dim -1", third(ct.Shift(-1, 1)), comm.ErrArg},
			{"shift dim 2", third(ct.Shift(2, 1)), comm.ErrArg},
			{"sub of wrong length", second(ct.Sub([]bool{true})), comm.ErrArg},
		}
		for _, c := range checks {
			if !errors.Is(c.err, c.want) {
				return fmt.Errorf("%s: %v", c.name, c.err)
			}
		}
		// Sub with remains that differ between members.
		if _, err := ct.Sub([]bool{w.Rank() == 0, true}); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("inconsistent sub: %v", err)
		}
		// The grid is still usable after the failed calls.
		if err := ct.Barrier(); err != nil {
			return err
		}
		if err := ct.Free(); err != nil {
			return err
		}
		if _, _, err := ct.Shift(0, 1); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("shift after free: %v", err)
		}
		if _, _, _, err := ct.Neighborhood(); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("neighborhood after free: %v", err)
		}
		return nil
	})
}

// A 3×2 grid from DimsCreate, periodic along dimension 0: Coords and Shift.
func ExampleComm_CartCreate() {
	dims := []int{0, 0}
	if err := comm.DimsCreate(6, dims); err != nil {
		fmt.Println(err)
		return
	}
	lines := make([]string, 6)
	err := mpgo.Run(6, func(w *comm.Comm) error {
		ct, err := w.CartCreate(dims, []bool{true, false}, false)
		if err != nil {
			return err
		}
		coords, err := ct.Coords(ct.Rank())
		if err != nil {
			return err
		}
		up, down, err := ct.Shift(0, 1)
		if err != nil {
			return err
		}
		left, right, err := ct.Shift(1, 1)
		if err != nil {
			return err
		}
		lines[ct.Rank()] = fmt.Sprintf("rank %d at %v: dim 0 from %d to %d, dim 1 from %d to %d",
			ct.Rank(), coords, up, down, left, right)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("dims", dims, "ProcNull is", comm.ProcNull)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// dims [3 2] ProcNull is -2
	// rank 0 at [0 0]: dim 0 from 4 to 2, dim 1 from -2 to 1
	// rank 1 at [0 1]: dim 0 from 5 to 3, dim 1 from 0 to -2
	// rank 2 at [1 0]: dim 0 from 0 to 4, dim 1 from -2 to 3
	// rank 3 at [1 1]: dim 0 from 1 to 5, dim 1 from 2 to -2
	// rank 4 at [2 0]: dim 0 from 2 to 0, dim 1 from -2 to 5
	// rank 5 at [2 1]: dim 0 from 3 to 1, dim 1 from 4 to -2
}
