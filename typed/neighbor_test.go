package typed_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
	"golang.org/x/exp/constraints"
)

// topoCase is a topology with a sequential reference: the in- and
// out-neighbors of each rank computed by hand, and which block of which
// neighbor's send buffer lands in each receive block of a neighbor
// alltoall.
type topoCase struct {
	name    string
	n       int // ranks in the run; the topology may use fewer
	members int // ranks in the topology
	build   func(w *comm.Comm) (comm.Topology, error)
	in, out func(r int) []int
	cart    bool // blocks pair by direction (Cart) rather than by order of repeats (graphs)
}

// source returns the neighbor and its send block that fill receive block j
// of rank q in a neighbor alltoall (MPI 3.1 §7.6).
func (tc topoCase) source(q, j int) (p, i int) {
	p = tc.in(q)[j]
	if p == comm.ProcNull {
		return p, -1
	}
	if tc.cart {
		// Block 2d comes from the neighbor below, which sent it upwards:
		// its block 2d+1; and the other way round.
		return p, j ^ 1
	}
	k := 0 // q's block j is the k-th edge from p
	for _, x := range tc.in(q)[:j] {
		if x == p {
			k++
		}
	}
	for i, x := range tc.out(p) {
		if x == q {
			if k == 0 {
				return p, i
			}
			k--
		}
	}
	panic("reference: edge missing")
}

// cartCase builds the reference of a grid.
func cartCase(dims []int, periods []bool) topoCase {
	size := 1
	for _, d := range dims {
		size *= d
	}
	coords := func(r int) []int {
		c := make([]int, len(dims))
		for d := len(dims) - 1; d >= 0; d-- {
			c[d], r = r%dims[d], r/dims[d]
		}
		return c
	}
	rankOf := func(c []int) int {
		r := 0
		for d, x := range c {
			r = r*dims[d] + x
		}
		return r
	}
	step := func(r, d, disp int) int {
		c := coords(r)
		x := c[d] + disp
		if x < 0 || x >= dims[d] {
			if !periods[d] {
				return comm.ProcNull
			}
			x = (x + dims[d]) % dims[d]
		}
		c[d] = x
		return rankOf(c)
	}
	nbrs := func(r int) []int {
		var out []int
		for d := range dims {
			out = append(out, step(r, d, -1), step(r, d, 1))
		}
		return out
	}
	return topoCase{
		name:    fmt.Sprint("cart", dims, periods),
		n:       size + 1,
		members: size,
		build: func(w *comm.Comm) (comm.Topology, error) {
			ct, err := w.CartCreate(dims, periods, false)
			if ct == nil {
				return nil, err
			}
			return ct, err
		},
		in: nbrs, out: nbrs, cart: true,
	}
}

// graphCase builds the reference of a Graph given in MPI's form.
func graphCase(name string, index, edges []int) topoCase {
	nbrs := func(r int) []int {
		start := 0
		if r > 0 {
			start = index[r-1]
		}
		return edges[start:index[r]]
	}
	return topoCase{
		name: name, n: len(index) + 1, members: len(index),
		build: func(w *comm.Comm) (comm.Topology, error) {
			g, err := w.GraphCreate(index, edges)
			if g == nil {
				return nil, err
			}
			return g, err
		},
		in: nbrs, out: nbrs,
	}
}

// distCase builds the reference of a DistGraph from its edge list.
func distCase(name string, n int, edges [][2]int) topoCase {
	in := func(r int) []int {
		var s []int
		for _, e := range edges {
			if e[1] == r {
				s = append(s, e[0])
			}
		}
		return s
	}
	out := func(r int) []int {
		var s []int
		for _, e := range edges {
			if e[0] == r {
				s = append(s, e[1])
			}
		}
		return s
	}
	return topoCase{
		name: name, n: n, members: n,
		build: func(w *comm.Comm) (comm.Topology, error) {
			return w.DistGraphCreateAdjacent(in(w.Rank()), out(w.Rank()))
		},
		in: in, out: out,
	}
}

