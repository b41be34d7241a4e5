package am

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm"
)

// The dispatcher.
//
// Each endpoint has a dispatch token, held by one goroutine at a time,
// always one of the endpoint's dispatcher goroutines: the holder receives
// the next request (from any rank, any tag, on the request communicator)
// and runs its handler, then the next. So handlers of one endpoint run one
// at a time, and each sender's requests start in the order it sent them
// (the engine keeps a pair's messages in order).
//
// The holder receives with recv, a persistent receive (started again for
// each request) through the sink rx.
//
// A handler that blocks in a wait of package am (Future.Wait or
// WaitContext, or Post or Call waiting for the flow-control window)
// passes the token on before it sleeps, as a Charm++ threaded entry
// method does: to the first handler waiting to resume, or else to a new
// dispatcher goroutine, which goes on receiving. When its wait ends it
// asks for the token back (interrupting an idle holder by cancelling its
// receive), and once it has it, carries on; the holder that handed it over
// ends. Nested and cyclic calls thus progress: a handler of rank A that
// calls B, whose handler calls A, waits while A's next dispatcher runs
// that call. A wait knows it is a handler's own by the mark its dispatcher
// goroutine carries (self.go); anybody else's wait, and any other blocking
// call inside a handler (a Recv of its own, a channel), keeps the token.
//
// For the deadlock detector, a dispatcher goroutine is a helper of its
// rank ([comm.Comm.Go]): it counts as running while it runs a handler, and
// not while it waits for a request, or for a Future or the window while
// suspended ([comm.Request.WaitQuiet]). A rank whose own goroutine is
// blocked (in Call's Wait, say) is therefore blocked for the detector
// exactly when none of its handlers runs, and when every rank is, the
// blocked calls fail with [comm.ErrDeadlock]: a cycle of calls that cannot
// progress is reported, and a rank blocked while its handlers still work
// is not.
//
// Invariants:
//   - exactly one goroutine holds the token, or none and free is set
//     (after the dispatcher stopped or failed, until a handler that
//     resumes takes it);
//   - only the holder reads or writes held and rx, starts and waits on
//     recv, and sets running;
//   - idle is the holder's receive while it waits on it, nil otherwise;
//     resumeQ, free, stopping, failed, recheck, quiescing and closingAll
//     are guarded by mu, and attn is set whenever resumeQ, stopping,
//     failed or recheck asks the holder to look (so that the holder takes
//     mu only then, not at every request);
//   - a request is held, and nHeld counted, under regMu (see take).

// held is a request waiting for its handler's registration.
type held struct {
	kind int
	in   inbound
}

// startRunner starts a dispatcher goroutine that holds the token.
func (ep *Endpoint) startRunner() error {
	ep.runners.Add(1)
	_, err := ep.ac.Go(func() error {
		defer ep.runners.Done()
		runDispatcher(ep.id, ep.dispatch)
		return nil
	})
	if err != nil {
		ep.runners.Done()
	}
	return err
}

// dispatch is a dispatcher goroutine's loop: it holds the token, and
// returns once it has passed it on.
func (ep *Endpoint) dispatch() {
	for {
		if ep.attn.Load() {
			ep.mu.Lock()
			if len(ep.resumeQ) > 0 || ep.stopping || ep.failed != nil {
				ep.passToken()
				ep.mu.Unlock()
				return
			}
			recheck := ep.recheck
			ep.recheck = false
			ep.attn.Store(ep.attention())
			ep.mu.Unlock()
			if recheck {
				ep.releaseHeld()
				continue
			}
		}
		ep.rx = inbound{}
		r := ep.recv
		for ep.cancelling.Load() != 0 {
			runtime.Gosched() // a late cancel of the previous start is in progress: r is not to be touched
		}
		if err := r.Start(); err != nil {
			ep.fail(err)
			continue
		}
		// Idle: a poke that came before sees r and cancels it, or this
		// sees its flag (the two are sequentially consistent).
		ep.idle.Store(r)
		if ep.attn.Load() && ep.idle.CompareAndSwap(r, nil) {
			r.Cancel() //nolint:errcheck // a receive: Cancel cannot fail
		}
		ep.yieldFor(r, dispatcherYields)
		st, err := r.WaitQuiet()
		ep.idle.Store(nil)
		if err != nil {
			if !errors.Is(err, comm.ErrCanceled) {
				ep.fail(err)
			}
			continue
		}
		in := ep.rx
		ep.rx = inbound{}
		kind := st.Tag
		if in.local != nil {
			kind = in.local.kind()
		}
		ep.take(st.Source, kind, in)
	}
}

