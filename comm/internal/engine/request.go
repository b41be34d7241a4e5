package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mpgo/mpgo/buffer"
)

// Kind is what a request does.
type Kind uint8

// The kinds of request.
const (
	KindSend Kind = iota
	KindRecv
	KindProbe
)

func (k Kind) String() string {
	switch k {
	case KindSend:
		return "send"
	case KindRecv:
		return "recv"
	default:
		return "probe"
	}
}

// Mode selects the send protocol.
type Mode uint8

// The send modes.
const (
	ModeStandard Mode = iota // eager below the limit, rendezvous at or above
	ModeSync                 // completes only once the receive has matched
	ModeOwned                // the slice itself is handed over
)

// Request is an operation in flight: a send, a receive or a blocked probe
// (comm.Request is this type, as users see it: a defined type over it, so
// that none of the engine's methods show there). Wait, Test, Done and
// Cancel are safe for concurrent use; the rest is for its rank's goroutine
// that made it.
//
// A Request is completed exactly once, by whoever removes it from the
// matching queues (under that queue's lock): a matching peer, Cancel, an
// abort or the deadlock detector.
type Request struct {
	ev event
	// Results, written before ev fires: beside it, so that the waiter
	// reads the event and the outcome from the lines its completer wrote.
	st  Status
	err error

	kind   Kind
	mode   Mode
	pooled bool // internal request of a blocking call, recycled after use
	owned  bool // receive: take the sender's slice instead of copying
	flags  reqFlags
	// own: r was completed inside its own start, on the goroutine that
	// started it (settleAt), before anyone could wait for it or see it:
	// done without firing ev. Reset when r is recycled or restarted.
	// Only goroutines ordered after that start read it (done); the
	// deadlock detectors read fired instead: a request that any
	// goroutine parks on was never own.
	own   bool
	typ   Type
	t0hi  uint8 // start time, high bits (observe.go)
	ctx   uint64
	src   int // receive: requested local source or AnySource; send: sender's local rank
	tag   int // receive: requested tag or AnyTag
	peer  int // world rank of the peer, or AnySource
	seq   uint64
	buf   []byte
	ep    *Endpoint    // the rank that started it
	owner fmt.Stringer // the communicator, named in deadlock reports

	// Where the request waits to be matched (guarded by that queue's lock).
	in *inbox
	pr *pair // nil when queued in the inbox's AnySource queue

	x *reqExt // what only some requests need; nil until one does

	// Done channels and WaitAny, rarely used: created on demand.
	watch atomic.Pointer[watchers]

	// quiet is set while a quiet wait sleeps on r with its rank's helper
	// count given up (WaitQuiet): complete gives the count back before
	// it fires, so that the deadlock detector never sees the rank blocked
	// between the completion and the helper running again.
	quiet atomic.Uint32
	t0lo  uint32 // start time, low bits (observe.go)

	// remote is, for a send handed to the device, its generation (the
	// count of the request's sends to other processes) shifted left by
	// one, with bit 0 set while the device holds it: the device's
	// completion and a declared deadlock's settle who completes it by
	// one CAS, and a completion the device makes late, after the request
	// was recycled, finds another generation (distdeadlock.go).
	remote atomic.Uint32

	to int32 // send: destination's rank in the communicator (beside remote: Request stays in the 208-byte size class)
}

// reqExt is the part of a request that only some operations use: a
// payload a Source produces or a Sink takes, a received Buf, a Buf
// handed over, a rendezvous send's queued message. Kept apart so
// that a Request fits the 208-byte size class instead of 288: every
// non-blocking call allocates one, and a window of small receives
// (osu_bw) spends a fifth of its time allocating and collecting them.
// It is made by the request's starting goroutine before the start (the
// Set calls that need it) or, for m, under the pair's lock that guards
// m; a pooled request keeps it across uses (Finish clears it).
type reqExt struct {
	from    Source      // send: SendFrom's payload, instead of buf
	fromLen int         // send: bytes from produces
	sink    Sink        // receive: RecvInto's destination, instead of buf
	gotBuf  *buffer.Buf // RecvBuf: the Buf received
	att     *buffer.Buf // send: the Buf handed over with buf (SendBuf)
	m       *msg        // a rendezvous send: its queued message (guarded by its pair's lock)
}

