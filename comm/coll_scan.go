package comm

import "fmt"

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
	if err := c.checkReduce(what, t, op); err != nil {
		return err
	}
	local := whole(what, "send buffer", send, t)
	if local == nil {
		local = checkInOut(what, send, recv)
	}
	if local != nil {
		recv = alignedBytes(len(send))
	}
	if c.size == 1 {
		if local == nil && !exclusive {
			copy(recv, send)
		}
		return local
	}
	alg := c.pick(CollScan, func() Algorithm { return AlgRecursiveDoubling })
	if alg == AlgSharedMemory {
		return c.scanShm(what, send, recv, t, op, exclusive, local)
	}
	x := c.call(what, t, op)
	if local != nil {
		x.fail(local)
	}
	x.scanRD(send, recv, exclusive)
	return x.result()
}

// scanRD is MPICH's recursive-doubling scan (MPIR_Scan_intra_recursive_
// doubling, and its Exscan sibling): partial is the reduction over an
// aligned group of ranks around the caller, doubling each step; a partner
// below contributes its group to the caller's prefix, in front of what the
// prefix holds.
func (x *collCall) scanRD(send, recv []byte, exclusive bool) {
	n, me := x.c.size, x.c.rank
	tag := tagScan
	if exclusive {
		tag = tagExscan
	}
	sc := x.c.scratch(3, len(send))
	partial, tmp, t2 := sc[0], sc[1], sc[2]
	copy(partial, send)
	if !exclusive && !same(send, recv) {
		copy(recv, send)
	}
	have := !exclusive // recv holds a prefix already
	for m := 1; m < n; m <<= 1 {
		dst := me ^ m
		if dst >= n {
			continue
		}
		x.sendrecv(partial, dst, tag, tmp, dst, tag)
		if dst > me {
			x.reduce(partial, tmp)
			continue
		}
		if have {
			copy(t2, tmp)
			x.reduceLower(recv, t2)
		} else {
			copy(recv, tmp)
			have = true
		}
		x.reduceLower(partial, tmp)
	}
}

// ReduceScatterBlock reduces every member's send (Size blocks of
// len(recv) bytes each) element-wise in rank order and leaves block i of
// the result in rank i's recv (MPI_Reduce_scatter_block). In place, send
// and recv are the same slice of Size blocks, and the caller's block of
// the result goes to its first block.
func (c *Comm) ReduceScatterBlock(send, recv []byte, t Type, op Op) error {
	const what = "reduce-scatter"
	if err := c.checkReduce(what, t, op); err != nil {
		return err
	}
	local := whole(what, "send buffer", send, t)
	k := len(recv)
	if same(send, recv) {
		if len(recv)%c.size != 0 && local == nil {
			local = fmt.Errorf("comm: %s in place: %d bytes is not %d blocks: %w", what, len(recv), c.size, ErrArg)
		}
		k = len(recv) / c.size
	} else if local == nil {
		switch {
		case len(send) != c.size*len(recv):
			local = fmt.Errorf("comm: %s: send buffer of %d bytes for %d blocks of %d: %w", what, len(send), c.size, len(recv), ErrArg)
		case overlap(send, recv):
			local = fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
		}
	}
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
	alg := c.pick(CollReduceScatter, func() Algorithm { return AlgRecursiveHalving })
	if alg == AlgSharedMemory {
		return c.reduceScatterShm(send, recv, t, op, local)
	}
	x := c.call(what, t, op)
	if local != nil {
		x.fail(local)
	}
	x.reduceScatterHalving(send, recv[:k], k)
	return x.result()
}

// reduceScatterHalving: the fold, then the recursive halving of
// Rabenseifner's allreduce over segments that are the new ranks' blocks
// (new rank i < rem stands for blocks 2i and 2i+1), then an exchange that
// moves each segment from the new rank the halving leaves it with (the bit
// reversal) to its own, then the fold undone for the even ranks' blocks.
func (x *collCall) reduceScatterHalving(send, out []byte, k int) {
	n, me := x.c.size, x.c.rank
	sc := x.c.scratch(2, n*k)
	work, tmp := sc[0], sc[1]
	copy(work, send)
	pof2, rem := fold(n)
	nr := x.foldIn(work, tmp, rem)
	off := make([]int, pof2+1)
	for j := 0; j <= pof2; j++ {
		if j <= rem {
			off[j] = 2 * j * k
		} else {
			off[j] = (j + rem) * k
		}
	}
	if nr >= 0 {
		lo, _ := x.halving(work, tmp, off, nr, pof2, rem)
		if lo != nr { // lo = bitrev(nr): swap segments with new rank lo
			dst := realRank(lo, rem)
			x.sendrecv(work[off[lo]:off[lo+1]], dst, tagRedPermute, tmp[off[nr]:off[nr+1]], dst, tagRedPermute)
			copy(work[off[nr]:off[nr+1]], tmp[off[nr]:off[nr+1]])
		}
	}
	if me < 2*rem {
		if me%2 == 1 {
			x.send(work[(me-1)*k:me*k], me-1, tagRedFold)
		} else {
			x.recv(work[me*k:(me+1)*k], me+1, tagRedFold)
		}
	}
	copy(out, work[me*k:(me+1)*k])
}
