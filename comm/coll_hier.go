package comm

// Two-level collectives, for communicators whose members run in several
// processes with several members in some (hybrid runs: goroutine ranks in
// each process, a device between processes). The members of each process
// meet through shared memory, and one leader per process (its
// lowest-ranked member) talks to the other leaders over the device, so a
// process sends one message per step however many ranks it holds, as
// MPICH's SMP-aware collectives do.
//
// Reductions stay in rank order: the shape is used only when each
// process's members form a contiguous range of the communicator's ranks
// (true of the world and of anything split from it in rank order), so
// reducing inside each process and then across the leaders, in process
// order, is x0 ∘ x1 ∘ … ∘ xn-1 regrouped.
//
// Failures travel down the levels: a stage that fails on a rank hands its
// error to the next stage as that rank's local error, which makes every
// member of that stage fail too, and every rank takes part in every stage
// it belongs to, so none waits forever.

// hierComms is a communicator's two-level split, worked out by every
// member alike from the processes of the members, with no communication.
type hierComms struct {
	node    *Comm // the members in this process (or node: see hier), in rank order
	leaders *Comm // the first member of each process (or node), in rank order; nil on other members
	proc    []int // per member: its process's index among the leaders
	first   []int // per process index: its first member
}

// hier returns c's two-level split, or nil when c does not have the shape:
// all members in one process, one member in each, no process map (see
// [Config.Process]), or a process whose members are not a range of ranks.
// Where the world has a node map ([Config.Node]) and c's members are on
// several nodes, several on some, the levels are nodes instead (the
// members on each node, which share memory, then one leader per node),
// so that a node sends one message per step between nodes; the node
// level is itself split by process where that has the shape.
func (c *Comm) hier() *hierComms {
	st := c.state()
	if st.hierSeen {
		return st.hier
	}
	st.hierSeen = true
	process := c.ep.Process()
	if process == nil || c.sharedMemory() {
		return nil
	}
	var h *hierComms
	if node := c.ep.Node(); node != nil {
		if h = c.groupBy(node); h != nil && len(h.first) == 1 {
			h = nil // one node: split by process
		}
	}
	if h == nil {
		h = c.groupBy(process)
	}
	if h == nil {
		return nil
	}
	me := h.proc[c.rank]
	lo, hi := h.first[me], h.end(me)
	node := make([]int, hi-lo)
	for i := range node {
		node[i] = c.worldOf(lo + i)
	}
	// One context for every process's node communicator: their members
	// are disjoint, so their messages never meet.
	h.node = newComm(c.ep, childContext(c.ctx, 0, colorHierNode), c.rank-lo, len(node), node, c.String()+".node")
	if c.rank == lo {
		leaders := make([]int, len(h.first))
		for i, f := range h.first {
			leaders[i] = c.worldOf(f)
		}
		h.leaders = newComm(c.ep, childContext(c.ctx, 0, colorHierLeaders), me, len(leaders), leaders, c.String()+".leaders")
	}
	st.hier = h
	return h
}

// groupBy groups c's members by group (the process or the node of a
// world rank), or returns nil when a group's members are not a range of
// c's ranks, or when every member is a group of its own.
func (c *Comm) groupBy(group func(rank int) int) *hierComms {
	h := &hierComms{proc: make([]int, c.size)}
	index := make(map[int]int)
	for r := range c.size {
		g := group(c.worldOf(r))
		i, seen := index[g]
		if !seen {
			i = len(h.first)
			index[g] = i
			h.first = append(h.first, r)
		} else if h.proc[r-1] != i {
			return nil // g's members are not a range
		}
		h.proc[r] = i
	}
	if len(h.first) == c.size {
		return nil
	}
	return h
}

// end returns one past the last member of process index i.
func (h *hierComms) end(i int) int {
	if i+1 < len(h.first) {
		return h.first[i+1]
	}
	return len(h.proc)
}

// barrierHier: every process gathers at its gate, the leaders meet (an
// allreduce of one byte, which carries a failure to every leader, where a
// barrier could not), and each leader releases its process with a
// broadcast that carries the verdict.
func (c *Comm) barrierHier() error {
	h := c.hier()
	err := h.node.barrier()
	if h.leaders != nil {
		var b [1]byte
		err = h.leaders.allreduce(b[:], b[:], Byte, keepOp, err)
	}
	return h.node.bcast(nil, Byte, 0, err)
}

// keepOp is a reduction that keeps inout: the leaders' barrier needs the
// meeting, not a result.
func keepOp(inout, in []byte) {}

// bcastHier: the root's process gets the data to its leader, the leaders
// broadcast among themselves, and every other leader broadcasts to its
// process.
func (c *Comm) bcastHier(buf []byte, t Type, root int, local error) error {
	h := c.hier()
	rp, me := h.proc[root], h.proc[c.rank]
	err := local
	if me == rp {
		err = h.node.bcast(buf, t, root-h.first[rp], err)
	}
	if h.leaders != nil {
		err = h.leaders.bcast(buf, t, rp, err)
	}
	if me != rp {
		err = h.node.bcast(buf, t, 0, err)
	}
	return err
}

// allreduceHier: each process reduces to its leader, the leaders
// allreduce in place, and each leader broadcasts the result to its
// process.
func (c *Comm) allreduceHier(send, recv []byte, t Type, op Op, local error) error {
	h := c.hier()
	var part []byte // the process's reduction, on its leader
	if h.leaders != nil {
		part = recv
	}
	err := h.node.reduce(send, part, t, op, 0, local)
	if h.leaders != nil {
		err = h.leaders.allreduce(recv, recv, t, op, err)
	}
	return h.node.bcast(recv, t, 0, err)
}