var topoCases = []topoCase{
	cartCase([]int{3, 4}, []bool{true, true}),
	cartCase([]int{3, 4}, []bool{false, false}),
	cartCase([]int{2, 3}, []bool{false, true}),
	cartCase([]int{2, 1}, []bool{true, true}), // rings of two and of one
	cartCase([]int{2, 2}, []bool{true, false}),
	cartCase([]int{1}, []bool{true}),
	cartCase([]int{}, []bool{}),
	// MPI 3.1's example (0–1, 0–3, 2–3), and one with a repeated edge 0–1
	// and a self loop at 2.
	graphCase("graph", []int{2, 3, 4, 6}, []int{1, 3, 0, 3, 0, 2}),
	graphCase("multigraph", []int{3, 6, 8, 9}, []int{1, 3, 1, 0, 0, 2, 1, 2, 0}),
	distCase("dist graph", 5, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}, {0, 2}, {3, 3}, {0, 2}, {4, 1}}),
	distCase("dist graph without edges", 3, nil),
}

// elem is the value of element e of send block i at rank p in a round.
func elem(round, p, i, e int) int { return round*100000 + p*1000 + i*10 + e%10 }

var untouched = -7 // a variable: T(untouched) converts at run time, wrapping for unsigned T

// checkNeighbor runs rounds of one neighborhood collective on tc with k
// elements per block, and compares every rank's receive buffer with the
// sequential reference; blocks from ProcNull must be left untouched.
func checkNeighbor[T constraints.Integer | constraints.Float](t *testing.T, tc topoCase, k int, alltoall bool) {
	t.Helper()
	err := mpgo.Run(tc.n, func(w *comm.Comm) error {
		topo, err := tc.build(w)
		if err != nil {
			return err
		}
		if w.Rank() >= tc.members {
			if topo != nil {
				return fmt.Errorf("rank %d beyond the topology got one", w.Rank())
			}
			return nil
		}
		q := w.Rank()
		nin, nout := len(tc.in(q)), len(tc.out(q))
		for round := 0; round < 3; round++ {
			var send []T
			if alltoall {
				send = make([]T, k*nout)
				for i := range nout {
					for e := range k {
						send[i*k+e] = T(elem(round, q, i, e))
					}
				}
			} else {
				send = make([]T, k)
				for e := range k {
					send[e] = T(elem(round, q, 0, e))
				}
			}
			recv := make([]T, k*nin)
			for i := range recv {
				recv[i] = T(untouched)
			}
			if alltoall {
				err = typed.NeighborAlltoall(topo, send, recv)
			} else {
				err = typed.NeighborAllgather(topo, send, recv)
			}
			if err != nil {
				return err
			}
			for j := range nin {
				p, i := tc.source(q, j)
				if !alltoall && p != comm.ProcNull {
					i = 0
				}
				for e := range k {
					want := T(untouched)
					if p != comm.ProcNull {
						want = T(elem(round, p, i, e))
					}
					if got := recv[j*k+e]; got != want {
						return fmt.Errorf("round %d rank %d block %d (from %d) element %d: got %v, want %v",
							round, q, j, p, e, got, want)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// MPI 3.1 §7.6.1 MPI_Neighbor_allgather against the sequential reference,
// on grids (periodic and not, rings of one and two ranks), graphs and a
// distributed graph.
func TestNeighborAllgather(t *testing.T) {
	for _, tc := range topoCases {
		t.Run(tc.name, func(t *testing.T) {
			checkNeighbor[float64](t, tc, 3, false)
			checkNeighbor[int32](t, tc, 1, false)
			checkNeighbor[int8](t, tc, 0, false)
		})
	}
}

// MPI 3.1 §7.6.1 MPI_Neighbor_alltoall against the sequential reference.
func TestNeighborAlltoall(t *testing.T) {
	for _, tc := range topoCases {
		t.Run(tc.name, func(t *testing.T) {
			checkNeighbor[float64](t, tc, 3, true)
			checkNeighbor[int64](t, tc, 2, true)
			checkNeighbor[uint16](t, tc, 0, true)
		})
	}
}

// Blocks above the eager limit go by rendezvous; the receives are posted
// first, so nothing waits on anything else.
func TestNeighborLargeBlocks(t *testing.T) {
	k := 20_000 // 160 KB of float64 per block
	if testing.Short() {
		k = 9_000
	}
	checkNeighbor[float64](t, cartCase([]int{2, 2}, []bool{true, true}), k, true)
	checkNeighbor[float64](t, cartCase([]int{3}, []bool{false}), k, false)
}

// Neighborhood traffic has a context of its own: user messages on the
// topology's communicator, with any tag, never interfere.
func TestNeighborIsolation(t *testing.T) {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		ct, err := w.CartCreate([]int{4}, []bool{true}, false)
		if err != nil {
			return err
		}
		c := typed.Of[float64](ct.Comm)
		next, prev := (ct.Rank()+1)%4, (ct.Rank()+3)%4
		for tag := 0; tag < 3; tag++ { // the tags the neighborhood uses
			if err := c.Send([]float64{-1}, next, tag); err != nil {
				return err
			}
		}
		recv := make([]float64, 2)
		if err := typed.NeighborAllgather(ct, []float64{float64(ct.Rank())}, recv); err != nil {
			return err
		}
		if recv[0] != float64(prev) || recv[1] != float64(next) {
			return fmt.Errorf("rank %d got %v", ct.Rank(), recv)
		}
		buf := make([]float64, 1)
		for tag := 0; tag < 3; tag++ {
			if _, err := c.Recv(buf, comm.AnySource, comm.AnyTag); err != nil || buf[0] != -1 {
				return fmt.Errorf("user message %d: %v %v", tag, buf, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Bad buffers, nil or freed topologies and asymmetric graphs fail with the
// comm sentinels, on every rank, without hanging.
func TestNeighborErrors(t *testing.T) {
	err := mpgo.Run(3, func(w *comm.Comm) error {
		ct, err := w.CartCreate([]int{3}, []bool{true}, false)
		if err != nil {
			return err
		}
		checks := []struct {
			name string
			err  error
			want error
		}{
			{"allgather short recv", typed.NeighborAllgather(ct, []int{1}, make([]int, 1)), comm.ErrArg},
			{"allgather long recv", typed.NeighborAllgather(ct, []int{1}, make([]int, 3)), comm.ErrArg},
			{"alltoall ragged send", typed.NeighborAlltoall(ct, make([]int, 3), make([]int, 2)), comm.ErrArg},
			{"alltoall short recv", typed.NeighborAlltoall(ct, make([]int, 4), make([]int, 2)), comm.ErrArg},
			{"nil topology", typed.NeighborAllgather[int](nil, nil, nil), comm.ErrArg},
			{"nil topology alltoall", typed.NeighborAlltoall[int](nil, nil, nil), comm.ErrArg},
		}
		for _, c := range checks {
			if !errors.Is(c.err, c.want) {
				return fmt.Errorf("%s: %v", c.name, c.err)
			}
		}
		// A neighbor that sends blocks of another size: the receiver sees
		// a truncation (longer) or a short block; both are errors.
		send := []int{1, 2}
		if ct.Rank() == 0 {
			send = []int{1, 2, 3}
		}
		recv := make([]int, 2*len(send))
		err = typed.NeighborAllgather(ct, send, recv)
		if ct.Rank() == 1 && !errors.Is(err, comm.ErrTruncate) { // rank 0 is 1's neighbor below
			return fmt.Errorf("longer block: %v", err)
		}
		if ct.Rank() == 0 && !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("shorter block: %v", err)
		}
		if err := ct.Barrier(); err != nil {
			return err
		}
		// An asymmetric graph: every rank fails at once.
		g, err := w.GraphCreate([]int{1, 2, 3}, []int{1, 2, 0})
		if err != nil {
			return err
		}
		if err := typed.NeighborAllgather(g, []int{1}, make([]int, 1)); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("asymmetric graph: %v", err)
		}
		// A freed topology.
		if err := ct.Free(); err != nil {
			return err
		}
		if err := typed.NeighborAllgather(ct, []int{1}, make([]int, 2)); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("freed topology: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
