package coll

// The tags of the algorithms whose exchanges the schedules below
// describe: recursive doubling's (an Allreduce of short vectors on a
// power-of-two number of ranks), the dissemination barrier's, the
// binomial broadcast's and the binomial reduction's (whose result goes
// from rank 0 to a root other than 0 with TagReduceHop).
const (
	TagRecursiveDoubling = tagRedRD
	TagDissemination     = tagDissem
	TagBinomialBcast     = tagBcastBinom
	TagBinomialReduce    = tagReduceBinom
	TagReduceHop         = tagReduceHop
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
