// CG is the Conjugate Gradient kernel of the NAS Parallel Benchmarks
// (NPB 3.4, MPI version) on mpgo: the inverse power method estimates the
// smallest eigenvalue of a large sparse symmetric positive definite
// matrix with a random pattern of nonzeros, each outer iteration solving
// a linear system by 25 steps of conjugate gradient. The matrix is split
// over a grid of nprows × npcols ranks (npcols = nprows or 2·nprows), each
// holding a block of rows and columns. As in NPB, every reduction is done
// by hand with point-to-point exchanges: the partial matrix-vector
// products are summed across a process row by recursive halving, the
// result goes to the transpose rank, and dot products are summed by
// recursive doubling across the row — log2(npcols) Sendrecv calls each.
// Verification compares zeta (the eigenvalue estimate) with NPB's
// reference value for the class (relative error at most 1e-10).
//
// Run it with
//
//	go run ./examples/npb/cg -class S -np 4
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o cg ./examples/npb/cg && mpiexec -n 4 ./cg -class S
//
// The number of ranks must be a power of two, as in NPB.
package main

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
	"github.com/mpgo/mpgo/typed"
)

const (
	rcond   = 0.1 // condition number of the generated matrix
	cgitmax = 25  // conjugate gradient steps per outer iteration
	epsilon = 1e-10
	tran0   = 314159265.0
	amult   = 1220703125.0
)

// params are a class's size, nonzeros per generated row vector, outer
// iterations, eigenvalue shift, and the reference zeta.
type params struct {
	na, nonzer, niter int
	shift, zeta       float64
}

var classes = map[npb.Class]params{
	'S': {1400, 7, 15, 10, 8.5971775078648},
	'W': {7000, 8, 15, 12, 10.362595087124},
	'A': {14000, 11, 15, 20, 17.130235054029},
	'B': {75000, 13, 75, 60, 22.712745482631},
	'C': {150000, 15, 75, 110, 28.973605592845},
	'D': {1500000, 21, 100, 500, 52.514532105794},
	'E': {9000000, 26, 100, 1.5e3, 77.522164599383},
}

func main() { npb.Main("cg", 'S', cg) }

// run runs CG of class on np goroutine ranks and returns rank 0's result.
func run(np int, class npb.Class, out io.Writer) (npb.Result, error) {
	return npb.Run(np, class, out, cg)
}

