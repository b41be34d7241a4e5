package comm_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// MPI 3.1 §7.5.3 and §7.5.5: MPI_Graph_create and MPI_Graph_neighbors on
// the standard's example (4 nodes: 0–1, 0–3, 2–3); the rank beyond the
// graph gets nil.
func TestGraphCreate(t *testing.T) {
	index := []int{2, 3, 4, 6}
	edges := []int{1, 3, 0, 3, 0, 2}
	want := [][]int{{1, 3}, {0}, {3}, {0, 2}}
	run(t, 5, func(w *comm.Comm) error {
		g, err := w.GraphCreate(index, edges)
		if err != nil {
			return err
		}
		if w.Rank() == 4 {
			if g != nil {
				return fmt.Errorf("rank beyond the graph got %v", g.Comm)
			}
			return nil
		}
		if g.Size() != 4 || g.Rank() != w.Rank() {
			return fmt.Errorf("rank %d of %d", g.Rank(), g.Size())
		}
		if !slices.Equal(g.Index(), index) || !slices.Equal(g.Edges(), edges) {
			return fmt.Errorf("index %v edges %v", g.Index(), g.Edges())
		}
		for r := range want {
			nb, err := g.Neighbors(r)
			if err != nil || !slices.Equal(nb, want[r]) {
				return fmt.Errorf("neighbors of %d: %v %v", r, nb, err)
			}
		}
		_, in, out, err := g.Neighborhood()
		if err != nil {
			return err
		}
		for i, nb := range in {
			if nb.Rank != want[g.Rank()][i] || out[i] != nb {
				return fmt.Errorf("neighborhood %v %v", in, out)
			}
		}
		if _, err := g.Neighbors(4); !errors.Is(err, comm.ErrRank) {
			return fmt.Errorf("neighbors of 4: %v", err)
		}
		if _, err := g.Neighbors(-1); !errors.Is(err, comm.ErrRank) {
			return fmt.Errorf("neighbors of -1: %v", err)
		}
		return g.Barrier()
	})
}

// Bad graphs fail with ErrArg on every member; an asymmetric graph has no
// neighborhood collectives.
func TestGraphErrors(t *testing.T) {
	run(t, 3, func(w *comm.Comm) error {
		cases := []struct {
			name         string
			index, edges []int
		}{
			{"decreasing index", []int{2, 1, 2}, []int{1, 2}},
			{"index does not end at the edges", []int{1, 2, 3}, []int{1, 2}},
			{"edge outside", []int{1, 2, 3}, []int{1, 2, 3}},
			{"negative edge", []int{1, 2, 3}, []int{1, 2, -1}},
			{"negative index", []int{-1, 0, 0}, nil},
			{"too many nodes", []int{0, 0, 0, 0}, nil},
			{"edges without nodes", nil, []int{0}},
		}
		for _, c := range cases {
			if _, err := w.GraphCreate(c.index, c.edges); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("%s: %v", c.name, err)
			}
		}
		// Graphs that differ between members.
		edges := []int{1, 0, 0}
		if w.Rank() == 2 {
			edges = []int{2, 0, 0}
		}
		if _, err := w.GraphCreate([]int{1, 2, 3}, edges); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("inconsistent graphs: %v", err)
		}
		// No nodes: nil everywhere.
		if g, err := w.GraphCreate(nil, nil); g != nil || err != nil {
			return fmt.Errorf("empty graph: %v %v", g, err)
		}
		// A directed cycle 0→1→2→0 is a valid graph, but its neighborhood
		// is not symmetric.
		g, err := w.GraphCreate([]int{1, 2, 3}, []int{1, 2, 0})
		if err != nil {
			return err
		}
		if _, _, _, err := g.Neighborhood(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("asymmetric neighborhood: %v", err)
		}
		if err := g.Free(); err != nil {
			return err
		}
		if _, err := g.Neighbors(0); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("neighbors after free: %v", err)
		}
		return nil
	})
}

// MPI 3.1 §7.5.4 MPI_Dist_graph_create_adjacent and §7.5.5
// MPI_Dist_graph_neighbors: each rank's own lists; tags count repeated
// neighbors.
func TestDistGraphCreate(t *testing.T) {
	const n = 5
	run(t, n, func(w *comm.Comm) error {
		r := w.Rank()
		// A directed ring r→r+1, plus a double edge 0→2 and a self loop at 3.
		dests := []int{(r + 1) % n}
		srcs := []int{(r + n - 1) % n}
		switch r {
		case 0:
			dests = append(dests, 2, 2)
		case 2:
			srcs = append(srcs, 0, 0)
		case 3:
			dests = append(dests, 3)
			srcs = append([]int{3}, srcs...)
		}
		g, err := w.DistGraphCreateAdjacent(srcs, dests)
		if err != nil {
			return err
		}
		if g.Size() != n || g.Rank() != r {
			return fmt.Errorf("rank %d of %d", g.Rank(), g.Size())
		}
		if !slices.Equal(g.InNeighbors(), srcs) || !slices.Equal(g.OutNeighbors(), dests) {
			return fmt.Errorf("in %v out %v", g.InNeighbors(), g.OutNeighbors())
		}
		_, in, out, err := g.Neighborhood()
		if err != nil {
			return err
		}
		if r == 0 && !slices.Equal(out, []comm.Neighbor{{Rank: 1}, {Rank: 2}, {Rank: 2, Tag: 1}}) {
			return fmt.Errorf("rank 0 out %v", out)
		}
		if r == 2 && !slices.Equal(in, []comm.Neighbor{{Rank: 1}, {Rank: 0}, {Rank: 0, Tag: 1}}) {
			return fmt.Errorf("rank 2 in %v", in)
		}
		return g.Barrier()
	})
}

// Lists that disagree between ranks, or name ranks outside the
// communicator, fail on every member.
func TestDistGraphErrors(t *testing.T) {
	run(t, 3, func(w *comm.Comm) error {
		r := w.Rank()
		// 0→1 claimed by 0 but 1 does not list 0 as a source.
		var srcs, dests []int
		if r == 0 {
			dests = []int{1}
		}
		if _, err := w.DistGraphCreateAdjacent(srcs, dests); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("missing source: %v", err)
		}
		// Same edge count, different edges.
		srcs, dests = nil, nil
		switch r {
		case 0:
			dests = []int{1}
		case 2:
			srcs = []int{0}
		}
		if _, err := w.DistGraphCreateAdjacent(srcs, dests); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("wrong receiver: %v", err)
		}
		// A rank outside the communicator, on one member.
		dests = nil
		if r == 1 {
			dests = []int{3}
		}
		if _, err := w.DistGraphCreateAdjacent(nil, dests); !errors.Is(err, comm.ErrRank) {
			return fmt.Errorf("rank 3 of 3: %v", err)
		}
		// Empty lists everywhere are fine.
		g, err := w.DistGraphCreateAdjacent(nil, nil)
		if err != nil {
			return err
		}
		if _, in, out, err := g.Neighborhood(); err != nil || len(in)+len(out) != 0 {
			return fmt.Errorf("empty neighborhood: %v %v %v", in, out, err)
		}
		return nil
	})
}
