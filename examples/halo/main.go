// Halo solves Laplace's equation on a square grid by Jacobi iteration,
// decomposed in two dimensions over a px × py grid of ranks, with the
// halo exchange done by one-sided Puts between Fences: each rank writes
// its boundary rows and columns straight into its neighbours' halo cells,
// and no rank posts a receive or matches a message.
//
// The grid's top edge is held at 1, the other edges at 0. Each rank's
// block, with a halo of one cell around it, is its part of a window; an
// iteration is Fence, four Puts (rows as one Put, columns element by
// element), Fence, and the update of the block from its neighbours. At the
// end every rank compares its block with a sequential solver's result,
// bit for bit, and rank 0 reports.
//
// Run it with
//
//	go run ./examples/halo -np 4 -n 64 -iters 100
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

func main() {
	np := flag.Int("np", 4, "number of ranks")
	n := flag.Int("n", 64, "grid points per side (without the fixed edges)")
	iters := flag.Int("iters", 100, "Jacobi iterations")
	flag.Parse()
	mpgo.Main(func(world *comm.Comm) error {
		return halo(world, *n, *iters, os.Stdout)
	}, mpgo.WithRanks(*np))
}

// run solves on np goroutine ranks.
func run(np, n, iters int, out io.Writer) error {
	return mpgo.Run(np, func(world *comm.Comm) error {
		return halo(world, n, iters, out)
	})
}

// block is a rank's share [lo, hi) of n points split over parts.
func block(n, parts, i int) (lo, hi int) {
	return i * n / parts, (i + 1) * n / parts
}

// procGrid splits np ranks into px rows × py columns, as square as np allows.
func procGrid(np int) (px, py int) {
	px = int(math.Sqrt(float64(np)))
	for np%px != 0 {
		px--
	}
	return px, np / px
}

// stencil is the Jacobi update of one point, the same expression in the
// parallel and the sequential solver so that they agree bit for bit.
func stencil(up, down, left, right float64) float64 {
	return 0.25 * ((up + down) + (left + right))
}

// halo runs the solver on world's ranks and writes rank 0's verdict to out.
func halo(world *comm.Comm, n, iters int, out io.Writer) error {
	if iters < 0 {
		return fmt.Errorf("%d iterations: need at least 0", iters)
	}
	px, py := procGrid(world.Size())
	if n < px || n < py {
		return fmt.Errorf("grid of %d points per side on %d×%d ranks: need at least one point per rank and side", n, px, py)
	}
	pi, pj := world.Rank()/py, world.Rank()%py
	rlo, rhi := block(n, px, pi)
	clo, chi := block(n, py, pj)
	bx, by := rhi-rlo, chi-clo
	w := by + 2 // row length with the halo
	at := func(r, c int) int { return r*w + c }

	cur := make([]float64, (bx+2)*w) // the rank's part of the window
	next := make([]float64, len(cur))
	if pi == 0 { // the top edge of the grid: fixed at 1, in the halo row
		for c := range w {
			cur[at(0, c)] = 1
		}
	}
	win, err := typed.NewWindow(world, cur)
	if err != nil {
		return err
	}

	// Neighbours: rank, and where their halo cells start in their part.
	rankOf := func(i, j int) int { return i*py + j }
	heightOf := func(i int) int { lo, hi := block(n, px, i); return hi - lo }
	widthOf := func(j int) int { lo, hi := block(n, py, j); return hi - lo }
	for range iters {
		if err := win.Fence(); err != nil {
			return err
		}
		if pi > 0 { // my first row into the north neighbour's bottom halo row
			if err := win.Put(cur[at(1, 1):at(1, 1+by)], rankOf(pi-1, pj), (heightOf(pi-1)+1)*w+1); err != nil {
				return err
			}
		}
		if pi < px-1 { // my last row into the south neighbour's top halo row
			if err := win.Put(cur[at(bx, 1):at(bx, 1+by)], rankOf(pi+1, pj), 1); err != nil {
				return err
			}
		}
		if pj > 0 { // my first column into the west neighbour's right halo column
			ww := widthOf(pj-1) + 2
			for r := 1; r <= bx; r++ {
				if err := win.Put(cur[at(r, 1):at(r, 2)], rankOf(pi, pj-1), r*ww+ww-1); err != nil {
					return err
				}
			}
		}
		if pj < py-1 { // my last column into the east neighbour's left halo column
			ew := widthOf(pj+1) + 2
			for r := 1; r <= bx; r++ {
				if err := win.Put(cur[at(r, by):at(r, by+1)], rankOf(pi, pj+1), r*ew); err != nil {
					return err
				}
			}
		}
		if err := win.Fence(); err != nil {
			return err
		}
		for r := 1; r <= bx; r++ {
			for c := 1; c <= by; c++ {
				next[at(r, c)] = stencil(cur[at(r-1, c)], cur[at(r+1, c)], cur[at(r, c-1)], cur[at(r, c+1)])
			}
		}
		for r := 1; r <= bx; r++ {
			copy(cur[at(r, 1):at(r, 1+by)], next[at(r, 1):at(r, 1+by)])
		}
	}
	if err := win.Free(); err != nil {
		return err
	}

	ref := sequential(n, iters)
	var wrong, sum float64
	for r := 1; r <= bx; r++ {
		for c := 1; c <= by; c++ {
			v := cur[at(r, c)]
			if v != ref[(rlo+r)*(n+2)+clo+c] {
				wrong++
			}
			sum += v
		}
	}
	f := typed.Of[float64](world)
	tot := make([]float64, 2)
	if err := f.Reduce([]float64{wrong, sum}, tot, typed.Sum[float64], 0); err != nil {
		return err
	}
	if world.Rank() != 0 {
		return nil
	}
	if tot[0] != 0 {
		return fmt.Errorf("halo: %d points differ from the sequential solver's", int(tot[0]))
	}
	_, err = fmt.Fprintf(out, "halo: %dx%d grid on %dx%d ranks, %d iterations: every point equals the sequential solver's ok (sum %.6f)\n",
		n, n, px, py, iters, tot[1])
	return err
}

// sequential is the same Jacobi iteration on one grid of (n+2)² points,
// edges included.
func sequential(n, iters int) []float64 {
	w := n + 2
	cur, next := make([]float64, w*w), make([]float64, w*w)
	for c := range w {
		cur[c] = 1
	}
	for range iters {
		for r := 1; r <= n; r++ {
			for c := 1; c <= n; c++ {
				next[r*w+c] = stencil(cur[(r-1)*w+c], cur[(r+1)*w+c], cur[r*w+c-1], cur[r*w+c+1])
			}
		}
		for r := 1; r <= n; r++ {
			copy(cur[r*w+1:r*w+1+n], next[r*w+1:r*w+1+n])
		}
	}
	return cur
}
