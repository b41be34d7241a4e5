//go:build linux && (amd64 || arm64)

package shm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mpgo/mpgo/comm/device"
)

// Device is the shared-memory backend's [device.Device]: it carries
// messages between this process's ranks and those of the other processes
// of its host, through rings in segments the processes share (ring.go,
// segment.go), with no system call on the way of a message while the
// receiver polls:
//
//   - a message shorter than the eager limit is written into the
//     receiver's ring for this process and read from there by the
//     receiver's poller straight into the posted receive (two copies in
//     all), or, when no receive matched yet, into a buffer of its own;
//   - a longer or synchronous one goes by rendezvous: the ring carries its
//     address in the sender (the buffer pinned meanwhile), and the
//     receive that matches it reads it with process_vm_readv straight
//     into its buffer (one copy), then tells the sender (FIN); where the
//     kernel does not allow that (EPERM: ptrace scope, containers) the
//     receiver asks for it (CTS) and the sender writes it through the
//     ring in chunks (rendezvous_linux.go).
//
// Each process consumes its rings on one goroutine at a time (pollMu): a
// rank about to park polls for a short window itself (Drive), otherwise
// the receiver loop does, and sleeps on its bell (an eventfd) once the
// rings stay quiet (progress_linux.go). A peer that dies is known at once
// by the end of file on the Unix socket it attached through; one that
// finishes writes a goodbye record after its last message.
//
// Invariants:
//   - e is set by Start before the loop and the readers start.
//   - pollMu is held by whoever consumes the rings (the loop, or a rank
//     in Drive); it guards each peer's in ring and reported flag, and h.
//   - A peer's outMu serialises its producers (local ranks, pulls
//     writing FIN or CTS, pushers writing chunks) and guards out and
//     outClosed; after outClosed is set nobody touches the peer's
//     segment, which Close unmaps next.
//   - mu guards sends and pipes. A rendezvous send is in sends from
//     before its RTS is written until whoever takes it out (its FIN, its
//     last chunk, the peer's loss or goodbye, Close) calls its done,
//     once.
type Device struct {
	self   int
	layout device.Layout
	eager  int // the eager limit while process_vm_readv reads the peers' memory
	// ringEager is the eager limit once it does not (noCMA)
	ringEager int
	chunk     int // the payload of a pipelined chunk
	pipeLimit int // rendezvous larger come through the ring even with CMA; 0: none
	noCMA     atomic.Bool
	// onArrival counts the rendezvous read on arrival (PullArriving),
	// for the tests.
	onArrival atomic.Uint64
	// pipedIn counts the rendezvous that came through the ring in chunks
	// (pipeIn), for the tests.
	pipedIn      atomic.Uint64
	pullsStarted atomic.Uint64 // of them, those the engine started (Start)
	peers        []*peer       // the other processes of this host
	byProc       map[int]*peer
	seg          segment // this process's, which its peers write
	spin         spins
	// bell is this process's eventfd, which a producer that finds the
	// receiver loop asleep writes to (its descriptor handed to every
	// peer with the segment); the loop sleeps reading it, through the Go
	// runtime's poller (segment.go). Nil when no peer shares the host.
	bell    *os.File
	bellFD  int     // bell's descriptor, kept: bell.Fd() would set it blocking, out of the poller
	bellBuf [8]byte // what the loop reads from bell

	e      device.Engine
	pollMu sync.Mutex
	h      header   // the record being handled; guarded by pollMu
	spare  *eagerIn // for the next eager arrival: the last one not kept; guarded by pollMu
	// polls: bit 0 set while a rank polls in Drive (at most one does),
	// and above it the count of Drive calls that ended satisfied; one
	// word, so that a Drive ends with one store.
	polls    atomic.Uint64
	parks    atomic.Uint64 // rank waits that Drive ended unsatisfied: the rank parks
	idle     atomic.Bool   // the loop rests, waiting for kick
	kick     chan struct{}
	stop     atomic.Bool
	started  bool
	loopDone chan struct{}
	readers  sync.WaitGroup
	pushers  sync.WaitGroup
	closed   atomic.Bool

	// split: rendezvous reads are split with their senders
	// (split_linux.go); slotBusy marks the slots of seg in use, slotGen
	// their generations (each the holder's). splitWritten counts the
	// parts senders wrote, splitTaken those their receivers read
	// themselves, for the tests.
	split                    bool
	slotBusy                 atomic.Uint32
	slotGen                  [splitSlots]uint64
	splitWritten, splitTaken atomic.Uint64

	rvs    atomic.Int32 // rendezvous in flight here: sends in sends, pulls running
	mu     sync.Mutex
	nextID uint64
	sends  map[uint64]*outRV
	pipes  map[pipeKey]*pipe

	segMu sync.Mutex // guards segs
	segs  map[segKey]*sharedSeg
}

