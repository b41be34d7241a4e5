package engine

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpgo/mpgo/buffer"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/trace"
)

// World is one run's set of ranks that share this process's memory: their
// inboxes, the abort state and the deadlock detector (comm.World is this
// type, as users see it). Nothing is shared between worlds.
//
// Safe for concurrent use.
type World struct {
	eps         []Endpoint
	eagerLimit  int
	eagerBuffer int64             // per pair (protocol.go)
	yields      int               // see pollYields
	running     []running         // each rank's running mark (spin.go); nil: never spin
	spare       bool              // Ps outnumber the world's ranks: a helper may have one of its own (Help)
	lanes       bool              // pairs of local ranks may get lanes (lane.go): at most laneRanks ranks, two or more here
	dev         device.Device     // nil when every rank is local
	progress    device.Progressor // dev, when waiting ranks drive its progress
	now         device.Immediate  // dev, when it can send a message at once (sendRemote)
	segments    device.Segments   // dev, when its processes can map memory together
	pool        *buffer.Pool      // eager copies
	local       []bool            // which world ranks run here; nil: all
	process     func(int) int     // Config.Process
	node        func(int) int     // Config.Node
	observe     *trace.Set        // Config.Observe

	state   atomic.Int32          // stateRunning, stateAborted, stateClosed
	cause   atomic.Pointer[error] // why the world aborted, when a device said (engine.PeerLost)
	pulls   sync.WaitGroup        // rendezvous payloads pulled on goroutines of their own (remote.go)
	copiers sync.WaitGroup        // helpers of shared copies into receives (copyin.go)

	shared   atomic.Pointer[any] // what the layer above keeps for the whole world (Shared)
	sharedMu sync.Mutex

	closed    chan struct{}  // closed by Close: long-lived workers (Endpoint.Go) end
	closeOnce sync.Once      // closes closed
	workers   sync.WaitGroup // Endpoint.Go's goroutines, which Close waits for

	// mu guards deadlock, and serialises the two whole-world sweeps
	// (sweep, declareDeadlock), which hold it while they take inbox locks
	// (match.go's lock order: w.mu, anyMu, pair.mu).
	mu       sync.Mutex
	deadlock *DeadlockError

	detector chan struct{} // closed by Close to stop the detector
	stopped  chan struct{}

	// The detector across processes (distdeadlock.go): messages handed to
	// the device and arrived from it, rendezvous payloads being pulled,
	// and the detector itself (nil: off).
	sent, arrived atomic.Uint64
	pulling       atomic.Int32
	across        atomic.Pointer[acrossDetector]
}

const (
	stateRunning int32 = iota
	stateAborted
	stateClosed
)

// DefaultEagerLimit is the message size (bytes) from which sends use the
// rendezvous protocol instead of an eager copy.
const DefaultEagerLimit = 64 << 10

// DefaultEagerBuffer is how many bytes of eager messages one sender may
// have queued at one receiver, not received yet, before its further
// messages wait for their receives (protocol.go).
const DefaultEagerBuffer = 64 << 20

// Config configures a [World]; comm.Config documents it for users (the
// same fields: comm converts one into the other).
type Config struct {
	EagerLimit     int
	EagerBuffer    int
	DetectDeadlock bool
	DetectInterval time.Duration
	Local          []int
	Device         device.Device
	Process        func(rank int) int
	Node           func(rank int) int
	Observe        *trace.Set // what to record of the run; nil: nothing
}

