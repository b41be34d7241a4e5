package comm

import (
	"fmt"
	"slices"
)

// Graph is a communicator with a general graph topology (MPI 3.1 §7.5.3),
// made by [Comm.GraphCreate]: every member knows the whole graph. Self
// loops and repeated edges are allowed. Graph embeds its communicator.
type Graph struct {
	*Comm
	index []int // MPI's: index[i] is the number of neighbors of nodes 0..i
	edges []int
	nc    *Comm
	nbrs  []Neighbor
	sym   bool // every edge a–b has as many b–a edges: neighborhood collectives work
}

// DistGraph is a communicator with a distributed graph topology (MPI 3.1
// §7.5.4), made by [Comm.DistGraphCreateAdjacent] or
// [Comm.DistGraphCreate]: each rank knows its own sources and
// destinations only, and their weights when the graph has them.
// DistGraph embeds its communicator.
type DistGraph struct {
	*Comm
	sources, dests []int
	nc             *Comm
	in, out        []Neighbor
	weighted       bool
	inW, outW      []int // the edges' weights, beside sources and dests (weighted)
}

var (
	_ Topology = (*Graph)(nil)
	_ Topology = (*DistGraph)(nil)
)

// GraphCreate returns a communicator with the graph given in MPI's
// compressed form (MPI_Graph_create): node i's neighbors are
// edges[index[i-1]:index[i]] (edges[:index[0]] for node 0), so len(index)
// is the number of nodes and index[len(index)-1] == len(edges). The graph
// takes the first len(index) ranks of c in order (mpgo does not reorder
// ranks); the other ranks get nil, nil. Every member of c must call it
// with the same arguments.
//
// A decreasing index, one that does not end at len(edges), an edge to a
// node outside the graph, or more nodes than c has ranks fail with
// [ErrArg]; so do arguments that differ between members, on every member.
// No nodes at all give nil, nil everywhere.
func (c *Comm) GraphCreate(index, edges []int) (*Graph, error) {
	if err := c.begin("graph create"); err != nil {
		return nil, err
	}
	defer c.leave()
	c.kids++
	seq := c.kids
	bad := checkGraph(index, edges, c.size)
	var fp fingerprint
	fp.add(index...)
	fp.add(edges...)
	if err := c.agreeOn("graph create", bad, fp); err != nil {
		return nil, err
	}
	n := len(index)
	if c.rank >= n {
		return nil, nil
	}
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = c.worldOf(i)
	}
	cm := newComm(c.ep, childContext(c.ctx, seq, colorGraph), c.rank, n, ranks,
		fmt.Sprintf("%s.graph%d", c, seq))
	g := &Graph{Comm: cm, index: slices.Clone(index), edges: slices.Clone(edges), nc: cm.neighborComm()}
	g.nbrs = occurrenceTags(g.neighborsOf(cm.rank))
	g.sym = symmetric(g.index, g.edges)
	return g, nil
}

func checkGraph(index, edges []int, size int) error {
	n := len(index)
	if n > size {
		return fmt.Errorf("comm: graph create: %d nodes for %d ranks: %w", n, size, ErrArg)
	}
	prev := 0
	for i, x := range index {
		if x < prev {
			return fmt.Errorf("comm: graph create: index[%d] = %d below %d: %w", i, x, prev, ErrArg)
		}
		prev = x
	}
	if n > 0 && index[n-1] != len(edges) || n == 0 && len(edges) != 0 {
		return fmt.Errorf("comm: graph create: index ends at %d for %d edges: %w", prev, len(edges), ErrArg)
	}
	for i, e := range edges {
		if e < 0 || e >= n {
			return fmt.Errorf("comm: graph create: edges[%d] = %d outside the %d nodes: %w", i, e, n, ErrArg)
		}
	}
	return nil
}

// symmetric reports whether every edge a→b is matched by as many edges
// b→a, as neighborhood collectives on a Graph need (each node sends to
// and receives from each of its neighbors).
func symmetric(index, edges []int) bool {
	count := make(map[[2]int]int)
	start := 0
	for a, end := range index {
		for _, b := range edges[start:end] {
			count[[2]int{a, b}]++
		}
		start = end
	}
	for e, k := range count {
		if count[[2]int{e[1], e[0]}] != k {
			return false
		}
	}
	return true
}

func (g *Graph) neighborsOf(r int) []int {
	start := 0
	if r > 0 {
		start = g.index[r-1]
	}
	return slices.Clone(g.edges[start:g.index[r]])
}

// Neighbors returns the neighbors of rank in the graph, in the order the
// edges list them (MPI_Graph_neighbors). A rank outside [0, Size) fails
// with [ErrRank].
func (g *Graph) Neighbors(rank int) ([]int, error) {
	if err := g.usable(); err != nil {
		return nil, fmt.Errorf("comm: graph neighbors: %w", err)
	}
	if rank < 0 || rank >= g.size {
		return nil, fmt.Errorf("comm: graph neighbors of rank %d of %d: %w", rank, g.size, ErrRank)
	}
	return g.neighborsOf(rank), nil
}

