package main

import (
	"math"

	"github.com/mpgo/mpgo/typed"
)

// The multigrid operators of NPB MG, each followed by the ghost exchange
// of its result. Loops run over lines of i1 (contiguous), summing the
// neighbouring lines once per line into temporaries as NPB does, and in
// NPB's order of operations.

// mg3P is one V-cycle: restrict the residual down to the coarsest level,
// smooth there, then interpolate, recompute the residual and smooth on the
// way up to the finest level.
func (g *solver) mg3P() error {
	lt, lb := g.lt, 1
	for k := lt; k > lb; k-- {
		if err := g.rprj3(g.r[k], g.m[k], g.r[k-1], g.m[k-1], k); err != nil {
			return err
		}
	}
	clear(g.u[lb])
	if err := g.psinv(g.r[lb], g.u[lb], g.m[lb], lb); err != nil {
		return err
	}
	for k := lb + 1; k < lt; k++ {
		clear(g.u[k])
		if err := g.interp(g.u[k-1], g.m[k-1], g.u[k], g.m[k], k); err != nil {
			return err
		}
		if err := g.resid(g.u[k], g.r[k], g.r[k], g.m[k], k); err != nil {
			return err
		}
		if err := g.psinv(g.r[k], g.u[k], g.m[k], k); err != nil {
			return err
		}
	}
	if err := g.interp(g.u[lt-1], g.m[lt-1], g.u[lt], g.m[lt], lt); err != nil {
		return err
	}
	if err := g.resid(g.u[lt], g.v, g.r[lt], g.m[lt], lt); err != nil {
		return err
	}
	return g.psinv(g.r[lt], g.u[lt], g.m[lt], lt)
}

// psinv applies the smoother: u = u + S·r (NPB assumes s[3] = 0).
func (g *solver) psinv(r, u []float64, d dims, k int) error {
	c0, c1, c2 := g.s[0], g.s[1], g.s[2]
	r1, r2 := g.t1[:d.n1], g.t2[:d.n1]
	for i3 := 1; i3 < d.n3-1; i3++ {
		for i2 := 1; i2 < d.n2-1; i2++ {
			rm0, rp0 := row(r, d, i2-1, i3)[:len(r1)], row(r, d, i2+1, i3)[:len(r1)]
			r0m, r0p := row(r, d, i2, i3-1)[:len(r1)], row(r, d, i2, i3+1)[:len(r1)]
			rmm, rpm := row(r, d, i2-1, i3-1)[:len(r1)], row(r, d, i2+1, i3-1)[:len(r1)]
			rmp, rpp := row(r, d, i2-1, i3+1)[:len(r1)], row(r, d, i2+1, i3+1)[:len(r1)]
			r2 := r2[:len(r1)]
			for i1 := range r1 {
				r1[i1] = rm0[i1] + rp0[i1] + r0m[i1] + r0p[i1]
				r2[i1] = rmm[i1] + rpm[i1] + rmp[i1] + rpp[i1]
			}
			rc, uc := row(r, d, i2, i3)[:len(r1)], row(u, d, i2, i3)[:len(r1)]
			for i1 := 1; i1 < len(r1)-1; i1++ {
				uc[i1] = uc[i1] +
					c0*rc[i1] +
					c1*(rc[i1-1]+rc[i1+1]+r1[i1]) +
					c2*(r2[i1]+r1[i1-1]+r1[i1+1])
			}
		}
	}
	return g.comm3(u, d, k)
}

// resid computes the residual r = v - A·u (NPB assumes a[1] = 0); v and r
// may be the same array.
func (g *solver) resid(u, v, r []float64, d dims, k int) error {
	a0, a2, a3 := g.a[0], g.a[2], g.a[3]
	u1, u2 := g.t1[:d.n1], g.t2[:d.n1]
	for i3 := 1; i3 < d.n3-1; i3++ {
		for i2 := 1; i2 < d.n2-1; i2++ {
			um0, up0 := row(u, d, i2-1, i3)[:len(u1)], row(u, d, i2+1, i3)[:len(u1)]
			u0m, u0p := row(u, d, i2, i3-1)[:len(u1)], row(u, d, i2, i3+1)[:len(u1)]
			umm, upm := row(u, d, i2-1, i3-1)[:len(u1)], row(u, d, i2+1, i3-1)[:len(u1)]
			ump, upp := row(u, d, i2-1, i3+1)[:len(u1)], row(u, d, i2+1, i3+1)[:len(u1)]
			u2 := u2[:len(u1)]
			for i1 := range u1 {
				u1[i1] = um0[i1] + up0[i1] + u0m[i1] + u0p[i1]
				u2[i1] = umm[i1] + upm[i1] + ump[i1] + upp[i1]
			}
			uc, vc, rc := row(u, d, i2, i3)[:len(u1)], row(v, d, i2, i3)[:len(u1)], row(r, d, i2, i3)[:len(u1)]
			for i1 := 1; i1 < len(u1)-1; i1++ {
				rc[i1] = vc[i1] -
					a0*uc[i1] -
					a2*(u2[i1]+u1[i1-1]+u1[i1+1]) -
					a3*(u2[i1-1]+u2[i1+1])
			}
		}
	}
	return g.comm3(r, d, k)
}

