package coll

import (
	"errors"
	"fmt"
	"unsafe"
)

// Call is one rank's side of a point-to-point collective algorithm in
// progress: the messages it sends and receives through its [Peer], and
// how it fails. The algorithms are its methods.
//
// Invariants:
//   - The pattern of every algorithm (which peers, how many messages, in
//     which order) depends only on the rank count, the caller's rank, the
//     root and the algorithm, never on the data, the counts or the
//     outcome so far; so a failed call keeps in step with the others.
//   - A mismatch (a message longer or shorter than expected, of another
//     type, from a peer in another collective or algorithm, poison from a
//     peer that failed, or a bad local argument given to Fail) is recorded
//     in err, the first one only. From then on every send carries
//     zero-length poison, its tag the class of err, in place of data, and
//     the reductions are skipped (the buffers may hold poison); the
//     receives go on. So every rank whose result depends on the failed one
//     fails too, with the same sentinel, and none waits for data that will
//     not come.
//   - A fatal error (from the Peer: the run aborted or deadlocked, the
//     communicator was freed) is recorded in fatal, and the call stops
//     communicating at once: no new operation starts, and those started by
//     isend and irecv are withdrawn by waitAll.
//   - pend holds the operations started by isend and irecv and not yet
//     completed by waitAll; it is empty when an algorithm returns.
//
// A Call is used by one goroutine; [Call.Init] prepares it for one
// collective.
type Call struct {
	p          Peer
	rank, size int
	what       string
	op         func(inout, in []byte)
	esz        int // bytes per element (op's unit: a split never cuts one)
	errs       *Errors
	err        error
	fatal      error
	pend       []pending
}

// pending is an operation started by isend or irecv.
type pending struct {
	r         Request
	src, tag  int
	want      int
	isReceive bool
}

// Init prepares x for one collective named what (for errors) through p,
// reducing with op (nil for collectives that do not reduce) elements of
// esz bytes, its errors wrapping errs.
func (x *Call) Init(p Peer, what string, op func(inout, in []byte), esz int, errs *Errors) {
	*x = Call{p: p, rank: p.Rank(), size: p.Size(), what: what, op: op, esz: esz, errs: errs}
}

// OK reports whether x has neither failed nor stopped.
func (x *Call) OK() bool { return x.err == nil && x.fatal == nil }

// Stopped reports whether x met a fatal error.
func (x *Call) Stopped() bool { return x.fatal != nil }

// Result returns the call's outcome: the fatal error, else the mismatch,
// else nil.
func (x *Call) Result() error {
	if x.fatal != nil {
		return x.fatal
	}
	return x.err
}

// Fail records a mismatch (the first one wins); err nil records nothing.
func (x *Call) Fail(err error) {
	if x.err == nil {
		x.err = err
	}
}

// Stop records a fatal error (the first one wins).
func (x *Call) Stop(err error) {
	if x.fatal == nil {
		x.fatal = fmt.Errorf("comm: %s: %w", x.what, err)
	}
}

// classes lists the sentinels in the order of their poison tags.
func (x *Call) classes() [4]error {
	return [4]error{x.errs.Arg, x.errs.Truncate, x.errs.Type, x.errs.Rank}
}

// poisonTag returns the poison tag for err's class.
func (x *Call) poisonTag(err error) int {
	for i, s := range x.classes() {
		if errors.Is(err, s) {
			return tagPoison + i
		}
	}
	return tagPoison
}

func isPoison(tag int) bool { return tag >= tagPoison && tag < tagPoison+4 }

// Outgoing returns what a send of data with tag carries: data and tag while
// the call is well, zero-length poison once it failed.
func (x *Call) Outgoing(data []byte, tag int) ([]byte, int) {
	if x.err != nil {
		return nil, x.poisonTag(x.err)
	}
	return data, tag
}

// Poisoned reports whether tag, received from src, is poison, and records
// src's failure when it is.
func (x *Call) Poisoned(tag, src int) bool {
	if !isPoison(tag) {
		return false
	}
	x.Fail(fmt.Errorf("comm: %s: rank %d failed: %w", x.what, src, x.classes()[tag-tagPoison]))
	return true
}

// mismatch reports whether a receive's err is one that consumed the message
// and leaves the call going (truncation, element type).
func (x *Call) mismatch(err error) bool {
	return errors.Is(err, x.errs.Truncate) || errors.Is(err, x.errs.Type)
}

// received checks a receive's outcome against what the algorithm expected:
// want bytes with tag.
func (x *Call) received(st Status, err error, src, tag, want int) {
	switch {
	case (err == nil || x.mismatch(err)) && x.Poisoned(st.Tag, src):
	case err != nil && x.mismatch(err):
		x.Fail(fmt.Errorf("comm: %s: ranks disagree (counts or element types): %w", x.what, err))
	case err != nil:
		x.Stop(err)
	case st.Tag != tag:
		x.Fail(fmt.Errorf("comm: %s: rank %d sent a message of another collective or algorithm (tag %d, want %d): %w",
			x.what, src, st.Tag, tag, x.errs.Arg))
	case st.Len != want:
		x.Fail(fmt.Errorf("comm: %s: rank %d sent %d bytes, want %d: counts differ between ranks: %w",
			x.what, src, st.Len, want, x.errs.Truncate))
	}
}

