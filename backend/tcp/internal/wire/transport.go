package wire

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Transport errors.
var (
	// ErrPeerGone reports a process that cannot be reached any more: its
	// connection broke (it died, or its host did), it failed the
	// handshake, or it closed its end of the job.
	ErrPeerGone = errors.New("wire: peer process gone")
	// ErrClosed reports the use of a closed transport, and the transfers
	// a Close or Abort ended.
	ErrClosed = errors.New("wire: transport closed")
	// ErrConfig reports an unusable Config.
	ErrConfig = errors.New("wire: invalid configuration")
)

// Handler receives what a [Transport] takes off the network.
type Handler interface {
	// Arrive hands over a message for one of this process's ranks. It is
	// called on the reader goroutine of the connection from the sending
	// process, in the order that process sent its messages, so it must
	// not block: a [Message] is pulled later, or from inside Arrive with
	// [Message.PullArriving] when it is not a rendezvous. h is valid during
	// the call only. An error (a header the handler cannot accept) closes
	// the connection as malformed.
	Arrive(h *Header, m *Message) error
	// Finished reports that process proc sent its last message to this
	// one: its Fin arrived on the connection that carries its messages.
	// Called once at most, on that connection's reader goroutine, after
	// every Arrive from proc; not once Close or Abort began.
	Finished(proc int)
	// Lost reports that process proc broke off: its connection failed
	// without a Fin, or stayed silent for longer than Config.Heartbeat.
	// Pending transfers with it have failed or will fail with an error
	// wrapping ErrPeerGone. Called at most once per process, never after
	// Close or Abort began, from a transport goroutine.
	Lost(proc int, err error)
}

// Config configures a [Transport].
type Config struct {
	Self  int // this process, in [0, Procs)
	Procs int // processes in the job
	Ranks int // world ranks in the job
	// Owner returns the process that runs a world rank.
	Owner func(rank int) int
	// Secret is the job secret every connection proves it holds (at least
	// 16 bytes).
	Secret []byte
	// Listener accepts the other processes' connections; the Transport
	// closes it.
	Listener net.Listener
	// Addr returns the address process proc listens on; called once per
	// process, on first use, from a transport goroutine.
	Addr func(proc int) (string, error)
	// Handler receives messages and failures.
	Handler Handler
	// EagerLimit: messages shorter than this travel with their payload,
	// longer ones (and every synchronous send) by rendezvous unless the
	// credit covers them as they leave (see Send). Default 512 KiB, at
	// most 64 MiB.
	EagerLimit int
	// Window is the credit, in bytes, a sending process may have
	// outstanding at this one: eager payloads and messages not yet
	// received, each counted with MessageCost bytes of overhead. Default
	// 8 MiB, and at least 4× the largest eager message.
	Window int
	// Chunk is the largest piece of a rendezvous payload sent at once, so
	// that large transfers share a connection fairly: an eager message
	// waits behind at most one piece (about a millisecond on loopback).
	// Default 4 MiB: with 1 MiB pieces a window of 4 MiB messages (osu_bw)
	// ran at 0.63–0.86× a raw socket's rate, with 4 MiB at 0.89–0.98×.
	Chunk int
	// HandshakeTimeout bounds each handshake (default 10s), DialTimeout
	// each connection attempt (default 30s), CloseTimeout how long Close
	// waits for the peers to acknowledge (default 10s).
	HandshakeTimeout, DialTimeout, CloseTimeout time.Duration
	// KeepAlive is the TCP keep-alive idle time (default 15s), after which
	// a silent dead host is detected within a few more intervals.
	KeepAlive time.Duration
	// Heartbeat, when not zero, is how long a connection may stay silent
	// before its process counts as lost (at least MinHeartbeat; it is
	// declared lost after a heartbeat and a quarter or a half of silence):
	// TCP's keep-alive notices a dead host, but the kernel of a process
	// that is stopped (SIGSTOP) or wedged keeps its connections open and
	// answers for it. Each end of a connection writes a Ping frame every
	// quarter heartbeat in which it wrote nothing else, and anything it
	// reads counts as a sign of life: a frame, or part of one, also one
	// that waited in the socket while the reader was slow to run. Both
	// are done by the transport's goroutines, whatever the ranks' code is
	// doing. So that every process is watched, also by processes it never
	// exchanges messages with, Start connects each process to the next (a
	// ring) and waits until the previous one connected to it. The
	// processes of a job must agree on it.
	Heartbeat time.Duration
	// Spin, when not zero, is how long the connections' readers poll
	// their sockets after a rank of this process began to wait
	// (Transport.Waiting; poll.go) instead of waiting in the runtime's
	// network poller. Zero: they never poll. Set it only where this
	// process's polling cannot take a core from another process's work:
	// no more processes on the host than cores.
	Spin time.Duration
	// WrapError, when set, is applied to every error the transport
	// reports about process proc (through done, Send, Pull), so that they
	// wrap the caller's own sentinels as well; it should return an error
	// that already wraps them unchanged.
	WrapError func(proc int, err error) error
}