// peer is another process of the host.
type peer struct {
	proc   int
	pid    int
	conn   *net.UnixConn
	connMu sync.Mutex    // serialises the segment records written to conn
	done   chan struct{} // closed when conn ended (watch returned)
	seg    segment       // its segment, mapped here
	bell   int           // its eventfd: rung when its receiver sleeps; guarded by outMu

	outMu     sync.Mutex
	out       ring // this process's ring in its segment
	outClosed bool

	in       ring // its ring in this process's segment; guarded by pollMu
	reported bool // its end told to the engine; guarded by pollMu
	eof      atomic.Bool
	gone     atomic.Bool // finished or lost: sends to it fail

	// readable: a process_vm_readv of its memory has succeeded, so its
	// rendezvous are read on arrival (rendezvous_linux.go).
	readable atomic.Bool
	// rvOut counts this process's rendezvous sends to it not finished
	// yet (guarded by d.mu where it changes): while it has one of ours
	// to read, its core is busy, and a read of its message is not split
	// (split_linux.go).
	rvOut atomic.Int32
}

var (
	_ device.Device     = (*Device)(nil)
	_ device.Progressor = (*Device)(nil)
	_ device.Immediate  = (*Device)(nil)
)

// Local reports whether process proc runs on this host (this process
// included): messages to its ranks go through this device.
func (d *Device) Local(proc int) bool { return proc == d.self || d.byProc[proc] != nil }

// Start implements [device.Device]: the receiver loop starts, and a
// reader per peer that waits for its connection's end.
func (d *Device) Start(e device.Engine) error {
	if d.started {
		return fmt.Errorf("shm: device started twice: %w", device.ErrArg)
	}
	d.e, d.started = e, true
	for _, p := range d.peers {
		d.readers.Add(1)
		go d.watch(p)
	}
	if len(d.peers) == 0 { // alone on this host: nothing to receive
		close(d.loopDone)
		return nil
	}
	go d.loop()
	return nil
}

// Send implements [device.Device].
func (d *Device) Send(src, dst int, env device.Envelope, data []byte, done func(error)) error {
	p, h, err := d.address(src, dst, env, data)
	if err != nil {
		return err
	}
	if d.eagerOK(env, data) {
		if err := d.put(p, &h, data); err != nil {
			return err
		}
		done(nil)
		return nil
	}
	return d.sendRV(p, &h, data, done)
}

// SendNow implements [device.Immediate]: an eager message is written
// into the ring at once.
func (d *Device) SendNow(src, dst int, env device.Envelope, data []byte) (bool, error) {
	if !d.eagerOK(env, data) {
		return false, nil
	}
	p, h, err := d.address(src, dst, env, data)
	if err == nil {
		err = d.put(p, &h, data)
	}
	return err == nil, err
}

// eagerOK reports whether a message goes eagerly, written into the ring.
func (d *Device) eagerOK(env device.Envelope, data []byte) bool {
	limit := d.eager
	if d.noCMA.Load() {
		limit = d.ringEager
	}
	return !env.Sync && len(data) < limit
}

// address checks dst and returns its process and the header of a message
// to it (kindEager, flagSync for env.Sync).
func (d *Device) address(src, dst int, env device.Envelope, data []byte) (*peer, header, error) {
	if dst < 0 || dst >= d.layout.Ranks {
		return nil, header{}, fmt.Errorf("shm: rank %d: %w", dst, device.ErrRank)
	}
	p := d.byProc[d.layout.Owner(dst)]
	if p == nil {
		return nil, header{}, fmt.Errorf("shm: rank %d runs on another host: %w", dst, device.ErrArg)
	}
	h := header{kind: kindEager, typ: env.Type, fp: env.Fingerprint, src: int64(src), dst: int64(dst),
		source: int64(env.Source), tag: int64(env.Tag), context: env.Context, len: uint64(len(data))}
	if env.Sync {
		h.flags = flagSync
	}
	return p, h, nil
}