// Index returns the graph's index array as GraphCreate took it
// (MPI_Graph_get), as a copy.
func (g *Graph) Index() []int { return slices.Clone(g.index) }

// Edges returns the graph's edges array as GraphCreate took it
// (MPI_Graph_get), as a copy.
func (g *Graph) Edges() []int { return slices.Clone(g.edges) }

// Neighborhood returns the caller's neighbors, as both the sources and the
// destinations (see [Topology]). A graph whose edges are not symmetric (an
// edge a→b without a matching b→a) has no neighborhood collectives: it
// fails with [ErrArg] on every rank, since every rank knows the graph.
func (g *Graph) Neighborhood() (*Comm, []Neighbor, []Neighbor, error) {
	if err := g.usable(); err != nil {
		return nil, nil, nil, fmt.Errorf("comm: graph neighborhood: %w", err)
	}
	if !g.sym {
		return nil, nil, nil, fmt.Errorf("comm: graph neighborhood: the graph's edges are not symmetric: %w", ErrArg)
	}
	return g.nc, g.nbrs, g.nbrs, nil
}

// DistGraphCreateAdjacent returns a communicator with a distributed graph
// in which the caller receives from sources and sends to destinations
// (MPI_Dist_graph_create_adjacent, without weights): every rank of c takes
// part, keeping its rank (mpgo does not reorder ranks). Every member
// must call it. Repeated edges and self loops are allowed.
//
// A rank outside [0, Size) fails with [ErrRank]. The lists must agree
// across ranks: each edge a→b must appear as often among a's destinations
// as among b's sources. The members check this together (a hash of the
// edge multiset, so the check costs a few words per rank), and a mismatch
// fails with [ErrArg] on every member, where MPI would leave a later
// neighborhood collective hanging.
func (c *Comm) DistGraphCreateAdjacent(sources, destinations []int) (*DistGraph, error) {
	if err := c.begin("dist graph create"); err != nil {
		return nil, err
	}
	defer c.leave()
	c.kids++
	seq := c.kids
	var bad error
	for _, r := range slices.Concat(sources, destinations) {
		if r < 0 || r >= c.size {
			bad = fmt.Errorf("comm: dist graph create: neighbor %d of %d ranks: %w", r, c.size, ErrRank)
			break
		}
	}
	// The multiset of edges, summed over ranks, must be the same whether
	// counted by senders or by receivers: each rank adds a hash per edge.
	var hout, hin uint64
	for _, d := range destinations {
		hout += edgeHash(c.rank, d)
	}
	for _, s := range sources {
		hin += edgeHash(s, c.rank)
	}
	table, err := c.agree([]int64{errCode(bad), int64(hout), int64(hin)})
	if err != nil {
		return nil, fmt.Errorf("comm: dist graph create: %w", err)
	}
	if bad != nil {
		return nil, bad
	}
	var sumOut, sumIn uint64
	for r := 0; r < c.size; r++ {
		if code := table[3*r]; code != 0 {
			return nil, fmt.Errorf("comm: dist graph create: rank %d of %s passed bad arguments: %w", r, c, codeErr(code))
		}
		sumOut += uint64(table[3*r+1])
		sumIn += uint64(table[3*r+2])
	}
	if sumOut != sumIn {
		return nil, fmt.Errorf("comm: dist graph create: the ranks' sources and destinations do not list the same edges: %w", ErrArg)
	}
	cm := newComm(c.ep, childContext(c.ctx, seq, colorDistGraph), c.rank, c.size, c.ranks,
		fmt.Sprintf("%s.distgraph%d", c, seq))
	return &DistGraph{
		Comm:    cm,
		sources: slices.Clone(sources),
		dests:   slices.Clone(destinations),
		nc:      cm.neighborComm(),
		in:      occurrenceTags(sources),
		out:     occurrenceTags(destinations),
	}, nil
}

// edgeHash hashes the edge a→b for the multiset check.
func edgeHash(a, b int) uint64 {
	return mix64(mix64(uint64(a)+0x9e3779b97f4a7c15) ^ uint64(b))
}

// InNeighbors returns the ranks the caller receives from, in the order it
// gave them (MPI_Dist_graph_neighbors' sources), as a copy.
func (g *DistGraph) InNeighbors() []int { return slices.Clone(g.sources) }

// OutNeighbors returns the ranks the caller sends to, in the order it gave
// them (MPI_Dist_graph_neighbors' destinations), as a copy.
func (g *DistGraph) OutNeighbors() []int { return slices.Clone(g.dests) }

// Neighborhood returns the caller's sources and destinations (see
// [Topology]).
func (g *DistGraph) Neighborhood() (*Comm, []Neighbor, []Neighbor, error) {
	if err := g.usable(); err != nil {
		return nil, nil, nil, fmt.Errorf("comm: dist graph neighborhood: %w", err)
	}
	return g.nc, g.in, g.out, nil
}
