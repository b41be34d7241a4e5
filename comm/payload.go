package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Payloads produced and consumed on demand.
//
// A plain send names a buffer, and so does a plain receive: the engine
// copies from one to the other. Some payloads are not one buffer: a
// non-contiguous layout (package typed) lies scattered over its sender's
// slice and goes to scattered places in the receiver's. [Comm.SendFrom]
// sends a message whose bytes a [Source] produces when, and where, a
// receive wants them; [Comm.RecvInto] receives through a [Sink] that puts
// the bytes where they belong. When a SendFrom meets a RecvInto in this
// process, the Sink is handed the Source itself, so that it can move each
// element once, from the sender's places straight into its own (the
// gather and the scatter as one loop, with no packed copy between them).
// Every other pairing goes through bytes: a Source is pulled into a plain
// receive's buffer (one pass), a Sink is fed an eager copy, a handed-over
// slice or a payload pulled from another process.
//
// The protocol is the one a plain Send of the same length gets:
//
//   - receiver first: the sender finds the posted receive and delivers
//     into it (Sink.Take or Source.Pull), on its own goroutine;
//   - sender first, below the eager limit: the Source is pulled into a
//     pooled buffer under the pair's lock (an eager copy, as for Send) and
//     the send completes at once;
//   - sender first, at or above the eager limit: rendezvous: the message
//     refers to the Source, the receiver reads it (one pass) and then
//     completes the sender;
//   - a destination in another process: the Source is pulled into a
//     buffer of the send's own and that buffer is sent.
//
// Matching, truncation, type checks, cancellation, abort and deadlock
// detection are those of every other message: a Source or a Sink only
// changes where the bytes come from and go to.

// Remote is a payload still with its sender, which a [Sink] reads once
// with its method Pull(dst []byte) error: Pull fetches the payload into
// dst (len(dst) is the message's length) and tells the sender that its
// message was received; with dst nil the payload is discarded and the
// sender told all the same. It is a [Source] in this process, or a message
// from another process that its device has not moved yet. (The engine's
// type: comm.Remote is an alias, so that a Sink written against it is the
// engine's Sink too.)
type Remote = engine.Remote

// Source produces the payload of a message sent with [Comm.SendFrom] or
// [Comm.IsendFrom].
type Source interface {
	// Pull writes the whole payload into dst (as long as the length given
	// to SendFrom), or, with dst nil, learns that the receive dropped it
	// (ErrTruncate, ErrType). The engine calls it at most once per
	// message, from the receiving rank's or the sending rank's goroutine,
	// possibly while holding an engine lock (an eager copy): Pull must
	// only copy, never block or call into mpgo. An error fails the
	// receive (or, for an eager copy, the send) with it. A Source is also
	// a [Remote]: a payload still with its sender.
	Pull(dst []byte) error
}

// Sink takes the payload of a message received with [Comm.RecvInto] or
// [Comm.IrecvInto], in place of a receive buffer.
type Sink interface {
	// Cap returns the longest payload, in bytes, the Sink accepts: a
	// longer message fails the receive with ErrTruncate (and is consumed)
	// without calling Take.
	Cap() int
	// Take stores a payload of n ≤ Cap() bytes. Either data holds it
	// (owned by the engine, valid only during the call), or from does:
	// the payload is still with its sender, and Take must call
	// from.Pull(dst) once, with len(dst) == n (or dst nil to drop it),
	// except that a Source Take recognises (one it knows how to read, sent
	// by SendFrom in this process) it may read by its own means instead:
	// the sender waits for Take to return either way. The engine calls
	// Take at most once per receive, with no engine lock held, from the
	// receiving rank's goroutine, the sender's or a device's, before the
	// receive completes; an error fails the receive with it. A device's
	// goroutine may hold the device's own lock meanwhile (the RDMA
	// device's progress lock, while it hands an arrival over), so Take
	// must only move bytes, never block or call into mpgo.
	Take(data []byte, from Remote, n int) error
}

// SendFrom sends a message of n bytes of type t, produced by src, to rank
// dst with tag (standard mode: see the protocol above). It returns once
// src will not be called again: at once below the eager limit, otherwise
// once the receive has read the payload, as a plain Send of n bytes does.
// A nil src or a negative n fails with an error wrapping ErrArg; other
// errors are those of [Comm.Send].
func (c *Comm) SendFrom(src Source, n int, t Type, dst, tag int) error {
	r, err := c.startSendFrom(src, n, t, dst, tag)
	if err != nil {
		return err
	}
	_, _, err = c.finish(r)
	return err
}

// IsendFrom starts a [Comm.SendFrom]; src may be called until the request
// completes.
func (c *Comm) IsendFrom(src Source, n int, t Type, dst, tag int) (*Request, error) {
	r, err := c.startSendFrom(src, n, t, dst, tag)
	if err != nil {
		return nil, err
	}
	return c.release(r), nil
}

