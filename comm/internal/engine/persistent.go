package engine

import "fmt"

// Persistent requests (MPI_Send_init, MPI_Recv_init, MPI_Start): a request
// planned once, with its arguments checked once, and started any number
// of times, allocating nothing per start. Between two starts it is
// inactive: completed, with the last start's outcome (or, before the
// first, an empty status), so Wait and Test return at once.

// SetPersistent makes r persistent: each Start resets r and calls start,
// which posts it again (StartSend, StartRecv or Null with the arguments
// planned). r is inactive until the first Start.
func (r *Request) SetPersistent(start func(*Request) error) {
	r.watchers().restart = start // before anyone else can see r
	r.complete(Status{}, nil)
}

// Start starts inactive persistent request r again. It fails with ErrArg
// when r is not persistent or still active; when r cannot be posted (the
// world aborted, the communicator was freed) r completes with the error
// Start returns.
func (r *Request) Start() error {
	if r == nil {
		return fmt.Errorf("comm: start of nil request: %w", ErrArg)
	}
	w := r.watch.Load()
	switch {
	case w == nil || w.restart == nil:
		return fmt.Errorf("comm: start of a %s that is not persistent: %w", r.kind, ErrArg)
	case !r.done():
		return fmt.Errorf("comm: start of a %s that is active: %w", r.kind, ErrArg)
	}
	r.st, r.err = Status{}, nil
	if x := r.x; x != nil {
		x.gotBuf, x.m = nil, nil
	}
	r.in, r.pr = nil, nil
	if w.armed.Load() {
		w.mu.Lock()
		w.doneCh, w.list = nil, nil // Done makes a fresh channel for this start
		w.armed.Store(false)
		w.mu.Unlock()
	}
	r.ev.rearm()
	r.own = false
	if err := w.restart(r); err != nil {
		r.complete(Status{}, err)
		return err
	}
	return nil
}

// StartAll starts every request of rs in order (nil ones skipped) and
// returns the first error; the requests before it are started.
func StartAll(rs ...*Request) error {
	for _, r := range rs {
		if r == nil {
			continue
		}
		if err := r.Start(); err != nil {
			return err
		}
	}
	return nil
}

// SetInline gives persistent r a way to run a started operation on the
// goroutine that waits for it (Wait calls inline before it parks), when
// nobody has begun it yet: a persistent collective's worker otherwise
// runs it, so that it progresses without the waiter.
func (r *Request) SetInline(inline func()) { r.watchers().inline = inline }

// Completed reports whether r completed, without driving any progress
// (Ready does). For requests completed by Complete only (never own): it
// reads r's event alone, so another goroutine than r's owner may ask
// while the owner starts r again.
func (r *Request) Completed() bool { return r.ev.fired() }

// Poll waits for r as a collective's gate does before it parks: it
// yields its P as Wait would, but at least once even where ranks
// outnumber Ps (the last member is then usually queued behind the
// caller; see comm's gateYields), then spins where that pays, and reports
// whether r completed; the caller parks otherwise, on something the
// deadlock detector and an abort see. For the rank's own goroutine only
// (it keeps the rank's running mark).
func (r *Request) Poll() bool { return r.done() || r.pollYields(true, max(1, r.ep.w.yields)) }

// SetFree gives persistent r what Free does besides refusing later
// starts (a persistent collective's worker stops).
func (r *Request) SetFree(free func()) { r.watchers().free = free }

// Free releases inactive persistent request r (MPI_Request_free): later
// starts fail with ErrArg. It fails with ErrArg for a request that is not
// persistent, or is active.
func (r *Request) Free() error {
	if r == nil {
		return fmt.Errorf("comm: free of nil request: %w", ErrArg)
	}
	w := r.watch.Load()
	switch {
	case w == nil || w.restart == nil:
		return fmt.Errorf("comm: free of a %s that is not persistent: %w", r.kind, ErrArg)
	case !r.done():
		return fmt.Errorf("comm: free of a %s that is active: %w", r.kind, ErrArg)
	}
	if w.free != nil {
		w.free()
	}
	w.restart = func(*Request) error { return fmt.Errorf("comm: start of a freed %s: %w", r.kind, ErrArg) }
	return nil
}