// Endpoint is one rank of a world: its inbox and what it is parked on.
type Endpoint struct {
	w     *World
	rank  int
	inbox inbox

	// parks counts the times a goroutine of this rank parked; waiting is
	// what it is parked on (nil while running). The deadlock detector reads
	// both; see detect.
	parks  atomic.Uint64
	pmu    sync.Mutex  // guards parked
	parked []*parkRec  // the goroutines of this rank parked now (parked.go)
	done   atomic.Bool // the rank's function returned
	obs    *trace.Rank // the engine's hooks record here (observe.go); nil: no timeline, no counters
	rec    *trace.Rank // what the world records of this rank, for comm; nil: nothing

	// Lanes (lane.go): how many of the rank's goroutines sleep in the
	// engine now, and whether one asked for a Done channel.
	sleepers atomic.Int32
	noArm    atomic.Bool

	helpers atomic.Int32 // running goroutines of non-blocking collectives: the rank is not blocked (AddHelper)

	// Work started on this rank that a worker runs once a goroutine of
	// the rank is about to park (Defer): a persistent collective that the
	// rank's Wait has not run itself.
	deferMu  sync.Mutex
	deferred []func()
	nDefer   atomic.Int32
}

// NewWorld creates a world of n ranks.
func NewWorld(n int, cfg Config) (*World, error) {
	if n < 1 {
		return nil, fmt.Errorf("comm: world of %d ranks: %w", n, ErrArg)
	}
	if cfg.EagerLimit < 0 {
		return nil, fmt.Errorf("comm: eager limit %d: %w", cfg.EagerLimit, ErrArg)
	}
	if cfg.EagerLimit == 0 {
		cfg.EagerLimit = DefaultEagerLimit
	}
	if cfg.EagerBuffer < 0 {
		return nil, fmt.Errorf("comm: eager buffer %d: %w", cfg.EagerBuffer, ErrArg)
	}
	if cfg.EagerBuffer == 0 {
		cfg.EagerBuffer = DefaultEagerBuffer
	}
	var local []bool
	if cfg.Local != nil {
		local = make([]bool, n)
		for _, r := range cfg.Local {
			if r < 0 || r >= n {
				return nil, fmt.Errorf("comm: local rank %d of %d: %w", r, n, ErrRank)
			}
			local[r] = true
		}
		if cfg.Device == nil && len(cfg.Local) < n {
			return nil, fmt.Errorf("comm: ranks outside this process and no device: %w", ErrArg)
		}
	}
	if cfg.Device != nil && cfg.Process == nil {
		return nil, fmt.Errorf("comm: a device and no process map: %w", ErrArg)
	}
	if cfg.Device != nil {
		cfg.DetectDeadlock = false
	}
	if cfg.DetectInterval <= 0 {
		cfg.DetectInterval = 5 * time.Millisecond
	}
	pool, err := buffer.NewPool(buffer.WithRegionSize(regionFor(cfg.EagerLimit)))
	if err != nil {
		return nil, fmt.Errorf("comm: eager pool: %w", err)
	}
	w := &World{eps: make([]Endpoint, n), eagerLimit: cfg.EagerLimit, eagerBuffer: int64(cfg.EagerBuffer), dev: cfg.Device, local: local, process: cfg.Process, node: cfg.Node, pool: pool, observe: cfg.Observe,
		closed: make(chan struct{})}
	if n <= runtime.GOMAXPROCS(0) && (local == nil || len(cfg.Local) > 1) {
		// Yields and spins wait for a rank of this process that may run
		// on this P or another; a process whose world has one rank here
		// (a launched job's usual shape) has none to wait for: its
		// waits go straight to the device's progress (Drive), where the
		// yields and the running marks only delayed noticing a reply.
		w.yields = pollYields
		w.running = make([]running, n)
		w.spare = n < runtime.GOMAXPROCS(0)
	}
	w.lanes = n <= laneRanks && (local == nil || len(cfg.Local) > 1)
	if p, ok := cfg.Device.(device.Progressor); ok {
		w.progress = p
	}
	w.segments, _ = cfg.Device.(device.Segments)
	w.now, _ = cfg.Device.(device.Immediate)

	for i := range w.eps {
		ep := &w.eps[i]
		ep.w, ep.rank = w, i
		ep.inbox.ep = ep
		if cfg.Observe != nil {
			ep.rec = cfg.Observe.Rank(i)
			if o := cfg.Observe.Options(); o.Trace || o.Stats {
				ep.obs = ep.rec // record/replay alone is comm's: the engine's hooks stay off
			}
		}
		if n <= directPairs {
			ep.inbox.direct = make([]atomic.Pointer[pair], n)
		}
	}
	if cfg.Device != nil {
		if err := cfg.Device.Start((*engine)(w)); err != nil {
			pool.Close() //nolint:errcheck // nothing was taken from it
			return nil, fmt.Errorf("comm: starting the device: %w", err)
		}
	}
	if cfg.DetectDeadlock {
		w.detector, w.stopped = make(chan struct{}), make(chan struct{})
		go w.detect(cfg.DetectInterval)
	}
	return w, nil
}

