package job

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/comm/device"
)

// Near is a device that reaches only some of the job's processes (those
// of this host, for the shared-memory backend), and says which.
type Near interface {
	device.Device
	// Local reports whether the device reaches process proc (this
	// process counts).
	Local(proc int) bool
}

// WithNear returns an Opener that opens near, then far unless near
// reaches every process, and routes each message through the one that
// reaches its destination ([Route]). Every process of the job opens
// alike, so every one calls far's Opener or none does. When near fails
// with [device.ErrNotSupported] (a platform without it, in every process
// alike) far alone carries the job.
func WithNear(near func(kv device.KV, l device.Layout) (Near, error), far Opener) Opener {
	return func(kv device.KV, l device.Layout) (device.Device, error) {
		n, err := near(kv, l)
		if errors.Is(err, device.ErrNotSupported) {
			return far(kv, l)
		}
		if err != nil {
			return nil, err
		}
		all := true
		for p := range kv.Size() {
			all = all && n.Local(p)
		}
		if all {
			return n, nil
		}
		f, err := far(kv, l)
		if err != nil {
			n.Close()
			return nil, err
		}
		return Route(n, f, n.Local, l.Owner), nil
	}
}

// Route returns a device that carries the messages to the processes for
// which near reports true over the device nearDev, and the others over
// far: the shared-memory backend for the processes of this host, TCP (or
// RDMA) for the rest of the job. Both devices start with the same engine
// and close together; a process's end (finished or lost) is told to the
// engine once, whichever device tells it, and each process's messages go
// over one device, in order.
func Route(nearDev, far device.Device, near func(proc int) bool, owner func(rank int) int) device.Device {
	r := &route{near: nearDev, far: far, isNear: near, owner: owner}
	r.progress, _ = nearDev.(device.Progressor)
	r.segments, _ = nearDev.(device.Segments)
	r.now, _ = nearDev.(device.Immediate)
	r.farWaiting, _ = far.(farWaiting)
	return r
}

// route is Route's device.
type route struct {
	near, far device.Device
	isNear    func(proc int) bool
	owner     func(rank int) int
	progress  device.Progressor // near's, if it has one
	segments  device.Segments   // near's, if it has one
	now       device.Immediate  // near's, if it has one
	// farWaiting is far's, if it has one: the TCP device's readers poll
	// their sockets while ranks wait.
	farWaiting farWaiting
}

// farWaiting is a far device that wants to know when a rank is about to
// wait (the TCP device: [tcp.Device.Waiting]).
type farWaiting interface{ Waiting() }

var (
	_ device.Device     = (*route)(nil)
	_ device.Progressor = (*route)(nil)
	_ device.Segments   = (*route)(nil)
	_ device.Immediate  = (*route)(nil)
)

// Start implements [device.Device].
func (r *route) Start(e device.Engine) error {
	e = &onceEngine{Engine: e, ended: map[int]bool{}}
	if err := r.near.Start(e); err != nil {
		return err
	}
	return r.far.Start(e)
}

// Send implements [device.Device].
func (r *route) Send(src, dst int, env device.Envelope, data []byte, done func(error)) error {
	if r.isNear(r.owner(dst)) {
		return r.near.Send(src, dst, env, data, done)
	}
	return r.far.Send(src, dst, env, data, done)
}

// SendNow implements [device.Immediate] with near's, for the processes
// near reaches; the others go through Send.
func (r *route) SendNow(src, dst int, env device.Envelope, data []byte) (bool, error) {
	if r.now == nil || !r.isNear(r.owner(dst)) {
		return false, nil
	}
	return r.now.SendNow(src, dst, env, data)
}

// Close implements [device.Device].
func (r *route) Close() error {
	return errors.Join(r.near.Close(), r.far.Close())
}

// Drive implements [device.Progressor] with near's progress: a waiting
// rank polls the rings of this host (a far device's messages come
// through its own goroutines, which far may be told to hurry: Waiting).
func (r *route) Drive(w device.Waiter) bool {
	if r.farWaiting != nil {
		r.farWaiting.Waiting()
	}
	if r.progress == nil {
		return w.Ready()
	}
	return r.progress.Drive(w)
}

// SharesMemory implements [device.Segments] with near's: the processes
// of this host, where near shares memory.
func (r *route) SharesMemory(proc int) bool {
	return r.segments != nil && r.isNear(proc) && r.segments.SharesMemory(proc)
}

// CreateSegment implements [device.Segments] with near's.
func (r *route) CreateSegment(key uint64, size int, procs []int) ([]byte, error) {
	if r.segments == nil {
		return nil, fmt.Errorf("job: the near device shares no memory: %w", device.ErrNotSupported)
	}
	for _, p := range procs {
		if !r.isNear(p) {
			return nil, fmt.Errorf("job: a segment for process %d of another host: %w", p, device.ErrArg)
		}
	}
	return r.segments.CreateSegment(key, size, procs)
}

// AttachSegment implements [device.Segments] with near's.
func (r *route) AttachSegment(key uint64, creator, size int) ([]byte, error) {
	if r.segments == nil || !r.isNear(creator) {
		return nil, fmt.Errorf("job: a segment of process %d, which shares no memory with this one: %w", creator, device.ErrNotSupported)
	}
	return r.segments.AttachSegment(key, creator, size)
}

// ReleaseSegment implements [device.Segments] with near's.
func (r *route) ReleaseSegment(key uint64, creator int) error {
	if r.segments == nil {
		return fmt.Errorf("job: the near device shares no memory: %w", device.ErrNotSupported)
	}
	return r.segments.ReleaseSegment(key, creator)
}

// onceEngine tells the engine of each process's end once.
type onceEngine struct {
	device.Engine
	mu    sync.Mutex
	ended map[int]bool
}

// PeerFinished implements [device.Engine].
func (o *onceEngine) PeerFinished(proc int) {
	o.mu.Lock()
	first := !o.ended[proc]
	o.ended[proc] = true
	o.mu.Unlock()
	if first {
		o.Engine.PeerFinished(proc)
	}
}