// ext returns r's extension, made on first use (see reqExt for who may).
func (r *Request) ext() *reqExt {
	if r.x == nil {
		r.x = new(reqExt)
	}
	return r.x
}

// sink returns RecvInto's destination, nil for any other receive.
func (r *Request) sink() Sink {
	if r.x == nil {
		return nil
	}
	return r.x.sink
}

// from returns SendFrom's payload and its length; nil for any other send.
func (r *Request) from() (Source, int) {
	if r.x == nil {
		return nil, 0
	}
	return r.x.from, r.x.fromLen
}

// queued returns a rendezvous send's queued message (under its pair's
// lock), or nil.
func (r *Request) queued() *msg {
	if r.x == nil {
		return nil
	}
	return r.x.m
}

// reqFlags are a Request's rarely set properties.
type reqFlags uint8

const (
	flagAsBuf      reqFlags = 1 << iota // receive (with owned): deliver a *buffer.Buf
	flagCollective                      // a non-blocking collective's request, which Cancel refuses (the operation runs on; SetCollective)
)

// States of Request.quiet.
const (
	quietNone     uint32 = iota
	quietSleeping        // a quiet wait sleeps on r, its helper count given up
	quietWoken           // complete counted the helper back in
)

// watchers are the channels to signal when a request completes, and
// what restarts a persistent request (kept here, off the hot path: a
// Request is exactly one 288-byte size class).
type watchers struct {
	mu     sync.Mutex
	doneCh chan struct{}
	list   []chan<- struct{}
	// armed is set (under mu) once doneCh or list is made, before the
	// maker looks whether the request completed; a completion looks at
	// it after firing, and takes mu only where it is set. So a
	// persistent request, whose watchers always exist (restart), takes
	// no lock to complete or start when nobody asked for a Done channel
	// (the two atomics order as Dekker's: one of the two sees the other).
	armed   atomic.Bool
	restart func(*Request) error // persistent.go; nil for any other request
	inline  func()               // persistent.go: runs the started operation on the waiter's goroutine, if nobody has yet
	free    func()               // persistent.go: what Free does besides refusing later starts
}

// complete records the result and fires the request. The caller owns r (it
// removed it from its queue or never queued it). Count is converted from
// bytes to elements of the request's type.
func (r *Request) complete(st Status, err error) { r.completeAt(st, err, 0) }

// completeAt is complete, now being the clock of r's world's recorder
// (observe.go), when the caller read it a moment ago; 0 when not.
func (r *Request) completeAt(st Status, err error, now int64) {
	if sz := r.typ.Size(); sz > 1 {
		st.Count /= sz
	}
	r.st, r.err = st, err
	if r.kind == KindSend {
		if o := r.ep.observer(); o != nil {
			r.traceSend(o, err, now)
		}
	}
	if r.quiet.Load() == quietSleeping && r.quiet.CompareAndSwap(quietSleeping, quietWoken) {
		r.ep.helpers.Add(1)
	}
	if !r.own {
		r.ev.fire()
	}
	if w := r.watch.Load(); w != nil {
		w.notify()
	}
}

