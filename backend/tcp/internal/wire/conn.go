package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// conn is one connection between this process and process proc. The
// dialer sends messages on it (Eager, RTS, Data) and reads the frames
// that steer them (CTS, Credit); the acceptor does the opposite. Both
// send a Fin last.
//
// Invariants:
//   - One goroutine reads nc: the reader (readLoop), and PullArriving
//     called from inside it. Whoever holds wmu writes to nc: the writer
//     goroutine, or a sender on the fast path. Sequence numbers are given
//     out under wmu and mu together, so frames leave in sequence order.
//   - A message to send is in exactly one place: msgs (not yet written),
//     sending (an RTS written, waiting for its CTS), data (cleared to
//     send), or the writer's hands. Whoever takes it out of those calls
//     its done, exactly once. What the queues hold are pooled copies
//     (copyMsg), which finish gives back to the pool as it calls done.
//   - Nothing is queued once err is set or a Fin is queued; fail empties
//     every queue.
//   - Lock order: wmu before mu; rmu is never held with either.
//   - On the acceptor's side the reader may write control frames itself
//     (queueCtrl); it never writes anything else, and never waits for the
//     writer role.
type conn struct {
	t      *Transport
	proc   int
	dialer bool
	lim    Limits // acceptor: what the dialer's frames may be
	kick   chan struct{}
	quit   chan struct{} // closed by fail: the writer exits
	live   atomic.Int32  // reader and writer goroutines running; the last closes nc
	// lastSend is when the last send call returned (time.Since(epoch)).
	lastSend atomic.Int64
	coalesce atomic.Bool  // queue the frames of a burst (see burstGap)
	skipped  atomic.Int32 // burst frames written directly while coalesce was off
	// reads and writes count the reads from nc that returned bytes and the
	// writes to it that completed: the heartbeat's signs of traffic.
	reads, writes atomic.Uint64
	// What the heartbeat goroutine saw at its last beat, and whether it
	// watches nc with a read deadline; only it touches these.
	beatReads, beatWrites uint64
	watching              bool

	wmu  sync.Mutex // the writer role
	hbuf []byte     // headers of the batch being written (under wmu)
	iov  net.Buffers
	wv   net.Buffers // what writeBuffers hands WriteTo, which consumes it (a local escaped: an allocation a write)

	mu        sync.Mutex // guards everything below
	nc        net.Conn   // nil while dialing
	terms     Terms
	ready     bool  // the handshake passed
	err       error // why the connection ended; set once
	finQueued bool
	finSent   bool
	finRecv   bool
	ctrl      []Header            // frames that need no credit, written first
	msgs      []*outMsg           // dialer: messages not yet written, in send order
	data      []*outMsg           // dialer: rendezvous payloads cleared to send
	sending   map[uint64]*outMsg  // dialer: RTS written, waiting for the CTS
	credit    int                 // dialer: bytes it may still send
	seq       uint64              // dialer: the last message's sequence number
	used      int                 // acceptor: credit the dialer spent and did not get back
	owed      int                 // acceptor: credit freed and not yet returned
	nextSeq   uint64              // acceptor: the sequence number the next message must carry
	rerr      error               // acceptor: an inline read failed (the reader stops)
	rmu       sync.Mutex          // guards the arrival state of Messages and pulls
	rcond     sync.Cond           // signalled when a Message's payload arrived or failed
	pulls     map[uint64]*Message // acceptor: rendezvous pulled, waiting for their data
	rfailed   error               // acceptor: set (under rmu) once the reader stopped
	br        *bufio.Reader
	spare     *Message        // acceptor, reader-owned: a Message to reuse
	raw       syscall.RawConn // nc's descriptor, for the reader's polls (poll.go); nil if nc has none
	pr        poller          // reader-owned: poll's state
}

// outMsg is a message waiting to be written, or a rendezvous whose
// payload is.
type outMsg struct {
	h    Header
	data []byte
	done func(error)
	cost int
	rdv  bool
	// flex: a message at or above the eager limit that is not synchronous.
	// It leaves eagerly when the credit covers its payload at the moment it
	// is written (promoteLocked), by rendezvous otherwise.
	flex bool
	off  int // rendezvous: payload bytes written
}