// put writes a record to p, waiting while its ring is full, and wakes
// p's receiver if it sleeps.
func (d *Device) put(p *peer, h *header, payload []byte) error {
	p.outMu.Lock()
	if p.outClosed { // p's segment is unmapped, or about to be
		p.outMu.Unlock()
		return fmt.Errorf("shm: %w", device.ErrClosed)
	}
	for i := 0; !p.out.tryPut(h, payload); i++ {
		if err := d.sendable(p); err != nil {
			p.outMu.Unlock()
			return err
		}
		d.backoff(i)
	}
	d.rouse(p)
	p.outMu.Unlock()
	return nil
}

// putNow writes h's record to p if it can at once (the ring has room,
// and no other producer holds it: one that waits for room holds it
// meanwhile), and reports whether it did.
func (d *Device) putNow(p *peer, h *header, payload []byte) bool {
	if !p.outMu.TryLock() {
		return false
	}
	ok := !p.outClosed && p.out.tryPut(h, payload)
	if ok {
		d.rouse(p)
	}
	p.outMu.Unlock()
	return ok
}

// rouse rings p's bell if its receiver sleeps, after a record was
// written to it; p.outMu held.
func (d *Device) rouse(p *peer) {
	if p.seg.sleeping().Load() != 0 && p.seg.sleeping().CompareAndSwap(1, 0) && !p.outClosed {
		ringBell(p.bell) // once: the producers after this one find it awake
	}
}

// sendable reports why nothing more can be written to p, if so; p.outMu
// must be held.
func (d *Device) sendable(p *peer) error {
	switch {
	case p.outClosed:
		return fmt.Errorf("shm: %w", device.ErrClosed)
	case p.gone.Load() || p.eof.Load():
		return d.lostErr(p)
	}
	return nil
}

// lostErr is the error of an operation with a process that is gone.
func (d *Device) lostErr(p *peer) error {
	return fmt.Errorf("shm: process %d (%s): %w", p.proc, d.layout.Describe(p.proc), device.ErrPeerLost)
}

// ringBell wakes the receiver loop that sleeps reading the eventfd fd
// (a write of 1 to its counter; a counter already near its limit
// refuses, and has a wake-up pending anyway).
func ringBell(fd int) {
	one := [8]byte{1}
	syscall.Write(fd, one[:]) //nolint:errcheck // EAGAIN: rung already
}

// backoff waits a little for a full ring to drain: it yields its P for
// a while (the receiver drains on another core, within microseconds),
// then sleeps in growing steps; at once where the host's ranks outnumber
// its cores, where spinning would take the core from the receiver.
func (d *Device) backoff(i int) {
	if d.spin.rank > 0 {
		if i < backoffSpins {
			if d.spin.yield {
				yieldCore() // the receiver that drains the ring may need this core
			}
			runtime.Gosched()
			return
		}
		i -= backoffSpins
	}
	time.Sleep(time.Duration(min(i+1, 50)) * time.Microsecond)
}

// backoffSpins is how many times a producer yields before it sleeps.
const backoffSpins = 1024

