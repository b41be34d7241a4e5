//go:build rdma

package rdma

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpgo/mpgo/backend/rdma/internal/fabric"
	"github.com/mpgo/mpgo/buffer"
	"github.com/mpgo/mpgo/comm/device"
)

// The RDMA device: ibvdev's protocols (message passing over InfiniBand
// verbs) over libfabric, so that one code runs over verbs, efa, cxi and,
// for tests, tcp and shm. Each process has one reliable-datagram endpoint
// (FI_EP_RDM) whose completions are reaped by a rank that waits (for a
// short window, before it parks) or else by the device's progress
// goroutine (rdma_progress.go).
//
// Every message starts with a header (hdr*): kind, the sending process,
// a per-pair sequence number, source and destination world ranks, the
// envelope (context, source, tag, type, length), for the rendezvous,
// ids, an address and a key, and the pair's token (frameToken), without
// which a frame is dropped unread (authentic; see the package
// documentation).
//
//   - Eager (shorter than the eager limit, not synchronous): header and
//     payload are copied into a send slot of a pre-registered off-heap
//     slab and sent (injected when they fit the provider's inject size:
//     no completion to reap), or, in a burst of small ones to one
//     process, share a slot and a send with the others (rdma_batch.go);
//     the sender completes at once. Over net, a payload too large to
//     join a batch is not copied: the header in a slot and the payload
//     from the caller's buffer (pinned) go as one send of two pieces,
//     and the sender completes at that send's completion (sendLent).
//     The receiver has every
//     receive slot of its own slab posted; an arrival that matches a
//     posted receive is copied straight into it (one copy), one that must
//     wait is copied out of the slot first (the slot is reposted at once).
//   - Rendezvous (at or above the limit, and every synchronous send):
//     RNDZ_START carries the envelope. The receive that matches it
//     registers its buffer (through the registration cache) and answers
//     RNDZ_REPLY with the address and key; the sender RMA-writes the
//     payload straight from its buffer into the receiver's, then sends
//     RNDZ_END, after which the receive completes. No intermediate copy.
//
// Ordering: eager, RNDZ_START and BYE messages carry a sequence number per
// ordered pair of processes and are handed to the engine in that order,
// whatever order the provider completes them in, so the engine sees each
// pair's messages in the order they were sent (non-overtaking). RNDZ_END
// follows the write either by the provider's FI_ORDER_SAW (a send is
// transmitted after the writes posted before it) or, without it, by
// waiting for the write's delivery completion.
//
// Faults: a frame that does not prove to come from a process of the job,
// and a receive that fails, are dropped and counted (Stats.Rejected), so
// that nobody outside the job can disturb it. An error completion of a
// send or a write, a failed post on a peer's operation, or a malformed
// frame from a process of the job aborts the world with an error
// wrapping device.ErrPeerLost (and ErrAborted), as the TCP backend does
// for a connection that breaks; a process that aborts tells the others
// (ABORT) before it closes; one that finishes says BYE, after which
// receives still waiting for its ranks fail with device.ErrPeerLost.
// Operations the device holds (rendezvous waiting for their peer) fail
// when the world aborts or the device closes.

// Message kinds.
const (
	kindEager  = 1
	kindStart  = 2 // RNDZ_START
	kindReply  = 3 // RNDZ_REPLY
	kindEnd    = 4 // RNDZ_END
	kindBye    = 5
	kindAbort  = 6
	kindHello  = 8 // at start, where the endpoint has a file (unlinkWhenHeard); 7 is kindBatch
	flagSync   = 1
	flagNoData = 2 // RNDZ_REPLY: the receive took no payload (truncated, wrong type, empty)
)

// Header layout (little endian), fabricHeader bytes before the payload.
const (
	hdrKind  = 0  // u8
	hdrFlags = 1  // u8
	hdrType  = 2  // u8
	hdrSeq   = 4  // u32: ordered kinds
	hdrFrom  = 8  // u32: sending process
	hdrSrc   = 12 // u32: source world rank
	hdrDst   = 16 // u32: destination world rank
	hdrFP    = 20 // u32: a struct element type's fingerprint (Eager, START)
	hdrSourc = 24 // i64: source rank in the communicator
	hdrTag   = 32 // i64
	hdrCtx   = 40 // u64
	hdrLen   = 48 // u64: payload bytes
	hdrID    = 56 // u64: START/REPLY: the sender's id; END: the receiver's
	hdrRID   = 64 // u64: REPLY: the receiver's id
	hdrAddr  = 72 // u64: REPLY: where to write
	hdrKey   = 80 // u64: REPLY: the key
	hdrTok   = 88 // u64: the pair's token (frameToken)
	// fabricHeader is the header's size, a multiple of 32 so that
	// payloads stay aligned in the slots.
	fabricHeader = 96
)

// Operation ids: the kind of operation in the top byte.
const (
	opSendSlot = 1 << 56
	opRecvSlot = 2 << 56
	opWrite    = 3 << 56
	opMask     = 0xff << 56
)

