// Pmm multiplies dense matrices in parallel, C = A·B, with the
// "merry-go-round" (ring, or systolic 1-D) algorithm on a block-column
// distribution: rank r owns column block r of A, B and C (n/p columns,
// the first n mod p ranks one more). C's block r is
//
//	C[:, r] = Σ_q A[:, q] · B[q-rows, r],
//
// so every rank needs every block of A once. The A blocks travel around
// the ring: at step s rank r holds A's block q = r-s (mod p), adds
// A[:, q]·B[q-rows, r] into its C, and passes the block on to rank r+1
// while it computes — an Isend/Irecv pair started before the multiply
// and waited for after it, so the transfer overlaps the arithmetic. After
// p steps each block has visited every rank; B and C never move.
//
// The local multiply is a cache-blocked i-k-j loop over row-major blocks
// (the innermost loop runs along rows of B and C, four rows of B at a
// time), with no allocations once the run has started. Rank 0 then
// gathers C and checks it against a plain sequential product of the same
// A and B, reporting the largest element-wise relative error.
//
// Run it with
//
//	go run ./examples/pmm -np 4 -n 1000
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o pmm ./examples/pmm && mpiexec -n 4 ./pmm -n 1000
//
// n need not be a multiple of the number of ranks, and may be smaller
// (ranks with no columns still pass blocks on).
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

const tagA = 1

func main() {
	np := flag.Int("np", 4, "number of ranks (goroutines; ignored under a launcher)")
	n := flag.Int("n", 1000, "matrix size: A, B and C are n×n")
	reps := flag.Int("reps", 1, "times to multiply: the fastest is reported")
	check := flag.Bool("check", true, "check C against a sequential product on rank 0 (O(n³) on one core)")
	flag.Parse()
	if *np < 1 {
		fmt.Fprintf(os.Stderr, "pmm: -np %d: need at least 1 rank\n", *np)
		os.Exit(2)
	}
	mpgo.Main(func(world *comm.Comm) error {
		_, err := pmm(world, config{n: *n, reps: *reps, check: *check}, os.Stdout)
		return err
	}, mpgo.WithRanks(*np))
}

// config is one run's problem.
type config struct {
	n     int  // A, B, C are n×n
	reps  int  // multiplications timed (the fastest counts); 0 means 1
	check bool // compare the last C with the sequential product
}

// result is what rank 0 reports.
type result struct {
	n       int
	ranks   int
	elapsed time.Duration // the parallel multiply, slowest rank, fastest repetition
	gflops  float64
	relErr  float64 // largest |C-C_seq|/|C_seq| over the elements; NaN unchecked
	tol     float64
}

// run multiplies on np goroutine ranks and returns rank 0's result.
func run(np int, cfg config, out io.Writer) (result, error) {
	var res result
	err := mpgo.Run(np, func(world *comm.Comm) error {
		r, err := pmm(world, cfg, out)
		if world.Rank() == 0 {
			res = r
		}
		return err
	})
	return res, err
}

// blocks returns the width and first column of each rank's column block:
// n/p columns each, the first n mod p ranks one more.
func blocks(n, p int) (width, first []int) {
	width, first = make([]int, p), make([]int, p)
	for q, off := 0, 0; q < p; q++ {
		width[q] = n / p
		if q < n%p {
			width[q]++
		}
		first[q], off = off, off+width[q]
	}
	return width, first
}

// entry is element (i, j) of a test matrix: a hash of its position and
// the matrix's seed, in [0.5, 1.5). Strictly positive entries keep every
// element of C well away from zero, so an element-wise relative error is
// meaningful.
func entry(seed uint64, i, j int) float64 {
	z := seed + uint64(i)*0x9e3779b97f4a7c15 + uint64(j)*0xbf58476d1ce4e5b9
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return 0.5 + float64(z>>11)/(1<<53)
}

const seedA, seedB = 1, 2

