package comm

import "fmt"

// Communicator management beyond Dup and Split (MPI 3.1 §6.4): making a
// communicator from a group, freeing one, comparing two.

// Create returns a communicator of the members of g, ranked in g's order,
// with a context of its own (MPI_Comm_create). Every member of c must call
// it, in the same order as c's other collectives; a caller that is not in g
// gets nil, nil.
//
// g must be a subset of c's group. As MPI-2.2 allows, the members may pass
// different groups provided that they are disjoint: each member of a group
// must pass that very group, and each group becomes a communicator of its
// own. Anything else (a member outside c, members of one group that passed
// different ones) fails with [ErrArg] on every caller concerned, never a
// hang: the members check their arguments against each other first.
func (c *Comm) Create(g Group) (*Comm, error) {
	if err := c.begin("create"); err != nil {
		return nil, err
	}
	defer c.leave()
	c.kids++
	seq := c.kids
	parent := c.Group().index() // world rank → rank in c
	var bad error
	for _, w := range g.ranks {
		if _, ok := parent[w]; !ok {
			bad = fmt.Errorf("comm: create: world rank %d of %s is not in %s: %w", w, g, c, ErrArg)
			break
		}
	}
	var fp fingerprint
	fp.add(g.ranks...)
	table, err := c.agree([]int64{errCode(bad), int64(fp)})
	if err != nil {
		return nil, fmt.Errorf("comm: create: %w", err)
	}
	if bad != nil {
		return nil, bad
	}
	me, rank := c.worldOf(c.rank), -1
	for i, w := range g.ranks {
		if w == me {
			rank = i
		}
	}
	if rank < 0 {
		return nil, nil
	}
	for _, w := range g.ranks {
		r := parent[w]
		if table[2*r] != 0 || fingerprint(table[2*r+1]) != fp {
			return nil, fmt.Errorf("comm: create: rank %d of %s passed another group than %s: %w", r, c, g, ErrArg)
		}
	}
	return newComm(c.ep, childContext(c.ctx, seq, int(uint32(fp))), rank, len(g.ranks),
		append([]int(nil), g.ranks...), fmt.Sprintf("%s.create%d", c, seq)), nil
}

// Free releases c (MPI_Comm_free): every later call on c, on a topology
// built on it, or on an [Intercomm], fails with an error wrapping
// [ErrClosed]. Operations already started complete as usual. Free is local:
// it does not communicate, and other ranks' handles of the communicator
// are not affected. Freeing the world communicator fails with [ErrArg];
// freeing twice with ErrClosed.
func (c *Comm) Free() error {
	if err := c.usable(); err != nil {
		return fmt.Errorf("comm: free: %w", err)
	}
	if c.ctx == worldContext {
		return fmt.Errorf("comm: free of the world communicator: %w", ErrArg)
	}
	if !c.freed.CompareAndSwap(false, true) {
		return fmt.Errorf("comm: free: %s was freed: %w", c, ErrClosed)
	}
	return nil
}

// shareLife makes c freed whenever owner is: the private communicators of
// a topology or an intercommunicator live and die with it.
func (c *Comm) shareLife(owner *Comm) {
	c.freed, c.cc.freed = owner.freed, owner.freed
}

// Compare compares two communicators held by the same rank
// (MPI_Comm_compare): [Ident] when they are the same communicator (the same
// context), [Congruent] when they have the same members in the same order
// but different contexts, [Similar] when the same members in another
// order, [Unequal] otherwise, and also when either is nil or they belong
// to different runs.
func Compare(a, b *Comm) int {
	if a == nil || b == nil || a.ep == nil || b.ep == nil || a.ep.World() != b.ep.World() {
		return Unequal
	}
	switch a.Group().Compare(b.Group()) {
	case Ident:
		if a.ctx == b.ctx {
			return Ident
		}
		return Congruent
	case Similar:
		return Similar
	}
	return Unequal
}