// promoteLocked turns m, a rendezvous about to be written, into an eager
// message when it may go either way and the credit covers its payload.
// The receiver's memory stays bounded by the window all the same (an
// eager message that waits for its receive holds credit until taken),
// and the message saves the rendezvous round trip: request to send,
// clear to send, then the data. Its payload is then read from the socket
// straight into a receive posted in time, as a rendezvous' would be.
// c.mu must be held.
func (c *conn) promoteLocked(m *outMsg) {
	if !m.flex || c.credit < MessageCost+len(m.data) {
		return
	}
	m.flex, m.rdv = false, false
	m.cost = MessageCost + len(m.data)
	m.h.Kind, m.h.Len = KindEager, uint32(len(m.data))
}

func newConn(t *Transport, proc int, dialer bool) *conn {
	c := &conn{t: t, proc: proc, dialer: dialer, kick: make(chan struct{}, 1), quit: make(chan struct{})}
	c.coalesce.Store(true)
	c.rcond.L = &c.rmu
	if dialer {
		c.sending = map[uint64]*outMsg{}
	} else {
		c.pulls = map[uint64]*Message{}
	}
	c.live.Store(2)
	return c
}

// dial connects to the process, runs the handshake and then serves as
// the connection's writer. Messages sent meanwhile wait in msgs.
func (c *conn) dial() {
	defer c.t.wg.Done()
	fail := func(err error) {
		c.fail(fmt.Errorf("wire: connecting to process %d: %w: %w", c.proc, ErrPeerGone, err))
		c.exit() // the reader never started
		c.exit()
	}
	addr, err := c.t.cfg.Addr(c.proc)
	if err != nil {
		fail(err)
		return
	}
	d := net.Dialer{Timeout: c.t.cfg.DialTimeout}
	nc, err := d.DialContext(c.t.ctx, "tcp", addr)
	if err != nil {
		fail(err)
		return
	}
	tune(nc, c.t.cfg.KeepAlive)
	c.mu.Lock()
	if err := c.err; err != nil { // closed meanwhile
		c.mu.Unlock()
		nc.Close()
		fail(err)
		return
	}
	c.nc = nc
	c.mu.Unlock()
	terms, err := DialHandshake(nc, c.t.cfg.Secret, c.t.cfg.Self, c.proc, c.t.cfg.EagerLimit, c.t.cfg.HandshakeTimeout)
	if err != nil {
		fail(err)
		return
	}
	c.mu.Lock()
	if err := c.err; err != nil {
		c.mu.Unlock()
		fail(err)
		return
	}
	c.terms, c.credit, c.ready = terms, terms.Window, true
	c.mu.Unlock()
	c.t.signalJoined()
	c.t.wg.Add(1)
	c.startReading()
	c.kickWriter()
	c.t.wg.Add(1) // writeLoop's Done
	c.writeLoop()
}

func (c *conn) kickWriter() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// exit is called by the reader and the writer as they end; the last one
// closes the socket and reports the connection down.
func (c *conn) exit() {
	if c.live.Add(-1) != 0 {
		return
	}
	c.mu.Lock()
	nc, err, clean := c.nc, c.err, c.finRecv
	c.mu.Unlock()
	if nc != nil {
		nc.Close()
	}
	if err == nil {
		err = fmt.Errorf("wire: connection with process %d ended: %w", c.proc, ErrPeerGone)
	}
	c.t.connDown(c, err, clean)
}

// fail ends the connection with err: queued transfers fail, pulls fail,
// the socket closes and the writer exits.
func (c *conn) fail(err error) {
	err = c.t.wrap(c.proc, err)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	failed := c.takeQueuedLocked()
	nc := c.nc
	c.mu.Unlock()
	close(c.quit)
	if nc != nil {
		nc.Close()
	}
	for _, m := range failed {
		m.finish(err)
	}
}

// takeQueuedLocked empties the send queues and returns what they held.
// c.mu must be held.
func (c *conn) takeQueuedLocked() []*outMsg {
	failed := append(c.msgs, c.data...)
	for _, m := range c.sending {
		failed = append(failed, m)
	}
	c.msgs, c.data = nil, nil
	clear(c.sending)
	return failed
}

