package devicetest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/comm/device"
)

// Loopback is an in-memory [device.Device] between worlds of one process,
// each playing a process of a job: a test double for the engine's side of
// the boundary, and the proof that a backend needs nothing but package
// device. It is written against that package alone, as a new backend
// would be.
//
// Messages shorter than the eager limit are copied at the sender and
// handed over as [device.Bytes]; longer and synchronous ones are handed
// over as a rendezvous whose payload the receiver pulls from the sender's
// buffer, completing the send. A device that closes while its world runs
// says goodbye (the others' engines hear PeerFinished); one that closes
// after an abort is lost to them (PeerLost). Safe for concurrent use.
//
// Invariants:
//   - mu (one per job, shared by its devices) guards every device's
//     engine, closed flag and the rendezvous not yet pulled (pending);
//     no engine method is called while it is held.
//   - Lock order: the destination's arriving (read), then mu.
//   - Arrive for a (src, dst) pair is called on the sending rank's
//     goroutine, inside Send, so the pair's messages arrive in the order
//     they were sent.
//   - A rendezvous is in its destination's pending set from just before
//     its Arrive until its pull begins; whoever takes it out of the set
//     (the pull, or the destination's Close) calls its done.
type Loopback struct {
	job   *loopJob
	proc  int
	eager int

	engine  device.Engine // guarded by job.mu
	closed  bool          // guarded by job.mu
	pending map[*rendezvous]struct{}

	// arriving is held (read) by every Send to this process from its check
	// that the process is open until its Arrive returns; Close takes it
	// (write) once closed is set, so that no arrival reaches the engine
	// after Close returned (the world closes next).
	arriving sync.RWMutex

	sent, pulled int // messages handed to Send, rendezvous pulled; guarded by job.mu
}

type loopJob struct {
	mu    sync.Mutex
	devs  []*Loopback
	owner func(rank int) int
}

var _ device.Device = (*Loopback)(nil)

// NewLoopback returns the devices of a job of procs processes laid out by
// layout (layout.Owner gives each rank's process), one per process;
// messages of eager bytes or more go by rendezvous.
func NewLoopback(procs int, layout device.Layout, eager int) []*Loopback {
	j := &loopJob{owner: layout.Owner}
	for p := range procs {
		j.devs = append(j.devs, &Loopback{job: j, proc: p, eager: eager, pending: map[*rendezvous]struct{}{}})
	}
	return j.devs
}

// Start implements [device.Device].
func (d *Loopback) Start(e device.Engine) error {
	d.job.mu.Lock()
	defer d.job.mu.Unlock()
	if d.engine != nil || d.closed {
		return fmt.Errorf("devicetest: loopback of process %d started twice: %w", d.proc, device.ErrArg)
	}
	d.engine = e
	return nil
}

// Send implements [device.Device].
func (d *Loopback) Send(src, dst int, env device.Envelope, data []byte, done func(error)) error {
	j := d.job
	to := j.devs[j.owner(dst)]
	to.arriving.RLock() // to's Close waits for this arrival
	defer to.arriving.RUnlock()
	j.mu.Lock()
	if d.closed {
		j.mu.Unlock()
		return fmt.Errorf("devicetest: loopback of process %d: %w", d.proc, device.ErrClosed)
	}
	if to.closed || to.engine == nil {
		j.mu.Unlock()
		return fmt.Errorf("devicetest: process %d: %w", to.proc, device.ErrPeerLost)
	}
	d.sent++
	e := to.engine
	if !env.Sync && len(data) < d.eager {
		j.mu.Unlock()
		_, err := e.Arrive(src, dst, env, device.Bytes(append([]byte(nil), data...)))
		if err != nil && !stopped(err) {
			return err
		}
		done(nil) // delivered, or dropped by a world that stopped
		return nil
	}
	rv := &rendezvous{to: to, data: data, done: done}
	to.pending[rv] = struct{}{}
	j.mu.Unlock()
	env.Rendezvous = true
	if _, err := e.Arrive(src, dst, env, rv); err != nil {
		if rv.take() {
			if stopped(err) {
				done(fmt.Errorf("devicetest: process %d stopped: %w: %w", to.proc, device.ErrPeerLost, err))
				return nil
			}
			return err
		}
	}
	return nil
}

// stopped reports whether an Arrive failed because the world stopped (the
// message is then dropped) rather than because of the message.
func stopped(err error) bool {
	return errors.Is(err, device.ErrAborted) || errors.Is(err, device.ErrClosed)
}

// Close implements [device.Device]: the other processes' engines learn
// that this one finished (or, after an abort, was lost), and the
// rendezvous sent to it that nobody pulled fail their senders.
func (d *Loopback) Close() error {
	j := d.job
	j.mu.Lock()
	if d.closed {
		j.mu.Unlock()
		return nil
	}
	d.closed = true
	aborted := d.engine != nil && errors.Is(d.engine.Err(), device.ErrAborted)
	var others []device.Engine
	for _, o := range j.devs {
		if o != d && o.engine != nil && !o.closed {
			others = append(others, o.engine)
		}
	}
	var left []*rendezvous
	for rv := range d.pending {
		left = append(left, rv)
	}
	j.mu.Unlock()
	d.arriving.Lock() // the arrivals in flight are over; later ones see closed
	d.arriving.Unlock()
	for _, e := range others {
		if aborted {
			e.PeerLost(fmt.Errorf("devicetest: process %d: %w", d.proc, device.ErrPeerLost))
		} else {
			e.PeerFinished(d.proc)
		}
	}
	for _, rv := range left {
		if rv.take() {
			rv.done(fmt.Errorf("devicetest: process %d closed: %w", d.proc, device.ErrPeerLost))
		}
	}
	return nil
}

// Counts returns the messages this device sent and the rendezvous pulled
// at it (sent to its process), for tests that check traffic crossed the boundary.
func (d *Loopback) Counts() (sent, pulled int) {
	d.job.mu.Lock()
	defer d.job.mu.Unlock()
	return d.sent, d.pulled
}

// rendezvous is a message whose payload stays in its sender's buffer
// until the receive that matched it pulls it.
type rendezvous struct {
	to   *Loopback
	data []byte
	done func(error)
}

var _ device.Incoming = (*rendezvous)(nil)

// take removes rv from its destination's pending set, reporting whether
// it was there (the caller then owns its done).
func (rv *rendezvous) take() bool {
	j := rv.to.job
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, ok := rv.to.pending[rv]; !ok {
		return false
	}
	delete(rv.to.pending, rv)
	return true
}

// Pull implements [device.Incoming]: the payload is copied from the
// sender's buffer (nothing with dst nil) and the send completes.
func (rv *rendezvous) Pull(dst []byte) error {
	if !rv.take() {
		return fmt.Errorf("devicetest: rendezvous pulled after its process closed: %w", device.ErrClosed)
	}
	copy(dst, rv.data)
	rv.to.job.mu.Lock()
	rv.to.pulled++
	rv.to.job.mu.Unlock()
	rv.done(nil)
	return nil
}

// PullArriving implements [device.Incoming]; the engine pulls a
// rendezvous with Pull.
func (rv *rendezvous) PullArriving(dst []byte) error { return rv.Pull(dst) }