// cg runs the kernel on the ranks of world; rank 0 writes NPB's report to
// out and returns the result (other ranks return a zero Result). A failed
// verification is an error on rank 0, after the report.
func cg(world *comm.Comm, class npb.Class, out io.Writer) (npb.Result, error) {
	p, ok := classes[class]
	if !ok {
		return npb.Result{}, fmt.Errorf("cg: class %v: unknown", class)
	}
	nprocs := world.Size()
	if nprocs&(nprocs-1) != 0 {
		return npb.Result{}, fmt.Errorf("cg: %d ranks: need a power of two", nprocs)
	}
	s := newSolver(world, p)
	root := s.me == 0
	if root {
		fmt.Fprintf(out, "\n\n NAS Parallel Benchmarks 3.4 -- CG Benchmark (mpgo)\n\n")
		fmt.Fprintf(out, " Size: %10d  (class %v)\n", p.na, class)
		fmt.Fprintf(out, " Iterations: %5d\n", p.niter)
		fmt.Fprintf(out, " Number of nonzeroes per row: %8d\n", p.nonzer)
		fmt.Fprintf(out, " Eigenvalue shift: %9.3f\n", p.shift)
		fmt.Fprintf(out, " Total number of processes: %6d\n", nprocs)
	}

	// The matrix: every rank draws the whole random sequence and keeps
	// the entries of its block.
	g := generator{tran: tran0, amult: amult}
	g.randlc()
	s.makea(&g, p)

	ncols := s.lastcol - s.firstcol + 1
	var zeta, rnorm float64
	norm := []float64{0, 0} // x·z, z·z
	// outer is one iteration of the inverse power method: solve A·z = x,
	// then zeta = shift + 1/(x·z) and x = z/‖z‖.
	outer := func() error {
		var err error
		if rnorm, err = s.conjGrad(); err != nil {
			return err
		}
		x, z := s.x[:ncols], s.z[:ncols]
		norm[0], norm[1] = 0, 0
		for j := range x {
			norm[0] += x[j] * z[j]
			norm[1] += z[j] * z[j]
		}
		if err := s.sumScalars(norm); err != nil {
			return err
		}
		norm[1] = 1 / math.Sqrt(norm[1])
		zeta = p.shift + 1/norm[0]
		for j := range x {
			x[j] = norm[1] * z[j]
		}
		return nil
	}

	// One untimed iteration to touch all code and data, then start over.
	for i := range s.naa + 1 {
		s.x[i] = 1
	}
	if err := outer(); err != nil {
		return npb.Result{}, err
	}
	for i := range s.naa + 1 {
		s.x[i] = 1
	}
	zeta = 0
	if err := world.Barrier(); err != nil {
		return npb.Result{}, err
	}

	start := time.Now()
	for it := 1; it <= p.niter; it++ {
		if err := outer(); err != nil {
			return npb.Result{}, err
		}
		if root {
			if it == 1 {
				fmt.Fprintf(out, "\n   iteration           ||r||                 zeta\n")
			}
			fmt.Fprintf(out, "    %5d      %21.14e%20.13f\n", it, rnorm, zeta)
		}
	}
	elapsed := []float64{time.Since(start).Seconds()}
	tmax := make([]float64, 1)
	if err := s.c.Reduce(elapsed, tmax, typed.Max, 0); err != nil {
		return npb.Result{}, err
	}
	if !root {
		return npb.Result{}, nil
	}

	fmt.Fprintf(out, " Benchmark completed\n")
	errRel := math.Abs(zeta-p.zeta) / p.zeta
	verified := errRel <= epsilon // false for NaN too
	if verified {
		fmt.Fprintf(out, " VERIFICATION SUCCESSFUL\n Zeta is    %20.13e\n Error is   %20.13e\n", zeta, errRel)
	} else {
		fmt.Fprintf(out, " VERIFICATION FAILED\n Zeta                %20.13e\n The correct zeta is %20.13e\n", zeta, p.zeta)
	}
	var mflops float64
	if t := tmax[0]; t != 0 {
		nz := float64(p.nonzer * (p.nonzer + 1))
		mflops = 1e-6 * 2 * float64(p.niter) * float64(p.na) * (3 + nz + 25*(5+nz) + 3) / t
	}
	res := npb.Result{
		Name:       "CG",
		Class:      class,
		Size:       fmt.Sprint(p.na),
		Iterations: p.niter,
		Time:       time.Duration(tmax[0] * float64(time.Second)),
		Procs:      nprocs,
		Mops:       mflops,
		OpType:     "floating point",
		Verified:   verified,
	}
	res.Print(out)
	if !verified {
		return res, fmt.Errorf("cg: class %v: verification failed: zeta=%.13e, want %.13e", class, zeta, p.zeta)
	}
	return res, nil
}

// solver is one rank's part of the problem. Row and column numbers
// (firstrow … lastcol, sendStart and the reduce starts) are NPB's: global,
// counted from 1; slices are indexed from 0.
type solver struct {
	c      *typed.Comm[float64]
	me     int
	na     int
	naa    int // na/nprows: the vectors hold naa+2 elements
	npcols int
	nprows int

	firstrow, lastrow, firstcol, lastcol int

	exchProc       int // the transpose rank
	exchRecvLength int
	sendStart      int
	sendLen        int

	// The reduction schedule across a process row: step i (1 … l2npcols)
	// exchanges with reduceExchProc[i].
	l2npcols          int
	reduceExchProc    []int
	reduceSendStarts  []int
	reduceSendLengths []int
	reduceRecvStarts  []int
	reduceRecvLengths []int

	// The local block in compressed rows; colidx is local (0-based).
	rowstr []int32
	colidx []int32
	a      []float64

	x, z, p, q, r, w []float64
	tmp              []float64 // what a scalar exchange receives
}

func newSolver(world *comm.Comm, p params) *solver {
	nprocs := world.Size()
	// The process grid: npcols = nprows, or 2·nprows for odd powers.
	l := bits.Len(uint(nprocs)) - 1
	s := &solver{
		c:      typed.Of[float64](world),
		me:     world.Rank(),
		na:     p.na,
		npcols: 1 << (l - l/2),
		nprows: 1 << (l / 2),
		tmp:    make([]float64, 2),
	}
	s.naa = p.na / s.nprows
	for _, v := range []*[]float64{&s.x, &s.z, &s.p, &s.q, &s.r, &s.w} {
		*v = make([]float64, s.naa+2)
	}
	s.setupSubmatrixInfo()
	return s
}