// shutdown starts a graceful end: transfers still queued fail with err
// and a Fin is queued, after which nothing else is sent.
func (c *conn) shutdown(err error) {
	err = c.t.wrap(c.proc, err)
	c.mu.Lock()
	if c.err != nil || c.finQueued {
		c.mu.Unlock()
		return
	}
	if !c.ready {
		c.mu.Unlock()
		c.fail(err)
		return
	}
	failed := c.takeQueuedLocked()
	c.finQueued = true
	c.ctrl = append(c.ctrl, Header{Kind: KindFin})
	c.mu.Unlock()
	for _, m := range failed {
		m.finish(err)
	}
	c.kickWriter()
}

// burstGap is how soon after the previous send returned a small frame
// counts as part of a burst (a window of Isends, a collective's fan-out).
// A burst's frames after the first are queued for the writer goroutine,
// which writes all that queued meanwhile with one writev once the sender
// blocks or another core picks it up, rather than one system call each.
// A send after a quiet spell (the reply in a ping-pong comes a network
// round trip later) is written at once, so latency does not pay the hand
// off.
const burstGap = 5 * time.Microsecond

// burstMax is the largest payload whose frame may be queued as part of a
// burst: up to it, the system call saved is worth the hand off; beyond
// it, writing the payload dominates either way.
const burstMax = 64 << 10

// burstRetry: once a burst's queued frame was written alone (its sender
// waited for it, as a blocking Send does, so nothing joined it), frames
// of bursts are written directly, and every burstRetry-th one is queued
// again to see whether coalescing pays now. A blocking sender then pays
// the hand off to the writer goroutine on one send in burstRetry+1.
const burstRetry = 8

// epoch is the origin of conn.lastSend's monotonic clock.
var epoch = time.Now()

// send queues m, or writes it at once when the connection is idle and m
// does not continue a burst.
func (c *conn) send(m *outMsg) error {
	defer func() { c.lastSend.Store(int64(time.Since(epoch))) }()
	small := m.rdv || len(m.data) <= burstMax
	if small && time.Since(epoch)-time.Duration(c.lastSend.Load()) < burstGap {
		if c.coalesce.Load() {
			return c.enqueue(m)
		}
		// Coalescing did not pay lately (a sender that waits for each
		// send): write directly, and try again now and then.
		if c.skipped.Add(1)%burstRetry == 0 {
			c.coalesce.Store(true)
		}
	}
	if !c.wmu.TryLock() {
		return c.enqueue(m)
	}
	c.mu.Lock()
	if err := c.refusesLocked(); err != nil {
		c.mu.Unlock()
		c.wmu.Unlock()
		return err
	}
	if !c.ready || len(c.msgs) > 0 || len(c.ctrl) > 0 || c.credit < m.cost {
		c.msgs = append(c.msgs, copyMsg(m))
		c.mu.Unlock()
		c.wmu.Unlock()
		c.kickWriter()
		return nil
	}
	c.promoteLocked(m)
	c.credit -= m.cost
	c.seq++
	m.h.Seq = c.seq
	var payload []byte
	if m.rdv {
		c.sending[c.seq] = copyMsg(m)
	} else {
		payload = m.data
	}
	nc := c.nc
	c.mu.Unlock()
	err := c.writeOne(nc, &m.h, payload)
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("wire: writing to process %d: %w: %w", c.proc, ErrPeerGone, err))
		if !m.rdv {
			m.done(c.failure())
		}
		return nil
	}
	c.mu.Lock()
	pending := len(c.msgs) > 0 || len(c.ctrl) > 0 || len(c.data) > 0
	c.mu.Unlock()
	if pending {
		c.kickWriter()
	}
	if !m.rdv {
		m.done(nil)
	}
	return nil
}

// copyMsg returns a copy of m, a message that the caller's frame holds,
// for a queue: a pooled one, which goes back to the pool as its done is
// called (finish).
func copyMsg(m *outMsg) *outMsg {
	cp := outPool.Get().(*outMsg)
	*cp = *m
	return cp
}

// outPool holds the queued copies of messages (copyMsg): a window of
// Isends queued for the writer allocated one each.
var outPool = sync.Pool{New: func() any { return new(outMsg) }}

// finish calls done, exactly once, for m, a queued copy (copyMsg), and
// gives it back to the pool first: nothing refers to it after its done.
func (m *outMsg) finish(err error) {
	done := m.done
	*m = outMsg{} // drops the payload, so that the pool keeps no buffer alive
	outPool.Put(m)
	done(err)
}