// Size returns the number of ranks.
func (w *World) Size() int { return len(w.eps) }

// Endpoint returns world rank r's endpoint.
func (w *World) Endpoint(rank int) *Endpoint { return &w.eps[rank] }

// World returns the world ep belongs to.
func (ep *Endpoint) World() *World { return ep.w }

// Shared returns what the layer above keeps for the whole world (comm:
// the world communicator's table of non-blocking collectives), made by
// mk on the first call; safe for concurrent use.
func (w *World) Shared(mk func() any) any {
	if v := w.shared.Load(); v != nil {
		return *v
	}
	w.sharedMu.Lock()
	defer w.sharedMu.Unlock()
	if v := w.shared.Load(); v != nil {
		return *v
	}
	v := mk()
	w.shared.Store(&v)
	return v
}

// Rank returns ep's world rank.
func (ep *Endpoint) Rank() int { return ep.rank }

// Err returns nil while ep's world runs, and then why it stopped.
func (ep *Endpoint) Err() error { return ep.w.failure() }

// Buffered returns how many bytes of eager messages from world rank src
// wait at ep, not received yet, as its eager buffer counts them (for
// tests).
func (ep *Endpoint) Buffered(src int) int {
	p := ep.inbox.pairOf(src)
	ep.inbox.drain(p)
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.unexp.bytes)
}

// IsLocal reports whether world rank r runs in this process.
func (ep *Endpoint) IsLocal(r int) bool { return ep.w.isLocal(r) }

// AllLocal reports whether every rank of ep's world runs in this process
// (a world with no device).
func (ep *Endpoint) AllLocal() bool { return ep.w.local == nil }

// Process returns the world's process map (Config.Process; nil: one
// process).
func (ep *Endpoint) Process() func(rank int) int { return ep.w.process }

// Segments returns the world's device's shared segments between
// processes (nil: it has none).
func (ep *Endpoint) Segments() device.Segments { return ep.w.segments }

// Node returns the world's node map (Config.Node; nil: none given).
func (ep *Endpoint) Node() func(rank int) int { return ep.w.node }

// Yields is how many times a waiter of this world yields before it parks
// (see pollYields).
func (ep *Endpoint) Yields() int { return ep.w.yields }

// Spins reports whether waiters of this world may spin (PollWord): its
// ranks fit its Ps. Where they do not, a wait only yields and parks.
func (ep *Endpoint) Spins() bool { return ep.w.running != nil }

// Defer registers kick, to be called once, before a goroutine of ep's
// rank next parks: work the rank started and will run itself if it comes
// to wait for it first, which must progress without it once it blocks on
// anything else. kick must not block (it runs under the list's lock).
func (ep *Endpoint) Defer(kick func()) {
	ep.deferMu.Lock()
	ep.deferred = append(ep.deferred, kick)
	ep.nDefer.Add(1)
	ep.deferMu.Unlock()
}

// flushDeferred calls the kicks registered by Defer.
func (ep *Endpoint) flushDeferred() {
	if ep.nDefer.Load() == 0 {
		return
	}
	ep.deferMu.Lock()
	for _, k := range ep.deferred {
		k() // never blocks: see Defer
	}
	clear(ep.deferred)
	ep.deferred = ep.deferred[:0]
	ep.nDefer.Store(0)
	ep.deferMu.Unlock()
}

// Go runs f on a goroutine of its own that the world's Close waits for: a
// long-lived worker of ep's rank (a persistent collective's), which must
// return once Closed is closed.
func (ep *Endpoint) Go(f func()) {
	ep.w.workers.Add(1)
	go func() {
		defer ep.w.workers.Done()
		f()
	}()
}