// pmm multiplies on the ranks of world and writes rank 0's report to out.
func pmm(world *comm.Comm, cfg config, out io.Writer) (result, error) {
	n, reps := cfg.n, max(cfg.reps, 1)
	if n < 1 {
		return result{}, fmt.Errorf("pmm: matrix size %d: need at least 1", n)
	}
	if cfg.reps < 0 {
		return result{}, fmt.Errorf("pmm: %d repetitions: need at least 1", cfg.reps)
	}
	c := typed.Of[float64](world)
	rank, p := c.Rank(), c.Size()
	width, first := blocks(n, p)
	w, maxw := width[rank], width[0]

	// Local blocks, row-major: A's and C's are n×w, B's n×w too (all n
	// rows of B's column block; step s uses the rows of block r-s).
	al := make([]float64, n*w)
	bl := make([]float64, n*w)
	cl := make([]float64, n*w)
	cur, next := make([]float64, n*maxw), make([]float64, n*maxw)
	for i := range n {
		for j := range w {
			al[i*w+j] = entry(seedA, i, first[rank]+j)
			bl[i*w+j] = entry(seedB, i, first[rank]+j)
		}
	}

	best := math.Inf(1)
	for range reps {
		copy(cur, al)
		clear(cl)
		if err := c.Barrier(); err != nil {
			return result{}, err
		}
		t0 := time.Now()
		if err := ring(c, n, cl, bl, cur, next, width, first); err != nil {
			return result{}, err
		}
		elapsed := []float64{time.Since(t0).Seconds()}
		slowest := make([]float64, 1)
		if err := c.Reduce(elapsed, slowest, typed.Max[float64], 0); err != nil {
			return result{}, err
		}
		best = min(best, slowest[0])
	}

	res := result{n: n, ranks: p, elapsed: time.Duration(best * 1e9), relErr: math.NaN()}
	res.gflops = 2 * float64(n) * float64(n) * float64(n) / best / 1e9
	if cfg.check {
		// C's blocks gathered to rank 0 one after the other, each n×w_q
		// row-major.
		var all []float64
		counts := make([]int, p)
		if rank == 0 {
			all = make([]float64, n*n)
			for q := range p {
				counts[q] = n * width[q]
			}
		}
		if err := c.Gatherv(cl, all, counts, nil, 0); err != nil {
			return result{}, err
		}
		if rank == 0 {
			res.relErr = checkProduct(n, all, width, first)
		}
	}
	res.tol = 16 * float64(n) * 0x1p-52
	if rank != 0 {
		return res, nil
	}
	fmt.Fprintf(out, "pmm: C = A·B, n=%d, %d ranks (column blocks of %d..%d), merry-go-round with Isend/Irecv\n",
		n, p, width[p-1], width[0])
	fmt.Fprintf(out, "pmm: %.4f s, %.3f GFLOP/s (2n³ flops, slowest rank, best of %d)\n", res.elapsed.Seconds(), res.gflops, reps)
	if !cfg.check {
		fmt.Fprintln(out, "pmm: check skipped")
		return res, nil
	}
	ok := res.relErr <= res.tol
	verdict := "ok"
	if !ok {
		verdict = "FAILED"
	}
	fmt.Fprintf(out, "pmm: max relative error vs sequential product %.3g (tolerance %.3g) %s\n", res.relErr, res.tol, verdict)
	if !ok {
		return res, fmt.Errorf("pmm: max relative error %.3g above tolerance %.3g", res.relErr, res.tol)
	}
	return res, nil
}

// ring is the merry-go-round on this rank: it adds the n×n product A·B's
// column block into cl, where bl is this rank's column block of B (all n rows, row-major
// n×w), cur holds this rank's block of A on entry (n×w, row-major) and
// next is a second buffer as large as the widest block. At step s the
// rank holds the A block of rank q = r-s, multiplies it into cl with the
// rows of bl that block q's columns meet, and meanwhile sends it to rank
// r+1 and receives block q-1 from rank r-1 into next.
func ring(c *typed.Comm[float64], n int, cl, bl, cur, next []float64, width, first []int) error {
	rank, p := c.Rank(), c.Size()
	w := width[rank]
	right, left := (rank+1)%p, (rank-1+p)%p
	var reqs [2]*comm.Request
	for s := range p {
		q := (rank - s + p) % p // the owner of the A block held now
		wq := width[q]
		if s < p-1 { // pass the block on while multiplying with it
			wn := width[(q-1+p)%p]
			var err error
			if reqs[0], err = c.Irecv(next[:n*wn], left, tagA); err != nil {
				return err
			}
			if reqs[1], err = c.Isend(cur[:n*wq], right, tagA); err != nil {
				return err
			}
		}
		mulAdd(cl, w, cur, wq, bl[first[q]*w:], w, n, wq, w)
		if s < p-1 {
			if err := comm.WaitAll(reqs[:]...); err != nil {
				return err
			}
			cur, next = next, cur
		}
	}
	return nil
}

// checkProduct returns the largest element-wise relative difference
// between the gathered C (column blocks one after the other, each n×w_q
// row-major) and a plain sequential i-k-j product of the same A and B.
func checkProduct(n int, gathered []float64, width, first []int) float64 {
	a, b := make([]float64, n*n), make([]float64, n*n)
	for i := range n {
		for j := range n {
			a[i*n+j], b[i*n+j] = entry(seedA, i, j), entry(seedB, i, j)
		}
	}
	ref := make([]float64, n)
	worst, off := 0.0, 0
	blockOf := make([]int, n) // column → rank owning it
	for q := range width {
		for j := first[q]; j < first[q]+width[q]; j++ {
			blockOf[j] = q
		}
	}
	offs := make([]int, len(width))
	for q := range width {
		offs[q], off = off, off+n*width[q]
	}
	for i := range n {
		clear(ref)
		for k := range n {
			aik := a[i*n+k]
			for j, bkj := range b[k*n : k*n+n] {
				ref[j] += aik * bkj
			}
		}
		for j, r := range ref {
			q := blockOf[j]
			got := gathered[offs[q]+i*width[q]+j-first[q]]
			worst = max(worst, math.Abs(got-r)/math.Abs(r))
		}
	}
	return worst
}