// send sends buf to dst with tag, or poison once the call failed.
func (x *Call) send(buf []byte, dst, tag int) {
	if x.fatal != nil {
		return
	}
	buf, tag = x.Outgoing(buf, tag)
	if err := x.p.Send(buf, dst, tag); err != nil {
		x.Stop(err)
	}
}

// recv receives exactly len(buf) bytes from src with tag into buf.
func (x *Call) recv(buf []byte, src, tag int) {
	if x.fatal != nil {
		return
	}
	st, err := x.p.Recv(buf, src)
	x.received(st, err, src, tag, len(buf))
}

// recvTag is recv for a receiver that follows the algorithm its peer chose:
// it returns the tag that came (or -1), without checking it.
func (x *Call) recvTag(buf []byte, src int) int {
	if x.fatal != nil {
		return -1
	}
	st, err := x.p.Recv(buf, src)
	if err != nil && !x.mismatch(err) {
		x.Stop(err)
		return -1
	}
	x.received(st, err, src, st.Tag, len(buf))
	return st.Tag
}

// sendrecv sends sbuf to dst and receives exactly len(rbuf) bytes from src
// at once.
func (x *Call) sendrecv(sbuf []byte, dst, stag int, rbuf []byte, src, rtag int) {
	if x.fatal != nil {
		return
	}
	sbuf, stag = x.Outgoing(sbuf, stag)
	st, err := x.p.Sendrecv(sbuf, dst, stag, rbuf, src)
	x.received(st, err, src, rtag, len(rbuf))
}

// irecv starts a receive of exactly len(buf) bytes; waitAll completes it.
func (x *Call) irecv(buf []byte, src, tag int) {
	if x.fatal != nil {
		return
	}
	r, err := x.p.Irecv(buf, src)
	if err != nil {
		x.Stop(err)
		return
	}
	x.pend = append(x.pend, pending{r: r, src: src, tag: tag, want: len(buf), isReceive: true})
}

// isend starts a send (poison once the call failed); waitAll completes it.
func (x *Call) isend(buf []byte, dst, tag int) {
	if x.fatal != nil {
		return
	}
	buf, tag = x.Outgoing(buf, tag)
	r, err := x.p.Isend(buf, dst, tag)
	if err != nil {
		x.Stop(err)
		return
	}
	x.pend = append(x.pend, pending{r: r})
}

// waitAll completes the started operations in order. After a fatal error
// it withdraws those still queued, so none outlives the call.
func (x *Call) waitAll() {
	for i, p := range x.pend {
		if x.fatal != nil {
			x.p.Withdraw(p.r)
			continue
		}
		st, err := x.p.Wait(p.r)
		if p.isReceive {
			x.received(st, err, p.src, p.tag, p.want)
		} else if err != nil {
			x.Stop(err)
		}
		x.pend[i] = pending{}
	}
	x.pend = x.pend[:0]
}

// reduce applies the call's op: inout = inout ∘ in. Nothing is done once
// the call failed (the buffers may hold poison).
func (x *Call) reduce(inout, in []byte) {
	if x.OK() {
		x.op(inout, in)
	}
}

// reduceLower sets dst = lower ∘ dst, using lower as working memory.
func (x *Call) reduceLower(dst, lower []byte) {
	x.reduce(lower, dst)
	copy(dst, lower)
}

// Same reports whether a and b are the same slice (in place, MPI_IN_PLACE).
func Same(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

// Unit is the granule in which a reduction splits a vector of elements of
// esz bytes among ranks or into blocks: 64 bytes (a cache line), or the
// least multiple of 64 that is a multiple of esz too, so that no piece
// cuts an element (esz divides 64 for every number type; a struct type's
// may not).
func Unit(esz int) int {
	if esz <= 0 || 64%esz == 0 {
		return 64
	}
	g, r := esz, 64 // gcd(esz, 64)
	for r != 0 {
		g, r = r, g%r
	}
	return esz / g * 64
}

// splitAt returns parts+1 offsets that cut n bytes into parts nearly equal
// pieces at multiples of align.
func splitAt(n, parts, align int) []int {
	off := make([]int, parts+1)
	units := (n + align - 1) / align
	for i := 0; i <= parts; i++ {
		off[i] = min(n, units*i/parts*align)
	}
	return off
}

// HighBit returns the highest power of two ≤ v (0 for v ≤ 0).
func HighBit(v int) int {
	if v <= 0 {
		return 0
	}
	m := 1
	for m <= v/2 {
		m <<= 1
	}
	return m
}