func (c *conn) enqueue(m *outMsg) error {
	c.mu.Lock()
	if err := c.refusesLocked(); err != nil {
		c.mu.Unlock()
		return err
	}
	c.msgs = append(c.msgs, copyMsg(m))
	c.mu.Unlock()
	c.kickWriter()
	return nil
}

// refusesLocked returns why nothing more can be sent, or nil.
func (c *conn) refusesLocked() error {
	if c.err != nil {
		return c.err
	}
	if c.finQueued {
		if c.finRecv {
			return c.t.wrap(c.proc, fmt.Errorf("wire: process %d closed its end of the job: %w", c.proc, ErrPeerGone))
		}
		return c.t.wrap(c.proc, fmt.Errorf("wire: connection to process %d: %w", c.proc, ErrClosed))
	}
	return nil
}

func (c *conn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// queueCtrl queues a control frame (CTS, Credit). Dropped once the
// connection is ending: nothing waits for it then.
//
// On the acceptor's side (the only one that sends CTS and Credit) the
// frame is written at once when no one holds the writer role, even from
// the reader goroutine, which must never block on a write: what the
// acceptor writes is control frames only, which the dialer's reader
// always drains, so such a write cannot wait for long. It saves waking
// the writer goroutine for every clear-to-send.
func (c *conn) queueCtrl(h Header) {
	c.mu.Lock()
	if c.err != nil || c.finQueued {
		c.mu.Unlock()
		return
	}
	c.ctrl = append(c.ctrl, h)
	c.mu.Unlock()
	if c.dialer || !c.wmu.TryLock() {
		c.kickWriter()
		return
	}
	c.mu.Lock()
	hb, iov := c.hbuf[:0], c.iov[:0]
	fin := false
	for _, h := range c.ctrl {
		fin = fin || h.Kind == KindFin // a shutdown queued it meanwhile
		hb, iov = appendFrame(hb, iov, &h, nil)
	}
	c.ctrl = c.ctrl[:0]
	c.hbuf = hb
	nc, ready := c.nc, c.err == nil
	c.mu.Unlock()
	var err error
	if ready && len(iov) > 0 {
		err = c.writeBuffers(nc, iov)
	}
	c.iov = iov[:0]
	if err == nil && fin {
		c.mu.Lock()
		c.finSent = true
		c.mu.Unlock()
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("wire: writing to process %d: %w: %w", c.proc, ErrPeerGone, err))
	} else if fin {
		c.kickWriter() // it half-closes and exits
	}
}

// beat is the heartbeat's visit to the connection, a quarter heartbeat
// after the last (see Config.Heartbeat). When something was read since
// the last visit it moves nc's read deadline a heartbeat ahead: the reader
// fails the connection when it passes (watchedReader). When nothing was
// written since the last visit it queues a Ping: an idle connection
// carries one every quarter heartbeat, so that the other end reads one at
// most half a heartbeat after the last, and the other half is the margin
// for delays. The Ping goes to the writer goroutine, so that the
// heartbeat never waits on a socket. Called on the heartbeat goroutine
// only.
func (c *conn) beat(now time.Time) {
	c.mu.Lock()
	watched := c.ready && c.err == nil && !c.finQueued && !c.finRecv
	nc := c.nc
	c.mu.Unlock()
	if !watched {
		if c.watching { // ending: its Fin and EOF come without pings
			nc.SetReadDeadline(time.Time{})
			c.watching = false
		}
		return
	}
	if r := c.reads.Load(); r != c.beatReads || !c.watching {
		c.beatReads, c.watching = r, true
		nc.SetReadDeadline(now.Add(c.t.cfg.Heartbeat))
	}
	w := c.writes.Load()
	if w == c.beatWrites && c.queuePing() {
		c.kickWriter()
		w++ // the ping's own write: not traffic, so the next beat pings again
	}
	c.beatWrites = w
}

// queuePing queues a Ping unless the connection is ending or a control
// frame is queued already (it will do as well); it reports whether it
// did.
func (c *conn) queuePing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil || c.finQueued || len(c.ctrl) > 0 {
		return false
	}
	c.ctrl = append(c.ctrl, Header{Kind: KindPing})
	return true
}

