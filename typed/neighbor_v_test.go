package typed_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// edge is an edge of a test graph and who names it to DistGraphCreate.
type edge struct{ from, to, weight, namer, seq int }

// randomEdges returns a random graph on n ranks, with self loops and
// repeated edges, each edge named by a random rank and numbered in its
// namer's list.
func randomEdges(n int, seed uint64) []edge {
	rng := rand.New(rand.NewPCG(seed, 7))
	var es []edge
	for range 3 * n {
		es = append(es, edge{from: rng.IntN(n), to: rng.IntN(n), weight: rng.IntN(100) - 50, namer: rng.IntN(n)})
	}
	es = append(es, edge{from: 0, to: n - 1, weight: 1, namer: n - 1}, edge{from: 0, to: n - 1, weight: 2, namer: 0})
	for r := range n {
		named(es, r) // numbers the edges
	}
	return es
}

// distGraph makes the caller's part of the graph es with DistGraphCreate.
func distGraph(w *comm.Comm, es []edge) (*comm.DistGraph, error) {
	src, deg, dst, wts := named(slices.Clone(es), w.Rank())
	return w.DistGraphCreate(src, deg, dst, wts)
}

// named returns the arguments rank r passes to DistGraphCreate for es
// (one source entry per edge, as MPI allows), numbering its edges.
func named(es []edge, r int) (sources, degrees, dests, weights []int) {
	for i := range es {
		if es[i].namer != r {
			continue
		}
		es[i].seq = len(dests)
		sources, degrees = append(sources, es[i].from), append(degrees, 1)
		dests, weights = append(dests, es[i].to), append(weights, es[i].weight)
	}
	return
}

