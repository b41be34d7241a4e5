package coll

import "fmt"

// Agree leaves in acc, on every rank, the combination with combine of
// every rank's acc (of the same length on each): ⌈log2 n⌉ rounds of the
// dissemination pattern, in which every rank sends what it has to
// rank+2^k and combines into it what rank-2^k sends. A rank's bytes may
// reach another along several paths, so combine must be idempotent as
// well as commutative and associative (a minimum, a maximum). The bytes
// travel whether or not the call has failed, so that every rank learns
// what any knows; only a fatal error stops them. The messages must be of
// one element type on every rank (package comm sends bytes).
func (x *Call) Agree(acc []byte, combine func(acc, in []byte)) {
	n, me := x.size, x.rank
	if n == 1 || x.fatal != nil {
		return
	}
	bufs := x.p.Scratch(2, len(acc))
	out, in := bufs[0], bufs[1]
	for k := 1; k < n; k <<= 1 {
		copy(out, acc)
		src := (me - k + n) % n
		st, err := x.p.Sendrecv(out, (me+k)%n, tagAgree, in, src)
		switch {
		case err != nil && !x.mismatch(err):
			x.Stop(err)
			return
		case err != nil || st.Tag != tagAgree || st.Len != len(in):
			// Not an agreement: a peer in another collective. Its words
			// are missing from this rank's, which is failed.
			x.Fail(fmt.Errorf("comm: %s: rank %d sent a message of another collective (tag %d): %w", x.what, src, st.Tag, x.errs.Arg))
		default:
			combine(acc, in)
		}
	}
}

// Abandon ends the call where it is, with its mismatch as the outcome,
// once every rank knows that the call failed (an agreement said so):
// none of them communicates any more, so none waits for another.
func (x *Call) Abandon() {
	if x.err != nil && x.fatal == nil {
		x.fatal = x.err
	}
}
