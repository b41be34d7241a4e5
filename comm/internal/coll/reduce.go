package coll

// Allreduce runs a point-to-point allreduce of send into recv (the same
// slice in place) with alg (RecursiveDoubling or Rabenseifner).
func (x *Call) Allreduce(send, recv []byte, alg Algorithm) {
	if !Same(send, recv) {
		copy(recv, send)
	}
	tmp := x.p.Scratch(1, len(recv))[0]
	if alg == Rabenseifner {
		x.rabenseifner(recv, tmp)
	} else {
		x.recursiveDoubling(recv, tmp)
	}
}

// Reduce runs a point-to-point reduction of send into root's recv with
// alg (Binomial, Rabenseifner or Flat).
func (x *Call) Reduce(send, recv []byte, root int, alg Algorithm) {
	switch alg {
	case Flat:
		x.reduceFlat(send, recv, root)
	case Rabenseifner:
		x.reduceRabenseifner(send, recv, root)
	default:
		x.reduceBinomial(send, recv, root)
	}
}

// The non-power-of-two fold (Thakur, Rabenseifner and Gropp 2005, as in
// MPICH): with pof2 the largest power of two ≤ n and rem = n - pof2, the
// first 2·rem ranks pair up, each even one handing its vector to the odd
// one above it, so that pof2 "new ranks" remain: new rank i < rem stands
// for ranks 2i and 2i+1, new rank i ≥ rem for rank i+rem. New ranks are in
// rank order and stand for consecutive ranks, so combining a lower new
// rank's data before a higher one's keeps rank order.

func fold(n int) (pof2, rem int) {
	pof2 = HighBit(n)
	return pof2, n - pof2
}

// realRank returns the rank that new rank nr stands for (the odd one of a pair).
func realRank(nr, rem int) int {
	if nr < rem {
		return 2*nr + 1
	}
	return nr + rem
}

// foldIn runs the fold on work (tmp: working memory of the same length) and
// returns the caller's new rank, or -1 for an even rank of a pair.
func (x *Call) foldIn(work, tmp []byte, rem int) int {
	me := x.rank
	if me >= 2*rem {
		return me - rem
	}
	if me%2 == 0 {
		x.send(work, me+1, tagRedFold)
		return -1
	}
	x.recv(tmp, me-1, tagRedFold)
	x.reduceLower(work, tmp)
	return me / 2
}

// foldOut hands the result back to the even ranks of the pairs.
func (x *Call) foldOut(work []byte, rem int) {
	me := x.rank
	if me >= 2*rem {
		return
	}
	if me%2 == 1 {
		x.send(work, me-1, tagRedFold)
	} else {
		x.recv(work, me+1, tagRedFold)
	}
}

// recursiveDoubling allreduces work in place (MPICH's
// MPIR_Allreduce_intra_recursive_doubling): partners at distances 1, 2,
// 4, … exchange their whole vectors, so that each partial result covers an
// aligned, growing range of new ranks, combined lower first.
func (x *Call) recursiveDoubling(work, tmp []byte) {
	pof2, rem := fold(x.size)
	nr := x.foldIn(work, tmp, rem)
	if nr >= 0 {
		for m := 1; m < pof2; m <<= 1 {
			partner := nr ^ m
			dst := realRank(partner, rem)
			x.sendrecv(work, dst, tagRedRD, tmp, dst, tagRedRD)
			if partner < nr {
				x.reduceLower(work, tmp)
			} else {
				x.reduce(work, tmp)
			}
		}
	}
	x.foldOut(work, rem)
}

// rabenseifner allreduces work in place: a reduce-scatter by recursive
// halving, then an allgather by recursive doubling (Rabenseifner 2004;
// MPICH's MPIR_Allreduce_intra_reduce_scatter_allgather).
func (x *Call) rabenseifner(work, tmp []byte) {
	pof2, rem := fold(x.size)
	nr := x.foldIn(work, tmp, rem)
	if nr >= 0 {
		off := splitAt(len(work), pof2, Unit(x.esz))
		lo, hi := x.halving(work, tmp, off, nr, pof2, rem)
		x.doubling(work, off, nr, pof2, rem, lo, hi)
	}
	x.foldOut(work, rem)
}

