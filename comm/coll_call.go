package comm

import (
	"errors"
	"fmt"
)

// collCall is one rank's side of a point-to-point collective algorithm in
// progress: the messages it sends and receives on a collective context,
// and how it fails.
//
// A call fails in one of two ways. A mismatch (a message longer or shorter
// than expected, of another type, from a peer in another collective, or
// poison from a peer that failed; or a bad local argument) is recorded in
// err, and the call goes on with the algorithm's exact pattern of messages,
// sending zero-length poison in place of data, so that its peers fail too
// instead of waiting for data that will not come. A fatal error (the run
// aborted or deadlocked, the communicator was freed) is recorded in fatal,
// and the call stops communicating at once.
//
// The pattern of every algorithm (which peers, how many messages, in which
// order) depends only on the rank count, the caller's rank, the root and
// the algorithm, never on the data or the counts, so a failed call keeps in
// step with the others.
//
// A quiet call (the goroutine of a non-blocking collective) waits without
// parking in the deadlock detector's sight, as the rank's own goroutine
// may be running meanwhile; instead it counts itself in the rank's
// helpers while it runs (not while it waits; the completion of what it
// waits for counts it back in before waking it), and the detector takes
// a rank with running helpers for a running rank.
type collCall struct {
	c     *Comm // on a collective context
	what  string
	t     Type // element type of data messages
	op    Op
	quiet bool
	err   error
	fatal error
	pend  []pendingOp
}

type pendingOp struct {
	r         *Request
	src, tag  int
	want      int
	isReceive bool
}

func (c *Comm) call(what string, t Type, op Op) *collCall {
	return &collCall{c: c.coll(), what: what, t: t, op: op}
}

func (x *collCall) ok() bool { return x.err == nil && x.fatal == nil }

// result returns the call's outcome.
func (x *collCall) result() error {
	if x.fatal != nil {
		return x.fatal
	}
	return x.err
}

// fail records a mismatch (the first one wins).
func (x *collCall) fail(err error) {
	if x.err == nil {
		x.err = err
	}
}

func (x *collCall) stop(err error) {
	if x.fatal == nil {
		x.fatal = fmt.Errorf("comm: %s: %w", x.what, err)
	}
}

// Poison classes: the sentinel a failed peer's error wraps travels in the
// tag, so that every rank it reaches fails with the same sentinel.
var poisonClasses = []error{ErrArg, ErrTruncate, ErrType, ErrRank}

func poisonTag(err error) int {
	for i, s := range poisonClasses {
		if errors.Is(err, s) {
			return tagPoison + i
		}
	}
	return tagPoison
}

func isPoison(tag int) bool { return tag >= tagPoison && tag < tagPoison+len(poisonClasses) }

// wait waits for r (a request of a quiet call, or of a flat algorithm's
// batch) and returns its outcome.
func (x *collCall) wait(r *Request) (Status, error) {
	if x.quiet {
		if !r.done() && !r.ev.poll(r.ep.w.yields) && !x.c.ep.drive(r) {
			ep := x.c.ep
			r.quiet.Store(quietSleeping)
			ep.helpers.Add(-1)
			r.ev.sleep(false)
			// complete counted this helper back in before it woke it,
			// unless r completed before it could see quietSleeping.
			if r.quiet.CompareAndSwap(quietSleeping, quietNone) {
				ep.helpers.Add(1)
			}
			r.quiet.Store(quietNone)
			ep.parks.Add(1) // a wake-up, for the detector's second look
		}
		return r.result()
	}
	return r.Wait()
}

// received checks a receive's outcome against what the algorithm expected:
// want bytes with tag. It returns the bytes received when all is well.
func (x *collCall) received(st Status, err error, src, tag, want int) int {
	switch {
	case isPoison(st.Tag) && (err == nil || errors.Is(err, ErrTruncate) || errors.Is(err, ErrType)):
		x.fail(fmt.Errorf("comm: %s: rank %d failed: %w", x.what, src, poisonClasses[st.Tag-tagPoison]))
	case err != nil && (errors.Is(err, ErrTruncate) || errors.Is(err, ErrType)):
		x.fail(fmt.Errorf("comm: %s: ranks disagree (counts or element types): %w", x.what, err))
	case err != nil:
		x.stop(err)
	case st.Tag != tag:
		x.fail(fmt.Errorf("comm: %s: rank %d sent a message of another collective or algorithm (tag %d, want %d): %w",
			x.what, src, st.Tag, tag, ErrArg))
	case st.Count*x.t.Size() != want:
		x.fail(fmt.Errorf("comm: %s: rank %d sent %d bytes, want %d: counts differ between ranks: %w",
			x.what, src, st.Count*x.t.Size(), want, ErrTruncate))
	default:
		return want
	}
	return 0
}