// DistGraphCreate: every rank learns exactly its in- and out-edges, with
// their weights, ordered by neighbor, then namer, then the namer's order;
// the vector neighborhood collectives then move each block along its
// edge, repeated edges and self loops included.
func TestDistGraphCreateAndNeighborV(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8, 17} {
		es := randomEdges(n, uint64(n))
		err := mpgo.Run(n, func(w *comm.Comm) error {
			me := w.Rank()
			g, err := distGraph(w, es)
			if err != nil {
				return err
			}
			var in, out []edge
			for _, e := range es {
				if e.to == me {
					in = append(in, e)
				}
				if e.from == me {
					out = append(out, e)
				}
			}
			by := func(key func(edge) int) func(a, b edge) int {
				return func(a, b edge) int {
					if d := key(a) - key(b); d != 0 {
						return d
					}
					if d := a.namer - b.namer; d != 0 {
						return d
					}
					return a.seq - b.seq
				}
			}
			slices.SortFunc(in, by(func(e edge) int { return e.from }))
			slices.SortFunc(out, by(func(e edge) int { return e.to }))
			var wantIn, wantInW, wantOut, wantOutW []int
			for _, e := range in {
				wantIn, wantInW = append(wantIn, e.from), append(wantInW, e.weight)
			}
			for _, e := range out {
				wantOut, wantOutW = append(wantOut, e.to), append(wantOutW, e.weight)
			}
			if !slices.Equal(g.InNeighbors(), wantIn) || !slices.Equal(g.InWeights(), wantInW) ||
				!slices.Equal(g.OutNeighbors(), wantOut) || !slices.Equal(g.OutWeights(), wantOutW) {
				return fmt.Errorf("rank %d: in %v %v, out %v %v; want in %v %v, out %v %v", me,
					g.InNeighbors(), g.InWeights(), g.OutNeighbors(), g.OutWeights(), wantIn, wantInW, wantOut, wantOutW)
			}
			// Alltoallv: the block for out-edge i has weight-dependent
			// length and names the edge; Allgatherv: each rank sends me+1
			// copies of its rank.
			blockLen := func(e edge) int { return (e.weight+50)%3 + e.seq%2 }
			var send []int32
			scounts := make([]int, len(out))
			for i, e := range out {
				scounts[i] = blockLen(e)
				for range scounts[i] {
					send = append(send, int32(e.namer*1000+e.seq))
				}
			}
			rcounts := make([]int, len(in))
			total := 0
			for j, e := range in {
				rcounts[j] = blockLen(e)
				total += rcounts[j]
			}
			recv := make([]int32, total)
			if err := typed.NeighborAlltoallv(g, send, scounts, nil, recv, rcounts, nil); err != nil {
				return err
			}
			at := 0
			for j, e := range in {
				for x := range rcounts[j] {
					if recv[at+x] != int32(e.namer*1000+e.seq) {
						return fmt.Errorf("rank %d: alltoallv block %d = %v, want edge %d/%d", me, j, recv[at:at+rcounts[j]], e.namer, e.seq)
					}
				}
				at += rcounts[j]
			}
			gcounts, gdispls := make([]int, len(in)), make([]int, len(in))
			gtotal := 0
			for j, e := range in {
				gcounts[j], gdispls[j] = e.from+1, gtotal+1 // a gap before each block
				gtotal += e.from + 2
			}
			gathered := make([]int16, gtotal)
			mine := slices.Repeat([]int16{int16(me)}, me+1)
			if err := typed.NeighborAllgatherv(g, mine, gathered, gcounts, gdispls); err != nil {
				return err
			}
			for j, e := range in {
				if got := gathered[gdispls[j] : gdispls[j]+gcounts[j]]; slices.ContainsFunc(got, func(v int16) bool { return v != int16(e.from) }) {
					return fmt.Errorf("rank %d: allgatherv block %d = %v, want %d", me, j, got, e.from)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
	}
}

// Bad arguments to DistGraphCreate on one rank fail it on every rank;
// an unweighted graph has no weights; bad vector counts fail.
func TestDistGraphCreateErrors(t *testing.T) {
	err := mpgo.Run(3, func(w *comm.Comm) error {
		src, deg, dst := []int{w.Rank()}, []int{1}, []int{(w.Rank() + 1) % 3}
		bad := dst
		if w.Rank() == 1 {
			bad = []int{7}
		}
		if _, err := w.DistGraphCreate(src, deg, bad, nil); !errors.Is(err, comm.ErrRank) {
			return fmt.Errorf("rank %d: a node of rank 7 on one rank: %v", w.Rank(), err)
		}
		deg2 := deg
		if w.Rank() == 2 {
			deg2 = []int{2}
		}
		if _, err := w.DistGraphCreate(src, deg2, dst, nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("rank %d: degrees past the destinations on one rank: %v", w.Rank(), err)
		}
		g, err := w.DistGraphCreate(src, deg, dst, nil)
		if err != nil {
			return err
		}
		if g.Weighted() || g.InWeights() != nil || len(g.InNeighbors()) != 1 {
			return fmt.Errorf("unweighted ring: %v %v %v", g.Weighted(), g.InWeights(), g.InNeighbors())
		}
		if err := typed.NeighborAllgatherv(g, []int8{1}, make([]int8, 2), []int{3}, nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("a count past the receive buffer: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The non-blocking neighbourhood collectives, four in flight at once on
// one topology and waited for in reverse order, give what the blocking
// ones give; Cancel refuses them.
func TestIneighborCollectives(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		es := randomEdges(n, uint64(100+n))
		err := mpgo.Run(n, func(w *comm.Comm) error {
			me := w.Rank()
			g, err := distGraph(w, es)
			if err != nil {
				return err
			}
			nin, nout := len(g.InNeighbors()), len(g.OutNeighbors())
			mine := []int32{int32(me), int32(me * 10)}
			blocks := make([]int32, 2*nout)
			for i := range nout {
				blocks[2*i], blocks[2*i+1] = int32(me*100+i), int32(-me)
			}
			counts := make([]int, nin)
			for j := range counts {
				counts[j] = 2
			}
			outs := [4][]int32{make([]int32, 2*nin), make([]int32, 2*nin), make([]int32, 2*nin), make([]int32, 2*nin)}
			var reqs []*comm.Request
			for _, start := range []func() (*comm.Request, error){
				func() (*comm.Request, error) { return typed.IneighborAllgather(g, mine, outs[0]) },
				func() (*comm.Request, error) { return typed.IneighborAlltoall(g, blocks, outs[1]) },
				func() (*comm.Request, error) { return typed.IneighborAllgatherv(g, mine, outs[2], counts, nil) },
				func() (*comm.Request, error) {
					return typed.IneighborAlltoallv(g, blocks, slices.Repeat([]int{2}, nout), nil, outs[3], counts, nil)
				},
			} {
				r, err := start()
				if err != nil {
					return err
				}
				reqs = append(reqs, r)
			}
			if err := reqs[0].Cancel(); !errors.Is(err, comm.ErrNotSupported) {
				return fmt.Errorf("Cancel of an IneighborAllgather: %v", err)
			}
			for i := len(reqs) - 1; i >= 0; i-- {
				if _, err := reqs[i].Wait(); err != nil {
					return err
				}
			}
			want := [4][]int32{make([]int32, 2*nin), make([]int32, 2*nin)}
			if err := typed.NeighborAllgather(g, mine, want[0]); err != nil {
				return err
			}
			if err := typed.NeighborAlltoall(g, blocks, want[1]); err != nil {
				return err
			}
			for i, w := range [4][]int32{want[0], want[1], want[0], want[1]} {
				if !slices.Equal(outs[i], w) {
					return fmt.Errorf("rank %d, form %d: %v, want %v", me, i, outs[i], w)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
	}
}

// A persistent halo exchange on a Cartesian ring: planned once, started
// every step with the buffers' contents of that step.
func TestNeighborPersistent(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		err := mpgo.Run(n, func(w *comm.Comm) error {
			cart, err := w.CartCreate([]int{n}, []bool{true}, false)
			if err != nil {
				return err
			}
			me := w.Rank()
			send, recv := make([]int64, 2), make([]int64, 2) // to and from the left, then the right
			r, err := typed.NeighborAlltoallInit(cart, send, recv)
			if err != nil {
				return err
			}
			all := make([]int64, 2)
			g, err := typed.NeighborAllgatherInit(cart, send[:1], all)
			if err != nil {
				return err
			}
			for step := range 4 {
				send[0], send[1] = int64(me*100+step), int64(-me*100-step)
				if err := comm.StartAll(r, g); err != nil {
					return err
				}
				if err := comm.WaitAll(r, g); err != nil {
					return err
				}
				left, right := (me+n-1)%n, (me+1)%n
				// From the left neighbour its block for the right, and back.
				if recv[0] != int64(-left*100-step) || recv[1] != int64(right*100+step) {
					return fmt.Errorf("rank %d step %d: %v", me, step, recv)
				}
				if all[0] != int64(left*100+step) || all[1] != int64(right*100+step) {
					return fmt.Errorf("rank %d step %d: allgather %v", me, step, all)
				}
			}
			return errors.Join(r.Free(), g.Free())
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
	}
}
