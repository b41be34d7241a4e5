package main

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
	"github.com/mpgo/mpgo/typed"
)

// params is a problem: an n×n×n periodic grid, nit V-cycles, and NPB's
// reference L2 norm of the final residual (0: none, the run is not
// verified).
type params struct {
	n, nit int
	verify float64
}

// classes are NPB 3.4's MG classes (mg.f90; NPB 3.4 has W at 128³ with 4
// iterations, where NPB 2 had 64³ with 40).
var classes = map[npb.Class]params{
	'S': {32, 4, 0.5307707005734e-04},
	'W': {128, 4, 0.6467329375339e-05},
	'A': {256, 4, 0.2433365309069e-05},
	'B': {256, 20, 0.1800564401355e-05},
	'C': {512, 20, 0.5706732285740e-06},
	'D': {1024, 50, 0.1583275060440e-09},
	'E': {2048, 50, 0.5630442584711e-10},
}

const (
	root       = 0
	epsilon    = 1e-8 // relative error allowed in the final L2 norm
	flopsPerPt = 58   // NPB's count of floating point operations per grid point and iteration
	maxLogEdge = 30   // grids up to 2^30 points on an edge
)

// mg runs NPB MG of class on the ranks of world and writes the report
// (rank 0's) to out.
func mg(world *comm.Comm, class npb.Class, out io.Writer) error {
	p, ok := classes[class]
	if !ok {
		return fmt.Errorf("mg: class %v: want one of S, W, A, B, C, D, E", class)
	}
	return bench(world, class, p, out)
}

// bench runs problem p (reported as class) and writes the report to out.
func bench(world *comm.Comm, class npb.Class, p params, out io.Writer) error {
	size := world.Size()
	if size&(size-1) != 0 {
		return fmt.Errorf("mg: %d ranks: NPB MG runs on a power of two", size)
	}
	lt := bits.Len(uint(p.n)) - 1
	if p.n < 4 || p.n != 1<<lt || lt > maxLogEdge {
		return fmt.Errorf("mg: grid edge %d: want a power of two from 4 to 2^%d", p.n, maxLogEdge)
	}
	if p.n*p.n*p.n/size < charges {
		// zran3 takes ten candidates of each sign from every rank.
		return fmt.Errorf("mg: %d ranks for a %d³ grid: fewer than %d points per rank", size, p.n, charges)
	}
	me := world.Rank()
	say := func(format string, args ...any) {
		if me == root {
			fmt.Fprintf(out, format, args...)
		}
	}

	if err := world.Barrier(); err != nil {
		return err
	}
	tInit := time.Now()
	say("\n\n NAS Parallel Benchmarks 3.4 -- MG Benchmark\n\n")
	say(" No input file. Using compiled defaults \n")

	g := newSolver(world, p.n, lt, class)
	top := g.m[lt]
	u, r, v := g.u[lt], g.r[lt], g.v
	clear(u)
	if err := g.zran3(v, top); err != nil {
		return err
	}
	if _, _, err := g.norm2u3(v, top); err != nil {
		return err
	}
	say(" Size: %4dx%4dx%4d  (class %v)\n", p.n, p.n, p.n, class)
	say(" Iterations: %4d\n", p.nit)
	say(" Total number of processes: %6d\n\n", size)

	if err := g.resid(u, v, r, top, lt); err != nil {
		return err
	}
	if _, _, err := g.norm2u3(r, top); err != nil {
		return err
	}
	// One untimed V-cycle to touch all the data, then start over.
	if err := g.mg3P(); err != nil {
		return err
	}
	if err := g.resid(u, v, r, top, lt); err != nil {
		return err
	}
	clear(u)
	if err := g.zran3(v, top); err != nil {
		return err
	}
	say("\n Initialization time: %15.3f seconds\n\n", time.Since(tInit).Seconds())

	if err := world.Barrier(); err != nil {
		return err
	}
	t0 := time.Now()
	if err := g.resid(u, v, r, top, lt); err != nil {
		return err
	}
	if _, _, err := g.norm2u3(r, top); err != nil {
		return err
	}
	for it := 1; it <= p.nit; it++ {
		if it == 1 || it == p.nit || it%5 == 0 {
			say("  iter %4d\n", it)
		}
		if err := g.mg3P(); err != nil {
			return err
		}
		if err := g.resid(u, v, r, top, lt); err != nil {
			return err
		}
	}
	rnm2, _, err := g.norm2u3(r, top)
	if err != nil {
		return err
	}
	elapsed := []float64{time.Since(t0).Seconds()}
	tmax := make([]float64, 1)
	if err := g.c.Reduce(elapsed, tmax, typed.Max, root); err != nil {
		return err
	}
	if me != root {
		return nil
	}

	t := tmax[0]
	say("\n Benchmark completed \n")
	verified := false
	if p.verify != 0 {
		e := math.Abs(rnm2-p.verify) / p.verify
		if !math.IsNaN(e) && e <= epsilon {
			verified = true
			say(" VERIFICATION SUCCESSFUL \n")
			say(" L2 Norm is %20s\n", fortranE(rnm2))
			say(" Error is   %20s\n", fortranE(e))
		} else {
			say(" VERIFICATION FAILED\n")
			say(" L2 Norm is             %20s\n", fortranE(rnm2))
			say(" The correct L2 Norm is %20s\n", fortranE(p.verify))
		}
	} else {
		say(" Problem size unknown\n NO VERIFICATION PERFORMED\n")
		say(" L2 Norm is %20s\n", fortranE(rnm2))
	}
	nn := float64(p.n) * float64(p.n) * float64(p.n)
	mops := 0.0
	if t != 0 {
		mops = flopsPerPt * 1e-6 * float64(p.nit) * nn / t
	}
	npb.Result{
		Name:       "MG",
		Class:      class,
		Size:       fmt.Sprintf("%dx%dx%d", p.n, p.n, p.n),
		Iterations: p.nit,
		Time:       time.Duration(t * float64(time.Second)),
		Procs:      size,
		Mops:       mops,
		OpType:     "floating point",
		Verified:   verified,
	}.Print(out)
	return nil
}

// fortranE formats x as Fortran's E20.13 does, without the padding:
// 0.5307707005734E-04.
func fortranE(x float64) string {
	if x == 0 {
		return "0.0000000000000E+00"
	}
	s := strconv.FormatFloat(x, 'E', 12, 64) // d.ddddddddddddE±xx
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	mant, exp, _ := strings.Cut(s, "E")
	e, _ := strconv.Atoi(exp)
	return fmt.Sprintf("%s0.%s%sE%+03d", sign, mant[:1], mant[2:], e+1)
}
