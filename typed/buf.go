package typed

import (
	"github.com/mpgo/mpgo/buffer"
	"github.com/mpgo/mpgo/comm"
)

// SendBuf hands b, as elements of T, to rank dst: a RecvBuf there gets
// this very *buffer.Buf (the jbufs idea: explicitly managed memory passed
// along a pipeline with no copy and no allocation). b must hold no views;
// the caller must not use it afterwards.
func (c *Comm[T]) SendBuf(b *buffer.Buf, dst, tag int) error {
	return c.c.SendBuf(b, c.t, dst, tag)
}

// RecvBuf receives a message as a *buffer.Buf of the caller's, to view as
// []T with buffer.View and to Free (or SendBuf on) when done.
// Status.Count is in elements of T.
func (c *Comm[T]) RecvBuf(src, tag int) (*buffer.Buf, comm.Status, error) {
	return c.c.RecvBuf(c.t, src, tag)
}