// MessageCost is the credit a message costs beyond its eager payload: a
// bound on what a queued message occupies at its receiver.
const MessageCost = 256

// MinHeartbeat is the shortest Config.Heartbeat: the scheduling delays and
// garbage-collection pauses of a loaded machine must not count as a lost
// process.
const MinHeartbeat = 100 * time.Millisecond

const (
	defaultEager  = 512 << 10
	defaultWindow = 8 << 20
	defaultChunk  = 4 << 20
	maxMessage    = 1 << 50
)

// Transport moves messages between this process and the job's others.
// Safe for concurrent use.
type Transport struct {
	cfg    Config
	ctx    context.Context // cancelled by Close and Abort: stops dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of the transport

	mu       sync.Mutex             // guards everything below
	out      []atomic.Pointer[conn] // by process: the connection to it, once used (read without mu)
	in       []*conn                // by process: its connection to this one
	gone     []error                // by process: why it cannot be reached; nil while it can
	lost     []bool                 // by process: Lost reported
	finished []bool                 // by process: it sent a Fin
	conns    map[*conn]struct{}
	shaking  map[net.Conn]struct{} // accepted, in the handshake
	started  bool
	closing  bool
	stopped  atomic.Bool   // closing, for outConn's path without mu
	joined   chan struct{} // signalled (never blocking) when a connection passed its handshake
	hot      atomic.Int64  // until when (time.Since(epoch)) the readers poll (poll.go)
	polled   atomic.Uint64 // reads that a poll returned bytes for (tests)
	pollers  atomic.Int32  // readers polling now (at most maxPollers)
	// pollersMax is the most readers seen polling at once (tests).
	pollersMax atomic.Int32
}