// setupSubmatrixInfo works out this rank's block of rows and columns, its
// transpose rank and the reduction schedule, as NPB's routine of that
// name.
func (s *solver) setupSubmatrixInfo() {
	na, npcols, nprows, me := s.na, s.npcols, s.nprows, s.me
	procRow := me / npcols
	procCol := me - procRow*npcols

	if na/npcols*npcols == na {
		colSize := na / npcols
		s.firstcol = procCol*colSize + 1
		s.lastcol = s.firstcol - 1 + colSize
		rowSize := na / nprows
		s.firstrow = procRow*rowSize + 1
		s.lastrow = s.firstrow - 1 + rowSize
	} else {
		// Rows first; then columns, split in two per row block when the
		// grid is not square.
		var rowSize int
		if extra := na - na/nprows*nprows; procRow < extra {
			rowSize = na/nprows + 1
			s.firstrow = procRow*rowSize + 1
		} else {
			rowSize = na / nprows
			s.firstrow = extra*(rowSize+1) + (procRow-extra)*rowSize + 1
		}
		s.lastrow = s.firstrow - 1 + rowSize
		if npcols == nprows {
			if extra := na - na/npcols*npcols; procCol < extra {
				colSize := na/npcols + 1
				s.firstcol = procCol*colSize + 1
				s.lastcol = s.firstcol - 1 + colSize
			} else {
				colSize := na / npcols
				s.firstcol = extra*(colSize+1) + (procCol-extra)*colSize + 1
				s.lastcol = s.firstcol - 1 + colSize
			}
		} else {
			half := npcols / 2
			var colSize int
			if extra := na - na/half*half; procCol/2 < extra {
				colSize = na/half + 1
				s.firstcol = (procCol/2)*colSize + 1
			} else {
				colSize = na / half
				s.firstcol = extra*(colSize+1) + (procCol/2-extra)*colSize + 1
			}
			s.lastcol = s.firstcol - 1 + colSize
			if me%2 == 0 {
				s.lastcol = s.firstcol - 1 + (colSize-1)/2 + 1
			} else {
				s.firstcol += (colSize-1)/2 + 1
				s.lastcol = s.firstcol - 1 + colSize/2
			}
		}
	}

	nrows := s.lastrow - s.firstrow + 1
	if npcols == nprows {
		s.sendStart = 1
		s.sendLen = nrows
	} else if me%2 == 0 {
		s.sendStart = 1
		s.sendLen = (1 + nrows) / 2
	} else {
		s.sendStart = (1+nrows)/2 + 1
		s.sendLen = nrows / 2
	}

	if npcols == nprows {
		s.exchProc = (me%nprows)*nprows + me/nprows
	} else {
		s.exchProc = 2*((me/2%nprows)*nprows+me/2/nprows) + me%2
	}

	s.l2npcols = bits.Len(uint(npcols)) - 1
	n := s.l2npcols + 1 // indexed 1 … l2npcols
	s.reduceExchProc = make([]int, n)
	s.reduceSendStarts = make([]int, n)
	s.reduceSendLengths = make([]int, n)
	s.reduceRecvStarts = make([]int, n)
	s.reduceRecvLengths = make([]int, n)
	div := npcols
	for i := 1; i <= s.l2npcols; i++ {
		j := (procCol+div/2)%div + procCol/div*div
		s.reduceExchProc[i] = procRow*npcols + j
		div /= 2
	}
	for i := s.l2npcols; i >= 1; i-- {
		if nprows == npcols {
			s.reduceSendStarts[i] = s.sendStart
			s.reduceSendLengths[i] = s.sendLen
			s.reduceRecvLengths[i] = nrows
		} else {
			s.reduceRecvLengths[i] = s.sendLen
			if i == s.l2npcols {
				s.reduceSendLengths[i] = nrows - s.sendLen
				if me%2 == 0 {
					s.reduceSendStarts[i] = s.sendStart + s.sendLen
				} else {
					s.reduceSendStarts[i] = 1
				}
			} else {
				s.reduceSendLengths[i] = s.sendLen
				s.reduceSendStarts[i] = s.sendStart
			}
		}
		s.reduceRecvStarts[i] = s.sendStart
	}
	s.exchRecvLength = s.lastcol - s.firstcol + 1
}

