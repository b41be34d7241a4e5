package am

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/puzpuzpuz/xsync/v4"

	"github.com/mpgo/mpgo/comm"
)

// Endpoint is one rank's side of an active-message layer over a
// communicator: its handlers, its dispatcher, and its private
// communicators. Every member of the communicator makes one with [New],
// registers the same handlers, and ends with [Endpoint.Close]. Its methods
// are safe for concurrent use, except that the collective Quiesce and
// Close are called by one goroutine of each rank, in the same order on
// every rank, and never by a handler.
type Endpoint struct {
	c          *comm.Comm // the communicator it was made on
	ac, rc     *comm.Comm // requests, replies (message.go)
	rank, size int
	id         uint64 // names ep in its dispatchers' stacks (self.go)
	win, half  int    // flow control (flow.go)
	yields     bool   // the ranks share this process and do not outnumber the Ps: waits yield a while (dispatch.go)

	handlers atomic.Pointer[map[uint64]entry] // copied on write, under regMu
	regMu    sync.Mutex
	tags     atomic.Uint32 // the last reply tag used

	flows *xsync.Map[int, *window] // by destination (flow.go)

	// Dispatch (dispatch.go). mu guards the dispatch token's state (who
	// waits for it, whether nobody holds it) and the requests to the
	// holder (stop, release held messages); attn tells the holder to look.
	mu         sync.Mutex
	resumeQ    []chan struct{}              // handlers whose waits ended, waiting for the token, oldest first
	free       bool                         // nobody holds the token (the dispatcher stopped or failed)
	attn       atomic.Bool                  // the holder has something to look at under mu
	idle       atomic.Pointer[comm.Request] // the holder's receive, while it waits for a message
	cancelling atomic.Int32                 // wakeIdle calls in progress
	stopping   bool                         // Close: the holder stops at its next turn
	failed     error                        // why the dispatcher stopped receiving, if it did
	recheck    bool                         // a registration or a Quiesce: the holder looks at the held messages again
	quiescing  int64                        // the epoch of the Quiesce in progress, -1 when none (failsUnknown)
	closingAll bool                         // Close began: requests for unknown names fail (failsUnknown)
	running    atomic.Bool                  // a handler runs (not waiting): a wait on ep may be its
	runners    sync.WaitGroup               // dispatcher goroutines
	recv       *comm.Request                // the holder's receive: persistent, from any rank, any tag, on ac
	rx         inbound                      // recv's sink
	held       map[int][]held               // by sender: requests that wait for their handler's registration (holder only)
	nHeld      atomic.Int32

	// Counts for Quiesce (quiesce.go): requests sent by this rank, and
	// requests handled (or dropped) here. Apart, as the rank's goroutine
	// bumps one and the dispatcher the other.
	sent    atomic.Int64
	_       [56]byte
	handled atomic.Int64
	_       [56]byte

	quiesced atomic.Uint32 // Quiesces completed: a request's epoch

	errMu    sync.Mutex
	postErrs []error // failed Posts reported back, since the last Quiesce
	lost     int     // more of them, not kept

	closing, closed atomic.Bool
}

// Option configures an [Endpoint].
type Option func(*Endpoint) error

// DefaultWindow is the default flow-control window: how many requests a
// rank may have sent to another that its dispatcher has not yet taken.
const DefaultWindow = 64

// WithWindow sets the flow-control window to n ≥ 1 requests per
// destination: a rank that has sent n requests to another that its
// dispatcher has not taken yet waits in Post or Call until it takes some
// (see the package documentation). Memory for requests in flight is thus
// bounded per pair of ranks.
func WithWindow(n int) Option {
	return func(ep *Endpoint) error {
		if n < 1 {
			return fmt.Errorf("am: WithWindow(%d): %w", n, comm.ErrArg)
		}
		ep.win = n
		return nil
	}
}

// New makes an endpoint on c for the calling rank and starts its
// dispatcher. Every member of c calls it, in the same order as its other
// calls that make communicators (it duplicates c twice, which needs no
// message).
func New(c *comm.Comm, opts ...Option) (*Endpoint, error) {
	if c == nil {
		return nil, fmt.Errorf("am: New on a nil communicator: %w", comm.ErrArg)
	}
	ep := &Endpoint{c: c, rank: c.Rank(), size: c.Size(), id: lastID.Add(1), win: DefaultWindow,
		flows: xsync.NewMap[int, *window](), held: make(map[int][]held), quiescing: -1}
	for _, o := range opts {
		if err := o(ep); err != nil {
			return nil, err
		}
	}
	ep.half = max(ep.win/2, 1)
	ep.yields = ep.size <= runtime.GOMAXPROCS(0)
	for r := 0; r < ep.size && ep.yields; r++ {
		ep.yields = c.IsLocal(r) // over a device the answer comes through the device's goroutines
	}
	var err error
	if ep.ac, err = c.Dup(); err != nil {
		return nil, fmt.Errorf("am: New: %w", err)
	}
	if ep.rc, err = c.Dup(); err != nil {
		return nil, fmt.Errorf("am: New: %w", err)
	}
	if ep.recv, err = ep.ac.RecvIntoInit(&ep.rx, comm.Byte, comm.AnySource, comm.AnyTag); err != nil {
		return nil, fmt.Errorf("am: New: %w", err)
	}
	ep.handlers.Store(&map[uint64]entry{})
	if err := ep.startRunner(); err != nil {
		return nil, fmt.Errorf("am: New: %w", err)
	}
	return ep, nil
}

// Rank returns the calling rank's number in the endpoint's communicator.
func (ep *Endpoint) Rank() int { return ep.rank }

// Size returns the number of ranks of the endpoint's communicator.
func (ep *Endpoint) Size() int { return ep.size }

