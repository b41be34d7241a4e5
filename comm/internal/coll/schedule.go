package coll

// TagRecursiveDoubling is the tag of recursive doubling's exchanges (an
// Allreduce of short vectors on a power-of-two number of ranks).
const TagRecursiveDoubling = tagRedRD

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
