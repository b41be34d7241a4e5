package comm

import "fmt"

// Bcast broadcasts root's buf, elements of type t, into buf on every
// member. Every member must pass a buffer of the same length: a difference
// fails with an error wrapping [ErrTruncate].
func (c *Comm) Bcast(buf []byte, t Type, root int) error {
	const what = "bcast"
	if err := c.collUsable(what); err != nil {
		return err
	}
	if err := checkType(what, t); err != nil {
		return err
	}
	if err := c.checkRoot(what, root); err != nil {
		return err
	}
	return c.bcast(buf, t, root, whole(what, "buffer", buf, t))
}

// bcast is Bcast past the checks that need no communication; with local
// non-nil it fails with it on this rank and makes the others fail too.
func (c *Comm) bcast(buf []byte, t Type, root int, local error) error {
	if c.size == 1 {
		return local
	}
	alg := c.pick(CollBcast, func() Algorithm { return autoBcast(len(buf), c.size) })
	switch alg {
	case AlgSharedMemory:
		return c.bcastShm(buf, t, root, local)
	case AlgHierarchical:
		return c.bcastHier(buf, t, root, local)
	}
	x := c.call("bcast", t, nil)
	if local != nil {
		x.fail(local)
	}
	x.bcast(buf, root, alg)
	return x.result()
}

// autoBcast is MPICH's choice: a binomial tree for short messages or few
// ranks, van de Geijn's scatter + allgather beyond.
func autoBcast(n, size int) Algorithm {
	if n < 12<<10 || size < 8 {
		return AlgBinomial
	}
	return AlgScatterAllgather
}

// stageLimit is the largest input a shared-memory collective copies to its
// staging buffer, to end the call at its first gate; a broadcast, whose
// root alone copies, stages up to bcastStageLimit.
const (
	stageLimit      = 16 << 10
	bcastStageLimit = 64 << 10
)

func (c *Comm) bcastShm(buf []byte, t Type, root int, local error) error {
	sl := shmSlot{kind: kBcast, root: root, t: t, n: len(buf), b: buf, err: local}
	if c.rank == root {
		c.publish(&sl, buf, len(buf) <= bcastStageLimit)
	}
	x, err := c.shmStart("bcast", sl)
	if err != nil {
		return err
	}
	if x.err == nil {
		x.err = x.sameLen("buffer", root)
	}
	if x.err == nil && c.rank != root {
		copy(buf, x.slots[root].a)
	}
	return x.finish()
}

// bcast runs a point-to-point broadcast.
func (x *collCall) bcast(buf []byte, root int, alg Algorithm) {
	if alg == AlgFlat {
		x.bcastFlat(buf, root)
		return
	}
	x.bcastTree(buf, root, alg)
}

// bcastFlat: the root sends to every rank at once (receivers copy in
// parallel from its buffer when the messages go by rendezvous).
func (x *collCall) bcastFlat(buf []byte, root int) {
	if x.c.rank != root {
		x.recv(buf, root, tagBcastFlat)
		return
	}
	for r := 0; r < x.c.size; r++ {
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
func (x *collCall) bcastTree(buf []byte, root int, alg Algorithm) {
	n, me := x.c.size, x.c.rank
	vr := (me - root + n) % n
	off := splitAt(len(buf), n, 64) // blocks, by relative rank
	span := n                       // relative ranks in my subtree: [vr, vr+span)
	if vr != 0 {
		span = vr & -vr
		parent := (me - span + n) % n
		lo, hi := 0, len(buf)
		if alg == AlgScatterAllgather {
			lo, hi = off[vr], off[min(vr+span, n)]
		}
		tag := x.recvTag(buf[lo:hi], parent)
		want := tagBcastBinom
		if alg == AlgScatterAllgather {
			want = tagBcastSAG
		}
		switch {
		case tag == want || tag < 0 || isPoison(tag):
		case tag == tagBcastBinom || tag == tagBcastSAG:
			x.fail(fmt.Errorf("comm: %s: the root chose another algorithm (buffers of different lengths?): %w", x.what, ErrTruncate))
			if tag == tagBcastBinom {
				alg = AlgBinomial
			} else {
				alg = AlgScatterAllgather
			}
		default:
			x.fail(fmt.Errorf("comm: %s: rank %d is in another collective (tag %d): %w", x.what, parent, tag, ErrArg))
		}
	}
	for m := highBit(span - 1); m > 0; m >>= 1 {
		if vr+m >= n {
			continue
		}
		child := (me + m) % n
		if alg == AlgScatterAllgather {
			x.send(buf[off[vr+m]:off[min(vr+2*m, n)]], child, tagBcastSAG)
		} else {
			x.send(buf, child, tagBcastBinom)
		}
	}
	if alg != AlgScatterAllgather {
		return
	}
	left, right := (me-1+n)%n, (me+1)%n
	for s := 0; s < n-1; s++ {
		sb, rb := (vr-s+n)%n, (vr-s-1+n)%n
		x.sendrecv(buf[off[sb]:off[sb+1]], right, tagBcastRing, buf[off[rb]:off[rb+1]], left, tagBcastRing)
	}
}

// highBit returns the highest power of two ≤ v (0 for v ≤ 0).
func highBit(v int) int {
	if v <= 0 {
		return 0
	}
	m := 1
	for m <= v/2 {
		m <<= 1
	}
	return m
}