// DefaultEagerLimit is the protocol switch over the RDMA backend
// unless one is configured, except over the providers that carry each
// message whole through a socket (see DefaultSocketEagerLimit).
const DefaultEagerLimit = 64 << 10

// DefaultSocketEagerLimit is the default protocol switch over
// net and tcp (libfabric's FI_EP_RDM over TCP sockets, not layered
// under rxm): there a rendezvous costs two more messages, each a system
// call at either end, while an eager copy of 64 KiB costs a few
// microseconds (64 KiB osu_latency on loopback 55 -> 32 us, osu_bw
// 1850 -> 3160 MB/s with 64 KiB messages sent eager).
const DefaultSocketEagerLimit = 128 << 10

// defaultEager is the protocol switch over the provider info describes.
func defaultEager(info fabric.Info) int {
	if socketProvider(info) {
		return DefaultSocketEagerLimit
	}
	return DefaultEagerLimit
}

// socketProvider reports whether the endpoint is net's (or tcp's, its
// name from libfabric 1.18 on) own, not a utility provider over it.
func socketProvider(info fabric.Info) bool { return info.Provider == "net" || info.Provider == "tcp" }

// MaxEagerLimit bounds a configured eager limit: every slot of the
// pre-registered slabs holds one message of that size.
const MaxEagerLimit = 256 << 10

// fabricInject is the inject size the device asks the provider for: a
// header and a small payload (tcp;ofi_rxm's default of 64 B is below our
// header). No more: net's own FI_EP_RDM injects at most 128 bytes, and
// asked for more libfabric hands out rxm layered over net's connections
// (net;ofi_rxm) instead, which cuts every message above 16 KiB into
// segments (8 KiB osu_bw 1000 against 2100 MB/s on loopback).
const fabricInject = fabricHeader + 32

// Slots of the pre-registered slabs.
const (
	fabricSendSlots = 64
	fabricRecvSlots = 64
)

// Device is the RDMA backend's [device.Device], over a fabric.Endpoint.
//
// Invariants:
//   - progMu is held by whoever drives the endpoint (the progress loop, or
//     one waiting rank in Drive); it guards the fields marked "progress
//     only", and every completion is handled under it, one at a time, in
//     the order Poll returned them. Handling an arrival calls
//     Engine.Arrive under it: the engine then takes its inbox locks and
//     may copy the payload from its receive slot into the receive buffer
//     (or run the receive's Sink), so a slot is reposted only after
//     Arrive returned, and an arrival the engine kept was detached
//     (copied out) first.
//   - Lock order: progMu, then the engine's locks (entered only through
//     Engine.Arrive); progMu, then slabMu (read), then a peer's mu. d.mu,
//     an eagerRemote's mu and the registration cache's mu are leaves:
//     nothing is taken while one is held. The engine never calls the
//     device while it holds a lock of its own, so no cycle runs through
//     the boundary.
//   - slabMu is held (read) by every writer of a send slot outside the
//     loop; free takes it to unmap the slab, which then stays gone.
//   - A peer's mu orders its sequence numbers with their posts: two
//     ordered messages to one process are posted in sequence order, and
//     the receiver delivers them in that order (holding early arrivals).
//   - Every rendezvous pull is counted in pullsWG (enterPull, under d.mu)
//     unless Close began (pullsClosed); Close waits for them before it
//     frees the slab and the cache.
type Device struct {
	e     device.Engine // set by Start, before the progress loop starts
	ranks int           // world ranks in the job
	ep    *fabric.Endpoint
	info  fabric.Info
	self  int
	owner func(rank int) int
	addrs []fabric.Addr // by process
	eager int           // payload bytes of an eager message, at most
	lend  bool          // eager messages too large for a batch go uncopied (lends)
	slot  int           // bytes per slot

	pool  *buffer.Pool // off-heap memory of the slab
	slab  []byte       // recv slots, then send slots; registered once
	mr    *fabric.MR
	sfree chan int // free send slots
	// loans holds, by send slot, the eager send whose payload the provider
	// reads from the caller's buffer (sendLent) until its completion.
	loans []atomic.Pointer[lentSend]

	// slabMu is held (read) by whoever writes into a send slot outside the
	// progress loop; free takes it to unmap the slab, which then stays
	// gone (a rank or a late pull that sends after Close gets device.ErrClosed,
	// not a fault).
	slabMu   sync.RWMutex
	slabGone bool // guarded by slabMu

	peers []fabricPeer // by process
	cache regCache
	rma   rmaState // one-sided operations (onesided.go)

	mu          sync.Mutex // guards sends, pulls and pullsClosed
	sends       map[uint64]*rndzSend
	pulls       map[uint64]*rndzWait
	pullsClosed bool // Close began: no rendezvous pull starts (enterPull)
	ids         atomic.Uint64

	// Progress state (rdma_progress.go). progMu is held by whoever drives
	// the endpoint's progress: the progress loop, or a waiting rank
	// (drive); it guards what the comments call "progress only".
	progMu   sync.Mutex
	cs       []fabric.Completion // Poll's buffer (progress only)
	deferred []func() bool       // posts that met EAGAIN, retried by the loop (progress only)
	aborted  bool                // the held rendezvous were failed for an abort (progress only)
	heard    int                 // processes a frame came from (progress only)
	sleeping atomic.Bool         // the loop blocks in Poll: posters and pollers wake it
	pollers  atomic.Int32        // ranks in their polling window (0 or 1)
	idle     atomic.Bool         // the loop waits on kick while a rank polls
	kick     chan struct{}       // wakes an idle loop (buffered, 1)
	lastReap atomic.Int64        // when a completion was last reaped (UnixNano)
	lastPoll atomic.Int64        // when a rank's polling window last ended (UnixNano)
	batches  atomic.Int32        // peers with an open batch
	moving   atomic.Int32        // rendezvous payloads on the wire: writes posted, pulls answered (REPLY sent)
	stop     atomic.Bool
	stopped  chan struct{}
	closing  chan struct{} // closed when Close starts
	pullsWG  sync.WaitGroup
	once     sync.Once

	stats struct {
		eagerMsgs, eagerCopied, rndzMsgs, rndzWritten, rndzCopied, regs, hits, holds atomic.Int64
		injected, rankReaped, loopReaped, batched, eagerLent, rejected               atomic.Int64
	}
}

