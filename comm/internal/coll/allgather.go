package coll

// AllgatherRing: with every rank's own block in place, n-1 steps pass each
// block one rank to the right (Chan et al.; MPICH's
// MPIR_Allgather_intra_ring, and Allgatherv's).
func (x *Call) AllgatherRing(recv []byte, off, cnt []int) {
	n, me := x.size, x.rank
	left, right := (me-1+n)%n, (me+1)%n
	for s := 0; s < n-1; s++ {
		sb, rb := (me-s+n)%n, (me-s-1+n)%n
		x.sendrecv(recv[off[sb]:off[sb]+cnt[sb]], right, tagAllgRing, recv[off[rb]:off[rb]+cnt[rb]], left, tagAllgRing)
	}
}

// AllgatherBruck is Bruck et al.'s algorithm (MPICH's
// MPIR_Allgather_intra_brucks): ⌈log2 n⌉ steps, step j sending the
// 2^j blocks gathered so far to rank-2^j, in a buffer that starts with the
// caller's own block; a rotation puts the blocks in place at the end.
func (x *Call) AllgatherBruck(send, recv []byte, k int) {
	n, me := x.size, x.rank
	tmp := x.p.Scratch(1, n*k)[0]
	copy(tmp, send)
	have := 1
	for p := 1; p < n; p <<= 1 {
		cnt := min(p, n-have)
		x.sendrecv(tmp[:cnt*k], (me-p+n)%n, tagAllgBruck, tmp[have*k:(have+cnt)*k], (me+p)%n, tagAllgBruck)
		have += cnt
	}
	// tmp[i] is the block of rank me+i.
	copy(recv[me*k:n*k], tmp[:(n-me)*k])
	copy(recv[:me*k], tmp[(n-me)*k:n*k])
}

// AlltoallPairwise: in step i each rank sends to rank me+i and receives
// from rank me-i (MPICH's MPIR_Alltoall_intra_pairwise, Alltoallv's
// scattered variant in order).
func (x *Call) AlltoallPairwise(send []byte, soff, scnt []int, recv []byte, roff, rcnt []int) {
	n, me := x.size, x.rank
	for i := 1; i < n; i++ {
		dst, src := (me+i)%n, (me-i+n)%n
		x.sendrecv(send[soff[dst]:soff[dst]+scnt[dst]], dst, tagA2APair, recv[roff[src]:roff[src]+rcnt[src]], src, tagA2APair)
	}
}

// AlltoallBruck is Bruck et al.'s alltoall (MPICH's
// MPIR_Alltoall_intra_brucks): after a local rotation, block i travels i
// ranks in ⌈log2 n⌉ steps, step j moving the blocks whose index has bit j
// to rank me+2^j; block i then holds rank me-i's data for the caller.
func (x *Call) AlltoallBruck(send, recv []byte, k int) {
	n, me := x.size, x.rank
	sc := x.p.Scratch(3, n*k)
	tmp, pack, unpack := sc[0], sc[1], sc[2]
	BruckRotate(tmp, send, me, n, k)
	for p := 1; p < n; p <<= 1 {
		m := 0
		for i := 0; i < n; i++ {
			if i&p != 0 {
				copy(pack[m*k:], tmp[i*k:(i+1)*k])
				m++
			}
		}
		x.sendrecv(pack[:m*k], (me+p)%n, tagA2ABruck, unpack[:m*k], (me-p+n)%n, tagA2ABruck)
		m = 0
		for i := 0; i < n; i++ {
			if i&p != 0 {
				copy(tmp[i*k:(i+1)*k], unpack[m*k:])
				m++
			}
		}
	}
	BruckPlace(recv, tmp, me, n, k)
}

// BruckRotate copies send, n blocks of k bytes, into tmp rotated left by
// rank blocks: where Bruck's Alltoall starts on rank.
func BruckRotate(tmp, send []byte, rank, n, k int) {
	copy(tmp, send[rank*k:n*k])
	copy(tmp[(n-rank)*k:], send[:rank*k])
}

// BruckPlace puts the blocks of tmp, where Bruck's Alltoall ends on rank
// (block i holds rank-i's block for it), in place in recv.
func BruckPlace(recv, tmp []byte, rank, n, k int) {
	for j := range n {
		i := (rank - j + n) % n
		copy(recv[j*k:(j+1)*k], tmp[i*k:(i+1)*k])
	}
}
