package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Process topologies (MPI 3.1 chapter 7): [Cart] (topo_cart.go), [Graph]
// and [DistGraph] (topo_graph.go). Each is a communicator with a
// neighborhood attached; neighborhood collectives (package typed) exchange
// data with the neighbors only.

// ProcNull is the null rank (MPI_PROC_NULL): a send to it or a receive
// from it succeeds at once and moves nothing. A receive from ProcNull
// reports Status{Source: ProcNull, Tag: AnyTag, Count: 0} and leaves its
// buffer untouched. [Cart.Shift] returns it for a neighbor beyond the edge
// of a non-periodic dimension.
const ProcNull = -2

// procNull returns a request for a send to, or a receive from, ProcNull:
// completed at once, after the checks that apply to any rank.
func (c *Comm) procNull(kind engine.Kind, t Type, tag int, pooled bool) (*engine.Request, error) {
	if err := c.checkNull(kind, t, tag); err != nil {
		return nil, err
	}
	r := c.newReq(kind, pooled)
	r.Null(engine.Type(t), tag, ProcNull)
	return r, nil
}

// checkNull checks the arguments of an operation of kind with the null
// rank.
func (c *Comm) checkNull(kind engine.Kind, t Type, tag int) error {
	if err := c.usable(); err != nil {
		return fmt.Errorf("comm: %s with the null rank: %w", kind, err)
	}
	if tag < 0 && (kind == engine.KindSend || tag != AnyTag) {
		return fmt.Errorf("comm: %s with tag %d: %w", kind, tag, ErrTag)
	}
	if !t.Valid() {
		return fmt.Errorf("comm: %s of %v: %w", kind, t, ErrArg)
	}
	return nil
}

// Topology is a communicator with a neighborhood: [Cart], [Graph] and
// [DistGraph] implement it, and the neighborhood collectives of package
// typed (NeighborAllgather, NeighborAlltoall) run over any of them.
type Topology interface {
	// Neighborhood returns the calling rank's neighbors in MPI order
	// (MPI 3.1 §7.6): receive block j comes from in[j] and send block i
	// goes to out[i]; a neighbor may be [ProcNull] (nothing moves). nc is
	// the communicator that carries neighborhood traffic: the topology's
	// members and ranks on a context private to it, which no other call
	// reaches; the message for out[i] travels with tag out[i].Tag and the
	// one for block j with in[j].Tag, so that the receiver matches each
	// message to its block even when one rank is a neighbor several times.
	//
	// The slices belong to the topology and must not be modified. Fails
	// with [ErrClosed] once the topology was freed, and with [ErrArg] for a
	// topology whose neighborhood is not symmetric where it must be (a
	// [Graph] whose adjacency lists disagree).
	Neighborhood() (nc *Comm, in, out []Neighbor, err error)
}

// Neighbor is one entry of a neighborhood: a rank of the topology's
// communicator (or [ProcNull]) and the tag its message carries on the
// neighborhood communicator.
type Neighbor struct {
	Rank int
	Tag  int
}

// neighborComm returns the communicator for c's neighborhood collectives:
// c's members and ranks on a context derived from c's with a creation
// count of 0, which Dup, Split and Create never use (they count from 1),
// freed together with c.
func (c *Comm) neighborComm() *Comm {
	nc := newComm(c.ep, childContext(c.ctx, 0, colorNeighbor), c.rank, c.size, c.ranks, c.String()+".neighbors")
	nc.shareLife(c)
	return nc
}

// occurrenceTags returns neighbors for ranks with tags that count the
// repeats of each rank: the k-th occurrence of a rank gets tag k. With
// messages between a pair non-overtaking, the k-th edge from a to b in a's
// out-list then meets the k-th edge from a in b's in-list, as MPI orders
// multiple edges between one pair.
func occurrenceTags(ranks []int) []Neighbor {
	seen := make(map[int]int, len(ranks))
	out := make([]Neighbor, len(ranks))
	for i, r := range ranks {
		out[i] = Neighbor{Rank: r, Tag: seen[r]}
		seen[r]++
	}
	return out
}
