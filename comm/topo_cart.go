package comm

import (
	"fmt"
	"slices"
)

// Cart is a communicator whose ranks are laid out on a Cartesian grid
// (MPI 3.1 §7.5.1), made by [Comm.CartCreate]. Ranks are numbered in
// row-major order: the last dimension varies fastest. A dimension may be
// periodic (a ring) or not (a line with two ends, beyond which a shift
// finds [ProcNull]).
//
// Cart embeds its communicator: every [Comm] method works on it, and its
// neighborhood ([Cart.Neighborhood]) serves the neighborhood collectives of
// package typed. Like a Comm it may be used by several goroutines of its
// rank, except for the collective calls (Sub, Dup, Split, …), which every
// member must make in the same order.
type Cart struct {
	*Comm
	dims    []int
	periods []bool
	coords  []int // the calling rank's
	nc      *Comm // neighborhood traffic
	in, out []Neighbor
}

var _ Topology = (*Cart)(nil)

// DimsCreate fills the zero entries of dims with a balanced factorization
// of nnodes over the grid (MPI_Dims_create): afterwards the product of dims
// is nnodes, the entries that were positive are unchanged, and the filled
// ones are as close to each other as possible (the largest as small as it
// can be) and in non-increasing order. For example nnodes 6 with dims
// [0 0] gives [3 2], and with [0 3 0] gives [2 3 1].
//
// A nnodes below 1, a negative entry, or fixed entries whose product does
// not divide nnodes (or, with no zero entry, differs from it) fail with
// [ErrArg], leaving dims unchanged.
func DimsCreate(nnodes int, dims []int) error {
	if nnodes < 1 {
		return fmt.Errorf("comm: dims create for %d nodes: %w", nnodes, ErrArg)
	}
	fixed, free := 1, 0
	for _, d := range dims {
		switch {
		case d < 0:
			return fmt.Errorf("comm: dims create with dims %v: %w", dims, ErrArg)
		case d == 0:
			free++
		default:
			if fixed > nnodes/d { // fixed*d > nnodes, without overflow
				return fmt.Errorf("comm: dims create: dims %v exceed %d nodes: %w", dims, nnodes, ErrArg)
			}
			fixed *= d
		}
	}
	if nnodes%fixed != 0 || free == 0 && fixed != nnodes {
		return fmt.Errorf("comm: dims create: %d nodes do not fit dims %v: %w", nnodes, dims, ErrArg)
	}
	if free == 0 {
		return nil
	}
	m := nnodes / fixed
	f := balance(m, free, divisors(m))
	for i, k := range dims {
		if k == 0 {
			dims[i], f = f[0], f[1:]
		}
	}
	return nil
}

// divisors returns the divisors of m in increasing order.
func divisors(m int) []int {
	var lo, hi []int
	for d := 1; d <= m/d; d++ {
		if m%d == 0 {
			lo = append(lo, d)
			if d != m/d {
				hi = append(hi, m/d)
			}
		}
	}
	slices.Reverse(hi)
	return append(lo, hi...)
}

// balance returns k factors of m in non-increasing order whose largest is
// as small as possible, and recursively so for the rest. divs holds (at
// least) the divisors of m, increasing. The largest factor is the
// smallest divisor d with d^k >= m for which m/d splits into k-1 factors
// no larger than d; the recursion finds that split optimally, so the first
// d for which it fits is the answer.
func balance(m, k int, divs []int) []int {
	if k == 1 {
		return []int{m}
	}
	for _, d := range divs {
		if m%d != 0 || !powAtLeast(d, k, m) {
			continue
		}
		rest := balance(m/d, k-1, divs)
		if rest[0] <= d {
			return append([]int{d}, rest...)
		}
	}
	panic("comm: balance found no factorization") // unreachable: d = m fits
}

// powAtLeast reports whether d^k >= m (d >= 1), without overflow.
func powAtLeast(d, k, m int) bool {
	p := 1
	for range k {
		if p >= (m+d-1)/d {
			return true
		}
		p *= d
	}
	return p >= m
}

// CartCreate returns a communicator with a Cartesian grid of the given
// dimensions (MPI_Cart_create): periods[i] makes dimension i periodic. The
// grid takes the first prod(dims) ranks of c, keeping their order (mpgo
// does not reorder ranks; reorder is accepted for MPI's sake and ignored);
// the other ranks get nil, nil. Every member of c must call it with the
// same arguments.
//
// dims and periods of different lengths, a dimension below 1, or a grid
// larger than c fail with [ErrArg]; so do arguments that differ between
// members, on every member: they are compared before the grid is built.
// No dimensions at all make a grid of one rank.
func (c *Comm) CartCreate(dims []int, periods []bool, reorder bool) (*Cart, error) {
	if err := c.begin("cart create"); err != nil {
		return nil, err
	}
	defer c.leave()
	c.kids++
	seq := c.kids
	n, bad := gridSize(dims, periods, c.size)
	var fp fingerprint
	fp.add(dims...)
	fp.addBools(periods)
	if err := c.agreeOn("cart create", bad, fp); err != nil {
		return nil, err
	}
	if c.rank >= n {
		return nil, nil
	}
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = c.worldOf(i)
	}
	cm := newComm(c.ep, childContext(c.ctx, seq, colorCart), c.rank, n, ranks,
		fmt.Sprintf("%s.cart%d", c, seq))
	return newCart(cm, dims, periods), nil
}