func (w *watchers) notify() {
	if !w.armed.Load() {
		return
	}
	w.mu.Lock()
	if w.doneCh != nil && w.doneCh != closedCh {
		close(w.doneCh)
		w.doneCh = closedCh
	}
	for _, c := range w.list {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	w.list = nil
	w.mu.Unlock()
}

// watchers returns r's watchers, creating them.
func (r *Request) watchers() *watchers {
	if w := r.watch.Load(); w != nil {
		return w
	}
	r.watch.CompareAndSwap(nil, new(watchers))
	return r.watch.Load()
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// settleAt is completeAt for a request that completes inside its own
// start, on the goroutine that started it, before any other goroutine
// can wait for it or see it: it is marked done by a plain store (own)
// instead of firing its event, an atomic swap, which was a tenth of a
// send and receive to self in a profile.
func (r *Request) settleAt(st Status, err error, now int64) {
	r.own = true
	r.completeAt(st, err, now)
}

func (r *Request) done() bool { return r.own || r.ev.fired() }

// fired is done for a goroutine that may run beside r's owner recycling
// it (the deadlock detectors): a request some goroutine parks on is
// never own, so its event tells.
func (r *Request) fired() bool { return r.ev.fired() }

// result returns the outcome, with the error wrapped in context.
func (r *Request) result() (Status, error) {
	if r.err != nil {
		return r.st, r.describeErr(r.err)
	}
	return r.st, nil
}

func (r *Request) describeErr(err error) error {
	if r.flags&flagCollective != 0 { // a stand-in receive: its peer and tag mean nothing to the caller
		return fmt.Errorf("comm: %v: %w", r.owner, err)
	}
	switch r.kind {
	case KindSend:
		return fmt.Errorf("comm: send to rank %d tag %d: %w", r.to, r.tag, err)
	case KindRecv:
		return fmt.Errorf("comm: recv from %s tag %s: %w", RankStr(r.src), TagStr(r.tag), err)
	default:
		return fmt.Errorf("comm: probe %s tag %s: %w", RankStr(r.src), TagStr(r.tag), err)
	}
}

// RankStr names a source rank for an error: "rank 3", "any source".
func RankStr(r int) string {
	if r == AnySource {
		return "any source"
	}
	return fmt.Sprintf("rank %d", r)
}

// TagStr names a tag for an error: "7", "any".
func TagStr(t int) string {
	if t == AnyTag {
		return "any"
	}
	return fmt.Sprint(t)
}

// Wait blocks until the request completes and returns its status. For a
// receive, Count is in elements of the receive's type.
func (r *Request) Wait() (Status, error) {
	if r == nil {
		return Status{}, fmt.Errorf("comm: wait on nil request: %w", ErrArg)
	}
	if !r.done() {
		if w := r.watch.Load(); w != nil && w.inline != nil {
			w.inline()
		}
		if !r.done() && !r.poll(true) {
			r.ep.park(r)
		}
	}
	return r.result()
}

// WaitContext is Wait that gives up when ctx is done first, returning
// ctx.Err() and leaving r as it was (still in flight, to be waited for,
// tested or cancelled later), as x/sync/semaphore's Acquire does. Since
// the caller may leave by its context, the deadlock detector does not
// take it for blocked meanwhile.
func (r *Request) WaitContext(ctx context.Context) (Status, error) {
	if r == nil {
		return Status{}, fmt.Errorf("comm: wait on nil request: %w", ErrArg)
	}
	if ctx.Done() == nil {
		return r.Wait()
	}
	if !r.done() {
		if err := ctx.Err(); err != nil {
			return Status{}, err
		}
		if !r.poll(true) && !r.ep.drive(r) {
			r.ep.flushDeferred()
			r.ep.blockIn()
			defer r.ep.blockOut()
			select {
			case <-r.Done():
			case <-ctx.Done():
				if !r.done() {
					return Status{}, ctx.Err()
				}
			}
		}
	}
	return r.result()
}

// Test reports whether the request completed, without blocking; when it has,
// it returns the status and error as Wait would.
func (r *Request) Test() (Status, bool, error) {
	if r == nil {
		return Status{}, false, fmt.Errorf("comm: test of nil request: %w", ErrArg)
	}
	if !r.done() {
		r.progress()
		if !r.done() {
			return Status{}, false, nil
		}
	}
	st, err := r.result()
	return st, true, err
}

// UserDone is Done for the rank's own code, which may wait on the
// channel outside the engine: the rank's lanes are never armed from then
// on (lane.go). The engine's own waits on Done (a collective's gate,
// WaitContext) go through blockIn or park instead.
func (r *Request) UserDone() <-chan struct{} {
	if r.ep != nil {
		r.ep.watched()
		r.ep.flushDeferred() // the rank may wait on it outside the engine: progress starts now (see progress)
	}
	return r.Done()
}

// Done returns a channel that is closed when the request completes, for use
// in a select statement. Call Wait or Test afterwards for the result.
func (r *Request) Done() <-chan struct{} {
	w := r.watchers()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.doneCh == nil {
		w.armed.Store(true)
		w.doneCh = make(chan struct{})
		if r.done() { // completed before the watchers were visible
			close(w.doneCh)
			w.doneCh = closedCh
		}
	}
	return w.doneCh
}

// addWatch registers c to be signalled (non-blocking send) on completion.
// Reports false when the request has already completed.
func (r *Request) addWatch(c chan<- struct{}) bool {
	w := r.watchers()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed.Store(true)
	if r.done() {
		return false
	}
	w.list = append(w.list, c)
	return true
}

func (r *Request) removeWatch(c chan<- struct{}) {
	w := r.watchers()
	w.mu.Lock()
	for i, x := range w.list {
		if x == c {
			w.list = append(w.list[:i], w.list[i+1:]...)
			break
		}
	}
	w.mu.Unlock()
}

// SetCollective marks r as a non-blocking collective's request, which
// Cancel refuses: completing it would leave the operation running.
func (r *Request) SetCollective() { r.flags |= flagCollective }

// Cancel cancels a receive that has not matched a message yet; Wait then
// returns an error wrapping [ErrCanceled]. Cancelling a receive that already
// matched (or completed) does nothing and returns nil: Wait reports the
// message as usual. Cancelling a send returns [ErrNotSupported] (MPI
// deprecated it; a standard send may already have been delivered).
func (r *Request) Cancel() error {
	if r == nil {
		return fmt.Errorf("comm: cancel of nil request: %w", ErrArg)
	}
	if r.kind == KindSend {
		return fmt.Errorf("comm: cancel of a send: %w", ErrNotSupported)
	}
	if r.flags&flagCollective != 0 {
		return fmt.Errorf("comm: cancel of a non-blocking collective (it runs on): %w", ErrNotSupported)
	}
	r.ep.retract(r, ErrCanceled)
	return nil
}

// WaitAny waits until one of the requests completes and returns its index,
// status and error. Nil requests are skipped; with none left it returns -1
// and an error wrapping [ErrArg].
func WaitAny(rs ...*Request) (int, Status, error) {
	var ep *Endpoint
	for i, r := range rs {
		if r == nil {
			continue
		}
		ep = r.ep
		if r.done() {
			st, err := r.result()
			return i, st, err
		}
	}
	if ep == nil {
		return -1, Status{}, fmt.Errorf("comm: WaitAny of no requests: %w", ErrArg)
	}
	w := make(chan struct{}, 1)
	wr := &waitRec{many: rs}
	for {
		for i, r := range rs {
			if r != nil && !r.addWatch(w) {
				for _, x := range rs[:i] {
					if x != nil {
						x.removeWatch(w)
					}
				}
				st, err := r.result()
				return i, st, err
			}
		}
		ep.parkChan(wr, w)
		for _, r := range rs {
			if r != nil {
				r.removeWatch(w)
			}
		}
		for i, r := range rs {
			if r != nil && r.done() {
				st, err := r.result()
				return i, st, err
			}
		}
	}
}

// waitRec is what a parked goroutine waits for: one request, or any of
// several. The deadlock detector reads it.
type waitRec struct {
	one  *Request
	many []*Request
}

func (w *waitRec) done() bool {
	if w.one != nil {
		return w.one.fired()
	}
	for _, r := range w.many {
		if r != nil && r.fired() {
			return true
		}
	}
	return false
}

func (w *waitRec) each(f func(*Request)) {
	if w.one != nil {
		f(w.one)
		return
	}
	for _, r := range w.many {
		if r != nil {
			f(r)
		}
	}
}