// fabricPeer is what the device knows of one other process.
type fabricPeer struct {
	mu  sync.Mutex // orders sequence numbers and posts of ordered messages
	seq uint32     // next to send; guarded by mu

	// The open batch (rdma_batch.go), guarded by mu: its send slot (-1:
	// none), the bytes used, its frames, when it was opened (UnixNano);
	// and when the last eager message to this process was sent, with the
	// count of arrivals from it then.
	batch, bfill, bcount int
	bopened, lastEager   int64
	lastArrived          uint64

	arrived atomic.Uint64 // messages that came from this process: a burst to it ends there

	// The pair's tokens (frameToken), set by connect: tokOut goes in
	// every frame to this process, tokIn must be in every frame from it.
	tokOut, tokIn uint64

	heard    bool              // a frame came from this process (progress only)
	next     uint32            // next to deliver (progress only)
	held     map[uint32][]byte // arrived early (progress only): header and payload
	finished atomic.Bool       // said BYE
}

var (
	_ device.Device     = (*Device)(nil)
	_ device.Progressor = (*Device)(nil)
	_ device.Incoming   = (*eagerRemote)(nil)
	_ device.Incoming   = (*rndzRemote)(nil)
)

// newDevice opens an endpoint and its slabs; the caller exchanges
// addresses (connect) and then starts it. eager is the protocol switch
// (0: the provider's default).
func newDevice(cfg fabric.Config, self, procs int, layout device.Layout, eager int) (*Device, error) {
	if cfg.InjectSize == 0 {
		cfg.InjectSize = fabricInject
	}
	ep, err := fabric.Open(cfg)
	if err != nil {
		return nil, err
	}
	if eager == 0 {
		eager = defaultEager(ep.Info())
	}
	d := &Device{ep: ep, info: ep.Info(), self: self, ranks: layout.Ranks, owner: layout.Owner, eager: eager, lend: lendsEager(ep.Info()),
		peers: make([]fabricPeer, procs), sends: map[uint64]*rndzSend{}, pulls: map[uint64]*rndzWait{},
		stopped: make(chan struct{}), closing: make(chan struct{}), kick: make(chan struct{}, 1),
		cs: make([]fabric.Completion, 32)}
	d.cache.ep = ep
	for i := range d.peers {
		d.peers[i].batch = -1
	}
	d.cache.stats = &d.stats.regs
	d.cache.hits = &d.stats.hits
	d.slot = (fabricHeader + eager + 63) &^ 63
	size := d.slot * (fabricSendSlots + fabricRecvSlots)
	if d.pool, err = buffer.NewPool(buffer.WithOffHeap(true), buffer.WithRegionSize(regionFor(size)), buffer.WithRetainRegions(0)); err == nil {
		d.slab, err = d.pool.Get(size)
	}
	if err == nil {
		d.mr, err = ep.Register(d.slab, fabric.AccessSend|fabric.AccessRecv)
	}
	if err != nil {
		d.free()
		return nil, fmt.Errorf("comm: the RDMA device's buffers: %w", err)
	}
	d.sfree = make(chan int, fabricSendSlots)
	d.loans = make([]atomic.Pointer[lentSend], fabricRecvSlots+fabricSendSlots)
	for i := range fabricSendSlots {
		d.sfree <- fabricRecvSlots + i
	}
	return d, nil
}

// free releases what newDevice opened.
func (d *Device) free() {
	d.slabMu.Lock()
	d.slabGone = true
	d.slabMu.Unlock()
	d.cache.closeAll()
	d.freeRMA()
	d.mr.Close()
	d.ep.Close()
	if d.slab != nil {
		d.pool.Put(d.slab)
	}
	if d.pool != nil {
		d.pool.Close()
	}
}