// host returns " on host H", H the host at the other end, or "".
func (c *conn) host() string {
	c.mu.Lock()
	nc := c.nc
	c.mu.Unlock()
	if nc == nil {
		return ""
	}
	h, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return ""
	}
	return " on host " + h
}

// smallWrite is the payload size up to which a frame is copied behind its
// header and written with one write rather than a writev.
const smallWrite = 4 << 10

// writeOne writes one frame. wmu must be held.
func (c *conn) writeOne(nc net.Conn, h *Header, payload []byte) error {
	if cap(c.hbuf) < HeaderLen+smallWrite {
		c.hbuf = make([]byte, 0, 64*HeaderLen+smallWrite)
	}
	b := c.hbuf[:HeaderLen]
	h.Encode(b)
	if len(payload) <= smallWrite {
		b = append(b, payload...)
		_, err := nc.Write(b)
		if err == nil {
			c.writes.Add(1)
		}
		return err
	}
	c.iov = append(c.iov[:0], b, payload)
	return c.writeBuffers(nc, c.iov)
}

// writeBuffers writes iov with one writev. wmu must be held.
func (c *conn) writeBuffers(nc net.Conn, iov net.Buffers) error {
	c.wv = iov // WriteTo consumes the slice it is given
	_, err := c.wv.WriteTo(nc)
	c.wv = nil
	if err == nil {
		c.writes.Add(1)
	}
	return err
}

// maxBatch bounds the bytes one writev carries, so a long queue does not
// hold the writer role for long.
const maxBatch = 4 << 20

// writeLoop is the connection's writer goroutine: it writes whatever is
// queued whenever it is kicked, until the Fin is written or the
// connection fails.
func (c *conn) writeLoop() {
	defer c.t.wg.Done()
	defer c.exit()
	for {
		select {
		case <-c.kick:
		case <-c.quit:
			return
		}
		c.wmu.Lock()
		err := c.flush()
		c.wmu.Unlock()
		if err != nil {
			c.fail(err)
			return
		}
		c.mu.Lock()
		finSent, nc := c.finSent, c.nc
		c.mu.Unlock()
		if finSent {
			if cw, ok := nc.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
			return
		}
	}
}

// flush writes batches of queued frames until nothing writable is left:
// control frames first, then messages while credit lasts, then one chunk
// of a rendezvous payload (so payloads take turns). wmu must be held.
func (c *conn) flush() error {
	var sent []*outMsg // eager messages in the batch
	for {
		c.mu.Lock()
		if c.err != nil {
			c.mu.Unlock()
			return nil // fail already dealt with everything
		}
		nc := c.nc
		hb := c.hbuf[:0]
		iov := c.iov[:0]
		sent = sent[:0]
		bytes, rts, fin := 0, 0, false
		for _, h := range c.ctrl {
			fin = fin || h.Kind == KindFin
			hb, iov = appendFrame(hb, iov, &h, nil)
		}
		c.ctrl = c.ctrl[:0]
		k := 0 // messages taken from the front of msgs
		for k < len(c.msgs) && c.msgs[k].cost <= c.credit && bytes < maxBatch && !fin {
			m := c.msgs[k]
			c.msgs[k] = nil
			k++
			c.promoteLocked(m)
			c.credit -= m.cost
			c.seq++
			m.h.Seq = c.seq
			if m.rdv {
				c.sending[c.seq] = m
				rts++
				hb, iov = appendFrame(hb, iov, &m.h, nil)
			} else {
				sent = append(sent, m)
				hb, iov = appendFrame(hb, iov, &m.h, m.data)
				bytes += len(m.data)
			}
		}
		c.msgs = popFront(c.msgs, k)
		var chunk *outMsg
		n := 0
		if len(c.data) > 0 && !fin {
			chunk = c.data[0]
			c.data = popFront(c.data, 1)
			n = min(len(chunk.data)-chunk.off, c.terms.Chunk)
			h := Header{Kind: KindData, Len: uint32(n), Seq: chunk.h.Seq, Size: uint64(chunk.off)}
			hb, iov = appendFrame(hb, iov, &h, chunk.data[chunk.off:chunk.off+n])
		}
		c.hbuf = hb
		c.mu.Unlock()
		if len(iov) == 0 {
			c.iov = iov
			return nil
		}
		err := c.writeBuffers(nc, iov)
		c.iov = iov[:0]
		if err != nil {
			err = c.t.wrap(c.proc, fmt.Errorf("wire: writing to process %d: %w: %w", c.proc, ErrPeerGone, err))
			for i, m := range sent {
				sent[i] = nil
				m.finish(err)
			}
			if chunk != nil {
				chunk.finish(err)
			}
			return err
		}
		if len(sent)+rts == 1 && len(iov) <= 2 {
			c.coalesce.Store(false) // a lone message: queueing it did not pay
		} else if len(sent)+rts > 1 {
			c.coalesce.Store(true)
		}
		for i, m := range sent {
			sent[i] = nil
			m.finish(nil)
		}
		if fin {
			c.mu.Lock()
			c.finSent = true
			c.mu.Unlock()
			return nil
		}
		if chunk != nil {
			chunk.off += n
			if chunk.off == len(chunk.data) {
				chunk.finish(nil)
			} else {
				c.mu.Lock()
				if c.err == nil && !c.finQueued {
					c.data = append(c.data, chunk)
					chunk = nil
				}
				err := c.refusesLocked()
				c.mu.Unlock()
				if chunk != nil {
					chunk.finish(err)
				}
			}
		}
	}
}

