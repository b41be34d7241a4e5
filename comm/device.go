package comm

import "fmt"

// The backend boundary.
//
// Every rank's matching (its inbox: posted receives, unexpected messages,
// probes) lives in the process that runs the rank. A sender in the same
// process matches directly against the receiver's inbox: that is the whole
// shared-memory backend, and it needs no Device. A Device carries messages
// to ranks in other processes (the TCP and RDMA backends): the sending side
// hands it each message for a remote rank, and the receiving side feeds
// what arrives into the local inbox with [World.Deliver], where it is
// matched exactly as a local message would be. Semantics are therefore the
// same on every backend: the engine decides matching, the device only moves
// bytes.
//
// Large messages are not pushed blindly: the device delivers a [Remote]
// (request-to-send), and the engine pulls the payload only once a receive
// matched it, straight into the receive buffer (clear-to-send, then the
// data; an RDMA write where the fabric allows).

// Device moves messages between this process and ranks that live in other
// processes. Its methods are called concurrently by every local rank.
type Device interface {
	// Send transmits one message from local world rank src to world rank
	// dst (not a local rank). The
	// device owns data until it calls done, exactly once, with nil once the
	// sender may reuse data (for env.Sync: once the remote receive matched)
	// or with the error that ended the transfer. done must not be called
	// from inside Send when Send returns an error.
	Send(src, dst int, env Envelope, data []byte, done func(error)) error
	// Close releases the device; pending transfers complete with an error.
	Close() error
}

// progressor is an optional interface of a [Device] whose transfers move
// only while somebody polls it (libfabric providers with manual progress,
// such as tcp and shm). A rank about to park on an incomplete operation
// lets the device drive its progress first (see [endpoint.drive]): the rank
// that waits for an arrival then reaps it itself, instead of a separate
// progress goroutine reaping it and waking the rank, which costs two
// goroutine handoffs per round trip. The world finds it by type assertion
// once, in NewWorld; the shared-memory backend has no device and pays one
// nil check.
type progressor interface {
	// drive polls the device for at most a short window (about a round
	// trip), returning as soon as w is done, and reports whether it is.
	// It returns at once when another rank polls the device already (at
	// most one does: a waiting rank must not burn a core for nothing);
	// the caller then parks, and whoever polls wakes it. Safe for
	// concurrent use.
	drive(w waitable) bool
}

// waitable is what a rank waits for: a [Request], or any of several
// (waitRec).
type waitable interface{ done() bool }

// drive lets the world's device make progress for w before the rank parks,
// and reports whether w is done.
func (ep *endpoint) drive(w waitable) bool {
	p := ep.w.progress
	return p != nil && p.drive(w)
}

// Envelope describes a message as it travels between processes.
type Envelope struct {
	Context uint64 // the communicator's context (point-to-point or collective)
	Source  int    // the sender's rank in that communicator
	Tag     int
	Type    Type
	Len     int  // payload bytes
	Sync    bool // synchronous send: the sender completes once a receive matched
}

// Remote is a message whose payload is still with its sender (a
// rendezvous request, or any synchronous send).
type Remote interface {
	// Pull fetches the payload into dst (len(dst) == Envelope.Len) and
	// tells the sender that its message was received. With dst nil the
	// payload is discarded (the receive failed with ErrTruncate or ErrType)
	// and the sender is told all the same. The engine calls Pull once, from
	// the receiving rank, with no lock held.
	Pull(dst []byte) error
}

// Deliver hands the engine a message from world rank src for the local
// world rank dst, as a device received it. Exactly one of eager (the
// payload, which the engine owns from now on) and remote is set. It fails
// with ErrRank when dst is not local, and with ErrAborted or ErrClosed
// when the world stopped.
func (w *World) Deliver(src, dst int, env Envelope, eager []byte, remote Remote) error {
	if src < 0 || src >= len(w.eps) || dst < 0 || dst >= len(w.eps) || !w.isLocal(dst) {
		return fmt.Errorf("comm: deliver from rank %d to rank %d: %w", src, dst, ErrRank)
	}
	if (eager != nil) == (remote != nil) && !(eager == nil && env.Len == 0) {
		return fmt.Errorf("comm: deliver: need exactly one of eager and remote: %w", ErrArg)
	}
	m := msg{ctx: env.Context, src: env.Source, tag: env.Tag, typ: env.Type,
		data: eager, owned: true, remote: remote, size: env.Len}
	if remote != nil {
		m.owned = false
	}
	in := &w.eps[dst].inbox
	rr, err := in.arrive(in.pairOf(src), &m)
	if err != nil {
		return err
	}
	if rr != nil {
		take(rr, &m)
	}
	return nil
}

// isLocal reports whether world rank r runs in this process.
func (w *World) isLocal(r int) bool { return w.local == nil || w.local[r] }

// sendRemote hands send r to the device.
func (ep *endpoint) sendRemote(r *Request) error {
	env := Envelope{Context: r.ctx, Source: r.src, Tag: r.tag, Type: r.typ, Len: len(r.buf), Sync: r.mode == modeSync}
	return ep.w.dev.Send(ep.rank, r.peer, env, r.buf, func(err error) { r.complete(Status{}, err) })
}