// connect learns the other processes' addresses (names by process) and
// the tokens of the frames to and from each, which the job's secret
// makes.
func (d *Device) connect(names [][]byte, secret []byte) error {
	for p := range d.peers {
		if p != d.self {
			d.peers[p].tokOut, d.peers[p].tokIn = frameToken(secret, d.self, p), frameToken(secret, p, d.self)
		}
	}
	addrs, err := d.ep.Insert(names)
	d.addrs = addrs
	return err
}

// frameToken is the token of the frames process from sends to process
// to: the first 8 bytes of an HMAC-SHA256, keyed with the job's secret,
// of the pair. Only the job's processes can make it; a frame that carries
// it proves that it comes from the process its header names (as long as
// nobody on the path between the two reads it: like the TCP backend's
// handshake, it authenticates the ends, not the traffic). A token is
// good for one direction of one pair only, so one that reached a
// stranger (at the stale address of a process that ended) opens nothing
// else.
func frameToken(secret []byte, from, to int) uint64 {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("mpgo-fabric-frame"))
	var pair [8]byte
	binary.LittleEndian.PutUint32(pair[0:], uint32(from))
	binary.LittleEndian.PutUint32(pair[4:], uint32(to))
	m.Write(pair[:])
	return binary.LittleEndian.Uint64(m.Sum(nil))
}

// authentic reports whether frame, received from src (fabric.AddrUnknown
// when the provider does not say), comes from the process its header
// names: it is long enough to have a header, names another process of
// the job, carries that process's token and, when the provider names
// senders (fabric.Info.Source), came from that process's address. A
// frame that is not is dropped unread: nothing a stranger sends reaches
// the engine or aborts the job.
func (d *Device) authentic(frame []byte, src fabric.Addr) bool {
	if len(frame) < fabricHeader {
		return false
	}
	le := binary.LittleEndian
	from := le.Uint32(frame[hdrFrom:])
	if int64(from) >= int64(len(d.peers)) || int(from) == d.self {
		return false
	}
	if d.info.Source && src != d.addrs[from] {
		return false
	}
	return le.Uint64(frame[hdrTok:]) == d.peers[from].tokIn
}

// Start implements [device.Device]: it posts the receive slots and starts
// the progress loop, which delivers to e.
func (d *Device) Start(e device.Engine) error {
	d.e = e
	for i := range fabricRecvSlots {
		if err := d.postRecv(i); err != nil {
			close(d.stopped) // no loop to wait for: Close must not
			return err
		}
	}
	if d.info.File != "" {
		for p := range d.peers {
			if p != d.self {
				d.control(p, header{kind: kindHello, from: uint32(d.self)}) // the loop is not running yet
			}
		}
	}
	go d.loop()
	return nil
}

// The endpoint's file (shm's region in /dev/shm) outlives a process that
// does not close the endpoint: one that exits in a rank (os.Exit), is
// killed, or is ended by the launcher when another process of the job
// fails (Hydra sends SIGKILL), and a job that fails so leaves one file
// of the region's size (16 MiB) per process. A peer needs the file only
// to map the region, which it has done once it sent to this process: so
// every process says hello to every other at start, and unlinks its file
// as soon as a frame came from every other (heardFrom); from then on
// nothing is left whatever becomes of the process. One that the job
// ends sooner unlinks it when the world aborts (step), or as it closes.

// heardFrom notes that a frame came from process proc, and unlinks the
// endpoint's file once one came from every other process (progress
// only).
func (d *Device) heardFrom(proc int) {
	p := &d.peers[proc]
	if p.heard {
		return
	}
	p.heard = true
	if d.heard++; d.heard == len(d.peers)-1 {
		d.ep.Unlink()
	}
}

func (d *Device) slotBytes(i int) []byte { return d.slab[i*d.slot : (i+1)*d.slot : (i+1)*d.slot] }

func (d *Device) postRecv(i int) error {
	return d.ep.Recv(d.slotBytes(i), d.mr, opRecvSlot|uint64(i))
}

// Stats returns the device's counters.
func (d *Device) Stats() Stats {
	s := &d.stats
	return Stats{EagerMessages: s.eagerMsgs.Load(), EagerCopied: s.eagerCopied.Load(), EagerLent: s.eagerLent.Load(),
		RndzMessages: s.rndzMsgs.Load(), RndzWritten: s.rndzWritten.Load(), RndzCopied: s.rndzCopied.Load(),
		Registrations: s.regs.Load(), RegCacheHits: s.hits.Load(), ReorderedHolds: s.holds.Load(),
		Injected: s.injected.Load(), RankReaped: s.rankReaped.Load(), LoopReaped: s.loopReaped.Load(),
		Batched: s.batched.Load(), Rejected: s.rejected.Load(), OneSided: d.rma.posted.Load()}
}

// header is a decoded message header.
type header struct {
	kind, flags, typ uint8
	seq, from, fp    uint32
	src, dst         int
	source, tag      int64
	ctx              uint64
	n                int
	id, rid          uint64
	addr, key        uint64
}