// New checks cfg and returns a transport that accepts connections once
// started.
func New(cfg Config) (*Transport, error) {
	switch {
	case cfg.Procs < 1 || cfg.Self < 0 || cfg.Self >= cfg.Procs:
		return nil, fmt.Errorf("%w: process %d of %d", ErrConfig, cfg.Self, cfg.Procs)
	case cfg.Ranks < cfg.Procs || cfg.Ranks > 1<<31-1:
		return nil, fmt.Errorf("%w: %d ranks in %d processes", ErrConfig, cfg.Ranks, cfg.Procs)
	case cfg.Owner == nil || cfg.Addr == nil || cfg.Handler == nil || cfg.Listener == nil:
		return nil, fmt.Errorf("%w: Owner, Addr, Handler and Listener are required", ErrConfig)
	case len(cfg.Secret) < minSecret:
		return nil, fmt.Errorf("%w: a secret of %d bytes, want at least %d", ErrConfig, len(cfg.Secret), minSecret)
	case cfg.EagerLimit < 0 || cfg.EagerLimit > MaxEagerLimit:
		return nil, fmt.Errorf("%w: eager limit %d, want 0 to %d", ErrConfig, cfg.EagerLimit, MaxEagerLimit)
	case cfg.Window < 0 || cfg.Window > maxWindow || cfg.Chunk < 0 || cfg.Chunk > maxChunk:
		return nil, fmt.Errorf("%w: window %d, chunk %d", ErrConfig, cfg.Window, cfg.Chunk)
	case cfg.Heartbeat < 0 || cfg.Heartbeat > 0 && cfg.Heartbeat < MinHeartbeat:
		return nil, fmt.Errorf("%w: heartbeat %v, want 0 (none) or at least %v", ErrConfig, cfg.Heartbeat, MinHeartbeat)
	}
	if cfg.EagerLimit == 0 {
		cfg.EagerLimit = defaultEager
	}
	if cfg.Window == 0 {
		cfg.Window = defaultWindow
	}
	if cfg.Chunk == 0 {
		cfg.Chunk = defaultChunk
	}
	setDefault(&cfg.HandshakeTimeout, 10*time.Second)
	setDefault(&cfg.DialTimeout, 30*time.Second)
	setDefault(&cfg.CloseTimeout, 10*time.Second)
	setDefault(&cfg.KeepAlive, 15*time.Second)
	t := &Transport{cfg: cfg,
		out: make([]atomic.Pointer[conn], cfg.Procs), in: make([]*conn, cfg.Procs),
		gone: make([]error, cfg.Procs), lost: make([]bool, cfg.Procs), finished: make([]bool, cfg.Procs),
		conns: map[*conn]struct{}{}, shaking: map[net.Conn]struct{}{}, joined: make(chan struct{}, 1)}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

// wrap applies Config.WrapError.
func (t *Transport) wrap(proc int, err error) error {
	if err == nil || t.cfg.WrapError == nil {
		return err
	}
	return t.cfg.WrapError(proc, err)
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// window is the credit granted to a dialer whose eager limit is eager:
// the configured window, raised so that the largest eager message fits
// well within it (credit comes back a quarter window at a time).
func (t *Transport) window(eager int) int {
	return min(max(t.cfg.Window, 4*(eager+MessageCost)), maxWindow)
}

// Start begins accepting connections. With a Heartbeat it also starts
// watching them, connects to the next process of the ring and waits until
// that connection and the previous process's to this one passed their
// handshakes (at most DialTimeout and HandshakeTimeout): from then on
// neither process can finish or break off unnoticed by the other. It
// fails when they do not, with an error wrapping ErrPeerGone.
func (t *Transport) Start() error {
	t.mu.Lock()
	if t.started || t.closing {
		t.mu.Unlock()
		return nil
	}
	t.started = true
	t.wg.Add(1)
	go t.acceptLoop()
	if t.cfg.Heartbeat > 0 {
		t.wg.Add(1)
		go t.heartbeat()
	}
	t.mu.Unlock()
	if t.cfg.Heartbeat == 0 || t.cfg.Procs == 1 {
		return nil
	}
	return t.ring()
}

// ring connects to the next process and waits until that connection and
// the previous process's connection to this one are up.
func (t *Transport) ring() error {
	next, prev := (t.cfg.Self+1)%t.cfg.Procs, (t.cfg.Self+t.cfg.Procs-1)%t.cfg.Procs
	out, err := t.outConn(next)
	if err != nil {
		return err
	}
	timeout := time.NewTimer(t.cfg.DialTimeout + t.cfg.HandshakeTimeout)
	defer timeout.Stop()
	for {
		out.mu.Lock()
		ready, oerr := out.ready, out.err
		out.mu.Unlock()
		t.mu.Lock()
		in, gone := t.in[prev], t.gone[prev]
		t.mu.Unlock()
		switch { // up first: a neighbour may finish as soon as its side is up
		case ready && in != nil:
			return nil
		case oerr != nil:
			return oerr
		case gone != nil:
			return gone
		}
		select {
		case <-t.joined:
		case <-t.ctx.Done():
			return t.wrap(prev, fmt.Errorf("wire: %w", ErrClosed))
		case <-timeout.C:
			if !ready {
				return t.wrap(next, fmt.Errorf("wire: process %d, the next in the heartbeat ring, did not answer: %w", next, ErrPeerGone))
			}
			return t.wrap(prev, fmt.Errorf("wire: process %d, the previous in the heartbeat ring, did not connect: %w", prev, ErrPeerGone))
		}
	}
}

// signalJoined wakes ring: a connection passed its handshake.
func (t *Transport) signalJoined() {
	select {
	case t.joined <- struct{}{}:
	default:
	}
}

// heartbeat is the transport's watch when Config.Heartbeat is set: four
// times a heartbeat it visits every connection (conn.beat).
func (t *Transport) heartbeat() {
	defer t.wg.Done()
	tick := time.NewTicker(t.cfg.Heartbeat / 4)
	defer tick.Stop()
	var conns []*conn
	for {
		select {
		case <-tick.C:
		case <-t.ctx.Done():
			return
		}
		now := time.Now()
		t.mu.Lock()
		conns = conns[:0]
		for c := range t.conns {
			conns = append(conns, c)
		}
		t.mu.Unlock()
		for _, c := range conns {
			c.beat(now)
		}
		clear(conns)
	}
}

// Addr returns the address the transport listens on.
func (t *Transport) Addr() net.Addr { return t.cfg.Listener.Addr() }

// EagerLimit returns the size from which messages go by rendezvous.
func (t *Transport) EagerLimit() int { return t.cfg.EagerLimit }

// Send transmits a message to process proc: h carries its envelope (Src,
// Dst, Source, Tag, Context, Type, and FlagSync for a synchronous send);
// the transport sets the rest. Messages to one process leave in the order
// of their Send calls.
//
// The transport owns data until it calls done, exactly once: with nil
// once data may be reused (eager: written out; rendezvous: the payload
// was written, or the receiver discarded it), or with the error that
// ended the transfer, wrapping ErrPeerGone or ErrClosed. When Send
// itself fails it does not call done.
//
// Send does not wait for the network: an eager message is written at once
// when the connection is idle and credit allows, and queued otherwise
// (also when it continues a burst of small sends, so that they leave
// together). A message at or above the eager limit that is not
// synchronous goes eagerly when the credit covers its payload as it
// leaves, by rendezvous otherwise.
func (t *Transport) Send(proc int, h Header, data []byte, done func(error)) error {
	if proc < 0 || proc >= t.cfg.Procs || proc == t.cfg.Self {
		return fmt.Errorf("wire: send to process %d of %d (this is %d): %w", proc, t.cfg.Procs, t.cfg.Self, ErrConfig)
	}
	c, err := t.outConn(proc)
	if err != nil {
		return err
	}
	m := outMsg{h: h, data: data, done: done}
	if h.Flags&FlagSync != 0 || len(data) >= t.cfg.EagerLimit {
		m.h.Kind, m.h.Len, m.h.Size = KindRTS, 0, uint64(len(data))
		m.rdv, m.cost = true, MessageCost
		m.flex = h.Flags&FlagSync == 0 && uint64(len(data)) <= math.MaxUint32
	} else {
		m.h.Kind, m.h.Len, m.h.Size = KindEager, uint32(len(data)), uint64(len(data))
		m.cost = MessageCost + len(data)
	}
	m.h.Flags &= FlagSync
	return c.send(&m)
}

// outConn returns the connection to proc, starting it on first use. Once
// the connection exists its own state says whether it still sends.
func (t *Transport) outConn(proc int) (*conn, error) {
	if c := t.out[proc].Load(); c != nil && !t.stopped.Load() {
		return c, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return nil, t.wrap(proc, fmt.Errorf("wire: send to process %d: %w", proc, ErrClosed))
	}
	if err := t.gone[proc]; err != nil {
		return nil, err
	}
	if c := t.out[proc].Load(); c != nil {
		return c, nil
	}
	c := newConn(t, proc, true)
	t.out[proc].Store(c)
	t.conns[c] = struct{}{}
	t.wg.Add(1)
	go c.dial()
	return c, nil
}

func (t *Transport) acceptLoop() {
	defer t.wg.Done()
	backoff := time.Duration(0)
	for {
		nc, err := t.cfg.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, or the like: wait and try again, as
			// net/http's server does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-t.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		t.mu.Lock()
		if t.closing {
			t.mu.Unlock()
			nc.Close()
			return
		}
		t.shaking[nc] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go t.accept(nc)
	}
}

// accept runs the handshake on an accepted connection and, when it
// passes, starts serving it. A connection that fails is closed having
// delivered nothing.
func (t *Transport) accept(nc net.Conn) {
	defer t.wg.Done()
	tune(nc, t.cfg.KeepAlive)
	hello, terms, err := AcceptHandshake(nc, t.cfg.Secret, t.cfg.Self, t.cfg.Procs, t.cfg.HandshakeTimeout,
		func(h Hello) (Terms, error) {
			return Terms{Window: t.window(h.Eager), Chunk: t.cfg.Chunk}, nil
		})
	t.mu.Lock()
	delete(t.shaking, nc)
	// A process that finished (sent its Fin on another connection) may
	// still have messages on this one, sent before it finished: serve it.
	// Only a lost process is refused.
	if err != nil || t.closing || t.in[hello.From] != nil || t.lost[hello.From] {
		t.mu.Unlock()
		nc.Close()
		return
	}
	c := newConn(t, hello.From, false)
	c.nc, c.terms = nc, terms
	// An eager frame may carry more than the dialer's eager limit: a larger
	// message goes eagerly when the credit covers it (promoteLocked), so
	// the window is what bounds it.
	c.lim = Limits{Ranks: t.cfg.Ranks, Eager: max(hello.Eager, terms.Window), Chunk: terms.Chunk, Message: maxMessage}
	c.ready = true
	t.in[hello.From] = c
	t.conns[c] = struct{}{}
	t.wg.Add(2)
	t.mu.Unlock()
	t.signalJoined()
	c.startReading()
	go c.writeLoop()
}

// tune sets the socket options of a connection: no Nagle delay (frames
// are written whole), and keep-alive probes to notice a dead host.
func tune(nc net.Conn, idle time.Duration) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: idle, Interval: idle / 3, Count: 3})
	}
}

