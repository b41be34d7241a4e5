package comm

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Agreement on a collective's arguments, for the non-blocking and
// persistent collectives.
//
// A blocking collective on goroutine ranks shares memory: every rank sees
// every rank's arguments (the collective, the root, the element type, the
// length that must be the same everywhere, and any argument error of its
// own) and all fail alike when they disagree (coll_shm.go). The
// point-to-point algorithms see only the messages that reach them: a rank
// that names another root follows another tree, and may return nil with a
// buffer the others did not send.
//
// The non-blocking and persistent collectives always run point-to-point
// algorithms, on a private communicator (collState.private). Before its
// algorithm, such a call agrees with the others on a signature (collSig):
// ⌈log2 n⌉ rounds of 80-byte messages (coll.Call.Agree) carry the lowest
// and highest value of each field and the lowest rank with an argument
// error, with that error's sentinel. Every rank then knows the same
// verdict: when anything disagrees, every one of them fails with the
// sentinel the blocking form reports (ErrArg for the collective or the
// root, ErrType for the element type, ErrTruncate for the length, the
// failing rank's own for its argument error), and none runs the algorithm,
// so none waits for another. A persistent collective's arguments do not
// change between starts: it agrees until an agreement succeeds, then no
// more. The v-collectives with a root, whose counts only the root knows,
// also agree on their outcome at the end (settle), as every rank of the
// blocking form checks every block against the root's counts.

// collSig is what the members of a collective must pass alike.
type collSig struct {
	kind collKind
	root int
	t    Type
	n    int // a length in bytes every member passes alike, or anyLen
}

// anyLen is the length of a signature whose collective lets lengths
// differ between ranks (the v-collectives).
const anyLen = -1

// sameLen returns n where every member must pass the same length,
// otherwise anyLen.
func sameLen(same bool, n int) int {
	if same {
		return n
	}
	return anyLen
}

// The words of an agreement on a signature: the lowest and highest value
// of each field, then the lowest rank with an argument error and its
// error's code (noRank and 0 when none).
const (
	sigFields = 4
	sigBad    = 2 * sigFields
	sigWords  = sigBad + 2 // 80 bytes: whole elements of every type
	noRank    = math.MaxInt64
)

// agreeOn agrees with the other members on sig and x's argument error (see
// above); when anything disagrees, x fails with the blocking form's
// sentinel and is abandoned.
func (x *collCall) agreeOn(what string, sig collSig) {
	fields := [sigFields]int64{int64(sig.kind &^ (kDirect | kStaged)), int64(sig.root), sig.t.ident(), int64(sig.n)}
	acc := make([]byte, 8*sigWords)
	for i, v := range fields {
		setWord(acc, 2*i, v)
		setWord(acc, 2*i+1, v)
	}
	x.putBad(acc, sigBad)
	x.agree(acc, combineSig)
	if x.Stopped() {
		return
	}
	lo, hi := func(i int) int64 { return word(acc, 2*i) }, func(i int) int64 { return word(acc, 2*i+1) }
	switch {
	case !x.OK():
	case word(acc, sigBad) != noRank:
		x.failBad(what, acc, sigBad)
	case lo(0) != hi(0):
		x.Fail(fmt.Errorf("comm: %s: ranks call different collectives: %w", what, ErrArg))
	case lo(1) != hi(1):
		x.Fail(fmt.Errorf("comm: %s: ranks name roots %d to %d: %w", what, lo(1), hi(1), ErrArg))
	case lo(2) != hi(2):
		x.Fail(fmt.Errorf("comm: %s: ranks pass %v and %v: %w", what, identName(lo(2)), identName(hi(2)), ErrType))
	case lo(3) != hi(3):
		x.Fail(fmt.Errorf("comm: %s: ranks pass %d to %d bytes: counts differ between ranks: %w", what, lo(3), hi(3), ErrTruncate))
	}
	x.Abandon()
}

// settle agrees with the other members on the call's outcome: when it
// failed on some rank, it fails on every rank.
func (x *collCall) settle(what string) {
	acc := make([]byte, 16)
	x.putBad(acc, 0)
	x.agree(acc, combineBad)
	if x.OK() && word(acc, 0) != noRank {
		x.failBad(what, acc, 0)
	}
}

// agree runs coll.Call.Agree with messages of bytes, which every rank
// sends and receives alike whatever element types the ranks pass.
func (x *collCall) agree(acc []byte, combine func(acc, in []byte)) {
	t := x.t
	x.t = Byte
	x.Agree(acc, combine)
	x.t = t
}

// putBad writes the caller's rank and its error's code at word i of acc
// when the call has failed, else noRank.
func (x *collCall) putBad(acc []byte, i int) {
	if err := x.Result(); err != nil {
		setWord(acc, i, int64(x.c.rank))
		setWord(acc, i+1, errCode(err))
		return
	}
	setWord(acc, i, noRank)
}

// failBad fails x with the error of the rank at word i of acc.
func (x *collCall) failBad(what string, acc []byte, i int) {
	x.Fail(fmt.Errorf("comm: %s: rank %d: %w", what, word(acc, i), codeErr(word(acc, i+1))))
}

// combineSig combines two agreements on a signature.
func combineSig(acc, in []byte) {
	for i := range sigFields {
		setWord(acc, 2*i, min(word(acc, 2*i), word(in, 2*i)))
		setWord(acc, 2*i+1, max(word(acc, 2*i+1), word(in, 2*i+1)))
	}
	combineBad(acc[8*sigBad:], in[8*sigBad:])
}

// combineBad keeps the lower rank of two (rank, code) pairs.
func combineBad(acc, in []byte) {
	if word(in, 0) < word(acc, 0) {
		copy(acc[:16], in[:16])
	}
}

func word(b []byte, i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }

func setWord(b []byte, i int, v int64) { binary.LittleEndian.PutUint64(b[8*i:], uint64(v)) }
