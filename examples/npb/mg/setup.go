package main

import (
	"math/bits"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
	"github.com/mpgo/mpgo/typed"
)

// dims are the extents of a rank's block of one level, ghost cells
// included: interior points have indices 1..n-2 on each axis. Arrays are
// stored as Fortran's u(n1,n2,n3): i1 varies fastest.
type dims struct{ n1, n2, n3 int }

func (d dims) len() int { return d.n1 * d.n2 * d.n3 }

// at is the offset of point (i1, i2, i3).
func (d dims) at(i1, i2, i3 int) int { return i1 + d.n1*(i2+d.n2*i3) }

// n is the extent along axis (0: i1, 1: i2, 2: i3).
func (d dims) n(axis int) int {
	switch axis {
	case 0:
		return d.n1
	case 1:
		return d.n2
	}
	return d.n3
}

// row is the line of points (·, i2, i3) of a.
func row(a []float64, d dims, i2, i3 int) []float64 {
	o := d.at(0, i2, i3)
	return a[o : o+d.n1 : o+d.n1]
}

// Directions along an axis, as indices: NPB's dir = -1 and +1.
const (
	lo = 0
	hi = 1
)

// solver is one rank's state: the decomposition of every level (NPB's setup)
// and the fields. Levels are numbered as in NPB, 1 (coarsest, 2³ points)
// to lt (finest); index 0 of the per-level slices is unused.
type solver struct {
	c  *typed.Comm[float64]
	ci *typed.Comm[int]
	me int
	np int
	lt int
	ng []int // global edge of each level

	m      []dims      // local extents of each level
	dead   []bool      // no interior point here on this level
	takeEx [][3]bool   // interp's expansion: receive ghosts along an axis
	giveEx [][3]bool   // interp's expansion: send them
	nbr    [][3][2]int // neighbour ranks by level, axis and direction

	is, ie [3]int // global bounds of the top-level interior, 1-based with a ghost (NPB's is1..ie3)

	u, r [][]float64 // correction and residual of every level
	v    []float64   // right-hand side (finest level)
	a, s [4]float64  // coefficients of the operator A and the smoother S

	send, recv [2][]float64 // ghost faces by direction (NPB's buff)
	t1, t2, t3 []float64    // a line of temporaries (NPB's r1/r2, u1/u2, x1/y1, z1..z3)
}

// newSolver lays the levels of an n³ grid (n = 2^lt) out over the ranks of
// world as NPB's setup does and allocates the fields.
func newSolver(world *comm.Comm, n, lt int, class npb.Class) *solver {
	g := &solver{
		c:      typed.Of[float64](world),
		ci:     typed.Of[int](world),
		me:     world.Rank(),
		np:     world.Size(),
		lt:     lt,
		ng:     make([]int, lt+1),
		m:      make([]dims, lt+1),
		dead:   make([]bool, lt+1),
		takeEx: make([][3]bool, lt+2),
		giveEx: make([][3]bool, lt+2),
		nbr:    make([][3][2]int, lt+1),
		u:      make([][]float64, lt+1),
		r:      make([][]float64, lt+1),
	}
	g.a = [4]float64{-8.0 / 3.0, 0, 1.0 / 6.0, 1.0 / 12.0}
	if class == 'S' || class == 'W' || class == 'A' {
		g.s = [4]float64{-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0} // the S(a) smoother
	} else {
		g.s = [4]float64{-3.0 / 17.0, 1.0 / 33.0, -1.0 / 61.0, 0} // S(b)
	}
	g.setup(n)

	top := g.m[lt]
	for k := 1; k <= lt; k++ {
		g.u[k] = make([]float64, g.m[k].len())
		g.r[k] = make([]float64, g.m[k].len())
	}
	g.v = make([]float64, top.len())
	face := 2 * max(top.n1*top.n2, top.n1*top.n3, top.n2*top.n3) // two planes for comm3_ex
	for d := range 2 {
		g.send[d] = make([]float64, face)
		g.recv[d] = make([]float64, face)
	}
	line := max(top.n1, top.n2, top.n3) + 1
	g.t1, g.t2, g.t3 = make([]float64, line), make([]float64, line), make([]float64, line)
	return g
}

// setup splits the ranks into a pi[0]×pi[1]×pi[2] grid of powers of two
// (z first, then y, then x) and every level of the grid into blocks over
// it. On coarse levels a rank may hold no interior point along an axis
// ("dead"); its neighbours there are further away (next doubles), and
// interp then fills the ghosts of the level above from the ranks that do
// hold points (takeEx, giveEx). This is NPB's setup, index for index.
func (g *solver) setup(n int) {
	lt := g.lt
	g.ng[lt] = n
	for k := lt - 1; k >= 1; k-- {
		g.ng[k] = g.ng[k+1] / 2
	}

	logp := bits.Len(uint(g.np)) - 1
	var pi, idi [3]int
	dx := logp / 3
	pi[0] = 1 << dx
	idi[0] = g.me % pi[0]
	dy := (logp - dx) / 2
	pi[1] = 1 << dy
	idi[1] = (g.me / pi[0]) % pi[1]
	pi[2] = g.np / (pi[0] * pi[1])
	idi[2] = g.me / (pi[0] * pi[1])

	next := [3]int{1, 1, 1}
	for k := lt; k >= 1; k-- {
		ng := g.ng[k]
		var mi [3]int
		for ax := range 3 {
			mi[ax] = 2 + ((idi[ax]+1)*ng)/pi[ax] - (idi[ax]*ng)/pi[ax]
			mip := 2 + ((next[ax]+idi[ax]+1)*ng)/pi[ax] - ((next[ax]+idi[ax])*ng)/pi[ax]
			if mip == 2 || mi[ax] == 2 {
				next[ax] *= 2
			}
			if k+1 <= lt {
				if mip == 2 && mi[ax] == 3 {
					g.giveEx[k+1][ax] = true
				}
				if mip == 3 && mi[ax] == 2 {
					g.takeEx[k+1][ax] = true
				}
			}
		}
		g.dead[k] = mi[0] == 2 || mi[1] == 2 || mi[2] == 2
		g.m[k] = dims{mi[0], mi[1], mi[2]}

		// Fortran's mod, as Go's %, keeps the sign of the dividend.
		var idin [3][2]int
		for ax := range 3 {
			idin[ax][hi] = (idi[ax] + next[ax] + pi[ax]) % pi[ax]
			idin[ax][lo] = (idi[ax] - next[ax] + pi[ax]) % pi[ax]
		}
		for dir := range 2 {
			g.nbr[k][0][dir] = idin[0][dir] + pi[0]*(idi[1]+pi[1]*idi[2])
			g.nbr[k][1][dir] = idi[0] + pi[0]*(idin[1][dir]+pi[1]*idi[2])
			g.nbr[k][2][dir] = idi[0] + pi[0]*(idi[1]+pi[1]*idin[2][dir])
		}
	}

	for ax := range 3 {
		g.is[ax] = 2 + n - ((pi[ax]-idi[ax])*n)/pi[ax]
		g.ie[ax] = 1 + n - ((pi[ax]-1-idi[ax])*n)/pi[ax]
	}
}