// put writes h into b with tok, the token of frames to the process it
// goes to (fabricPeer.tokOut).
func (h *header) put(b []byte, tok uint64) {
	b[hdrKind], b[hdrFlags], b[hdrType] = h.kind, h.flags, h.typ
	le := binary.LittleEndian
	le.PutUint32(b[hdrSeq:], h.seq)
	le.PutUint32(b[hdrFrom:], h.from)
	le.PutUint32(b[hdrSrc:], uint32(h.src))
	le.PutUint32(b[hdrDst:], uint32(h.dst))
	le.PutUint32(b[hdrFP:], h.fp)
	le.PutUint64(b[hdrSourc:], uint64(h.source))
	le.PutUint64(b[hdrTag:], uint64(h.tag))
	le.PutUint64(b[hdrCtx:], h.ctx)
	le.PutUint64(b[hdrLen:], uint64(h.n))
	le.PutUint64(b[hdrID:], h.id)
	le.PutUint64(b[hdrRID:], h.rid)
	le.PutUint64(b[hdrAddr:], h.addr)
	le.PutUint64(b[hdrKey:], h.key)
	le.PutUint64(b[hdrTok:], tok)
}

// parseHeader decodes and checks the header of frame from a peer.
func (d *Device) parseHeader(frame []byte) (header, error) {
	var h header
	if len(frame) < fabricHeader {
		return h, fmt.Errorf("comm: a %d-byte fabric message: %w", len(frame), device.ErrArg)
	}
	le := binary.LittleEndian
	h.kind, h.flags, h.typ = frame[hdrKind], frame[hdrFlags], frame[hdrType]
	h.seq, h.from = le.Uint32(frame[hdrSeq:]), le.Uint32(frame[hdrFrom:])
	h.src, h.dst = int(le.Uint32(frame[hdrSrc:])), int(le.Uint32(frame[hdrDst:]))
	h.fp = le.Uint32(frame[hdrFP:])
	h.source, h.tag = int64(le.Uint64(frame[hdrSourc:])), int64(le.Uint64(frame[hdrTag:]))
	h.ctx, h.n = le.Uint64(frame[hdrCtx:]), int(le.Uint64(frame[hdrLen:])&(1<<62-1))
	h.id, h.rid = le.Uint64(frame[hdrID:]), le.Uint64(frame[hdrRID:])
	h.addr, h.key = le.Uint64(frame[hdrAddr:]), le.Uint64(frame[hdrKey:])
	n := len(d.peers)
	switch {
	case int(h.from) >= n || int(h.from) == d.self:
		return h, fmt.Errorf("comm: fabric message from process %d: %w", h.from, device.ErrRank)
	case h.kind < kindEager || h.kind > kindHello:
		return h, fmt.Errorf("comm: fabric message of kind %d: %w", h.kind, device.ErrArg)
	case (h.kind == kindEager || h.kind == kindBatch) && h.n != len(frame)-fabricHeader:
		return h, fmt.Errorf("comm: eager message of %d bytes says %d: %w", len(frame)-fabricHeader, h.n, device.ErrArg)
	case h.kind == kindEager || h.kind == kindStart:
		if h.src >= d.ranks || d.owner(h.src) != int(h.from) || h.dst >= d.ranks || d.owner(h.dst) != d.self {
			return h, fmt.Errorf("comm: message from rank %d to rank %d: %w", h.src, h.dst, device.ErrRank)
		}
	}
	return h, nil
}

// Send implements [Device].
func (d *Device) Send(src, dst int, env device.Envelope, data []byte, done func(error)) error {
	proc := d.owner(dst)
	if err := d.usable(proc); err != nil {
		return err
	}
	h := header{kind: kindEager, typ: env.Type, fp: env.Fingerprint, from: uint32(d.self), src: src, dst: dst,
		source: int64(env.Source), tag: int64(env.Tag), ctx: env.Context, n: len(data)}
	if !env.Sync && len(data) < d.eager {
		if d.lends(len(data)) {
			return d.sendLent(proc, &h, data, done)
		}
		if err := d.sendOrdered(proc, &h, data, nil, fabricPostTimeout); err != nil {
			return err
		}
		d.stats.eagerMsgs.Add(1)
		d.stats.eagerCopied.Add(int64(len(data)))
		done(nil)
		return nil
	}
	h.kind = kindStart
	if env.Sync {
		h.flags = flagSync
	}
	rs := &rndzSend{proc: proc, data: data, done: done}
	if err := rs.hold(d, data, fabric.AccessWrite); err != nil { // the provider reads it during the write
		return err
	}
	h.id = d.ids.Add(1)
	d.mu.Lock()
	d.sends[h.id] = rs
	d.mu.Unlock()
	if err := d.sendOrdered(proc, &h, nil, nil, fabricPostTimeout); err != nil {
		d.mu.Lock()
		delete(d.sends, h.id)
		d.mu.Unlock()
		rs.release(d)
		return err
	}
	d.stats.rndzMsgs.Add(1)
	return nil
}