// popFront removes q's first k entries, keeping its array: a queue that
// advanced its slice instead reached the array's end and made a new one
// (an allocation every few messages of a window of Isends).
func popFront(q []*outMsg, k int) []*outMsg {
	if k == 0 {
		return q
	}
	n := copy(q, q[k:])
	clear(q[n:])
	return q[:n]
}

// appendFrame encodes h into hb and adds it and its payload to iov.
func appendFrame(hb []byte, iov net.Buffers, h *Header, payload []byte) ([]byte, net.Buffers) {
	if cap(hb)-len(hb) < HeaderLen {
		hb = make([]byte, 0, max(2*cap(hb), 64*HeaderLen)) // earlier headers keep the old array
	}
	start := len(hb)
	hb = hb[:start+HeaderLen]
	h.Encode(hb[start:])
	iov = append(iov, hb[start:start+HeaderLen:start+HeaderLen])
	if len(payload) > 0 {
		iov = append(iov, payload)
	}
	return hb, iov
}

// readBuffer is the size of a connection's read buffer: a 64 KiB payload
// with its header, and the headers that follow it, arrive in one read
// (with exactly 64 KiB the payload's last bytes took a second read
// system call: osu_latency at 64 KiB 29-33 -> 22-29 us one-way in
// BenchmarkTCPLatency, alternated runs).
const readBuffer = 72 << 10

// startReading starts the reader goroutine (t.wg counted by the caller).
func (c *conn) startReading() {
	c.br = bufio.NewReaderSize(watchedReader{c, c.nc}, readBuffer)
	if sc, ok := c.nc.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
		c.pr.init()
	}
	go c.readLoop()
}

// silentError is the error of a connection on which nothing arrived for
// a heartbeat; it wraps ErrPeerGone.
type silentError struct{ error }

func (e silentError) Unwrap() error { return e.error }

// silent reports whether err is, or wraps, a silentError.
func silent(err error) bool {
	var s silentError
	return errors.As(err, &s)
}

// watchedReader is the socket as the connection's reader sees it: reads
// that return bytes are counted for the heartbeat (any part of a frame is
// a sign of life, also the middle of a long payload), and when the
// heartbeat's read deadline passes it waits a quarter heartbeat more
// before it fails with a silentError. Bytes that waited in the socket count:
// the reader itself may have been slow to run. And a whole machine that
// stood still (its processes stopped together, or a pause of the
// runtime) leaves every deadline passed and nothing sent meanwhile: the
// peer's heartbeat pings within a quarter once it runs again.
type watchedReader struct {
	c  *conn
	nc net.Conn
}

