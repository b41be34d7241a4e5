package coll

import "fmt"

// Bcast runs a point-to-point broadcast of buf from root with alg
// (Binomial, ScatterAllgather or Flat).
func (x *Call) Bcast(buf []byte, root int, alg Algorithm) {
	if alg == Flat {
		x.bcastFlat(buf, root)
		return
	}
	x.bcastTree(buf, root, alg)
}

// bcastFlat: the root sends to every rank at once (receivers copy in
// parallel from its buffer when the messages go by rendezvous).
func (x *Call) bcastFlat(buf []byte, root int) {
	if x.rank != root {
		x.recv(buf, root, tagBcastFlat)
		return
	}
	for r := 0; r < x.size; r++ {
		if r != root {
			x.isend(buf, r, tagBcastFlat)
		}
	}
	x.waitAll()
}

// bcastTree runs the binomial broadcast (MPICH's MPIR_Bcast_binomial) or
// van de Geijn's (a binomial scatter of n blocks along the same tree, then
// a ring allgather, as MPIR_Bcast_scatter_ring_allgather). Both start with
// a message from the same parent, whose tag says which algorithm the root
// chose: a rank that chose the other one (it passed another count) fails
// and follows the root's, so that no rank waits for a message that does
// not come.
func (x *Call) bcastTree(buf []byte, root int, alg Algorithm) {
	n, me := x.size, x.rank
	vr := (me - root + n) % n
	off := splitAt(len(buf), n, Unit(x.esz)) // blocks, by relative rank
	span := n                                // relative ranks in my subtree: [vr, vr+span)
	if vr != 0 {
		span = vr & -vr
		parent := (me - span + n) % n
		lo, hi := 0, len(buf)
		if alg == ScatterAllgather {
			lo, hi = off[vr], off[min(vr+span, n)]
		}
		tag := x.recvTag(buf[lo:hi], parent)
		want := tagBcastBinom
		if alg == ScatterAllgather {
			want = tagBcastSAG
		}
		switch {
		case tag == want || tag < 0 || isPoison(tag):
		case tag == tagBcastBinom || tag == tagBcastSAG:
			x.Fail(fmt.Errorf("comm: %s: the root chose another algorithm (buffers of different lengths?): %w", x.what, x.errs.Truncate))
			if tag == tagBcastBinom {
				alg = Binomial
			} else {
				alg = ScatterAllgather
			}
		default:
			x.Fail(fmt.Errorf("comm: %s: rank %d is in another collective (tag %d): %w", x.what, parent, tag, x.errs.Arg))
		}
	}
	for m := HighBit(span - 1); m > 0; m >>= 1 {
		if vr+m >= n {
			continue
		}
		child := (me + m) % n
		if alg == ScatterAllgather {
			x.send(buf[off[vr+m]:off[min(vr+2*m, n)]], child, tagBcastSAG)
		} else {
			x.send(buf, child, tagBcastBinom)
		}
	}
	if alg != ScatterAllgather {
		return
	}
	left, right := (me-1+n)%n, (me+1)%n
	for s := 0; s < n-1; s++ {
		sb, rb := (vr-s+n)%n, (vr-s-1+n)%n
		x.sendrecv(buf[off[sb]:off[sb+1]], right, tagBcastRing, buf[off[rb]:off[rb+1]], left, tagBcastRing)
	}
}
