package device

// Device moves messages between the ranks of this process and ranks that
// run in other processes. The engine calls Start once, then Send from
// every local rank concurrently, then Close once every local rank has
// returned (or the world aborted). Implementations are safe for
// concurrent use.
type Device interface {
	// Start hands the device the engine it delivers arrivals to. The
	// device calls no method of e before Start and may deliver from any
	// goroutine of its own after it. An error fails the world's creation;
	// the caller then closes the device.
	Start(e Engine) error
	// Send transmits one message from the local world rank src to the
	// world rank dst, which runs in another process. The device owns data
	// until it calls done, exactly once, with nil once the sender may
	// reuse data (for env.Sync: once a receive matched it at dst) or with
	// the error that ended the transfer. done may be called from inside
	// Send (an eager message copied or written out at once), but not when
	// Send returns an error: then the message was not taken, and done is
	// never called. Errors wrap [ErrPeerLost] (the destination's process
	// is gone), [ErrClosed] (the device closed) or [ErrArg].
	Send(src, dst int, env Envelope, data []byte, done func(error)) error
	// Close releases the device. When [Engine.Err] reports an abort it
	// closes abruptly, so that the other processes learn this one failed;
	// otherwise gracefully: what it accepted is delivered first. Transfers
	// still pending complete with an error wrapping [ErrClosed]. Close is
	// called once, after which the device calls the engine no more.
	Close() error
}

// Engine is what the matching engine offers a device: the receiving side
// of the boundary, in the shape of a transport's handler one level up.
// Its methods are safe for concurrent use.
type Engine interface {
	// Arrive hands the engine a message from world rank src for the local
	// world rank dst, where it is matched exactly as a message from a rank
	// of this process would be. Calls for one (src, dst) pair must come in
	// the order src sent the messages (non-overtaking).
	//
	// When m is not a rendezvous, the engine pulls it before Arrive
	// returns, on the caller's goroutine ([Incoming.PullArriving]): into
	// the receive posted earlier that matches it, or else into an eager
	// copy of the engine's. A rendezvous that matches is pulled on a
	// goroutine of the engine's, or started ([Starter]); one that does not
	// is kept (kept true): the receive that matches it later calls
	// [Incoming.Pull] (or Start), from another goroutine, possibly before
	// Arrive returns, and the device must keep the payload until then.
	//
	// Arrive fails with an error wrapping [ErrRank] (dst is not a local
	// rank, src is not a rank), [ErrArg] (an envelope the engine cannot
	// accept: the device should treat its sender as malformed) or the
	// world's error once it stopped ([ErrAborted], [ErrClosed]); m was
	// then neither pulled nor kept.
	Arrive(src, dst int, env Envelope, m Incoming) (kept bool, err error)
	// PeerFinished reports that process proc sent its last message to
	// this one (it finished normally): what it sent stays receivable, and
	// the receives and probes now pending on one of its ranks, which can
	// never complete, fail with an error wrapping [ErrPeerLost].
	PeerFinished(proc int)
	// PeerLost aborts the world because a process broke off (or the
	// device itself failed): every pending and later operation fails with
	// an error wrapping both [ErrAborted] and cause. cause should wrap
	// [ErrPeerLost].
	PeerLost(cause error)
	// Err returns nil while the world runs, an error wrapping
	// [ErrAborted] once it aborted (with the cause PeerLost gave, if any),
	// and [ErrClosed] once it closed.
	Err() error
}

// Envelope describes a message as it travels between processes.
type Envelope struct {
	Context uint64 // the communicator's context (point-to-point or collective)
	Source  int    // the sender's rank in that communicator
	Tag     int
	Type    uint8 // the element type, as the engine numbers it: carried, not read
	Len     int   // payload bytes
	// Sync marks a synchronous send: the sender completes only once a
	// receive matched. A device carries it as a rendezvous.
	Sync bool
	// Rendezvous, on arrival, says that pulling the payload waits for
	// the network (it is still with its sender). The engine then pulls on
	// a goroutine of its own, so that no rank blocks posting a receive
	// (Irecv) on it. A payload still with its sender that the device
	// reads without waiting (the shared-memory device's copy out of the
	// sender's memory) may arrive without it, to be pulled as an eager
	// message is.
	Rendezvous bool
	// Fingerprint identifies a struct element type's memory layout
	// beside Type (which is then the engine's code for struct types);
	// zero for the other types. Carried, not read.
	Fingerprint uint32
}

// Incoming is a message a device received, as handed to [Engine.Arrive]:
// its payload is with the device (an eager message) or still with its
// sender (a rendezvous). The engine calls exactly one of Pull and
// PullArriving, once, for every message that Arrive matched or kept,
// with no engine lock held.
type Incoming interface {
	// Pull moves the payload into dst (len(dst) == Envelope.Len) and
	// tells the sender, where it waits (a rendezvous), that the message
	// was received; with dst nil the payload is discarded (the receive
	// failed with a truncation or type error) and the sender told all the
	// same. It may block until the payload came over the network, and
	// fails with an error wrapping [ErrPeerLost] or [ErrClosed] when it
	// cannot come.
	Pull(dst []byte) error
	// PullArriving is Pull from inside Arrive, on the goroutine that
	// called it, for a message that is not a rendezvous (into the
	// posted receive that matched it on arrival, or into the engine's
	// eager copy): a socket device reads the payload straight into dst; a
	// device whose payload sits in a buffer it owns copies it.
	PullArriving(dst []byte) error
}

// Starter is an [Incoming] whose rendezvous payload the engine can pull
// without a goroutine of its own waiting for it. Start begins moving the
// payload into dst (len(dst) == Envelope.Len, never nil) and returns at
// once, reporting true; done is then called once, with nil when dst holds
// the payload and the sender was told, or with the error Pull would have
// returned, from a goroutine of the device's (possibly its progress,
// inside Arrive or later: done must not block). Start reports false, and
// did nothing, where the payload would be moved by a call that blocks:
// the engine then calls Pull on a goroutine as for any rendezvous. The
// shared-memory device starts its payloads that come through its rings
// in chunks: the poller that copies the last one in completes the
// receive, and no thread has to be woken before the sender is asked.
type Starter interface {
	Incoming
	Start(dst []byte, done func(error)) bool
}

// Bytes is an [Incoming] whose payload is already in memory the engine
// may read until the pull returns: a device that copies each arrival into
// a buffer of its own hands that buffer over as Bytes.
type Bytes []byte

// Pull implements [Incoming]: it copies the payload into dst.
func (b Bytes) Pull(dst []byte) error {
	copy(dst, b)
	return nil
}

// PullArriving implements [Incoming], as Pull.
func (b Bytes) PullArriving(dst []byte) error { return b.Pull(dst) }

var _ Incoming = Bytes(nil)