// Help runs f, an operation of ep's rank, on a goroutine of its own that
// counts as one of the rank's helpers while it runs (AddHelper).
//
// Where the world has Ps to spare (more Ps than ranks), the caller then
// yields, so that f starts at once on the caller's P and the caller moves
// to a P that is idle. Otherwise the new goroutine waits in its creator's
// run queue while the creator computes, until a P is free to run it:
//   - with Ps to spare but no yield, that was the time an idle P's thread
//     took to wake and steal it, 100–230 µs on the 16-core VM measured
//     (go tool trace), most of a 1 MiB Ialltoall on 4 ranks; handing the
//     P over took that benchmark's overlap from 28–35% to 84–92%
//     (typed's BenchmarkOverlap);
//   - where the ranks only fit the Ps, or outnumber them, no P is idle to
//     move to: a yield would only queue the caller behind f, and a
//     non-blocking collective waited for at once runs in the caller's
//     Wait instead (on 2 ranks of 2 Ps, Ibarrier and Wait took 12.7–13.5
//     µs yielding, 9.3–9.9 without).
func (ep *Endpoint) Help(f func()) {
	ep.helpers.Add(1) // running from now: see Request.WaitQuiet
	go func() {
		f()
		ep.helpers.Add(-1)
	}()
	if ep.w.spare {
		runtime.Gosched()
	}
}

// Closed returns a channel closed when the world closes.
func (ep *Endpoint) Closed() <-chan struct{} { return ep.w.closed }

// AddHelper counts a goroutine of a non-blocking collective running for
// ep's rank in (delta 1) or out (-1): the deadlock detector takes a rank
// with running helpers for a running rank.
func (ep *Endpoint) AddHelper(delta int32) { ep.helpers.Add(delta) }

// Err returns nil while w runs, else why not (as Endpoint.Err).
func (w *World) Err() error { return w.failure() }

// failure returns the error operations get once the world stopped running.
func (w *World) failure() error {
	switch w.state.Load() {
	case stateRunning:
		return nil
	case stateAborted:
		if c := w.cause.Load(); c != nil {
			return *c
		}
		return ErrAborted
	default:
		return ErrClosed
	}
}

// Abort fails every pending and later operation of every rank with
// ErrAborted. Safe to call more than once.
func (w *World) Abort() { w.AbortWith(nil) }

// AbortWith is Abort with a cause: the operations fail with an error that
// wraps both ErrAborted and cause (when not nil). The first abort wins.
func (w *World) AbortWith(cause error) {
	err := ErrAborted
	if cause != nil {
		err = fmt.Errorf("%w: %w", ErrAborted, cause)
	}
	if w.state.CompareAndSwap(stateRunning, stateAborted) {
		if cause != nil {
			w.cause.Store(&err) // an operation that starts before this store fails with plain ErrAborted
		}
		w.sweep(err)
	}
}

// Close ends the world: later operations fail with ErrClosed, anything
// still pending with ErrAborted, and the detector stops. Call it once every
// rank has returned, and after closing the world's device (a rendezvous
// still being pulled from it fails then, and Close waits for it). Close
// also waits for the helpers of shared copies (copyin.go), which finish
// at once: their copies completed before the ranks returned.
func (w *World) Close() {
	if w.state.CompareAndSwap(stateRunning, stateClosed) {
		w.sweep(ErrAborted)
	}
	w.state.Store(stateClosed)
	w.closeOnce.Do(func() { close(w.closed) })
	w.workers.Wait()
	w.pulls.Wait()
	w.copiers.Wait()
	if d := w.across.Load(); d != nil {
		d.stop()
	}
	if w.detector != nil {
		close(w.detector)
		<-w.stopped
		w.detector = nil
	}
	w.pool.Close() //nolint:errcheck // every message was swept: nothing is left in use
}