// connDown records that c ended: cleanly (its peer sent a Fin, or this
// transport is closing) or not, in which case its process is lost.
func (t *Transport) connDown(c *conn, err error, clean bool) {
	t.mu.Lock()
	delete(t.conns, c)
	if t.closing || clean || t.finished[c.proc] {
		t.mu.Unlock()
		return
	}
	if t.gone[c.proc] == nil {
		t.gone[c.proc] = err
	}
	report := !t.lost[c.proc]
	t.lost[c.proc] = true
	siblings := []*conn{t.in[c.proc], t.out[c.proc].Load()}
	t.mu.Unlock()
	for _, s := range siblings {
		if s != nil && s != c {
			s.fail(err)
		}
	}
	if report {
		t.cfg.Handler.Lost(c.proc, err)
	}
}

// peerFinished records that process proc sent its Fin: it sends nothing
// more, and no more may be sent to it.
func (t *Transport) peerFinished(proc int) {
	t.mu.Lock()
	t.finished[proc] = true
	if t.gone[proc] == nil {
		t.gone[proc] = t.wrap(proc, fmt.Errorf("wire: process %d closed its end of the job: %w", proc, ErrPeerGone))
	}
	out, err := t.out[proc].Load(), t.gone[proc]
	t.mu.Unlock()
	if out != nil {
		out.shutdown(err)
	}
}

