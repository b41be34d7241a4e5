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
// dispatcher's. In this process every request goes by rendezvous (see
// message.go), so its send completes when the destination takes it: the
// sender sends from slots, persistent sends of its own to that
// destination (SendFromInit, whose Source is the slot: the dispatcher
// reads the request the slot carries), keeps those in flight oldest
// first, waits on the oldest when win are, and reuses a slot once its
// send completed, so that a request allocates no send of its own.
// Between processes, every half-window-th request to a destination is a
// mark, a synchronous send, which completes only when the destination
// takes it; as a pair's messages stay in order, a completed mark means
// that every request before it was taken too. The sender keeps its marks
// in flight, oldest first, and waits on the oldest when the window is
// full. Replies and reports are not counted: they answer requests, at
// most one each.

// window is the flow control towards one destination: slots towards a
// rank of this process, marks towards another's.
type window struct {
	mu    sync.Mutex
	busy  []*slot // in flight, oldest first: the window
	sent  []*slot // taken: reusable once nobody waits on them any more
	seq   uint64  // requests sent
	taken uint64  // requests known to be taken: all those before it
	marks []*mark // in flight, oldest first
}

// slot sends requests by reference to a rank of this process, one at a
// time: its request is a persistent SendFromInit whose Source is the slot
// itself, and m the request it carries while it is in flight.
type slot struct {
	r       *comm.Request
	m       message
	waiters int         // goroutines waiting on r (w.mu guards it): r is not started again before they saw it done
	quiet   atomic.Bool // a dispatcher waits on r quietly (await)
}

// Pull: a slot goes by reference only (see inbound.Take).
func (s *slot) Pull(dst []byte) error {
	if dst == nil {
		return nil
	}
	return errByReference
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
	defer w.mu.Unlock()
	if m != nil {
		return ep.sendLocal(w, dst, m)
	}
	for {
		w.reap()
		if w.seq-w.taken < uint64(ep.win) || len(w.marks) == 0 {
			break
		}
		k := w.marks[0]
		if err := ep.awaitUnlocked(w, dst, k.r, &k.quiet); err != nil {
			return err
		}
	}
	isMark := w.seq%uint64(ep.half) == uint64(ep.half)-1
	ep.sent.Add(1)
	var r *comm.Request
	var err error
	if isMark {
		r, err = ep.ac.Issend(buf, comm.Byte, dst, kind)
	} else {
		r, err = ep.ac.Isend(buf, comm.Byte, dst, kind)
	}
	if err != nil {
		ep.handled.Add(1) // never sent: count it done, so the counts still balance
		return fmt.Errorf("am: send to rank %d: %w", dst, err)
	}
	if isMark {
		w.marks = append(w.marks, &mark{seq: w.seq, r: r})
	}
	w.seq++
	return nil
}

// sendLocal sends m to dst, a rank of this process, from a slot. w.mu
// held.
func (ep *Endpoint) sendLocal(w *window, dst int, m message) error {
	for {
		w.reapSlots()
		if len(w.busy) < ep.win {
			break
		}
		k := w.busy[0]
		k.waiters++
		err := ep.awaitUnlocked(w, dst, k.r, &k.quiet)
		k.waiters--
		if err != nil {
			return err
		}
	}
	s := w.reusable()
	if s == nil {
		s = new(slot)
		r, err := ep.ac.SendFromInit(s, localLen, comm.Byte, dst, kindLocal)
		if err != nil {
			return fmt.Errorf("am: send to rank %d: %w", dst, err)
		}
		s.r = r
	}
	s.m = m
	ep.sent.Add(1)
	if err := s.r.Start(); err != nil {
		s.m = nil
		w.sent = append(w.sent, s)
		ep.handled.Add(1) // never sent: count it done, so the counts still balance
		return fmt.Errorf("am: send to rank %d: %w", dst, err)
	}
	w.busy = append(w.busy, s)
	return nil
}

// reusable returns a slot whose send is over and that nobody waits on,
// taken off the sent ones, or nil. w.mu held.
func (w *window) reusable() *slot {
	for i, s := range w.sent {
		if s.waiters == 0 {
			last := len(w.sent) - 1
			w.sent[i], w.sent[last] = w.sent[last], nil
			w.sent = w.sent[:last]
			return s
		}
	}
	return nil
}

// awaitUnlocked waits for r, a send in flight towards dst, with w.mu
// released meanwhile.
func (ep *Endpoint) awaitUnlocked(w *window, dst int, r *comm.Request, quiet *atomic.Bool) error {
	w.mu.Unlock()
	_, err := ep.await(r, quiet)
	w.mu.Lock()
	if err != nil {
		return fmt.Errorf("am: waiting to send to rank %d: %w", dst, err)
	}
	return nil
}

// reapSlots moves the slots at the head of the busy ones whose sends
// completed to the sent ones: they leave the window at once, even while a
// goroutine still waits on one (it may be a suspended handler waiting for
// the dispatch token, which the caller may hold). w.mu held.
func (w *window) reapSlots() {
	i := 0
	for ; i < len(w.busy); i++ {
		s := w.busy[i]
		if _, done, _ := s.r.Test(); !done {
			break
		}
		s.m = nil
		w.sent = append(w.sent, s)
		w.busy[i] = nil
	}
	w.busy = w.busy[i:]
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
