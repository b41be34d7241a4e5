package main

import (
	"fmt"

	"github.com/mpgo/mpgo/comm"
)

// The ghost-cell exchange of NPB MG (comm3, comm3_ex, give3, take3, ready
// and their _ex forms). Along each axis in turn a rank posts receives from
// both neighbours, sends its two outermost interior planes, and fills its
// two ghost planes from what arrives; axis by axis, so that edges and
// corners travel on through the later axes. The faces along axis 0 leave
// out the ghosts of axes 1 and 2, those along axis 1 the ghosts of axis 2
// (NPB's loops, and the same amount of data).

// msgType is NPB's tag for a face sent along axis (0..2) in direction dir
// (lo or hi): 100·(dir+2+10·axis) with NPB's 1-based axis and dir = ±1.
func msgType(axis, dir int) int {
	d := 2*dir - 1
	return 100 * (d + 2 + 10*(axis+1))
}

// box is a block of points [lo, hi) of a level's array.
type box struct{ lo, hi [3]int }

// face is the box of planes [from, to) along axis; the other axes span
// everything when full is set (comm3_ex), and otherwise the ghosts of the
// later axes are left out (comm3).
func face(d dims, axis, from, to int, full bool) box {
	var b box
	for ax := range 3 {
		switch {
		case ax == axis:
			b.lo[ax], b.hi[ax] = from, to
		case full || ax < axis:
			b.lo[ax], b.hi[ax] = 0, d.n(ax)
		default:
			b.lo[ax], b.hi[ax] = 1, d.n(ax)-1
		}
	}
	return b
}

// pack copies b's points of u to buf, i1 fastest, and returns how many.
func (b box) pack(u []float64, d dims, buf []float64) int {
	k := 0
	w := b.hi[0] - b.lo[0]
	for i3 := b.lo[2]; i3 < b.hi[2]; i3++ {
		for i2 := b.lo[1]; i2 < b.hi[1]; i2++ {
			o := d.at(b.lo[0], i2, i3)
			if w == 1 {
				buf[k] = u[o]
				k++
			} else {
				k += copy(buf[k:k+w], u[o:o+w])
			}
		}
	}
	return k
}

// unpack copies buf to b's points of u, in pack's order, and returns how
// many.
func (b box) unpack(buf []float64, u []float64, d dims) int {
	k := 0
	w := b.hi[0] - b.lo[0]
	for i3 := b.lo[2]; i3 < b.hi[2]; i3++ {
		for i2 := b.lo[1]; i2 < b.hi[1]; i2++ {
			o := d.at(b.lo[0], i2, i3)
			if w == 1 {
				u[o] = buf[k]
				k++
			} else {
				k += copy(u[o:o+w], buf[k:k+w])
			}
		}
	}
	return k
}

// size is the number of points in b.
func (b box) size() int {
	return (b.hi[0] - b.lo[0]) * (b.hi[1] - b.lo[1]) * (b.hi[2] - b.lo[2])
}

// comm3 fills the ghost cells of u, level k's array, from the neighbours
// (periodic). On a dead level u is zeroed instead.
func (g *solver) comm3(u []float64, d dims, k int) error {
	if g.dead[k] {
		clear(u[:d.len()])
		return nil
	}
	for axis := range 3 {
		if g.np == 1 {
			g.comm1p(axis, u, d)
			continue
		}
		n := d.n(axis)
		// ready: the face sent downwards by the upper neighbour fills
		// the upper ghost plane, and the other way round.
		fromHi, err := g.c.Irecv(g.recv[lo], g.nbr[k][axis][hi], msgType(axis, lo))
		if err != nil {
			return err
		}
		fromLo, err := g.c.Irecv(g.recv[hi], g.nbr[k][axis][lo], msgType(axis, hi))
		if err != nil {
			return err
		}
		// give3
		c := face(d, axis, n-2, n-1, false).pack(u, d, g.send[hi])
		if err := g.c.Send(g.send[hi][:c], g.nbr[k][axis][hi], msgType(axis, hi)); err != nil {
			return err
		}
		c = face(d, axis, 1, 2, false).pack(u, d, g.send[lo])
		if err := g.c.Send(g.send[lo][:c], g.nbr[k][axis][lo], msgType(axis, lo)); err != nil {
			return err
		}
		// take3
		if err := g.take(fromHi, face(d, axis, n-1, n, false), u, d, lo); err != nil {
			return err
		}
		if err := g.take(fromLo, face(d, axis, 0, 1, false), u, d, hi); err != nil {
			return err
		}
	}
	return nil
}

// take waits for the receive rq into g.recv[dir] and unpacks it into b.
func (g *solver) take(rq *comm.Request, b box, u []float64, d dims, dir int) error {
	st, err := rq.Wait()
	if err != nil {
		return err
	}
	if st.Count != b.size() {
		return fmt.Errorf("mg: ghost face from rank %d (tag %d): %d values, want %d", st.Source, st.Tag, st.Count, b.size())
	}
	b.unpack(g.recv[dir], u, d)
	return nil
}

// comm1p is comm3 along axis on a single rank: its own planes wrap around.
func (g *solver) comm1p(axis int, u []float64, d dims) {
	n := d.n(axis)
	face(d, axis, n-2, n-1, false).pack(u, d, g.send[hi])
	face(d, axis, 1, 2, false).pack(u, d, g.send[lo])
	face(d, axis, n-1, n, false).unpack(g.send[lo], u, d)
	face(d, axis, 0, 1, false).unpack(g.send[hi], u, d)
}

// comm3ex completes interp on level k where coarse-level ranks were dead:
// along each axis, a rank that holds points of level k-1 sends its planes
// to the neighbours that hold none (one plane down, two planes up, all
// ghosts included), which take them into their ghost planes. On a single
// rank nothing is dead and nothing moves.
func (g *solver) comm3ex(u []float64, d dims, k int) error {
	for axis := range 3 {
		n := d.n(axis)
		if g.takeEx[k][axis] {
			fromHi, err := g.c.Irecv(g.recv[lo], g.nbr[k][axis][hi], msgType(axis, lo))
			if err != nil {
				return err
			}
			fromLo, err := g.c.Irecv(g.recv[hi], g.nbr[k][axis][lo], msgType(axis, hi))
			if err != nil {
				return err
			}
			if err := g.take(fromHi, face(d, axis, n-1, n, true), u, d, lo); err != nil {
				return err
			}
			if err := g.take(fromLo, face(d, axis, 0, 2, true), u, d, hi); err != nil {
				return err
			}
		}
		if g.giveEx[k][axis] {
			c := face(d, axis, n-2, n, true).pack(u, d, g.send[hi])
			if err := g.c.Send(g.send[hi][:c], g.nbr[k][axis][hi], msgType(axis, hi)); err != nil {
				return err
			}
			c = face(d, axis, 1, 2, true).pack(u, d, g.send[lo])
			if err := g.c.Send(g.send[lo][:c], g.nbr[k][axis][lo], msgType(axis, lo)); err != nil {
				return err
			}
		}
	}
	return nil
}