// agreeOn runs the agreement of a construction on c: every member reports
// its local error (bad) and the fingerprint of its arguments; all fail if
// any member failed or passed other arguments.
func (c *Comm) agreeOn(op string, bad error, fp fingerprint) error {
	table, err := c.agree([]int64{errCode(bad), int64(fp)})
	if err != nil {
		return fmt.Errorf("comm: %s: %w", op, err)
	}
	if bad != nil {
		return bad
	}
	for r := 0; r < c.size; r++ {
		if code := table[2*r]; code != 0 {
			return fmt.Errorf("comm: %s: rank %d of %s passed bad arguments: %w", op, r, c, codeErr(code))
		}
		if fingerprint(table[2*r+1]) != fp {
			return fmt.Errorf("comm: %s: rank %d of %s passed other arguments than rank %d: %w", op, r, c, c.rank, ErrArg)
		}
	}
	return nil
}

// gridSize validates a grid's shape for a communicator of size ranks and
// returns its number of ranks.
func gridSize(dims []int, periods []bool, size int) (int, error) {
	if len(dims) != len(periods) {
		return 0, fmt.Errorf("comm: cart create: %d dims and %d periods: %w", len(dims), len(periods), ErrArg)
	}
	n := 1
	for _, d := range dims {
		if d < 1 {
			return 0, fmt.Errorf("comm: cart create: dims %v: %w", dims, ErrArg)
		}
		if n > size/d {
			return 0, fmt.Errorf("comm: cart create: grid %v is larger than %d ranks: %w", dims, size, ErrArg)
		}
		n *= d
	}
	return n, nil
}

// newCart attaches the grid to cm, a communicator of prod(dims) ranks.
func newCart(cm *Comm, dims []int, periods []bool) *Cart {
	ct := &Cart{Comm: cm, dims: slices.Clone(dims), periods: slices.Clone(periods), nc: cm.neighborComm()}
	ct.coords = ct.coordsOf(cm.rank)
	ct.in = make([]Neighbor, 2*len(dims))
	ct.out = make([]Neighbor, 2*len(dims))
	for d := range dims {
		// MPI order: for each dimension the neighbor in the negative
		// direction, then the one in the positive direction. A message to
		// the negative neighbor arrives there from its positive neighbor:
		// its block is 2d+1 at the receiver. The tags say which direction a
		// message travelled, so a ring of one or two ranks, where both
		// neighbors are the same rank, still fills the right blocks.
		src, dst := ct.shift(d, 1)
		ct.in[2*d] = Neighbor{Rank: src, Tag: 2*d + 1}
		ct.in[2*d+1] = Neighbor{Rank: dst, Tag: 2 * d}
		ct.out[2*d] = Neighbor{Rank: src, Tag: 2 * d}
		ct.out[2*d+1] = Neighbor{Rank: dst, Tag: 2*d + 1}
	}
	return ct
}

// Dims returns the size of each dimension (a copy).
func (ct *Cart) Dims() []int { return slices.Clone(ct.dims) }

// Periods reports which dimensions are periodic (a copy).
func (ct *Cart) Periods() []bool { return slices.Clone(ct.periods) }

// coordsOf returns the coordinates of rank r, in [0, Size).
func (ct *Cart) coordsOf(r int) []int {
	c := make([]int, len(ct.dims))
	for d := len(ct.dims) - 1; d >= 0; d-- {
		c[d] = r % ct.dims[d]
		r /= ct.dims[d]
	}
	return c
}

// Coords returns the grid coordinates of rank (MPI_Cart_coords). A rank
// outside [0, Size) fails with [ErrRank].
func (ct *Cart) Coords(rank int) ([]int, error) {
	if err := ct.usable(); err != nil {
		return nil, fmt.Errorf("comm: cart coords: %w", err)
	}
	if rank < 0 || rank >= ct.size {
		return nil, fmt.Errorf("comm: cart coords of rank %d of %d: %w", rank, ct.size, ErrRank)
	}
	return ct.coordsOf(rank), nil
}