// rprj3 restricts r (level k, extents mk) to s on the next coarser level
// (extents mj) with the trilinear finite-element projection s = P·r.
func (g *solver) rprj3(r []float64, mk dims, s []float64, mj dims, k int) error {
	// A block with a single interior point along an axis is aligned
	// differently (NPB's d1, d2, d3).
	d1, d2, d3 := 1, 1, 1
	if mk.n1 == 3 {
		d1 = 2
	}
	if mk.n2 == 3 {
		d2 = 2
	}
	if mk.n3 == 3 {
		d3 = 2
	}
	x1, y1 := g.t1[:mk.n1], g.t2[:mk.n1]
	for j3 := 1; j3 < mj.n3-1; j3++ {
		i3 := 2*j3 + 1 - d3
		for j2 := 1; j2 < mj.n2-1; j2++ {
			i2 := 2*j2 + 1 - d2
			rm0, rp0 := row(r, mk, i2-1, i3)[:len(x1)], row(r, mk, i2+1, i3)[:len(x1)]
			r0m, r0p := row(r, mk, i2, i3-1)[:len(x1)], row(r, mk, i2, i3+1)[:len(x1)]
			rmm, rmp := row(r, mk, i2-1, i3-1)[:len(x1)], row(r, mk, i2-1, i3+1)[:len(x1)]
			rpm, rpp := row(r, mk, i2+1, i3-1)[:len(x1)], row(r, mk, i2+1, i3+1)[:len(x1)]
			rc := row(r, mk, i2, i3)[:len(x1)]
			y1 := y1[:len(x1)]
			for j1 := 1; j1 < mj.n1; j1++ {
				i1 := 2*j1 - d1
				x1[i1] = rm0[i1] + rp0[i1] + r0m[i1] + r0p[i1]
				y1[i1] = rmm[i1] + rmp[i1] + rpm[i1] + rpp[i1]
			}
			sc := row(s, mj, j2, j3)
			for j1 := 1; j1 < mj.n1-1; j1++ {
				i1 := 2*j1 + 1 - d1
				y2 := rmm[i1] + rmp[i1] + rpm[i1] + rpp[i1]
				x2 := rm0[i1] + rp0[i1] + r0m[i1] + r0p[i1]
				sc[j1] = 0.5*rc[i1] +
					0.25*(rc[i1-1]+rc[i1+1]+x2) +
					0.125*(x1[i1-1]+x1[i1+1]+y2) +
					0.0625*(y1[i1-1]+y1[i1+1])
			}
		}
	}
	return g.comm3(s, mj, k-1)
}

// interp adds the trilinear interpolation of the correction z (level k-1,
// extents mm) to u (level k, extents n): u = u + Q·z.
func (g *solver) interp(z []float64, mm dims, u []float64, n dims, k int) error {
	if n.n1 == 3 || n.n2 == 3 || n.n3 == 3 {
		interpThin(z, mm, u, n)
		return g.comm3ex(u, n, k)
	}
	z1, z2, z3 := g.t1[:mm.n1], g.t2[:mm.n1], g.t3[:mm.n1]
	for i3 := 0; i3 < mm.n3-1; i3++ {
		for i2 := 0; i2 < mm.n2-1; i2++ {
			z00, z10 := row(z, mm, i2, i3)[:len(z1)], row(z, mm, i2+1, i3)[:len(z1)]
			z01, z11 := row(z, mm, i2, i3+1)[:len(z1)], row(z, mm, i2+1, i3+1)[:len(z1)]
			z2, z3 := z2[:len(z1)], z3[:len(z1)]
			for i1 := range z1 {
				z1[i1] = z10[i1] + z00[i1]
				z2[i1] = z01[i1] + z00[i1]
				z3[i1] = z11[i1] + z01[i1] + z1[i1]
			}
			u00, u10 := row(u, n, 2*i2, 2*i3), row(u, n, 2*i2+1, 2*i3)
			u01, u11 := row(u, n, 2*i2, 2*i3+1), row(u, n, 2*i2+1, 2*i3+1)
			for i1 := 0; i1 < len(z1)-1; i1++ {
				u00[2*i1] += z00[i1]
				u00[2*i1+1] += 0.5 * (z00[i1+1] + z00[i1])
			}
			for i1 := 0; i1 < len(z1)-1; i1++ {
				u10[2*i1] += 0.5 * z1[i1]
				u10[2*i1+1] += 0.25 * (z1[i1] + z1[i1+1])
			}
			for i1 := 0; i1 < len(z1)-1; i1++ {
				u01[2*i1] += 0.5 * z2[i1]
				u01[2*i1+1] += 0.25 * (z2[i1] + z2[i1+1])
			}
			for i1 := 0; i1 < len(z1)-1; i1++ {
				u11[2*i1] += 0.25 * z3[i1]
				u11[2*i1+1] += 0.125 * (z3[i1] + z3[i1+1])
			}
		}
	}
	return g.comm3ex(u, n, k)
}

