package coll

// The tags of the algorithms whose exchanges the schedules below
// describe: recursive doubling's (an Allreduce of short vectors on a
// power-of-two number of ranks), the dissemination barrier's, the
// binomial broadcast's and the binomial reduction's (whose result goes
// from rank 0 to a root other than 0 with TagReduceHop), the pairwise
// Alltoall's and Bruck's, and the ring's and Bruck's Allgather.
const (
	TagRecursiveDoubling = tagRedRD
	TagDissemination     = tagDissem
	TagBinomialBcast     = tagBcastBinom
	TagBinomialReduce    = tagReduceBinom
	TagReduceHop         = tagReduceHop
	TagPairwise          = tagA2APair
	TagAllgatherRing     = tagAllgRing
	TagAllgatherBruck    = tagAllgBruck
	TagAlltoallBruck     = tagA2ABruck
)

// RecursiveDoublingSchedule is what recursive doubling's Allreduce does on
// rank of size ranks, a power of two, as steps that can be replayed
// without a Call (comm's persistent Allreduce makes a request per step
// once and starts them at every start): at step k the rank sends its
// vector to partners[k] with tag TagRecursiveDoubling, receives the
// partner's, and combines it into its own as the lower operand (rank
// order, for an op that does not commute) where lower[k], else as the
// upper one. ok is false where the algorithm folds ranks first (size not
// a power of two) or there is nothing to exchange.
func RecursiveDoublingSchedule(rank, size int) (partners []int, lower []bool, ok bool) {
	if size < 2 || size&(size-1) != 0 || rank < 0 || rank >= size {
		return nil, nil, false
	}
	for m := 1; m < size; m <<= 1 {
		p := rank ^ m
		partners = append(partners, p)
		lower = append(lower, p < rank)
	}
	return partners, lower, true
}

// DisseminationSchedule is what the dissemination barrier does on rank of
// size ranks, as steps to replay (see RecursiveDoublingSchedule): at step
// k the rank sends an empty message to to[k] with tag TagDissemination,
// then waits for one from from[k]. The sources of the steps are all
// different, so every step's receive may be posted at once. ok is false
// where there is nothing to exchange.
func DisseminationSchedule(rank, size int) (to, from []int, ok bool) {
	if size < 2 || rank < 0 || rank >= size {
		return nil, nil, false
	}
	for k := 1; k < size; k <<= 1 {
		to = append(to, (rank+k)%size)
		from = append(from, (rank-k+size)%size)
	}
	return to, from, true
}

// BinomialBcastSchedule is what the binomial broadcast from root does on
// rank of size ranks, as steps to replay (see RecursiveDoublingSchedule):
// the rank receives the whole buffer from parent (none, -1, at the root)
// with tag TagBinomialBcast, then sends it to each of children in order.
// ok is false where there is nothing to exchange.
func BinomialBcastSchedule(rank, size, root int) (parent int, children []int, ok bool) {
	if size < 2 || rank < 0 || rank >= size || root < 0 || root >= size {
		return -1, nil, false
	}
	vr := (rank - root + size) % size
	span, parent := size, -1
	if vr != 0 {
		span = vr & -vr
		parent = (rank - span + size) % size
	}
	for m := HighBit(span - 1); m > 0; m >>= 1 {
		if vr+m < size {
			children = append(children, (rank+m)%size)
		}
	}
	return parent, children, true
}

// BinomialReduceSchedule is what the binomial reduction to root does on
// rank of size ranks, as steps to replay (see RecursiveDoublingSchedule):
// the tree is rooted at rank 0; the rank receives a vector from each of
// children in order (tag TagBinomialReduce) and combines it into its own
// as the upper operand, then sends the result to parent (none, -1, at
// rank 0). Where root is not 0, rank 0 then sends the result to root,
// and root receives it from 0, with TagReduceHop: hopTo and hopFrom are
// those (-1 where the rank does neither). ok is false where there is
// nothing to exchange.
func BinomialReduceSchedule(rank, size, root int) (children []int, parent, hopTo, hopFrom int, ok bool) {
	if size < 2 || rank < 0 || rank >= size || root < 0 || root >= size {
		return nil, -1, -1, -1, false
	}
	parent, hopTo, hopFrom = -1, -1, -1
	for m := 1; m < size; m <<= 1 {
		if rank&m != 0 {
			parent = rank - m
			break
		}
		if rank+m < size {
			children = append(children, rank+m)
		}
	}
	if root != 0 {
		switch rank {
		case 0:
			hopTo = root
		case root:
			hopFrom = 0
		}
	}
	return children, parent, hopTo, hopFrom, true
}