// SendFromInit plans a [Comm.SendFrom] of n bytes of type t, produced by
// src, to dst with tag, as a persistent request (see [Comm.SendInit]):
// each [Request.Start] sends one message of src's payload as it is then,
// allocating nothing to a rank of this process. src is called only while
// the request is active. A nil src or a negative n fails with an error
// wrapping ErrArg.
func (c *Comm) SendFromInit(src Source, n int, t Type, dst, tag int) (*Request, error) {
	if src == nil || n < 0 {
		return nil, fmt.Errorf("comm: send to rank %d tag %d: source %T of %d bytes: %w", dst, tag, src, n, ErrArg)
	}
	if dst == ProcNull {
		return c.nullInit(engine.KindSend, t, tag)
	}
	if err := c.checkSend(n, t, dst, tag); err != nil {
		return nil, err
	}
	r := c.newReq(engine.KindSend, false)
	peer := c.worldOf(dst)
	local := c.ep.IsLocal(peer)
	if local {
		r.SetSendFrom(engine.Type(t), src, n)
	}
	r.SetPersistent(func(r *engine.Request) error {
		if err := c.usable(); err != nil {
			return err
		}
		if !local { // as startSendFrom: the device sends bytes
			data := make([]byte, n)
			if err := src.Pull(data); err != nil {
				return fmt.Errorf("comm: send to rank %d tag %d: %w", dst, tag, err)
			}
			r.SetSend(engine.ModeStandard, engine.Type(t), data)
		}
		return r.StartSend(c.rank, dst, peer, tag, false)
	})
	return user(r), nil
}

// startSendFrom validates and starts a SendFrom on a pooled request.
func (c *Comm) startSendFrom(src Source, n int, t Type, dst, tag int) (*engine.Request, error) {
	if src == nil || n < 0 {
		return nil, fmt.Errorf("comm: send to rank %d tag %d: source %T of %d bytes: %w", dst, tag, src, n, ErrArg)
	}
	if dst == ProcNull {
		return c.procNull(engine.KindSend, t, tag, true)
	}
	if err := c.checkSend(n, t, dst, tag); err != nil {
		return nil, err
	}
	if !c.ep.IsLocal(c.worldOf(dst)) {
		// Another process: the device sends bytes, so make them.
		data := make([]byte, n)
		if err := src.Pull(data); err != nil {
			return nil, fmt.Errorf("comm: send to rank %d tag %d: %w", dst, tag, err)
		}
		return c.postNewSend(data, t, dst, tag, engine.ModeStandard, true, false) // checked above
	}
	r := c.newReq(engine.KindSend, true)
	r.SetSendFrom(engine.Type(t), src, n)
	return c.postSend(r, dst, tag, true)
}

// RecvInto receives a message of type t from src (or AnySource) with tag
// (or AnyTag) through k. Status.Count is in elements of t. A message longer
// than k.Cap() fails with ErrTruncate, one of another type with ErrType;
// either way it is consumed. A nil k fails with an error wrapping ErrArg.
func (c *Comm) RecvInto(k Sink, t Type, src, tag int) (Status, error) {
	r, err := c.startRecvInto(k, t, src, tag, true)
	if err != nil {
		return Status{}, err
	}
	st, _, err := c.finish(r)
	return st, err
}

// IrecvInto starts a [Comm.RecvInto]: k is called (at most once) before
// the request completes, and not after.
func (c *Comm) IrecvInto(k Sink, t Type, src, tag int) (*Request, error) {
	r, err := c.startRecvInto(k, t, src, tag, false)
	return user(r), err
}

// RecvIntoInit plans a [Comm.RecvInto] through k from src (or AnySource)
// with tag (or AnyTag), as a persistent request (see [Comm.RecvInit]):
// each [Request.Start] receives one message through k, allocating
// nothing. k is called (at most once a start) only while the request is
// active. A nil k fails with an error wrapping ErrArg.
func (c *Comm) RecvIntoInit(k Sink, t Type, src, tag int) (*Request, error) {
	if k == nil {
		return nil, fmt.Errorf("comm: recv from %s tag %s: nil sink: %w", engine.RankStr(src), engine.TagStr(tag), ErrArg)
	}
	if src == ProcNull {
		return c.nullInit(engine.KindRecv, t, tag)
	}
	if err := c.checkRecv(t, src, tag); err != nil {
		return nil, err
	}
	r := c.newReq(engine.KindRecv, false)
	r.SetRecvInto(engine.Type(t), k)
	return c.recvInit(r, src, tag), nil
}

func (c *Comm) startRecvInto(k Sink, t Type, src, tag int, pooled bool) (*engine.Request, error) {
	if k == nil {
		return nil, fmt.Errorf("comm: recv from %s tag %s: nil sink: %w", engine.RankStr(src), engine.TagStr(tag), ErrArg)
	}
	if src == ProcNull {
		return c.procNull(engine.KindRecv, t, tag, pooled)
	}
	if err := c.checkRecv(t, src, tag); err != nil {
		return nil, err
	}
	r := c.newReq(engine.KindRecv, pooled)
	r.SetRecvInto(engine.Type(t), k)
	return c.postRecv(r, src, tag, pooled)
}
