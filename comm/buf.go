package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/buffer"
	"github.com/mpgo/mpgo/comm/internal/engine"
)

// SendBuf hands b to rank dst, elements of type t: the receiver of a
// RecvBuf gets this very *buffer.Buf, so a pipeline of handoffs copies and
// allocates nothing. b must be idle (no views held): it is marked in
// flight until delivered, and from this call on the caller must not use
// it. A plain receive copies out of b, after which mpgo frees it.
func (c *Comm) SendBuf(b *buffer.Buf, t Type, dst, tag int) error {
	if b == nil {
		return fmt.Errorf("comm: SendBuf of a nil Buf: %w", ErrArg)
	}
	data, err := b.Bytes()
	if err != nil {
		return fmt.Errorf("comm: SendBuf: %w: %w", ErrArg, err)
	}
	if err := c.checkSend(len(data), t, dst, tag); err != nil {
		return err
	}
	if !c.ep.IsLocal(c.worldOf(dst)) {
		// Across processes the bytes are sent; b is the caller's again.
		return c.send(data, t, dst, tag, engine.ModeStandard)
	}
	if err := b.Acquire(); err != nil {
		return fmt.Errorf("comm: SendBuf: %w: %w", ErrArg, err)
	}
	r, err := c.startSendAttached(data, t, dst, tag, b)
	if err != nil {
		b.Done() //nolint:errcheck // just acquired
		return err
	}
	_, _, err = c.finish(r)
	return err
}

// RecvBuf receives a message as a *buffer.Buf of its own, which the caller
// frees: the sender's Buf itself after a SendBuf, otherwise a Buf from the
// run's pool holding a copy. Status.Count is in elements of t.
func (c *Comm) RecvBuf(t Type, src, tag int) (*buffer.Buf, Status, error) {
	r, err := c.startRecvAs(t, src, tag)
	if err != nil {
		return nil, Status{}, err
	}
	r.WaitPooled()
	got := r.GotBuf()
	st, _, err := c.finish(r)
	if err != nil {
		if got != nil {
			got.Free() //nolint:errcheck // never handed out
		}
		return nil, st, err
	}
	return got, st, nil
}

// startSendAttached is startSend in owned mode with b travelling along.
func (c *Comm) startSendAttached(data []byte, t Type, dst, tag int, b *buffer.Buf) (*engine.Request, error) {
	r := c.newReq(engine.KindSend, true)
	r.SetSend(engine.ModeOwned, engine.Type(t), data)
	r.SetAttached(b)
	return c.postSend(r, dst, tag, true)
}

// startRecvAs posts a pooled receive that delivers a Buf.
func (c *Comm) startRecvAs(t Type, src, tag int) (*engine.Request, error) {
	if err := c.checkRecv(t, src, tag); err != nil {
		return nil, err
	}
	r := c.newReq(engine.KindRecv, true)
	r.SetRecvBuf(engine.Type(t))
	return c.postRecv(r, src, tag, true)
}