// regionFor sizes the eager pool's regions to hold 16 messages just under
// the eager limit (1 MiB for the default 64 KiB), at least 64 KiB: a region
// is allocated, and its pages first touched, the first time a run queues
// eager messages, so it is kept to what a busy rank pair needs.
func regionFor(eagerLimit int) int {
	r := 64 << 10
	for r < 16*eagerLimit && r < 1<<30 {
		r <<= 1
	}
	return r
}

// RankDone records that rank's function returned: it will not send again.
func (w *World) RankDone(rank int) {
	w.eps[rank].done.Store(true)
	w.eps[rank].markRunning(false)
	if d := w.across.Load(); d != nil {
		d.rankDone()
	}
}

// Deadlock returns the deadlock the detector found, or nil. The first
// call waits, up to a second, for the goroutines it failed to say where
// they were called (ResolveSites): call it once the ranks returned.
func (w *World) Deadlock() *DeadlockError {
	w.mu.Lock()
	d := w.deadlock
	w.mu.Unlock()
	if d != nil {
		d.resolve.Do(func() { ResolveSites(d.Ranks, time.Second) })
	}
	return d
}

// sweep removes everything from every queue and fails the requests with
// err. The state is no longer running, so nothing is queued after a queue
// was swept (queuing checks it under the queue's lock).
func (w *World) sweep(err error) {
	w.mu.Lock() // not while the deadlock detector unqueues
	defer w.mu.Unlock()
	var fail []*Request
	for i := range w.eps {
		in := &w.eps[i].inbox
		in.anyMu.Lock()
		fail = in.anyPosted.drain(fail)
		fail = append(fail, in.anyProbes...)
		in.anyProbes = nil
		in.anyN.Store(0)
		for _, p := range in.pairList {
			p.mu.Lock()
			fail = p.posted.drain(fail)
			fail = append(fail, p.probes...)
			p.probes = nil
			for p.unexp.len() > 0 {
				m := p.unexp.head
				p.unexp.remove(m)
				if m.sreq != nil {
					fail = append(fail, m.sreq)
				}
				freeMsg(m)
			}
			for len(p.claimed) > 0 {
				m := p.claimed[0]
				if m.sreq != nil {
					fail = append(fail, m.sreq)
				}
				p.unclaim(m, err)
			}
			p.mu.Unlock()
		}
		in.anyMu.Unlock()
	}
	for _, r := range fail {
		r.complete(Status{}, err)
	}
}

// retract removes r from its queue and completes it with err. Does nothing
// when r is not queued (it matched already: its matcher completes it).
func (ep *Endpoint) retract(r *Request, err error) bool {
	if r.in != nil {
		r.progress() // a message its lane holds came first
	}
	if !r.Take() {
		return false
	}
	r.complete(Status{}, err)
	return true
}

// park blocks the calling goroutine of this rank on r, registered for
// the deadlock detector.
func (ep *Endpoint) park(r *Request) {
	if ep.drive(r) {
		return // fired without a sleeper
	}
	ep.flushDeferred()
	p := ep.enter(waitRec{one: r})
	if ep.inbox.disarm(); r.done() { // a lane's message (lane.go)
		ep.leave(p)
		return
	}
	ep.markRunning(false)
	ep.sleepObserved(&r.ev)
	ep.markRunning(true)
	ep.leave(p)
}

// parkChan is park for a wait on several requests (WaitAny).
func (ep *Endpoint) parkChan(wr *waitRec, c <-chan struct{}) {
	if ep.driveMany(wr) {
		return
	}
	ep.flushDeferred()
	p := ep.enter(*wr)
	ep.inbox.disarm() // lane.go
	ep.markRunning(false)
	ep.waitObserved(c)
	ep.markRunning(true)
	ep.leave(p)
}

// OneSided returns the world's device as a [device.OneSided], and its
// progressor (nil when it has none), when it offers one-sided operations.
func (w *World) OneSided() (device.OneSided, device.Progressor) {
	os, _ := w.dev.(device.OneSided)
	if os == nil {
		return nil, nil
	}
	return os, w.progress
}