func (r watchedReader) Read(p []byte) (int, error) {
	if r.c.t.polling() {
		if n, ok := r.c.poll(p); ok {
			r.c.reads.Add(1)
			r.c.t.polled.Add(1)
			return n, nil
		}
	}
	n, err := r.nc.Read(p)
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		r.nc.SetReadDeadline(time.Now().Add(r.c.t.cfg.Heartbeat / 4))
		n, err = r.nc.Read(p)
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			c := r.c
			return 0, silentError{fmt.Errorf("wire: process %d%s sent nothing for over %v (heartbeat %v): it is stopped, hung or cut off: %w",
				c.proc, c.host(), c.t.cfg.Heartbeat*5/4, c.t.cfg.Heartbeat, ErrPeerGone)}
		}
		r.nc.SetReadDeadline(time.Now().Add(r.c.t.cfg.Heartbeat)) // until the next beat moves it
	}
	if n > 0 {
		r.c.reads.Add(1)
	}
	return n, err
}

// errMalformed wraps a protocol violation by the peer (its silence in
// the middle of a frame is none: that error stays as it is).
func (c *conn) errMalformed(err error) error {
	if silent(err) {
		return err
	}
	return fmt.Errorf("wire: process %d sent a bad frame: %w: %w", c.proc, ErrPeerGone, err)
}

// readLoop is the connection's reader goroutine. Pulls waiting for data
// are failed only here, as it exits: until then the reader may be writing
// into their buffers.
func (c *conn) readLoop() {
	defer c.t.wg.Done()
	defer c.exit()
	var hb [HeaderLen]byte
	lim := c.lim
	for {
		if c.br.Buffered() == 0 {
			// What arrived so far has been handed on. Let the goroutines it
			// woke (a receiver about to answer) run before this one spends
			// a system call finding the socket empty: on the critical path
			// of a ping-pong that call would come before the answer.
			runtime.Gosched()
		}
		if _, err := io.ReadFull(c.br, hb[:]); err != nil {
			c.mu.Lock()
			clean := c.finRecv && errors.Is(err, io.EOF)
			c.mu.Unlock()
			switch {
			case clean:
				err = fmt.Errorf("wire: process %d closed its end of the job: %w", c.proc, ErrPeerGone)
			case !silent(err):
				err = fmt.Errorf("wire: connection with process %d lost: %w: %w", c.proc, ErrPeerGone, err)
			}
			c.fail(err)
			c.failPulls(c.failure())
			return
		}
		h, err := Decode(hb[:], &lim)
		if err == nil {
			if c.dialer {
				err = c.handleSteer(&h)
			} else {
				err = c.handleMessage(&h)
			}
		}
		if err != nil {
			c.fail(c.errMalformed(err))
			c.failPulls(c.failure())
			return
		}
	}
}

// handleSteer handles a frame the acceptor sent back to this dialer.
func (c *conn) handleSteer(h *Header) error {
	switch h.Kind {
	case KindCTS:
		c.mu.Lock()
		m := c.sending[h.Seq]
		if m == nil {
			c.mu.Unlock()
			return fmt.Errorf("cts for message %d, which waits for none", h.Seq)
		}
		delete(c.sending, h.Seq)
		if h.Flags&FlagDiscard != 0 || len(m.data) == 0 {
			c.mu.Unlock()
			m.finish(nil)
			return nil
		}
		c.data = append(c.data, m)
		c.mu.Unlock()
		c.kickWriter()
	case KindCredit:
		c.mu.Lock()
		c.credit += int(h.Size)
		over := c.credit > c.terms.Window
		c.mu.Unlock()
		if over {
			return fmt.Errorf("credit beyond the window of %d", c.terms.Window)
		}
		c.kickWriter()
	case KindFin:
		c.finReceived()
	case KindPing: // read: that was all it was for
	default:
		return fmt.Errorf("a %s frame towards the dialer", h.Kind)
	}
	return nil
}

// finReceived handles the peer's Fin: it will send nothing more, and
// nothing more should be sent to it; this side answers with its own Fin.
func (c *conn) finReceived() {
	c.mu.Lock()
	c.finRecv = true
	c.mu.Unlock()
	c.t.peerFinished(c.proc)
	c.shutdown(fmt.Errorf("wire: process %d closed its end of the job: %w", c.proc, ErrPeerGone))
}