// interpThin is interp where the fine block has a single interior point
// along some axis (many ranks, coarse levels): NPB's second variant, in
// which such an axis is aligned as in rprj3. Rarely run and small: plain
// indexing.
func interpThin(z []float64, mm dims, u []float64, n dims) {
	// Along an axis with one interior point, d = 2 and t = 1 (NPB's d1..d3
	// and t1..t3); otherwise d = 1 and t = 0. Fine index of a coarse i:
	// 2i+1-d (the point) and 2i+1-t (the midpoint towards i+1).
	var d, t [3]int
	for ax := range 3 {
		d[ax], t[ax] = 1, 0
		if n.n(ax) == 3 {
			d[ax], t[ax] = 2, 1
		}
	}
	zv := func(i1, i2, i3 int) float64 { return z[mm.at(i1, i2, i3)] }
	add := func(i1, i2, i3 int, x float64) { u[n.at(i1, i2, i3)] += x }
	for i3 := d[2] - 1; i3 <= mm.n3-2; i3++ {
		f3 := 2*i3 + 1 - d[2]
		for i2 := d[1] - 1; i2 <= mm.n2-2; i2++ {
			f2 := 2*i2 + 1 - d[1]
			for i1 := d[0] - 1; i1 <= mm.n1-2; i1++ {
				add(2*i1+1-d[0], f2, f3, zv(i1, i2, i3))
			}
			for i1 := 0; i1 <= mm.n1-2; i1++ {
				add(2*i1+1-t[0], f2, f3, 0.5*(zv(i1+1, i2, i3)+zv(i1, i2, i3)))
			}
		}
		for i2 := 0; i2 <= mm.n2-2; i2++ {
			f2 := 2*i2 + 1 - t[1]
			for i1 := d[0] - 1; i1 <= mm.n1-2; i1++ {
				add(2*i1+1-d[0], f2, f3, 0.5*(zv(i1, i2+1, i3)+zv(i1, i2, i3)))
			}
			for i1 := 0; i1 <= mm.n1-2; i1++ {
				add(2*i1+1-t[0], f2, f3, 0.25*(zv(i1+1, i2+1, i3)+zv(i1+1, i2, i3)+
					zv(i1, i2+1, i3)+zv(i1, i2, i3)))
			}
		}
	}
	for i3 := 0; i3 <= mm.n3-2; i3++ {
		f3 := 2*i3 + 1 - t[2]
		for i2 := d[1] - 1; i2 <= mm.n2-2; i2++ {
			f2 := 2*i2 + 1 - d[1]
			for i1 := d[0] - 1; i1 <= mm.n1-2; i1++ {
				add(2*i1+1-d[0], f2, f3, 0.5*(zv(i1, i2, i3+1)+zv(i1, i2, i3)))
			}
			for i1 := 0; i1 <= mm.n1-2; i1++ {
				add(2*i1+1-t[0], f2, f3, 0.25*(zv(i1+1, i2, i3+1)+zv(i1, i2, i3+1)+
					zv(i1+1, i2, i3)+zv(i1, i2, i3)))
			}
		}
		for i2 := 0; i2 <= mm.n2-2; i2++ {
			f2 := 2*i2 + 1 - t[1]
			for i1 := d[0] - 1; i1 <= mm.n1-2; i1++ {
				add(2*i1+1-d[0], f2, f3, 0.25*(zv(i1, i2+1, i3+1)+zv(i1, i2, i3+1)+
					zv(i1, i2+1, i3)+zv(i1, i2, i3)))
			}
			for i1 := 0; i1 <= mm.n1-2; i1++ {
				add(2*i1+1-t[0], f2, f3, 0.125*(zv(i1+1, i2+1, i3+1)+zv(i1+1, i2, i3+1)+
					zv(i1, i2+1, i3+1)+zv(i1, i2, i3+1)+
					zv(i1+1, i2+1, i3)+zv(i1+1, i2, i3)+
					zv(i1, i2+1, i3)+zv(i1, i2, i3)))
			}
		}
	}
}

// norm2u3 returns the L2 norm (over the global n³ points) and the maximum
// norm of the interior of r, reduced over all ranks.
func (g *solver) norm2u3(r []float64, d dims) (rnm2, rnmu float64, err error) {
	s, mx := 0.0, 0.0
	for i3 := 1; i3 < d.n3-1; i3++ {
		for i2 := 1; i2 < d.n2-1; i2++ {
			rc := row(r, d, i2, i3)
			for _, x := range rc[1 : len(rc)-1] {
				s += x * x
				if a := math.Abs(x); a > mx {
					mx = a
				}
			}
		}
	}
	in, res := []float64{mx}, make([]float64, 1)
	if err := g.c.Allreduce(in, res, typed.Max); err != nil {
		return 0, 0, err
	}
	rnmu = res[0]
	in[0] = s
	if err := g.c.Allreduce(in, res, typed.Sum); err != nil {
		return 0, 0, err
	}
	n := float64(g.ng[g.lt])
	return math.Sqrt(res[0] / (n * n * n)), rnmu, nil
}