// attention reports whether the holder has anything to look at besides
// the next request. ep.mu held.
func (ep *Endpoint) attention() bool {
	return len(ep.resumeQ) > 0 || ep.stopping || ep.failed != nil || ep.recheck
}

// fail records that the dispatcher cannot receive any more.
func (ep *Endpoint) fail(err error) {
	ep.mu.Lock()
	if ep.failed == nil {
		ep.failed = fmt.Errorf("am: dispatcher: %w", err)
	}
	ep.attn.Store(true)
	ep.mu.Unlock()
}

// passToken gives the token to the first handler waiting to resume, or
// leaves it free. ep.mu held.
func (ep *Endpoint) passToken() {
	if len(ep.resumeQ) == 0 {
		ep.free = true
	} else {
		ch := ep.resumeQ[0]
		ep.resumeQ[0] = nil
		ep.resumeQ = ep.resumeQ[1:]
		close(ch)
	}
	ep.attn.Store(ep.attention())
}

// poke changes the holder's requests (set runs under mu) and wakes the
// holder if it waits for a message, so that it looks at them.
func (ep *Endpoint) poke(set func()) {
	ep.mu.Lock()
	set()
	ep.attn.Store(true)
	ep.mu.Unlock()
	ep.wakeIdle()
}

// wakeIdle cancels the idle holder's receive, if it is idle: it looks at
// its requests before receiving again. A cancellation that comes late
// (the holder received a message meanwhile) only costs the holder a turn;
// one in progress keeps the holder from starting the receive again
// (cancelling), as Cancel and Start must not meet.
func (ep *Endpoint) wakeIdle() {
	ep.cancelling.Add(1)
	if r := ep.idle.Swap(nil); r != nil {
		r.Cancel() //nolint:errcheck // a receive: Cancel cannot fail
	}
	ep.cancelling.Add(-1)
}

// take handles in, a request of the given kind (its tag) from rank from:
// it runs its handler, or holds it until the handler is registered, or
// fails it for want of one.
func (ep *Endpoint) take(from, kind int, in inbound) {
	if kind == kindReport {
		ep.takeReport(from, &in)
		return
	}
	if q, ok := ep.held[from]; ok { // behind an earlier one from the same sender
		ep.held[from] = append(q, held{kind, in})
		ep.nHeld.Add(1)
		return
	}
	key, epoch, err := in.key(kind)
	if err != nil || kind != kindPost && kind != kindCall {
		ep.drop(from, kind, err)
		return
	}
	e := ep.lookup(key)
	if e == nil {
		// Under regMu, so that a registration either comes first (and
		// the lookup finds it) or finds nHeld counting this one (and
		// pokes the holder to release it).
		ep.regMu.Lock()
		if e = ep.lookup(key); e == nil {
			ep.mu.Lock()
			fail := ep.failsUnknown(epoch)
			ep.mu.Unlock()
			if !fail {
				ep.held[from] = []held{{kind, in}}
				ep.nHeld.Add(1)
				ep.regMu.Unlock()
				return
			}
		}
		ep.regMu.Unlock()
		if e == nil {
			ep.noHandler(from, kind, key, &in)
			return
		}
	}
	ep.run(e, from, kind, &in)
}