// handleMessage handles a frame the dialer sent to this acceptor.
func (c *conn) handleMessage(h *Header) error {
	switch h.Kind {
	case KindEager, KindRTS:
		c.nextSeq++
		if h.Seq != c.nextSeq {
			return fmt.Errorf("message %d, expected %d", h.Seq, c.nextSeq)
		}
		if o := c.t.cfg.Owner(h.Src); o != c.proc {
			return fmt.Errorf("a message from rank %d, which runs in process %d", h.Src, o)
		}
		if o := c.t.cfg.Owner(h.Dst); o != c.t.cfg.Self {
			return fmt.Errorf("a message for rank %d, which runs in process %d", h.Dst, o)
		}
		m := c.spare // the last message, when it was pulled inline
		if m != nil {
			c.spare = nil
			*m = Message{}
		} else {
			m = new(Message)
		}
		m.c, m.h, m.seq, m.size, m.cost, m.rdv = c, *h, h.Seq, int(h.Size), MessageCost, h.Kind == KindRTS
		if !m.rdv {
			m.cost += int(h.Len)
		}
		c.mu.Lock()
		c.used += m.cost
		over := c.used > c.terms.Window
		c.mu.Unlock()
		if over {
			return fmt.Errorf("messages beyond the credit window of %d", c.terms.Window)
		}
		if err := c.t.cfg.Handler.Arrive(&m.h, m); err != nil {
			return err
		}
		if m.rdv {
			return nil
		}
		return c.bufferPayload(m)
	case KindData:
		c.rmu.Lock()
		m := c.pulls[h.Seq]
		c.rmu.Unlock()
		if m == nil {
			return fmt.Errorf("data for message %d, which was not pulled", h.Seq)
		}
		off, n := int(h.Size), int(h.Len)
		if off != m.got || n > m.size-off {
			return fmt.Errorf("data for message %d at %d+%d, expected at %d of %d", h.Seq, off, n, m.got, m.size)
		}
		if _, err := io.ReadFull(c.br, m.dst[off:off+n]); err != nil {
			return err
		}
		m.got += n
		if m.got == m.size {
			c.rmu.Lock()
			delete(c.pulls, h.Seq)
			c.rmu.Unlock()
			close(m.done) // only the reader closes it: here, or in failPulls as it exits
		}
	case KindFin:
		c.finReceived()
		c.t.mu.Lock()
		closing := c.t.closing
		c.t.mu.Unlock()
		if !closing {
			c.t.cfg.Handler.Finished(c.proc)
		}
	case KindPing: // read: that was all it was for
	default:
		return fmt.Errorf("a %s frame towards the acceptor", h.Kind)
	}
	return nil
}

// bufferPayload reads the payload of an eager message that was not
// pulled inline into a buffer of its own, and wakes pullers waiting for
// it.
func (c *conn) bufferPayload(m *Message) error {
	c.rmu.Lock()
	st := m.state
	c.rmu.Unlock()
	if st == msgTaken { // pulled inline: nobody holds m any more
		c.mu.Lock()
		err := c.rerr
		c.mu.Unlock()
		c.spare = m
		return err
	}
	buf := getBuf(m.size)
	_, err := io.ReadFull(c.br, buf)
	c.rmu.Lock()
	if err != nil {
		m.state, m.err = msgFailed, c.t.wrap(c.proc, fmt.Errorf("wire: payload from process %d: %w: %w", c.proc, ErrPeerGone, err))
		putBuf(buf)
	} else {
		m.state, m.buf = msgBuffered, buf
	}
	if m.waiters {
		c.rcond.Broadcast()
	}
	c.rmu.Unlock()
	return err
}

// failPulls fails the pulls waiting for data; later pulls fail at once.
// Called by the reader goroutine as it exits.
func (c *conn) failPulls(err error) {
	if c.dialer {
		return
	}
	c.rmu.Lock()
	if c.rfailed == nil {
		c.rfailed = err
	}
	pulls := c.pulls
	c.pulls = map[uint64]*Message{}
	c.rcond.Broadcast()
	c.rmu.Unlock()
	for _, m := range pulls {
		m.err = err
		close(m.done)
	}
}

// release returns the credit a message held once it was received.
func (c *conn) release(cost int) {
	c.mu.Lock()
	c.used -= cost
	c.owed += cost
	var h Header
	if c.owed >= c.terms.Window/4 {
		h = Header{Kind: KindCredit, Size: uint64(c.owed)}
		c.owed = 0
	}
	c.mu.Unlock()
	if h.Kind != 0 {
		c.queueCtrl(h)
	}
}