// wake gets this process's receiver loop to look at its rings.
func (d *Device) wake() {
	if d.bell != nil {
		ringBell(d.bellFD)
	}
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// envelope is the envelope of a message record.
func envelope(h *header) device.Envelope {
	return device.Envelope{Context: h.context, Source: int(h.source), Tag: int(h.tag), Type: h.typ, Fingerprint: h.fp,
		Len: int(h.len), Sync: h.flags&flagSync != 0}
}

// handle hands the record h (payload p) from peer to the engine or to
// the rendezvous it belongs to; pollMu must be held. It returns an
// error for a record that cannot be (the peer is then malformed).
func (d *Device) handle(from *peer, h *header, p []byte) error {
	switch h.kind {
	case kindEager:
		m := d.spare
		if m == nil {
			m = new(eagerIn)
		}
		m.b, m.pulled, d.spare = p, false, nil
		kept, err := d.e.Arrive(int(h.src), int(h.dst), envelope(h), m)
		if kept {
			m.detach() // the engine holds m now
		} else {
			m.b, d.spare = nil, m // pulled, or dropped: nobody holds m
		}
		if err != nil {
			return arriveErr(err)
		}
	case kindRTS:
		return d.arriveRV(from, h, p)
	case kindFIN:
		d.complete(from, h.id, nil)
	case kindCTS:
		d.pushRV(from, h.id)
	case kindData:
		return d.chunkIn(from, h, p)
	case kindBye:
		d.finished(from)
	case kindWrite:
		return d.writeRV(from, h, p)
	}
	return nil
}

// arriveErr is the error of an Arrive that failed: a malformed message,
// or nothing where the world stopped (the message is dropped).
func arriveErr(err error) error {
	if errors.Is(err, device.ErrArg) || errors.Is(err, device.ErrRank) {
		return err
	}
	return nil
}

// finished: p said goodbye; what it sent was delivered. pollMu held.
func (d *Device) finished(p *peer) {
	if p.reported {
		return
	}
	p.reported = true
	p.gone.Store(true)
	d.failWith(p, d.lostErr(p))
	d.e.PeerFinished(p.proc)
}

// lose: p broke off (its connection ended without a goodbye, or it wrote
// garbage): the world aborts. pollMu held.
func (d *Device) lose(p *peer, cause error) {
	if p.reported {
		return
	}
	p.reported = true
	p.gone.Store(true)
	err := fmt.Errorf("comm: %s lost: %w: %w", d.layout.Describe(p.proc), d.lostErr(p), cause)
	d.failWith(p, err)
	d.e.PeerLost(err)
}

// eagerIn is an eager message as the engine pulls it: its payload in the
// ring while the poller handles it, in a buffer of its own once it was
// kept (detach).
type eagerIn struct {
	mu     sync.Mutex
	b      []byte
	pulled bool
}

// Pull implements [device.Incoming].
func (m *eagerIn) Pull(dst []byte) error {
	m.mu.Lock()
	copy(dst, m.b)
	m.b, m.pulled = nil, true
	m.mu.Unlock()
	return nil
}

// PullArriving implements [device.Incoming]: inside Arrive, before
// detach can be.
func (m *eagerIn) PullArriving(dst []byte) error {
	copy(dst, m.b)
	m.pulled = true
	return nil
}

// detach copies the payload out of the ring unless a receive pulled it
// already; the poller calls it after Arrive kept m, before it frees the
// record.
func (m *eagerIn) detach() {
	m.mu.Lock()
	if !m.pulled {
		m.b = append([]byte(nil), m.b...)
	}
	m.mu.Unlock()
}

// Close implements [device.Device]: gracefully, the pipelined payloads
// in flight are written and every peer gets a goodbye after this
// process's last message; after an abort, the connections just close, and
// the peers see this process lost. Sends and pulls still pending fail
// with [device.ErrClosed].
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	if d.started && !errors.Is(d.e.Err(), device.ErrAborted) {
		d.pushers.Wait()
		for _, p := range d.peers {
			d.put(p, &header{kind: kindBye}, nil) //nolint:errcheck // a peer gone needs no goodbye
		}
	}
	if d.started {
		d.stop.Store(true)
		d.wake()
		<-d.loopDone
	}
	for _, p := range d.peers {
		p.outMu.Lock()
		p.outClosed = true
		p.outMu.Unlock()
		p.conn.Close()
	}
	d.readers.Wait()
	d.pushers.Wait()
	d.closeSegments()
	for _, p := range d.peers {
		d.failWith(p, fmt.Errorf("shm: %w", device.ErrClosed))
		syscall.Munmap(p.seg.mem)
		syscall.Close(p.bell) // nobody rings it: outClosed
	}
	if d.bell != nil {
		d.bell.Close()
	}
	d.mu.Lock()
	d.sends, d.pipes = nil, nil // later rendezvous fail at once
	d.mu.Unlock()
	if d.seg.mem != nil {
		syscall.Munmap(d.seg.mem)
	}
	return nil
}
