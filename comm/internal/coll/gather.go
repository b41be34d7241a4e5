package coll

import "fmt"

// GatherFlat: the root posts a receive per rank, straight into its buffer,
// and waits for all; with large blocks the senders' copies proceed in
// parallel.
func (x *Call) GatherFlat(send, recv []byte, off, cnt []int, root int, inPlace bool) {
	me := x.rank
	if me != root {
		x.send(send, root, tagGatherFlat)
		return
	}
	for i := range off {
		if i != me {
			x.irecv(recv[off[i]:off[i]+cnt[i]], i, tagGatherFlat)
		}
	}
	if !inPlace {
		if len(send) != cnt[me] {
			x.Fail(fmt.Errorf("comm: %s: %d bytes to send, count %d: %w", x.what, len(send), cnt[me], x.errs.Truncate))
		} else {
			copy(recv[off[me]:], send)
		}
	}
	x.waitAll()
}

// ScatterFlat: the root sends every block at once.
func (x *Call) ScatterFlat(send, recv []byte, off, cnt []int, root int, inPlace bool) {
	me := x.rank
	if me != root {
		x.recv(recv, root, tagScatFlat)
		return
	}
	for i := range off {
		if i != me {
			x.isend(send[off[i]:off[i]+cnt[i]], i, tagScatFlat)
		}
	}
	if !inPlace {
		if len(recv) != cnt[me] {
			x.Fail(fmt.Errorf("comm: %s: receive buffer of %d bytes, count %d: %w", x.what, len(recv), cnt[me], x.errs.Truncate))
		} else {
			copy(recv, send[off[me]:off[me]+cnt[me]])
		}
	}
	x.waitAll()
}

// GatherBinomial is MPICH's MPIR_Gather_intra_binomial: in relative ranks
// (root 0), each rank collects its subtree's blocks in order, its own
// first, and hands them to its parent in one message.
func (x *Call) GatherBinomial(send, recv []byte, k, root int) {
	n, me := x.size, x.rank
	vr := (me - root + n) % n
	span := n
	if vr != 0 {
		span = min(vr&-vr, n-vr)
	}
	var tmp []byte
	if vr == 0 && root == 0 {
		tmp = recv[:n*k]
	} else {
		tmp = x.p.Scratch(1, span*k)[0]
	}
	if !Same(tmp[:k], send) {
		copy(tmp[:k], send)
	}
	for m := 1; m < n; m <<= 1 {
		if vr&m != 0 {
			x.send(tmp, (me-m+n)%n, tagGatherBinom)
			break
		}
		if vr+m < n {
			b := min(m, n-vr-m) // blocks in the child's subtree
			x.recv(tmp[m*k:(m+b)*k], (me+m)%n, tagGatherBinom)
		}
	}
	if vr == 0 && root != 0 {
		// tmp holds the blocks of ranks root, root+1, …, n-1, 0, …, root-1.
		copy(recv[root*k:n*k], tmp[:(n-root)*k])
		copy(recv[:root*k], tmp[(n-root)*k:n*k])
	}
}

// ScatterBinomial is the reverse of GatherBinomial (MPICH's
// MPIR_Scatter_intra_binomial).
func (x *Call) ScatterBinomial(send, recv []byte, k, root int) {
	n, me := x.size, x.rank
	vr := (me - root + n) % n
	span := n
	var tmp []byte
	switch {
	case vr == 0 && root == 0:
		tmp = send[:n*k]
	case vr == 0:
		tmp = x.p.Scratch(1, n*k)[0]
		copy(tmp, send[root*k:n*k])
		copy(tmp[(n-root)*k:], send[:root*k])
	default:
		span = min(vr&-vr, n-vr)
		tmp = x.p.Scratch(1, span*k)[0]
		x.recv(tmp, (me-(vr&-vr)+n)%n, tagScatBinom)
	}
	for m := HighBit(max(span-1, 0)); m > 0; m >>= 1 {
		if vr+m < n && m < span {
			b := min(m, n-vr-m)
			x.send(tmp[m*k:(m+b)*k], (me+m)%n, tagScatBinom)
		}
	}
	if !Same(recv, tmp[:k]) {
		copy(recv, tmp[:k])
	}
}