// Close ends the transport gracefully: transfers still queued fail with
// ErrClosed, every connection sends its Fin, and Close waits (up to
// CloseTimeout) for the peers to answer with theirs before closing the
// sockets. Every goroutine has exited when Close returns.
func (t *Transport) Close() error {
	conns, first := t.stop()
	if !first {
		t.wg.Wait()
		return nil
	}
	for _, c := range conns {
		c.shutdown(fmt.Errorf("wire: %w", ErrClosed))
	}
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(t.cfg.CloseTimeout):
		for _, c := range conns {
			c.fail(fmt.Errorf("wire: close timed out: %w", ErrClosed))
		}
		<-done
	}
	return nil
}

// Abort ends the transport at once: every connection is closed without a
// Fin, so the peers see this process as lost. Every goroutine has exited
// when Abort returns.
func (t *Transport) Abort() {
	conns, _ := t.stop()
	for _, c := range conns {
		c.fail(fmt.Errorf("wire: %w", ErrClosed))
	}
	t.wg.Wait()
}

// stop marks the transport closing and stops accepting and dialing. It
// returns the connections and whether this was the first stop.
func (t *Transport) stop() ([]*conn, bool) {
	t.mu.Lock()
	first := !t.closing
	t.closing = true
	t.stopped.Store(true)
	conns := make([]*conn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	for nc := range t.shaking {
		nc.Close()
	}
	t.mu.Unlock()
	t.cancel()
	t.cfg.Listener.Close()
	return conns, first
}
