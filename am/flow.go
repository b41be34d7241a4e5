package am

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm"
)

// Flow control.
//
// A rank may have at most win requests (Posts and Calls) to one
// destination that the destination's dispatcher has not taken yet; the
// next waits in Post or Call until it takes some. So a slow handler makes
// its senders wait, and the requests in flight between two ranks, and the
// memory they hold, are bounded; nothing is dropped or reordered.
//
// The sender learns what was taken without any message of the
// dispatcher's: every half-window-th request to a destination is a mark,
// sent so that its request completes only when the destination takes it
// (a synchronous send between processes; in this process every request
// goes by rendezvous anyway, see message.go), and as a pair's messages stay
// in order, a completed mark means that every request before it was taken
// too. The sender keeps its marks in flight, oldest first, and waits on the
// oldest when the window is full. Replies and reports are not counted:
// they answer requests, at most one each.

// window is the flow control towards one destination.
type window struct {
	mu    sync.Mutex
	seq   uint64  // requests sent
	taken uint64  // requests known to be taken: all those before it
	marks []*mark // in flight, oldest first
}

// mark is a request whose completion tells that the destination took it.
type mark struct {
	seq   uint64
	r     *comm.Request
	quiet atomic.Bool // a dispatcher waits on r quietly (await)
}

// windowTo returns the window towards dst.
func (ep *Endpoint) windowTo(dst int) *window {
	if w, ok := ep.flows.Load(dst); ok {
		return w
	}
	w, _ := ep.flows.LoadOrStore(dst, new(window))
	return w
}

// send sends a request of the given kind to dst, m by reference or buf,
// once the window towards dst has room, and counts it sent.
func (ep *Endpoint) send(dst, kind int, m message, buf []byte) error {
	w := ep.windowTo(dst)
	w.mu.Lock()
	for {
		w.reap()
		if w.seq-w.taken < uint64(ep.win) || len(w.marks) == 0 {
			break
		}
		k := w.marks[0]
		w.mu.Unlock()
		_, err := ep.await(k.r, &k.quiet)
		w.mu.Lock()
		if err != nil {
			w.mu.Unlock()
			return fmt.Errorf("am: waiting to send to rank %d: %w", dst, err)
		}
	}
	isMark := w.seq%uint64(ep.half) == uint64(ep.half)-1
	ep.sent.Add(1)
	var r *comm.Request
	var err error
	switch {
	case m != nil:
		r, err = ep.ac.IsendFrom(m, localLen, comm.Byte, dst, kind)
	case isMark:
		r, err = ep.ac.Issend(buf, comm.Byte, dst, kind)
	default:
		r, err = ep.ac.Isend(buf, comm.Byte, dst, kind)
	}
	if err != nil {
		w.mu.Unlock()
		ep.handled.Add(1) // never sent: count it done, so the counts still balance
		return fmt.Errorf("am: send to rank %d: %w", dst, err)
	}
	if isMark {
		w.marks = append(w.marks, &mark{seq: w.seq, r: r})
	}
	w.seq++
	w.mu.Unlock()
	return nil
}

// reap forgets the completed marks at the head. w.mu held.
func (w *window) reap() {
	for len(w.marks) > 0 {
		k := w.marks[0]
		if _, done, _ := k.r.Test(); !done {
			return
		}
		w.taken = k.seq + 1
		w.marks[0] = nil
		w.marks = w.marks[1:]
	}
}
