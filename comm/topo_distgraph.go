package comm

import (
	"cmp"
	"fmt"
	"slices"
)

// DistGraphCreate returns a communicator with a distributed graph given
// by edges that any rank may name (MPI_Dist_graph_create): for each i,
// node sources[i] has edges to the next degrees[i] entries of
// destinations, each with the weight at the same place in weights (nil:
// unweighted, MPI_UNWEIGHTED). The members exchange the edges so that each
// learns its own in- and out-neighbors; every rank of c takes part,
// keeping its rank (mpgo does not reorder ranks). Every member must call
// it. Repeated edges and self loops are allowed.
//
// A rank learns its neighbors ordered by neighbor rank, then by the rank
// that named the edge, then by the edge's place in that rank's list: the
// same order on both ends of every edge, as the neighborhood collectives
// need when an edge repeats. A rank outside [0, Size) fails with
// [ErrRank], and a negative degree or lists of the wrong lengths with
// [ErrArg], on every member.
func (c *Comm) DistGraphCreate(sources, degrees, destinations, weights []int) (*DistGraph, error) {
	if err := c.begin("dist graph create"); err != nil {
		return nil, err
	}
	defer c.leave()
	c.kids++
	seq := c.kids
	edges, bad := c.namedEdges(sources, degrees, destinations, weights)
	table, err := c.agree([]int64{errCode(bad)})
	if err != nil {
		return nil, fmt.Errorf("comm: dist graph create: %w", err)
	}
	if bad != nil {
		return nil, bad
	}
	for r, code := range table {
		if code != 0 {
			return nil, fmt.Errorf("comm: dist graph create: rank %d of %s passed bad arguments: %w", r, c, codeErr(code))
		}
	}
	mine, err := c.exchangeEdges(edges)
	if err != nil {
		return nil, fmt.Errorf("comm: dist graph create: %w", err)
	}
	var in, out []graphEdge
	for _, e := range mine {
		if e.to == c.rank {
			in = append(in, e)
		}
		if e.from == c.rank {
			out = append(out, e)
		}
	}
	order := func(key func(graphEdge) int) func(a, b graphEdge) int {
		return func(a, b graphEdge) int {
			return cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.namer, b.namer), cmp.Compare(a.seq, b.seq))
		}
	}
	slices.SortFunc(in, order(func(e graphEdge) int { return e.from }))
	slices.SortFunc(out, order(func(e graphEdge) int { return e.to }))
	g := &DistGraph{weighted: weights != nil}
	for _, e := range in {
		g.sources = append(g.sources, e.from)
		g.inW = append(g.inW, e.weight)
	}
	for _, e := range out {
		g.dests = append(g.dests, e.to)
		g.outW = append(g.outW, e.weight)
	}
	cm := newComm(c.ep, childContext(c.ctx, seq, colorDistGraph), c.rank, c.size, c.ranks,
		fmt.Sprintf("%s.distgraph%d", c, seq))
	g.Comm, g.nc = cm, cm.neighborComm()
	g.in, g.out = occurrenceTags(g.sources), occurrenceTags(g.dests)
	return g, nil
}

// graphEdge is an edge of a distributed graph as DistGraphCreate moves
// it: its ends, its weight, and who named it where (the order both ends
// agree on).
type graphEdge struct {
	from, to, weight int
	namer, seq       int
}

const edgeWords = 5

// namedEdges checks the caller's edge lists and returns its edges.
func (c *Comm) namedEdges(sources, degrees, destinations, weights []int) ([]graphEdge, error) {
	if len(degrees) != len(sources) {
		return nil, fmt.Errorf("comm: dist graph create: %d sources and %d degrees: %w", len(sources), len(degrees), ErrArg)
	}
	total := 0
	for i, d := range degrees {
		if d < 0 || d > len(destinations)-total {
			return nil, fmt.Errorf("comm: dist graph create: degree %d of source %d, with %d destinations: %w",
				d, i, len(destinations), ErrArg)
		}
		total += d
	}
	if total != len(destinations) || weights != nil && len(weights) != total {
		return nil, fmt.Errorf("comm: dist graph create: degrees adding up to %d, %d destinations, %d weights: %w",
			total, len(destinations), len(weights), ErrArg)
	}
	for _, r := range slices.Concat(sources, destinations) {
		if r < 0 || r >= c.size {
			return nil, fmt.Errorf("comm: dist graph create: node %d of %d ranks: %w", r, c.size, ErrRank)
		}
	}
	edges := make([]graphEdge, 0, total)
	k := 0
	for i, s := range sources {
		for range degrees[i] {
			e := graphEdge{from: s, to: destinations[k], namer: c.rank, seq: k}
			if weights != nil {
				e.weight = weights[k]
			}
			edges = append(edges, e)
			k++
		}
	}
	return edges, nil
}

// exchangeEdges sends each edge to both of its ends (once to a self
// loop's) and returns those the caller is an end of.
func (c *Comm) exchangeEdges(edges []graphEdge) ([]graphEdge, error) {
	n := c.size
	to := make([][]graphEdge, n)
	for _, e := range edges {
		to[e.from] = append(to[e.from], e)
		if e.to != e.from {
			to[e.to] = append(to[e.to], e)
		}
	}
	counts := make([]int64, n)
	var words []int64
	for r, es := range to {
		counts[r] = int64(len(es) * edgeWords)
		for _, e := range es {
			words = append(words, int64(e.from), int64(e.to), int64(e.weight), int64(e.namer), int64(e.seq))
		}
	}
	got := make([]byte, 8*n)
	if err := c.alltoallBlocks(putWords(counts), got, Int64); err != nil {
		return nil, err
	}
	scounts, rcounts := make([]int, n), make([]int, n)
	total := 0
	for r, k := range getWords(got) {
		scounts[r], rcounts[r] = int(counts[r]), int(k)
		total += rcounts[r]
	}
	recv := make([]byte, 8*total)
	if err := c.alltoallVector(putWords(words), scounts, nil, recv, rcounts, nil, Int64); err != nil {
		return nil, err
	}
	w := getWords(recv)
	mine := make([]graphEdge, 0, len(w)/edgeWords)
	for i := 0; i+edgeWords <= len(w); i += edgeWords {
		mine = append(mine, graphEdge{from: int(w[i]), to: int(w[i+1]), weight: int(w[i+2]), namer: int(w[i+3]), seq: int(w[i+4])})
	}
	return mine, nil
}

// Weighted reports whether the graph was made with weights.
func (g *DistGraph) Weighted() bool { return g.weighted }

// InWeights returns the weights of the edges from InNeighbors, in the
// same order, as a copy (nil when the graph is unweighted).
func (g *DistGraph) InWeights() []int {
	if !g.weighted {
		return nil
	}
	return slices.Clone(g.inW)
}

// OutWeights returns the weights of the edges to OutNeighbors, in the
// same order, as a copy (nil when the graph is unweighted).
func (g *DistGraph) OutWeights() []int {
	if !g.weighted {
		return nil
	}
	return slices.Clone(g.outW)
}