// usable fails when process proc can no longer receive.
func (d *Device) usable(proc int) error {
	if proc < 0 || proc >= len(d.peers) || proc == d.self {
		return fmt.Errorf("comm: fabric send to process %d: %w", proc, device.ErrRank)
	}
	select {
	case <-d.closing:
		return fmt.Errorf("comm: fabric device: %w", device.ErrClosed)
	default:
	}
	if d.peers[proc].finished.Load() {
		return fmt.Errorf("comm: process %d finished and receives nothing more: %w", proc, device.ErrPeerLost)
	}
	return nil
}

// takeSlot waits for a free send slot. d.slabMu must be held (read).
func (d *Device) takeSlot() (int, error) {
	if d.slabGone {
		return 0, fmt.Errorf("comm: fabric device: %w", device.ErrClosed)
	}
	select {
	case s := <-d.sfree:
		return s, nil
	default:
	}
	select {
	case s := <-d.sfree:
		return s, nil
	case <-d.closing:
		return 0, fmt.Errorf("comm: fabric device: %w", device.ErrClosed)
	}
}

// sendOrdered sends an ordered message (eager, START, BYE) with payload
// to process proc: copied into a send slot, numbered, posted; or, for an
// eager message in a burst, added to the process's batch (rdma_batch.go);
// or, with ls, posted from payload itself behind the header in a slot
// (sendLent).
func (d *Device) sendOrdered(proc int, h *header, payload []byte, ls *lentSend, limit time.Duration) error {
	d.slabMu.RLock()
	defer d.slabMu.RUnlock()
	p := &d.peers[proc]
	batchable := h.kind == kindEager && ls == nil && len(payload) <= d.batchMax()
	if batchable && d.batches.Load() > 0 { // a lone send skips this lock
		p.mu.Lock()
		if d.appendNumberedLocked(p, h, payload) {
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
	}
	s, err := d.takeSlot()
	if err != nil {
		return err
	}
	p.mu.Lock()
	if batchable && d.appendNumberedLocked(p, h, payload) { // opened meanwhile
		p.mu.Unlock()
		d.sfree <- s
		return nil
	}
	// What is batched goes first (the receiver would hold this message
	// until the batch came otherwise).
	if _, err := d.flushLocked(proc, p, true, limit); err != nil {
		p.mu.Unlock()
		d.sfree <- s
		d.lost(proc, err) // the batch's messages were reported sent
		return err
	}
	if batchable && inBurst(p, time.Now().UnixNano()) {
		d.openLocked(p, s)
		d.appendNumberedLocked(p, h, payload)
		p.mu.Unlock()
		d.wake() // the loop sends it if no rank waits soon
		return nil
	}
	b := d.slotBytes(s)
	if ls == nil {
		copy(b[fabricHeader:], payload)
	}
	h.seq = p.seq
	h.put(b, p.tokOut)
	arrived := p.arrived.Load()
	err = d.post(limit, func() error {
		if ls != nil {
			return d.postLent(proc, s, ls)
		}
		return d.postSlot(proc, s, h, fabricHeader+len(payload))
	})
	if err == nil {
		p.seq++
		if h.kind == kindEager {
			noteEager(p, arrived)
		}
	}
	p.mu.Unlock()
	if err != nil {
		d.sfree <- s
		return d.postError(proc, err)
	}
	d.wake()
	return nil
}

// appendNumberedLocked numbers h and adds it to p's open batch, when one
// is open and it fits; p.mu must be held.
func (d *Device) appendNumberedLocked(p *fabricPeer, h *header, payload []byte) bool {
	h.seq = p.seq
	if !d.appendLocked(p, h, payload) {
		return false
	}
	p.seq++
	noteEager(p, p.arrived.Load()) // the batch is not sent yet
	return true
}

// injects reports whether a message of n bytes with header h goes by
// fi_inject: the provider copies it at once, so the slot is free on
// return and there is no send completion to reap (one cgo call and one
// completion less per small message). BYE and ABORT are sent, not
// injected: Close waits for their completions before it closes the
// endpoint, so that they are not lost in the provider's queue.
func (d *Device) injects(h *header, n int) bool {
	return n <= d.info.InjectSize && h.kind != kindBye && h.kind != kindAbort
}

// postSlot posts the first n bytes of send slot s, a message with header
// h, to process proc: injected (see injects), when the slot is free again
// at once and postSlot gives it back, or sent, when the send's completion
// gives it back. On error the slot is still the caller's.
func (d *Device) postSlot(proc, s int, h *header, n int) error {
	b := d.slotBytes(s)[:n]
	if d.injects(h, n) {
		err := d.ep.Inject(d.addrs[proc], b)
		if err == nil {
			d.stats.injected.Add(1)
			d.sfree <- s
		}
		return err
	}
	return d.ep.Send(d.addrs[proc], b, d.mr, opSendSlot|uint64(s))
}

// lends reports whether an eager payload of n bytes is sent from the
// caller's buffer (sendLent) rather than copied into a send slot: when the
// provider takes it (lendsEager) and it is too large to join a batch.
func (d *Device) lends(n int) bool { return d.lend && n > d.batchMax() }

// lendsEager reports whether eager sends on the endpoint go uncopied. Over
// net, on loopback, with 128 KiB eager, in three sets of 8 to 10 rounds:
// 64 KiB osu_latency 38.6 -> 33.8, 44.2 -> 29.3 and 36.7 -> 27.6 us;
// osu_bw -2 to +13 %, inside the noise. Over shm a send gathered from a
// user buffer is slower (60000 B latency 38 -> 308 us: it takes another
// protocol); other providers are unmeasured and keep copying.
func lendsEager(info fabric.Info) bool { return socketProvider(info) && info.IOVLimit >= 2 }

// lentSend is an eager send whose payload the provider reads from the
// caller's buffer until the send's completion, which runs done.
type lentSend struct {
	lent
	data []byte
	done func(error)
}

// sendLent sends an eager message without copying its payload: the
// header goes in a send slot, the payload from data (held: pinned, or
// registered under FI_MR_LOCAL), both in one send (fabric.SendV). done
// runs at the send's completion, when data may be reused; sendOrdered
// rules out a batch, which would copy.
func (d *Device) sendLent(proc int, h *header, data []byte, done func(error)) error {
	ls := &lentSend{data: data, done: done}
	if err := ls.hold(d, data, fabric.AccessSend); err != nil {
		return err
	}
	if err := d.sendOrdered(proc, h, data, ls, fabricPostTimeout); err != nil {
		ls.release(d)
		return err
	}
	d.stats.eagerMsgs.Add(1)
	d.stats.eagerLent.Add(1)
	return nil
}

// postLent posts send slot s (a header) followed by ls's payload to
// process proc; the slot's completion finishes ls (complete).
func (d *Device) postLent(proc, s int, ls *lentSend) error {
	d.loans[s].Store(ls)
	err := d.ep.SendV(d.addrs[proc], d.slotBytes(s)[:fabricHeader], d.mr, ls.data, ls.region(), opSendSlot|uint64(s))
	if err != nil {
		d.loans[s].Store(nil)
	}
	return err
}

// finishLent ends the lent send of slot s, if it has one and nobody
// ended it yet, with err.
func (d *Device) finishLent(s int, err error) {
	if ls := d.loans[s].Swap(nil); ls != nil {
		ls.release(d)
		ls.done(err)
	}
}

// sendControl sends an unordered control message (REPLY, END, ABORT)
// from a goroutine other than the progress loop.
func (d *Device) sendControl(proc int, h *header, limit time.Duration) error {
	d.slabMu.RLock()
	defer d.slabMu.RUnlock()
	s, err := d.takeSlot()
	if err != nil {
		return err
	}
	b := d.slotBytes(s)
	h.put(b, d.peers[proc].tokOut)
	err = d.post(limit, func() error { return d.postSlot(proc, s, h, fabricHeader) })
	if err != nil {
		d.sfree <- s
		return d.postError(proc, err)
	}
	d.wake()
	return nil
}

// fabricPostTimeout bounds how long a post keeps meeting EAGAIN before
// the peer counts as lost (a provider may say "again" for ever to a peer
// whose endpoint is gone, while it tries to connect).
const fabricPostTimeout = 20 * time.Second

// post retries a post while the provider says to try again (its queue is
// full, or a connection is being set up); the progress loop frees the
// resources meanwhile. It gives up once the device closes, or after
// limit.
func (d *Device) post(limit time.Duration, call func() error) error {
	var start time.Time
	for i := 0; ; i++ {
		err := call()
		if !errors.Is(err, fabric.ErrAgain) {
			return err
		}
		select {
		case <-d.closing:
			return fmt.Errorf("comm: fabric device: %w", device.ErrClosed)
		default:
		}
		if i == 0 {
			start = time.Now()
		} else if time.Since(start) > limit {
			return fmt.Errorf("comm: the provider stayed busy for %v: %w", limit, err)
		}
		d.wake()
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// postError wraps an error posting to process proc.
func (d *Device) postError(proc int, err error) error {
	if errors.Is(err, device.ErrClosed) || errors.Is(err, fabric.ErrClosed) {
		return fmt.Errorf("comm: fabric device: %w: %w", device.ErrClosed, err)
	}
	return fmt.Errorf("comm: fabric send to process %d: %w: %w", proc, device.ErrPeerLost, err)
}

// wake gets the progress loop out of a blocking wait.
func (d *Device) wake() {
	if d.sleeping.Load() {
		d.ep.Wake()
	}
}

// lent is a user buffer the provider reads after the call that posted it
// returned: registered through the cache when the provider needs local
// registration (FI_MR_LOCAL), pinned otherwise.
type lent struct {
	pin runtime.Pinner // the buffer, unless reg holds it
	reg *regEntry      // the buffer's registration (FI_MR_LOCAL)
}

// hold keeps b for the provider, for access.
func (l *lent) hold(d *Device, b []byte, access fabric.Access) error {
	if len(b) == 0 {
		return nil
	}
	if d.info.MRMode&fabric.MRLocal == 0 {
		l.pin.Pin(&b[0])
		return nil
	}
	e, err := d.cache.acquire(b, access)
	if err != nil {
		return fmt.Errorf("comm: registering a send buffer: %w", err)
	}
	l.reg = e
	return nil
}

// region is the buffer's registration, nil when it needs none.
func (l *lent) region() *fabric.MR { return l.reg.region() }

// release gives the buffer back.
func (l *lent) release(d *Device) {
	l.pin.Unpin()
	if l.reg != nil {
		d.cache.release(l.reg)
		l.reg = nil
	}
}

// rndzSend is a rendezvous send waiting for its REPLY, then its write.
type rndzSend struct {
	lent
	proc int
	data []byte
	done func(error)
	rid  uint64 // the receiver's id, for END
}

// rndzWait is a receive waiting for its rendezvous data.
type rndzWait struct {
	proc int
	ch   chan error // buffered: END (nil) or the failure
}

// eagerRemote is an eager message in the engine: its payload is in a
// receive slot until the loop detaches it (copies it out and reposts the
// slot), or until a receive pulls it.
type eagerRemote struct {
	d      *Device
	mu     sync.Mutex
	data   []byte
	pulled bool
}

// Pull implements [device.Incoming].
func (e *eagerRemote) Pull(dst []byte) error {
	e.mu.Lock()
	if dst != nil {
		copy(dst, e.data)
		e.d.stats.eagerCopied.Add(int64(len(e.data)))
	}
	e.data, e.pulled = nil, true
	e.mu.Unlock()
	return nil
}

// PullArriving implements [device.Incoming]: straight from the slot.
func (e *eagerRemote) PullArriving(dst []byte) error { return e.Pull(dst) }

// detach copies the payload out of its slot unless it was pulled.
func (e *eagerRemote) detach() {
	e.mu.Lock()
	if !e.pulled {
		e.data = append([]byte(nil), e.data...)
		e.d.stats.eagerCopied.Add(int64(len(e.data)))
	}
	e.mu.Unlock()
}

// rndzRemote is a RNDZ_START in the engine: the payload is with its
// sender until a receive pulls it.
type rndzRemote struct {
	d    *Device
	proc int
	id   uint64 // the sender's
}

// PullArriving implements [device.Incoming]; the engine pulls a
// rendezvous (Envelope.Rendezvous) with Pull, off the progress loop.
func (r *rndzRemote) PullArriving(dst []byte) error { return r.Pull(dst) }

// Pull implements [device.Incoming]: register dst, REPLY with its address
// and key, wait for END.
func (r *rndzRemote) Pull(dst []byte) error {
	d := r.d
	if !d.enterPull() {
		return fmt.Errorf("comm: rendezvous from process %d: %w", r.proc, device.ErrClosed)
	}
	defer d.pullsWG.Done()
	h := header{kind: kindReply, from: uint32(d.self), id: r.id, n: len(dst)}
	if len(dst) == 0 {
		h.flags = flagNoData
		return d.sendControl(r.proc, &h, fabricPostTimeout)
	}
	e, err := d.cache.acquire(dst, fabric.AccessRemoteWrite)
	if err != nil {
		// Let the sender go all the same, then fail this receive.
		h.flags, h.n = flagNoData, 0
		d.sendControl(r.proc, &h, fabricPostTimeout)
		return fmt.Errorf("comm: registering a receive buffer: %w", err)
	}
	defer d.cache.release(e)
	wt := &rndzWait{proc: r.proc, ch: make(chan error, 1)}
	h.rid, h.addr, h.key = d.ids.Add(1), e.mr.RemoteAddr(dst), e.mr.Key()
	d.mu.Lock()
	d.pulls[h.rid] = wt
	d.mu.Unlock()
	if err := d.sendControl(r.proc, &h, fabricPostTimeout); err != nil {
		d.mu.Lock()
		delete(d.pulls, h.rid)
		d.mu.Unlock()
		return err
	}
	d.moving.Add(1) // a waiting rank polls on while the payload comes
	defer d.moving.Add(-1)
	select {
	case err = <-wt.ch:
	case <-d.closing:
		err = fmt.Errorf("comm: rendezvous from process %d: %w", r.proc, device.ErrClosed)
	}
	if err == nil {
		d.stats.rndzWritten.Add(int64(len(dst)))
	}
	return err
}

// enterPull counts a rendezvous pull in pullsWG, which Close waits for
// before it frees the slab, unless Close began.
func (d *Device) enterPull() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pullsClosed {
		return false
	}
	d.pullsWG.Add(1)
	return true
}

// worldAborted reports whether the world aborted (Close then says ABORT,
// not BYE).
func (d *Device) worldAborted() bool { return d.e == nil || errors.Is(d.e.Err(), device.ErrAborted) }

// regionFor sizes the slab pool's regions as the engine sizes its eager
// pool's: the smallest power of two of at least 64 KiB that holds 16
// times size, at most 1 GiB.
func regionFor(size int) int {
	r := 64 << 10
	for r < 16*size && r < 1<<30 {
		r <<= 1
	}
	return r
}