// RankOf returns the rank at coords (MPI_Cart_rank). A coordinate outside a
// periodic dimension wraps around; one outside a non-periodic dimension
// fails with [ErrRank]. coords of the wrong length fail with [ErrArg].
func (ct *Cart) RankOf(coords []int) (int, error) {
	if err := ct.usable(); err != nil {
		return 0, fmt.Errorf("comm: cart rank: %w", err)
	}
	if len(coords) != len(ct.dims) {
		return 0, fmt.Errorf("comm: cart rank of %d coordinates in %d dimensions: %w", len(coords), len(ct.dims), ErrArg)
	}
	r := 0
	for d, x := range coords {
		n := ct.dims[d]
		if x < 0 || x >= n {
			if !ct.periods[d] {
				return 0, fmt.Errorf("comm: cart rank of %v: coordinate %d outside [0, %d): %w", coords, d, n, ErrRank)
			}
			x = (x%n + n) % n
		}
		r = r*n + x
	}
	return r, nil
}

// shift is Shift without checks.
func (ct *Cart) shift(dim, disp int) (src, dst int) {
	at := func(delta int) int {
		n := ct.dims[dim]
		x := ct.coords[dim] + delta
		if x < 0 || x >= n {
			if !ct.periods[dim] {
				return ProcNull
			}
			x = (x%n + n) % n
		}
		// Ranks are row-major: moving along dim changes the rank by the
		// product of the later dimensions per step.
		stride := 1
		for _, k := range ct.dims[dim+1:] {
			stride *= k
		}
		return ct.rank + (x-ct.coords[dim])*stride
	}
	return at(-disp), at(disp)
}

// Shift returns the ranks disp steps away from the calling rank along
// dimension dim (MPI_Cart_shift): src, the rank disp steps back, which
// sends to the caller in a shift, and dst, the rank disp steps forward, to
// which the caller sends. Beyond the edge of a non-periodic dimension the
// rank is [ProcNull], with which sends and receives succeed at once, so
//
//	src, dst, _ := cart.Shift(0, 1)
//	cart.Sendrecv(out, comm.Float64, dst, tag, in, comm.Float64, src, tag)
//
// (or typed.Of[float64](cart.Comm).Sendrecv(out, dst, tag, in, src, tag);
// see the example of [Comm.Sendrecv] for a halo exchange)
// shifts data along dimension 0 at every rank, edges included. A
// dimension outside [0, len(Dims)) fails with [ErrArg].
func (ct *Cart) Shift(dim, disp int) (src, dst int, err error) {
	if err := ct.usable(); err != nil {
		return 0, 0, fmt.Errorf("comm: cart shift: %w", err)
	}
	if dim < 0 || dim >= len(ct.dims) {
		return 0, 0, fmt.Errorf("comm: cart shift along dimension %d of %d: %w", dim, len(ct.dims), ErrArg)
	}
	src, dst = ct.shift(dim, disp)
	return src, dst, nil
}

// Sub partitions the grid into lower-dimensional grids (MPI_Cart_sub):
// remain[i] keeps dimension i. The ranks that share their coordinates in
// the dropped dimensions form one sub-grid, ranked in row-major order of
// the kept ones, with a context of its own. Every member must call it, with
// the same remain; a remain of the wrong length, or one that differs
// between members, fails with [ErrArg] on every member. Keeping no
// dimension gives each rank a grid of its own.
func (ct *Cart) Sub(remain []bool) (*Cart, error) {
	if err := ct.begin("cart sub"); err != nil {
		return nil, err
	}
	defer ct.leave()
	ct.kids++
	seq := ct.kids
	var bad error
	if len(remain) != len(ct.dims) {
		bad = fmt.Errorf("comm: cart sub: remain of %d for %d dimensions: %w", len(remain), len(ct.dims), ErrArg)
	}
	var fp fingerprint
	fp.addBools(remain)
	if err := ct.agreeOn("cart sub", bad, fp); err != nil {
		return nil, err
	}
	var dims []int
	var periods []bool
	color := 0 // the linear index of the dropped coordinates
	for d, keep := range remain {
		if keep {
			dims = append(dims, ct.dims[d])
			periods = append(periods, ct.periods[d])
		} else {
			color = color*ct.dims[d] + ct.coords[d]
		}
	}
	var ranks []int
	rank := 0
	for r := 0; r < ct.size; r++ {
		c := ct.coordsOf(r)
		same := true
		for d, keep := range remain {
			if !keep && c[d] != ct.coords[d] {
				same = false
				break
			}
		}
		if !same {
			continue
		}
		if r == ct.rank {
			rank = len(ranks)
		}
		ranks = append(ranks, ct.worldOf(r))
	}
	cm := newComm(ct.ep, childContext(ct.ctx, seq, color), rank, len(ranks), ranks,
		fmt.Sprintf("%s.sub%d(%d)", ct.Comm, seq, color))
	return newCart(cm, dims, periods), nil
}

// Neighborhood returns the grid neighborhood (see [Topology]): for each
// dimension, the neighbor one step back and then the one a step forward,
// as both the sources and the destinations; [ProcNull] beyond a
// non-periodic edge.
func (ct *Cart) Neighborhood() (*Comm, []Neighbor, []Neighbor, error) {
	if err := ct.usable(); err != nil {
		return nil, nil, nil, fmt.Errorf("comm: cart neighborhood: %w", err)
	}
	return ct.nc, ct.in, ct.out, nil
}