// send sends buf to dst with tag, or poison once the call failed.
func (x *collCall) send(buf []byte, dst, tag int) {
	if x.fatal != nil {
		return
	}
	if x.err != nil {
		buf, tag = nil, poisonTag(x.err)
	}
	var err error
	if x.quiet {
		var r *Request
		if r, err = x.c.Isend(buf, x.t, dst, tag); err == nil {
			_, err = x.wait(r)
		}
	} else {
		err = x.c.Send(buf, x.t, dst, tag)
	}
	if err != nil {
		x.stop(err)
	}
}

// recv receives exactly len(buf) bytes from src with tag into buf.
func (x *collCall) recv(buf []byte, src, tag int) {
	if x.fatal != nil {
		return
	}
	st, err := x.recvAny(buf, src)
	x.received(st, err, src, tag, len(buf))
}

// recvAny receives the next message from src on the call's context,
// whatever its tag; a quiet call waits without parking in the deadlock
// detector's sight.
func (x *collCall) recvAny(buf []byte, src int) (Status, error) {
	if !x.quiet {
		return x.c.Recv(buf, x.t, src, AnyTag)
	}
	r, err := x.c.Irecv(buf, x.t, src, AnyTag)
	if err != nil {
		return Status{}, err
	}
	return x.wait(r)
}

// recvTag is recv for a receiver that follows the algorithm its peer chose:
// it returns the tag that came (or -1), without checking it.
func (x *collCall) recvTag(buf []byte, src int) int {
	if x.fatal != nil {
		return -1
	}
	st, err := x.recvAny(buf, src)
	if err != nil && !errors.Is(err, ErrTruncate) && !errors.Is(err, ErrType) {
		x.stop(err)
		return -1
	}
	x.received(st, err, src, st.Tag, len(buf))
	return st.Tag
}

// sendrecv sends sbuf to dst and receives exactly len(rbuf) bytes from src
// at once.
func (x *collCall) sendrecv(sbuf []byte, dst, stag int, rbuf []byte, src, rtag int) {
	if x.fatal != nil {
		return
	}
	if x.err != nil {
		sbuf, stag = nil, poisonTag(x.err)
	}
	if !x.quiet {
		st, err := x.c.Sendrecv(sbuf, x.t, dst, stag, rbuf, x.t, src, AnyTag)
		x.received(st, err, src, rtag, len(rbuf))
		return
	}
	rr, err := x.c.Irecv(rbuf, x.t, src, AnyTag)
	if err != nil {
		x.stop(err)
		return
	}
	sr, err := x.c.Isend(sbuf, x.t, dst, stag)
	if err != nil {
		x.c.ep.retract(rr, ErrCanceled)
		x.stop(err)
		return
	}
	st, rerr := x.wait(rr)
	if _, err := x.wait(sr); err != nil {
		x.stop(err)
		return
	}
	x.received(st, rerr, src, rtag, len(rbuf))
}

// irecv starts a receive of exactly len(buf) bytes; waitAll completes it.
func (x *collCall) irecv(buf []byte, src, tag int) {
	if x.fatal != nil {
		return
	}
	r, err := x.c.Irecv(buf, x.t, src, AnyTag)
	if err != nil {
		x.stop(err)
		return
	}
	x.pend = append(x.pend, pendingOp{r: r, src: src, tag: tag, want: len(buf), isReceive: true})
}

// isend starts a send (poison once the call failed); waitAll completes it.
func (x *collCall) isend(buf []byte, dst, tag int) {
	if x.fatal != nil {
		return
	}
	if x.err != nil {
		buf, tag = nil, poisonTag(x.err)
	}
	r, err := x.c.Isend(buf, x.t, dst, tag)
	if err != nil {
		x.stop(err)
		return
	}
	x.pend = append(x.pend, pendingOp{r: r})
}

// waitAll completes the started operations in order. After a fatal error
// it withdraws those still queued, so none outlives the call.
func (x *collCall) waitAll() {
	for i, p := range x.pend {
		if x.fatal != nil {
			x.c.ep.retract(p.r, ErrCanceled)
			continue
		}
		st, err := x.wait(p.r)
		if p.isReceive {
			x.received(st, err, p.src, p.tag, p.want)
		} else if err != nil {
			x.stop(err)
		}
		x.pend[i] = pendingOp{}
	}
	x.pend = x.pend[:0]
}

// reduce applies the call's op: inout = inout ∘ in. Nothing is done once
// the call failed (the buffers may hold poison).
func (x *collCall) reduce(inout, in []byte) {
	if x.ok() {
		x.op(inout, in)
	}
}

// reduceLower sets dst = lower ∘ dst, using lower as working memory.
func (x *collCall) reduceLower(dst, lower []byte) {
	x.reduce(lower, dst)
	copy(dst, lower)
}
