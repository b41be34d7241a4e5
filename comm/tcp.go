package comm

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/comm/internal/wire"
)

// The TCP device: this process's ranks reach the job's other processes
// through a wire.Transport (one listening socket, a connection per ordered
// pair of processes opened on first use, frames authenticated by the job
// secret at connection time). Arrivals are fed to the matching engine on
// the connection's reader goroutine, one at a time and in order, so the
// engine sees each pair's messages in the order they were sent:
//
//   - an eager message that matches a posted receive at once is read from
//     the socket straight into the receive buffer (no copy);
//   - one that must wait is buffered by the transport and copied into the
//     receive buffer when one matches (one copy);
//   - a rendezvous (synchronous, or large when the credit did not cover
//     it) waits with its sender; the receive that matches it sends
//     clear-to-send and the payload is read straight into its buffer. A
//     rendezvous that matches on arrival is pulled on a goroutine of its
//     own: the reader must stay free to read that very payload.
//
// A process that breaks off (its connection fails without a goodbye)
// aborts this world with a cause that wraps ErrPeerLost: every pending
// and later operation fails with it. A process that finishes normally
// says goodbye: what it sent stays receivable, and only the receives
// still waiting for it then fail (they could never complete).

// ErrPeerLost reports that a process of the job is gone. When it broke
// off (it died, its host did, its connection failed, or it sent a
// malformed frame) the whole job aborts: every pending and later
// operation fails with an error wrapping both ErrPeerLost and ErrAborted.
// When it finished normally, a receive or probe that was still waiting
// for one of its ranks, and a send to one, fail with ErrPeerLost alone.
var ErrPeerLost = errors.New("comm: peer process lost")

// tcpDevice adapts a wire.Transport to [Device].
type tcpDevice struct {
	w     *World // set before the transport starts
	t     *wire.Transport
	owner func(rank int) int
	pulls sync.WaitGroup // rendezvous pulled on arrival
}

var (
	_ Device       = (*tcpDevice)(nil)
	_ wire.Handler = (*tcpDevice)(nil)
)

// Send implements [Device].
func (d *tcpDevice) Send(src, dst int, env Envelope, data []byte, done func(error)) error {
	h := wire.Header{Src: src, Dst: dst, Source: env.Source, Tag: env.Tag, Context: env.Context, Type: uint8(env.Type)}
	if env.Sync {
		h.Flags = wire.FlagSync
	}
	return d.t.Send(d.owner(dst), h, data, done) // errors come wrapped (wrapError)
}

// wrapError is the transport's Config.WrapError: its errors wrap the
// engine's sentinels too.
func (d *tcpDevice) wrapError(proc int, err error) error {
	switch {
	case errors.Is(err, ErrPeerLost) || errors.Is(err, ErrClosed):
		return err // wrapped already
	case errors.Is(err, wire.ErrPeerGone):
		return fmt.Errorf("comm: process %d: %w: %w", proc, ErrPeerLost, err)
	case errors.Is(err, wire.ErrClosed):
		return fmt.Errorf("comm: process %d: %w: %w", proc, ErrClosed, err)
	}
	return err
}

// Close implements [Device]: a graceful goodbye to every connected
// process, or, when the world was aborted, an abrupt close that the others
// see as this process lost.
func (d *tcpDevice) Close() error {
	if d.w == nil || d.w.state.Load() == stateAborted {
		d.t.Abort()
	} else {
		d.t.Close()
	}
	d.pulls.Wait()
	return nil
}

// Arrive implements wire.Handler: it feeds a message from another process
// into its receiver's inbox, as [World.Deliver] does, and pulls it at once
// when a posted receive matches.
func (d *tcpDevice) Arrive(h *wire.Header, m *wire.Message) error {
	if Type(h.Type) >= numTypes {
		return fmt.Errorf("comm: message of element type %d: %w", h.Type, ErrArg)
	}
	w := d.w
	if !w.isLocal(h.Dst) {
		return fmt.Errorf("comm: message for rank %d, which is not here: %w", h.Dst, ErrRank)
	}
	mm := msg{ctx: h.Context, src: h.Source, tag: h.Tag, typ: Type(h.Type), remote: m, size: m.Size()}
	in := &w.eps[h.Dst].inbox
	rr, err := in.arrive(in.pairOf(h.Src), &mm)
	if err != nil {
		return nil // the world stopped: the message is dropped
	}
	if rr == nil {
		return nil
	}
	if !m.Rendezvous() {
		mm.remote = inlinePull{m}
		take(rr, &mm)
		return nil
	}
	pulled := mm // mm itself stays on the stack
	d.pulls.Add(1)
	go func() {
		defer d.pulls.Done()
		take(rr, &pulled)
	}()
	return nil
}

// pullsFromNetwork reports whether pulling r waits for a network round
// trip (a rendezvous whose payload is still with its sender in another
// process): a receive posted after such a message arrived then pulls it
// on a goroutine of its own (startRecv), so that Irecv does not wait for
// the payload and a window of receives overlaps its transfers.
func pullsFromNetwork(r Remote) bool {
	n, ok := r.(interface{ Rendezvous() bool })
	return ok && n.Rendezvous()
}

// inlinePull is the Remote of an eager message that matched on arrival:
// its payload is read from the connection into the receive buffer by the
// reader goroutine itself.
type inlinePull struct{ m *wire.Message }

func (p inlinePull) Pull(dst []byte) error { return p.m.PullInline(dst) }

// Finished implements wire.Handler: process proc sent its last message
// here, so the receives and probes naming one of its ranks that are
// pending now can never complete: they fail with an error wrapping
// ErrPeerLost. (Messages it sent stay receivable; a receive posted later
// that finds none waits, as in MPI.)
func (d *tcpDevice) Finished(proc int) {
	w := d.w
	var fail []*Request
	for r := range w.eps {
		if !w.isLocal(r) {
			continue
		}
		in := &w.eps[r].inbox
		for src := range w.eps {
			if d.owner(src) != proc {
				continue
			}
			p := in.pairOf(src)
			p.mu.Lock()
			for p.posted.len() > 0 {
				fail = append(fail, p.posted.remove(0))
			}
			fail = append(fail, p.probes...)
			p.probes = nil
			p.mu.Unlock()
		}
	}
	if len(fail) == 0 {
		return
	}
	err := fmt.Errorf("comm: process %d finished and sends nothing more: %w", proc, ErrPeerLost)
	for _, r := range fail {
		r.complete(Status{}, err)
	}
}

// Lost implements wire.Handler: a process that broke off aborts the
// world.
func (d *tcpDevice) Lost(proc int, err error) {
	d.w.failPeer(fmt.Errorf("comm: process %d: %w: %w", proc, ErrPeerLost, err))
}

// failPeer aborts the world because a process of the job was lost: every
// pending operation fails with an error wrapping ErrAborted and cause, and
// so does every later one.
func (w *World) failPeer(cause error) {
	err := fmt.Errorf("%w: %w", ErrAborted, cause)
	if w.state.CompareAndSwap(stateRunning, stateAborted) {
		w.cause.Store(&err)
		w.sweep(err)
	}
}