// halving is the reduce-scatter half: at distances 1, 2, 4, … (so that
// partial results cover aligned ranges of new ranks, for rank order) each
// new rank keeps half of its segment range, the lower half when its bit is
// 0, and combines the partner's half into it. It returns the one segment,
// [lo, hi) in off, that new rank nr ends with (the bit reversal of nr).
func (x *Call) halving(work, tmp []byte, off []int, nr, pof2, rem int) (lo, hi int) {
	lo, hi = 0, pof2
	for m := 1; m < pof2; m <<= 1 {
		partner := nr ^ m
		dst := realRank(partner, rem)
		mid := (lo + hi) / 2
		klo, khi, slo, shi := lo, mid, mid, hi
		if nr&m != 0 {
			klo, khi, slo, shi = mid, hi, lo, mid
		}
		keep := work[off[klo]:off[khi]]
		in := tmp[off[klo]:off[khi]]
		x.sendrecv(work[off[slo]:off[shi]], dst, tagRedHalving, in, dst, tagRedHalving)
		if partner < nr {
			x.reduceLower(keep, in)
		} else {
			x.reduce(keep, in)
		}
		lo, hi = klo, khi
	}
	return lo, hi
}

// doubling is the allgather half: the halving's steps in reverse, each new
// rank exchanging its assembled range for the partner's.
func (x *Call) doubling(work []byte, off []int, nr, pof2, rem, lo, hi int) {
	for m := pof2 / 2; m >= 1; m >>= 1 {
		dst := realRank(nr^m, rem)
		size := hi - lo
		olo, ohi := hi, hi+size
		if nr&m != 0 {
			olo, ohi = lo-size, lo
		}
		x.sendrecv(work[off[lo]:off[hi]], dst, tagRedDoubling, work[off[olo]:off[ohi]], dst, tagRedDoubling)
		lo, hi = min(lo, olo), max(hi, ohi)
	}
}

// segmentOf returns the segment the halving leaves with new rank nr: nr's
// log2(pof2) bits reversed.
func segmentOf(nr, pof2 int) int {
	s := 0
	for m := 1; m < pof2; m <<= 1 {
		s <<= 1
		if nr&m != 0 {
			s |= 1
		}
	}
	return s
}

// reduceBinomial reduces along a binomial tree rooted at rank 0, where each
// rank's subtree is a range of ranks above it, so combining a child's
// vector after one's own keeps rank order (MPICH does the same for
// non-commutative ops); rank 0 then hands the result to the root.
func (x *Call) reduceBinomial(send, recv []byte, root int) {
	n, me := x.size, x.rank
	sc := x.p.Scratch(2, len(send))
	acc, tmp := sc[0], sc[1]
	if me == 0 && root == 0 {
		acc = recv
	}
	if !Same(acc, send) {
		copy(acc, send)
	}
	for m := 1; m < n; m <<= 1 {
		if me&m != 0 {
			x.send(acc, me-m, tagReduceBinom)
			break
		}
		if me+m < n {
			x.recv(tmp, me+m, tagReduceBinom)
			x.reduce(acc, tmp)
		}
	}
	if root != 0 {
		switch me {
		case 0:
			x.send(acc, root, tagReduceHop)
		case root:
			x.recv(recv, 0, tagReduceHop)
		}
	}
}

// reduceFlat: the root receives the vectors in rank order and combines
// each into the running result.
func (x *Call) reduceFlat(send, recv []byte, root int) {
	n, me := x.size, x.rank
	if me != root {
		x.send(send, root, tagReduceFlat)
		return
	}
	sc := x.p.Scratch(2, len(send))
	mine, tmp := send, sc[1]
	if Same(send, recv) && root != 0 {
		mine = sc[0] // recv takes rank 0's vector first
		copy(mine, send)
	}
	if root == 0 {
		if !Same(send, recv) {
			copy(recv, send)
		}
	} else {
		x.recv(recv, 0, tagReduceFlat)
	}
	for r := 1; r < n; r++ {
		if r == root {
			x.reduce(recv, mine)
			continue
		}
		x.recv(tmp, r, tagReduceFlat)
		x.reduce(recv, tmp)
	}
}

// reduceRabenseifner: the fold and the halving of Rabenseifner's
// allreduce, then every new rank sends its segment to the root.
func (x *Call) reduceRabenseifner(send, recv []byte, root int) {
	me := x.rank
	sc := x.p.Scratch(2, len(send))
	work, tmp := sc[0], sc[1]
	copy(work, send)
	pof2, rem := fold(x.size)
	nr := x.foldIn(work, tmp, rem)
	off := splitAt(len(work), pof2, Unit(x.esz))
	if nr >= 0 {
		lo, hi := x.halving(work, tmp, off, nr, pof2, rem)
		if me == root {
			copy(recv[off[lo]:off[hi]], work[off[lo]:off[hi]])
		} else {
			x.send(work[off[lo]:off[hi]], root, tagRedToRoot)
		}
	}
	if me != root {
		return
	}
	for j := 0; j < pof2; j++ {
		if src := realRank(j, rem); src != me {
			s := segmentOf(j, pof2)
			x.irecv(recv[off[s]:off[s+1]], src, tagRedToRoot)
		}
	}
	x.waitAll()
}
