package coll

// Scan is MPICH's recursive-doubling scan (MPIR_Scan_intra_recursive_
// doubling, and its Exscan sibling): partial is the reduction over an
// aligned group of ranks around the caller, doubling each step; a partner
// below contributes its group to the caller's prefix, in front of what the
// prefix holds.
func (x *Call) Scan(send, recv []byte, exclusive bool) {
	n, me := x.size, x.rank
	tag := tagScan
	if exclusive {
		tag = tagExscan
	}
	sc := x.p.Scratch(3, len(send))
	partial, tmp, t2 := sc[0], sc[1], sc[2]
	copy(partial, send)
	if !exclusive && !Same(send, recv) {
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

// ReduceScatter: the fold, then the recursive halving of
// Rabenseifner's allreduce over segments that are the new ranks' blocks
// (new rank i < rem stands for blocks 2i and 2i+1), then an exchange that
// moves each segment from the new rank the halving leaves it with (the bit
// reversal) to its own, then the fold undone for the even ranks' blocks.
func (x *Call) ReduceScatter(send, out []byte, k int) {
	n, me := x.size, x.rank
	sc := x.p.Scratch(2, n*k)
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
