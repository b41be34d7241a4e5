package comm

import "fmt"

// SplitKind is a kind of [Comm.SplitType], as MPI_Comm_split_type's
// split_type.
type SplitKind int

// SplitShared groups the ranks that can share memory: those of one node
// (host), as MPI_COMM_TYPE_SHARED does. A world's nodes are what its
// Config.Node says (under a launcher mpgo finds them from each host's
// name and boot id); a world of one process is one node.
const SplitShared SplitKind = 1

// SplitType partitions c by a property of its ranks, as
// MPI_Comm_split_type: with [SplitShared], the ranks on each node form a
// new communicator, ordered by key (ties by rank in c). Every member must
// call it; one that passes an unknown kind takes part (the others do not
// wait for it) and gets an error wrapping [ErrArg].
func (c *Comm) SplitType(kind SplitKind, key int) (*Comm, error) {
	if kind != SplitShared {
		if _, err := c.Split(Undefined, key); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("comm: split type %d: %w", kind, ErrArg)
	}
	if err := c.begin("split type"); err != nil {
		return nil, err
	}
	world := c.worldOf(c.rank)
	c.leave()
	color := 0
	if node := c.ep.Node(); node != nil {
		color = node(world)
	} else if process := c.ep.Process(); process != nil {
		color = process(world)
	}
	return c.Split(color, key)
}