// PairwiseSchedule is what the pairwise Alltoall does on rank of size
// ranks, as steps to replay (see RecursiveDoublingSchedule): at step k
// the rank sends its block for to[k] to it and receives from[k]'s block
// for it, both with tag TagPairwise. The sources of the steps are all
// different. ok is false where there is nothing to exchange.
func PairwiseSchedule(rank, size int) (to, from []int, ok bool) {
	if size < 2 || rank < 0 || rank >= size {
		return nil, nil, false
	}
	for i := 1; i < size; i++ {
		to = append(to, (rank+i)%size)
		from = append(from, (rank-i+size)%size)
	}
	return to, from, true
}

// RingAllgatherSchedule is what the ring Allgather does on rank of size
// ranks, as steps to replay (see RecursiveDoublingSchedule): at step k
// the rank sends block sendBlock[k] of its result to right and receives
// block recvBlock[k] from left, both with tag TagAllgatherRing; the block
// it sends at a step after the first is the one it received at the step
// before. ok is false where there is nothing to exchange.
func RingAllgatherSchedule(rank, size int) (right, left int, sendBlock, recvBlock []int, ok bool) {
	if size < 2 || rank < 0 || rank >= size {
		return -1, -1, nil, nil, false
	}
	for s := 0; s < size-1; s++ {
		sendBlock = append(sendBlock, (rank-s+size)%size)
		recvBlock = append(recvBlock, (rank-s-1+size)%size)
	}
	return (rank + 1) % size, (rank - 1 + size) % size, sendBlock, recvBlock, true
}

// BruckAllgatherSchedule is what Bruck's Allgather does on rank of size
// ranks, as steps to replay (see RecursiveDoublingSchedule), in a buffer
// of size blocks whose block i is, at the end, rank+i's (the caller's
// own block first): at step k the rank sends the buffer's first count[k]
// blocks to to[k] and receives count[k] blocks from from[k] into the
// buffer from block at[k] on, both with tag TagAllgatherBruck. A step
// receives past every block an earlier or the same step sends, so every
// receive may be posted at once. ok is false where there is nothing to
// exchange.
func BruckAllgatherSchedule(rank, size int) (to, from, at, count []int, ok bool) {
	if size < 2 || rank < 0 || rank >= size {
		return nil, nil, nil, nil, false
	}
	have := 1
	for p := 1; p < size; p <<= 1 {
		c := min(p, size-have)
		to, from = append(to, (rank-p+size)%size), append(from, (rank+p)%size)
		at, count = append(at, have), append(count, c)
		have += c
	}
	return to, from, at, count, true
}

// BruckAlltoallSchedule is what Bruck's Alltoall does on rank of size
// ranks, as steps to replay (see RecursiveDoublingSchedule), in a buffer
// of size blocks that starts as the rank's send buffer rotated left by
// rank blocks: at step k the rank sends the buffer's blocks blocks[k], in
// order, to to[k], and receives as many from from[k], which replace
// those blocks, both with tag TagAlltoallBruck. At the end block i of
// the buffer is rank-i's block for the rank. ok is false where there is
// nothing to exchange.
func BruckAlltoallSchedule(rank, size int) (to, from []int, blocks [][]int, ok bool) {
	if size < 2 || rank < 0 || rank >= size {
		return nil, nil, nil, false
	}
	for p := 1; p < size; p <<= 1 {
		var b []int
		for i := range size {
			if i&p != 0 {
				b = append(b, i)
			}
		}
		to, from = append(to, (rank+p)%size), append(from, (rank-p+size)%size)
		blocks = append(blocks, b)
	}
	return to, from, blocks, true
}