// Comm returns the communicator the endpoint was made on.
func (ep *Endpoint) Comm() *comm.Comm { return ep.c }

// register adds e under key.
func (ep *Endpoint) register(key uint64, e entry) error {
	ep.regMu.Lock()
	defer ep.regMu.Unlock()
	name := e.handlerName()
	if ep.closed.Load() {
		return fmt.Errorf("am: register %q on a closed endpoint: %w", name, comm.ErrClosed)
	}
	old := *ep.handlers.Load()
	if o, ok := old[key]; ok {
		if o.handlerName() == name {
			return fmt.Errorf("am: %q registered twice: %w", name, comm.ErrArg)
		}
		return fmt.Errorf("am: %q and %q have the same key: %w", name, o.handlerName(), comm.ErrArg)
	}
	m := make(map[uint64]entry, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[key] = e
	ep.handlers.Store(&m)
	if ep.nHeld.Load() > 0 {
		ep.poke(func() { ep.recheck = true })
	}
	return nil
}

// lookup returns the handler registered under key, or nil.
func (ep *Endpoint) lookup(key uint64) entry { return (*ep.handlers.Load())[key] }

// usable checks that a request to h on dst may be sent.
func (ep *Endpoint) usable(what, name string, dst int) error {
	if ep.closed.Load() {
		return fmt.Errorf("am: %s %q on a closed endpoint: %w", what, name, comm.ErrClosed)
	}
	if dst < 0 || dst >= ep.size {
		return fmt.Errorf("am: %s %q on rank %d of %d: %w", what, name, dst, ep.size, comm.ErrRank)
	}
	return nil
}

// nextTag returns the tag of a new Call's reply: unique among the calls
// in flight from this rank, short of 2³⁰ of them.
func (ep *Endpoint) nextTag() int { return int(ep.tags.Add(1) & (1<<30 - 1)) }

// reply sends a Call's reply to rank to with tag: the request m itself,
// back to a rank of this process, or buf. Replies are not flow
// controlled (their caller's receive is posted already, and there is one
// per Call), and an error can only be the run's end, which the caller
// learns of by itself.
func (ep *Endpoint) reply(to, tag int, m message, buf []byte) {
	if m != nil {
		ep.rc.IsendFrom(m, localLen, comm.Byte, to, tag) //nolint:errcheck // see above
		return
	}
	ep.rc.Isend(buf, comm.Byte, to, tag) //nolint:errcheck // see above
}

// report sends the failure of a Post back to its poster, rank to, whose
// next Quiesce returns it. Like replies, reports are not flow controlled.
func (ep *Endpoint) report(to int, key uint64, e *HandlerError) {
	ep.sent.Add(1)
	var err error
	if ep.ac.IsLocal(to) {
		_, err = ep.ac.IsendFrom(&report{key: key, status: e.status, msg: e.Msg}, localLen, comm.Byte, to, kindReport)
	} else {
		h := binary.LittleEndian.AppendUint64(nil, key)
		_, err = ep.ac.Isend(statusBytes(h, e.status, e.Msg), comm.Byte, to, kindReport)
	}
	if err != nil {
		ep.handled.Add(1) // never sent: count it done, so the counts still balance
	}
}

// maxPostErrs is how many failed Posts an endpoint keeps for Quiesce to
// return; it counts the others.
const maxPostErrs = 16

// recordPostErr keeps the failure of a Post this rank made to rank from,
// as reported back: status and msg, for the handler keyed key.
func (ep *Endpoint) recordPostErr(from int, key uint64, status byte, msg string) {
	name := fmt.Sprintf("#%016x", key)
	if e := ep.lookup(key); e != nil {
		name = e.handlerName()
	}
	ep.errMu.Lock()
	defer ep.errMu.Unlock()
	if len(ep.postErrs) < maxPostErrs {
		ep.postErrs = append(ep.postErrs, fmt.Errorf("am: post: %w", &HandlerError{Rank: from, Handler: name, Msg: msg, status: status}))
	} else {
		ep.lost++
	}
}

// takeErrors returns, and forgets, the failed Posts reported so far and
// the dispatcher's failure, if any.
func (ep *Endpoint) takeErrors() error {
	ep.errMu.Lock()
	errs := ep.postErrs
	if ep.lost > 0 {
		errs = append(errs, fmt.Errorf("am: %d more posts failed: %w", ep.lost, ErrRemote))
	}
	ep.postErrs, ep.lost = nil, 0
	ep.errMu.Unlock()
	ep.mu.Lock()
	if ep.failed != nil {
		errs = append(errs, ep.failed)
	}
	ep.mu.Unlock()
	return errors.Join(errs...)
}

// Close ends the endpoint: it quiesces (see [Endpoint.Quiesce]), stops the
// dispatcher and frees the private communicators. Every member calls it;
// Posts and Calls fail afterwards with an error wrapping [comm.ErrClosed].
// It returns Quiesce's error; when that is the run's failure (an abort, a
// deadlock), handlers still waiting then end with the run.
func (ep *Endpoint) Close() error {
	if ep.inHandler() {
		return fmt.Errorf("am: close: %w", ErrInHandler)
	}
	if !ep.closing.CompareAndSwap(false, true) {
		return fmt.Errorf("am: close: %w", comm.ErrClosed)
	}
	err := ep.quiesce(true)
	ep.regMu.Lock()
	ep.closed.Store(true)
	ep.regMu.Unlock()
	ep.poke(func() { ep.stopping = true })
	if err == nil {
		ep.runners.Wait()
	}
	ep.ac.Free() //nolint:errcheck // ours, not freed before
	ep.rc.Free() //nolint:errcheck // ours, not freed before
	return err
}
