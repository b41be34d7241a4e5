package main

import (
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
	"github.com/mpgo/mpgo/typed"
)

// The right-hand side v: NPB's generator fills the grid in global order
// (i1 fastest) with numbers in (0, 1); v is +1 at the ten largest, -1 at
// the ten smallest and 0 elsewhere.
const (
	charges = 10           // NPB's mm
	seed    = 314159265.0  // NPB's x
	mult    = 1220703125.0 // 5^13, NPB's a
)

// charge is a candidate point: its value and its local position.
type charge struct {
	val float64
	at  [3]int
}

// zran3 fills z, the finest level's array, as NPB's zran3 does: each rank
// jumps the generator to its block, fills its interior, keeps its ten
// largest and ten smallest numbers, and the ranks then agree on the global
// ten of each by twenty rounds of Allreduce (the value with Max or Min,
// then its owner and global position with Max).
func (g *solver) zran3(z []float64, d dims) error {
	nx := int64(g.ng[g.lt])
	ny := nx
	a1 := npb.Pow46(mult, nx)    // one line on
	a2 := npb.Pow46(mult, nx*ny) // one plane on
	clear(z)

	// Jump to the first interior point of the block; then, for every
	// line of it, from the line's start.
	i := int64(g.is[0]-2) + nx*(int64(g.is[1]-2)+ny*int64(g.is[2]-2))
	x0 := seed
	npb.Randlc(&x0, npb.Pow46(mult, i))
	d1 := g.ie[0] - g.is[0] + 1
	e2 := g.ie[1] - g.is[1] + 2
	e3 := g.ie[2] - g.is[2] + 2
	for i3 := 1; i3 < e3; i3++ {
		x1 := x0
		for i2 := 1; i2 < e2; i2++ {
			xx := x1
			o := d.at(1, i2, i3)
			npb.Vranlc(&xx, mult, z[o:o+d1])
			npb.Randlc(&x1, a1)
		}
		npb.Randlc(&x0, a2)
	}

	// Each rank's ten largest (big, ascending) and ten smallest (small,
	// descending): big[0] and small[0] are the ones to beat.
	var big, small [charges]charge
	for i := range small {
		small[i].val = 1
	}
	for i3 := 1; i3 < d.n3-1; i3++ {
		for i2 := 1; i2 < d.n2-1; i2++ {
			for i1 := 1; i1 < d.n1-1; i1++ {
				zv := z[d.at(i1, i2, i3)]
				if zv > big[0].val {
					big[0] = charge{zv, [3]int{i1, i2, i3}}
					bubble(&big, func(a, b float64) bool { return a > b })
				}
				if zv < small[0].val {
					small[0] = charge{zv, [3]int{i1, i2, i3}}
					bubble(&small, func(a, b float64) bool { return a < b })
				}
			}
		}
	}
	if err := g.c.Barrier(); err != nil {
		return err
	}

	// The global ten: in each round the best remaining candidate of every
	// rank competes; the winner moves on to its next one.
	at := func(c charge) int { return d.at(c.at[0], c.at[1], c.at[2]) }
	i1, i0 := charges-1, charges-1 // each rank's next candidates
	val, best := make([]float64, 1), make([]float64, 1)
	jg, jgMax := make([]int, 4), make([]int, 4)
	round := func(list *[charges]charge, next *int, op typed.Op[float64]) error {
		c := list[*next]
		val[0] = z[at(c)]
		if err := g.c.Allreduce(val, best, op); err != nil {
			return err
		}
		clear(jg)
		if best[0] == z[at(c)] {
			// The position in the global grid (NPB's jg, 1-based
			// with a ghost); only the owner's survives the Max.
			jg[0] = g.me
			for ax := range 3 {
				jg[ax+1] = g.is[ax] - 1 + c.at[ax]
			}
			*next--
		}
		return g.ci.Allreduce(jg, jgMax, typed.Max)
	}
	for range charges {
		if err := round(&big, &i1, typed.Max); err != nil {
			return err
		}
		if err := round(&small, &i0, typed.Min); err != nil {
			return err
		}
	}

	if err := g.c.Barrier(); err != nil {
		return err
	}
	clear(z)
	for i := charges - 1; i > i0; i-- {
		z[at(small[i])] = -1
	}
	for i := charges - 1; i > i1; i-- {
		z[at(big[i])] = +1
	}
	return g.comm3(z, d, g.lt)
}

// bubble moves list[0] up to its place in the list, which better orders
// from worst to best except for list[0] (NPB's bubble).
func bubble(list *[charges]charge, better func(a, b float64) bool) {
	for i := 0; i < charges-1; i++ {
		if !better(list[i].val, list[i+1].val) {
			return
		}
		list[i], list[i+1] = list[i+1], list[i]
	}
}