// sumScalars sums v over the process row, leaving the sum on every rank
// of it (NPB's hand-made Allreduce: recursive doubling with the ranks of
// reduceExchProc).
func (s *solver) sumScalars(v []float64) error {
	tmp := s.tmp[:len(v)]
	for i := 1; i <= s.l2npcols; i++ {
		peer := s.reduceExchProc[i]
		if _, err := s.c.Sendrecv(v, peer, i, tmp, peer, i); err != nil {
			return err
		}
		for k := range v {
			v[k] += tmp[k]
		}
	}
	return nil
}

// sumRows sums the partial products w across the process row by
// recursive halving (recv is the receive buffer), then hands this rank's
// piece to the transpose rank, whose piece lands in dst.
func (s *solver) sumRows(w, recv, dst []float64) error {
	ss := s.sendStart - 1
	for i := s.l2npcols; i >= 1; i-- {
		peer := s.reduceExchProc[i]
		rs, rl := s.reduceRecvStarts[i]-1, s.reduceRecvLengths[i]
		ws, wl := s.reduceSendStarts[i]-1, s.reduceSendLengths[i]
		if _, err := s.c.Sendrecv(w[ws:ws+wl], peer, i, recv[rs:rs+rl], peer, i); err != nil {
			return err
		}
		ww, rr := w[ss:ss+rl], recv[ss:ss+rl]
		for j := range ww {
			ww[j] += rr[j]
		}
	}
	if s.l2npcols == 0 {
		copy(dst[:s.exchRecvLength], w[:s.exchRecvLength])
		return nil
	}
	_, err := s.c.Sendrecv(w[ss:ss+s.sendLen], s.exchProc, 1, dst[:s.exchRecvLength], s.exchProc, 1)
	return err
}

// matvec sets out[j] to row j of the local block times v.
func (s *solver) matvec(v, out []float64) {
	rowstr, colidx, a := s.rowstr, s.colidx, s.a
	for j := range len(rowstr) - 1 {
		cols := colidx[rowstr[j]:rowstr[j+1]]
		vals := a[rowstr[j]:rowstr[j+1]]
		vals = vals[:len(cols)]
		sum := 0.0
		for k, c := range cols {
			sum += vals[k] * v[c]
		}
		out[j] = sum
	}
}

// conjGrad solves A·z = x approximately by cgitmax steps of conjugate
// gradient and returns ‖x − A·z‖.
func (s *solver) conjGrad() (float64, error) {
	ncols := s.lastcol - s.firstcol + 1
	nrows := s.lastrow - s.firstrow + 1
	for j := range s.naa + 1 {
		s.q[j] = 0
		s.z[j] = 0
		s.r[j] = s.x[j]
		s.p[j] = s.r[j]
		s.w[j] = 0
	}
	x, z, p, q, r := s.x[:ncols], s.z[:ncols], s.p[:ncols], s.q[:ncols], s.r[:ncols]

	sum := []float64{0}
	sum[0] = dot(r, r)
	if err := s.sumScalars(sum); err != nil {
		return 0, err
	}
	rho := sum[0]

	for range cgitmax {
		// q = A·p: local products, summed across the row, transposed.
		s.matvec(s.p, s.w)
		if err := s.sumRows(s.w, s.q, s.q); err != nil {
			return 0, err
		}
		clear(s.w[:max(nrows, ncols)])

		sum[0] = dot(p, q)
		if err := s.sumScalars(sum); err != nil {
			return 0, err
		}
		alpha := rho / sum[0]
		rho0 := rho

		for j := range z {
			z[j] += alpha * p[j]
			r[j] -= alpha * q[j]
		}

		sum[0] = dot(r, r)
		if err := s.sumScalars(sum); err != nil {
			return 0, err
		}
		rho = sum[0]
		beta := rho / rho0
		for j := range p {
			p[j] = r[j] + beta*p[j]
		}
	}

	// The residual, explicitly: r = A·z, then ‖x − r‖.
	s.matvec(s.z, s.w)
	if err := s.sumRows(s.w, s.r, s.r); err != nil {
		return 0, err
	}
	sum[0] = 0
	for j := range x {
		d := x[j] - r[j]
		sum[0] += d * d
	}
	if err := s.sumScalars(sum); err != nil {
		return 0, err
	}
	return math.Sqrt(sum[0]), nil
}

func dot(a, b []float64) float64 {
	b = b[:len(a)]
	sum := 0.0
	for j := range a {
		sum += a[j] * b[j]
	}
	return sum
}