// failsUnknown reports whether a request of the given epoch for a name not
// registered here fails now rather than waiting: after Close began, or
// while a Quiesce runs that its sender had not completed when it sent it
// (requests sent since are the next epoch's, and wait). ep.mu held.
func (ep *Endpoint) failsUnknown(epoch uint32) bool {
	return ep.closingAll || ep.quiescing >= 0 && int64(epoch) <= ep.quiescing
}

// run runs e on a request, as the running handler.
func (ep *Endpoint) run(e entry, from, kind int, in *inbound) {
	ep.running.Store(true)
	e.serve(ep, from, kind, in)
	ep.running.Store(false)
	ep.handled.Add(1)
}

// takeReport records a failed Post's report.
func (ep *Endpoint) takeReport(from int, in *inbound) {
	switch r, ok := in.local.(*report); {
	case ok:
		ep.recordPostErr(from, r.key, r.status, r.msg)
	case len(in.data) < keyLen+1 || in.data[keyLen] >= nStatus:
		ep.drop(from, kindReport, fmt.Errorf("am: report of %d bytes: %w", len(in.data), comm.ErrType))
		return // counted by drop
	default:
		ep.recordPostErr(from, binary.LittleEndian.Uint64(in.data), in.data[keyLen], string(in.data[keyLen+1:]))
	}
	ep.handled.Add(1)
}

// drop counts a message that cannot be handled (malformed) as handled and
// keeps its error for Quiesce.
func (ep *Endpoint) drop(from, kind int, err error) {
	if err == nil {
		err = fmt.Errorf("am: message of kind %d: %w", kind, comm.ErrType)
	}
	ep.errMu.Lock()
	if len(ep.postErrs) < maxPostErrs {
		ep.postErrs = append(ep.postErrs, fmt.Errorf("am: from rank %d: %w", from, err))
	} else {
		ep.lost++
	}
	ep.errMu.Unlock()
	ep.handled.Add(1)
}

// releaseHeld runs the held requests whose handlers are registered now,
// in each sender's order, and fails with ErrNoHandler those that
// failsUnknown says should not wait any more. The token may pass on while
// a handler runs, and another holder release some meanwhile: the queues
// are read afresh each time.
func (ep *Endpoint) releaseHeld() {
	senders := make([]int, 0, len(ep.held))
	for from := range ep.held {
		senders = append(senders, from)
	}
	for _, from := range senders {
		for {
			q := ep.held[from]
			if len(q) == 0 {
				break
			}
			h := q[0]
			key, epoch, _ := h.in.key(h.kind) // checked when it was held
			e := ep.lookup(key)
			if e == nil {
				ep.mu.Lock()
				fail := ep.failsUnknown(epoch)
				ep.mu.Unlock()
				if !fail {
					break
				}
			}
			if len(q) == 1 {
				delete(ep.held, from)
			} else {
				q[0] = held{}
				ep.held[from] = q[1:]
			}
			ep.nHeld.Add(-1)
			if e != nil {
				ep.run(e, from, h.kind, &h.in)
			} else {
				ep.noHandler(from, h.kind, key, &h.in)
			}
		}
	}
}

// noHandler fails a request for a name not registered here.
func (ep *Endpoint) noHandler(from, kind int, key uint64, in *inbound) {
	defer ep.handled.Add(1)
	fail := &HandlerError{Rank: ep.rank, Handler: fmt.Sprintf("#%016x", key), status: statusNoHandler}
	switch {
	case kind == kindPost:
		ep.report(from, key, fail)
	case in.local != nil:
		in.local.fail(fail)
		ep.reply(from, in.callTag(), in.local, nil)
	default:
		ep.reply(from, in.callTag(), nil, statusBytes(nil, statusNoHandler, ""))
	}
}

// inHandler reports whether the calling goroutine is one of ep's
// dispatchers (running a handler, or between two).
func (ep *Endpoint) inHandler() bool {
	if !onDispatcherGoroutine() {
		return false
	}
	id, ok := stackMark()
	return ok && id == ep.id
}

