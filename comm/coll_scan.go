package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// Scan leaves in each member's recv the reduction, in rank order, of the
// send buffers of ranks 0 to its own (an inclusive prefix reduction).
// len(recv) == len(send), the same slice for in place; every member must
// pass the same length.
func (c *Comm) Scan(send, recv []byte, t Type, op Op) error {
	return c.scan("scan", send, recv, t, op, false)
}

// Exscan is Scan without the caller's own contribution (exclusive): rank
// i's recv gets the reduction of ranks 0 to i-1. Rank 0's recv is left
// untouched.
func (c *Comm) Exscan(send, recv []byte, t Type, op Op) error {
	return c.scan("exscan", send, recv, t, op, true)
}

func (c *Comm) scan(what string, send, recv []byte, t Type, op Op, exclusive bool) error {
	if err := c.beginReduce(what, t, op); err != nil {
		return err
	}
	defer c.leave()
	local := reduceArgs(what, send, recv, t, true)
	if local != nil {
		recv = alignedBytes(len(send))
	}
	if c.size == 1 {
		if local == nil && !exclusive {
			copy(recv, send)
		}
		return local
	}
	alg := c.pick(coll.Scan, coll.Plain, len(send))
	if alg == coll.SharedMemory {
		return c.scanShm(what, send, recv, t, op, exclusive, local)
	}
	kind := kScan
	if exclusive {
		kind = kExscan
	}
	x := c.call(what, collSig{kind: kind, t: t, n: len(send)}, op, local)
	x.Scan(send, recv, exclusive)
	return x.Result()
}

// ReduceScatterBlock reduces every member's send (Size blocks of
// len(recv) bytes each) element-wise in rank order and leaves block i of
// the result in rank i's recv (MPI_Reduce_scatter_block). In place, send
// and recv are the same slice of Size blocks, and the caller's block of
// the result goes to its first block.
func (c *Comm) ReduceScatterBlock(send, recv []byte, t Type, op Op) error {
	const what = "reduce-scatter"
	if err := c.beginReduce(what, t, op); err != nil {
		return err
	}
	defer c.leave()
	k, local := c.reduceScatterArgs(what, send, recv, t)
	if local != nil { // go on with buffers of the right shape, to fail with the others
		k = len(send) / c.size
		recv = alignedBytes(k)
		send = send[:c.size*k]
	}
	if c.size == 1 {
		if local == nil {
			copy(recv[:k], send[:k])
		}
		return local
	}
	alg := c.pick(coll.ReduceScatter, coll.Plain, len(send))
	if alg == coll.SharedMemory {
		return c.reduceScatterShm(send, recv, t, op, local)
	}
	x := c.call(what, collSig{kind: kReduceScatter, t: t, n: len(send)}, op, local)
	x.ReduceScatter(send, recv[:k], k)
	return x.Result()
}

// ReduceScatter reduces every member's send element-wise in rank order and
// scatters the result (MPI_Reduce_scatter): rank i gets counts[i]
// elements, those after the first counts[0]+…+counts[i-1], in recv. send
// holds the sum of counts elements on every member, counts is the same
// everywhere, and recv holds at least counts[Rank] elements. Counts that
// are negative, overflow an int in bytes or do not add up to send fail
// with [ErrArg], a short recv with [ErrTruncate], on the rank that passed
// them; the others take part and fail with it, as in any collective.
func (c *Comm) ReduceScatter(send, recv []byte, counts []int, t Type, op Op) error {
	const what = "reduce_scatter"
	if err := c.beginReduce(what, t, op); err != nil {
		return err
	}
	defer c.leave()
	me := c.rank
	local := whole(what, "send buffer", send, t)
	off, cnt, err := checkVector(what, "counts", counts, nil, c.size, len(send), t.Size())
	switch {
	case local != nil:
	case err != nil:
		local = err
	case off[c.size-1]+cnt[c.size-1] != len(send):
		local = fmt.Errorf("comm: %s: send buffer of %d bytes, counts adding up to %d: %w",
			what, len(send), off[c.size-1]+cnt[c.size-1], ErrArg)
	case len(recv) < cnt[me]:
		local = fmt.Errorf("comm: %s: rank %d receives %d bytes into %d: %w", what, me, cnt[me], len(recv), ErrTruncate)
	}
	all := alignedBytes(len(send))
	if err := c.allreduce(send, all, t, op, local); err != nil {
		return err
	}
	copy(recv, all[off[me]:off[me]+cnt[me]])
	return nil
}