// onDispatcher reports whether the calling goroutine is the handler of ep
// that runs now.
func (ep *Endpoint) onDispatcher() bool { return ep.running.Load() && ep.inHandler() }

// suspend passes the token on, for the running handler, which is about to
// block: to the first handler waiting to resume, or a new dispatcher.
func (ep *Endpoint) suspend() {
	ep.running.Store(false)
	ep.mu.Lock()
	if len(ep.resumeQ) > 0 || ep.stopping || ep.failed != nil {
		ep.passToken()
		ep.mu.Unlock()
		return
	}
	ep.mu.Unlock()
	if err := ep.startRunner(); err != nil {
		ep.fail(err)
		ep.mu.Lock()
		ep.passToken()
		ep.mu.Unlock()
	}
}

// resume takes the token back for a handler whose wait ended.
func (ep *Endpoint) resume() {
	ep.mu.Lock()
	if ep.free {
		ep.free = false
		ep.mu.Unlock()
	} else {
		ch := make(chan struct{})
		ep.resumeQ = append(ep.resumeQ, ch)
		ep.attn.Store(true)
		ep.mu.Unlock()
		ep.wakeIdle()
		<-ch
	}
	ep.running.Store(true)
}

// Yields before a wait. A Call's round trip is two hand-offs between
// goroutines (the caller's to the destination's dispatcher and back),
// where a ping-pong of the same ranks has two between their own
// goroutines, which the engine lets spin while the other runs; the
// dispatcher is a helper that never spins. Where the ranks share this
// process and do not outnumber the Ps (the engine yields there too, see
// its pollYields), the caller and the idle dispatcher yield their P a few
// times more before they sleep: a goroutine the other just woke runs at
// once on the P, and the answer often comes back before either has to
// sleep and be woken (over a device it comes through the device's
// goroutines, and yielding only delayed it: the TCP round trip went from
// 1.19x to 2.19x Send/Recv's, medians of 5): a round trip
// of an empty Call 1.23 -> 0.90 µs beside 0.50-0.51 µs for Send/Recv
// (BenchmarkRoundTrip, medians of 4 alternated runs, 2 cores; more yields
// did no better).
const (
	callerYields     = 4
	dispatcherYields = 2
)

// yieldFor yields the caller's P up to n times while r is not done, in a
// world where that pays (see above).
func (ep *Endpoint) yieldFor(r *comm.Request, n int) {
	if !ep.yields {
		return
	}
	for range n {
		if _, done, _ := r.Test(); done {
			return
		}
		runtime.Gosched()
	}
}

// await waits for r, a Future's reply or a flow-control mark of ep. The
// running handler passes the token on meanwhile and waits quietly (quiet
// is r's flag: one goroutine may); anybody else waits as usual.
func (ep *Endpoint) await(r *comm.Request, quiet *atomic.Bool) (comm.Status, error) {
	if st, ok, err := r.Test(); ok {
		return st, err
	}
	if !ep.onDispatcher() {
		return r.Wait()
	}
	ep.suspend()
	defer ep.resume()
	if quiet.CompareAndSwap(false, true) {
		defer quiet.Store(false)
		return r.WaitQuiet()
	}
	return r.Wait()
}

// awaitContext waits for r or ctx, whichever is first, and returns
// ctx.Err() in the second case. The running handler passes the token on
// meanwhile, but counts as running: a wait that may end by its context is
// no deadlock.
func (ep *Endpoint) awaitContext(ctx context.Context, r *comm.Request) error {
	if !ep.onDispatcher() {
		if _, err := r.WaitContext(ctx); err != nil && ctx.Err() != nil {
			if _, ok, _ := r.Test(); !ok {
				return ctx.Err()
			}
		}
		return nil
	}
	ep.suspend()
	defer ep.resume()
	select {
	case <-r.Done():
		return nil
	case <-ctx.Done():
		if _, ok, _ := r.Test(); ok {
			return nil
		}
		return ctx.Err()
	}
}
