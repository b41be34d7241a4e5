//go:build linux && (amd64 || arm64)

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/mpgo/mpgo/comm/device"
)

// The rendezvous: a message at or above the eager limit, or synchronous,
// stays in its sender's buffer, pinned (runtime.Pinner) so that the
// garbage collector neither moves nor frees it while the peer may read
// it. The RTS record carries its address and size; the receive that
// matches it reads it with process_vm_readv straight into its buffer
// (from splitMin bytes on, half of it written by the sender meanwhile:
// split_linux.go) and answers FIN, which completes the send. Once a read
// from a peer has succeeded, its rendezvous of up to inlinePull bytes are
// read on arrival, by the goroutine that polls the rings (arriveRV): the
// engine is told they do not wait for the network, so a receive posted
// before the RTS came is served inside Engine.Arrive instead of on a
// goroutine the engine starts (a wake-up of another thread, about 4 us of
// an 8 us round trip here); one that comes later reads it in place, as
// an eager message is copied. Where the kernel refuses (EPERM), and for
// payloads of more than pipeLimit bytes on a host that is not
// oversubscribed (faster there: config.go's DefaultPipeLimit), the
// receiver answers CTS instead, and the sender's pusher writes the
// payload through the ring in chunks of a quarter ring (so that the
// receiver copies one chunk while the next is written), the send
// completing once the last one is written.

// outRV is a rendezvous send, until its done is called.
type outRV struct {
	to   *peer
	data []byte
	pin  runtime.Pinner
	done func(error)
}

// sendRV sends h's message by rendezvous.
func (d *Device) sendRV(p *peer, h *header, data []byte, done func(error)) error {
	rv := &outRV{to: p, data: data, done: done}
	if len(data) > 0 {
		rv.pin.Pin(unsafe.SliceData(data))
	}
	d.mu.Lock()
	if d.sends == nil {
		d.mu.Unlock()
		rv.pin.Unpin()
		return fmt.Errorf("shm: %w", device.ErrClosed)
	}
	d.nextID++
	id := d.nextID
	d.sends[id] = rv
	d.rvs.Add(1)
	p.rvOut.Add(1)
	d.mu.Unlock()
	var rts [16]byte
	binary.NativeEndian.PutUint64(rts[:], uint64(uintptr(unsafe.Pointer(unsafe.SliceData(data)))))
	binary.NativeEndian.PutUint64(rts[8:], uint64(len(data)))
	h.kind, h.id, h.len = kindRTS, id, uint64(len(rts))
	if err := d.put(p, h, rts[:]); err != nil {
		if d.take(p, id) != nil {
			rv.pin.Unpin()
			return err
		}
		return nil // failed by the peer's loss meanwhile: done was called
	}
	return nil
}

// take removes rendezvous send id to p from sends, returning it, or nil
// when it is not (or no longer) there.
func (d *Device) take(p *peer, id uint64) *outRV {
	d.mu.Lock()
	defer d.mu.Unlock()
	rv := d.sends[id]
	if rv == nil || rv.to != p {
		return nil
	}
	delete(d.sends, id)
	d.rvs.Add(-1)
	p.rvOut.Add(-1)
	return rv
}

// complete ends rendezvous send id to p with err.
func (d *Device) complete(p *peer, id uint64, err error) {
	if rv := d.take(p, id); rv != nil {
		rv.pin.Unpin()
		rv.done(err)
	}
}

// pushRV starts writing rendezvous id's payload to p through the ring,
// which p asked for (CTS); pollMu held.
func (d *Device) pushRV(p *peer, id uint64) {
	d.mu.Lock()
	rv := d.sends[id]
	d.mu.Unlock()
	if rv == nil || rv.to != p || d.stop.Load() {
		return
	}
	// The chunks that fit the ring now are written at once, by the
	// poller: the receiver has something to copy without waiting for a
	// goroutine to be woken. A goroutine writes the rest, waiting for
	// room as the poller must not (see fin).
	off := 0
	for off < len(rv.data) {
		c := rv.data[off:min(off+d.chunk, len(rv.data))]
		if !d.putNow(p, &header{kind: kindData, id: id, source: int64(off), len: uint64(len(c))}, c) {
			break
		}
		off += len(c)
	}
	if off == len(rv.data) {
		d.complete(p, id, nil)
		return
	}
	d.pushers.Add(1)
	go func() {
		defer d.pushers.Done()
		for ; off < len(rv.data); off += d.chunk {
			c := rv.data[off:min(off+d.chunk, len(rv.data))]
			h := header{kind: kindData, id: id, source: int64(off), len: uint64(len(c))}
			if err := d.put(p, &h, c); err != nil {
				d.complete(p, id, err)
				return
			}
		}
		d.complete(p, id, nil)
	}()
}

// inRV is a rendezvous as the engine pulls it.
type inRV struct {
	d    *Device
	from *peer
	id   uint64
	addr uintptr
	size int
}

var _ device.Starter = (*inRV)(nil)

// pipeKey names a pipelined pull: the sender and its rendezvous.
type pipeKey struct {
	proc int
	id   uint64
}

// pipe is a pull whose payload comes through the ring: done is called
// once, by whoever takes it out of pipes (its last chunk, its CTS that
// could not be written, the peer's loss, Close).
type pipe struct {
	dst  []byte
	got  int
	done func(error)
}

// arriveRV hands the engine the rendezvous of RTS record h (payload p).
func (d *Device) arriveRV(from *peer, h *header, p []byte) error {
	if len(p) != 16 {
		return fmt.Errorf("shm: an RTS of %d bytes: %w", len(p), device.ErrArg)
	}
	rv := &inRV{d: d, from: from, id: h.id, addr: uintptr(binary.NativeEndian.Uint64(p)), size: int(binary.NativeEndian.Uint64(p[8:]))}
	env := envelope(h)
	env.Len = rv.size
	env.Rendezvous = rv.size > inlinePull || !from.readable.Load() || d.noCMA.Load() || d.piped(rv.size)
	_, err := d.e.Arrive(int(h.src), int(h.dst), env, rv)
	return arriveErr(err)
}

// inlinePull is the largest rendezvous read on arrival (see above), as
// MPICH's progress engine copies in place: a read that long holds the
// rings' poller about 20 us here. Longer ones are read on a goroutine
// of their own, so that a window of them is copied on more than one
// core: reading up to 1 MiB on arrival saved 6-9 us one way at
// 512 KiB-1 MiB (53 -> 45 us at 512 KiB, MPICH 42), but osu_bw at
// 1 MiB fell from 12.4-12.8 GB/s to 9.9-12.8 (3 alternated runs each).
const inlinePull = 256 << 10

// Pull implements [device.Incoming]: the payload is read from the
// sender's memory into dst (nothing with dst nil), and the sender told.
func (rv *inRV) Pull(dst []byte) error { return rv.pull(dst, false) }

// PullArriving implements [device.Incoming]: Pull inside Engine.Arrive,
// on the poller's goroutine, for a rendezvous that arriveRV handed over
// as one that does not wait (its sender's memory was read before). It
// neither pipes the payload through the ring nor waits for room for the
// FIN, which only the poller (this goroutine) could make.
func (rv *inRV) PullArriving(dst []byte) error { return rv.pull(dst, true) }

// pull is Pull, or PullArriving when arriving.
func (rv *inRV) pull(dst []byte, arriving bool) error {
	d, p := rv.d, rv.from
	d.rvs.Add(1)
	defer d.rvs.Add(-1)
	if len(dst) > 0 {
		if arriving || !d.noCMA.Load() && !d.piped(len(dst)) {
			var err error
			if at := d.splitFor(p, dst); at > 0 {
				err = d.splitRead(rv, dst, at)
			} else {
				err = readFrom(p.pid, dst, rv.addr)
			}
			switch {
			case err == nil:
				p.readable.Store(true)
				if arriving {
					d.onArrival.Add(1)
				}
				return d.fin(rv, arriving)
			case errors.Is(err, syscall.ESRCH):
				return d.lostErr(p)
			case arriving:
				// Refused now, after a read that succeeded: the sender's
				// process changed what it lets others read (it became
				// undumpable, or the ptrace scope was raised). The
				// payload cannot come through the ring from here.
				return fmt.Errorf("shm: reading a message of process %d, which let it be read before: %w: %w", p.proc, device.ErrPeerLost, err)
			case errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOSYS):
				d.noCMA.Store(true) // and for the next ones
			default:
				return fmt.Errorf("shm: reading a message of process %d: %w: %w", p.proc, device.ErrPeerLost, err)
			}
		}
		return d.pipeIn(rv, dst)
	}
	return d.fin(rv, arriving)
}

// piped reports whether a rendezvous of n bytes comes through the ring
// although process_vm_readv could read it (DefaultPipeLimit).
func (d *Device) piped(n int) bool { return d.pipeLimit > 0 && n > d.pipeLimit }

// fin tells rv's sender that it was received. arriving: the caller is
// the poller, which must not wait for room in the ring (the peer's
// poller may be waiting for room in this one's): the FIN is then
// written by a goroutine of its own.
func (d *Device) fin(rv *inRV, arriving bool) error {
	h := header{kind: kindFIN, id: rv.id}
	if !arriving {
		return d.put(rv.from, &h, nil)
	}
	if d.putNow(rv.from, &h, nil) {
		return nil
	}
	d.pushers.Add(1)
	go func() {
		defer d.pushers.Done()
		d.put(rv.from, &h, nil) //nolint:errcheck // the peer is gone: its loss is reported by the loop
	}()
	return nil
}

// pipeIn asks rv's sender for its payload through the ring and waits for
// it.
func (d *Device) pipeIn(rv *inRV, dst []byte) error {
	got := make(chan error, 1)
	d.pipeStart(rv, dst, func(err error) { got <- err })
	return <-got
}

// Start implements [device.Starter]: a rendezvous that comes through the
// ring (more than pipeLimit bytes, or no process_vm_readv) is asked for at
// once, and done is called by the poller that copies its last chunk in:
// no goroutine waits for it, none has to be woken before the CTS goes.
// One that process_vm_readv reads is not started (a blocking call).
func (rv *inRV) Start(dst []byte, done func(error)) bool {
	d := rv.d
	if len(dst) == 0 || !d.noCMA.Load() && !d.piped(len(dst)) {
		return false
	}
	d.rvs.Add(1)
	d.pullsStarted.Add(1)
	d.pipeStart(rv, dst, func(err error) {
		d.rvs.Add(-1)
		done(err)
	})
	return true
}

// pipeStart registers the pull of rv's payload into dst through the ring,
// and asks its sender for it (CTS) without waiting for room in the ring:
// at once if there is room and no other producer holds it, else from a
// goroutine (the caller may be the poller, whose progress the room may
// wait for, or a rank posting a receive, which must not block). done is
// called once, when dst holds the payload or with why it cannot.
func (d *Device) pipeStart(rv *inRV, dst []byte, done func(error)) {
	d.pipedIn.Add(1)
	pp := &pipe{dst: dst, done: done}
	k := pipeKey{rv.from.proc, rv.id}
	d.mu.Lock()
	if d.pipes == nil {
		d.mu.Unlock()
		done(fmt.Errorf("shm: %w", device.ErrClosed))
		return
	}
	d.pipes[k] = pp
	d.mu.Unlock()
	h := header{kind: kindCTS, id: rv.id}
	if d.putNow(rv.from, &h, nil) {
		return
	}
	d.pushers.Add(1)
	go func() {
		defer d.pushers.Done()
		if err := d.put(rv.from, &h, nil); err != nil {
			d.mu.Lock()
			mine := d.pipes[k] == pp
			if mine {
				delete(d.pipes, k)
			}
			d.mu.Unlock()
			if mine { // else the peer's loss or Close failed it already
				done(err)
			}
		}
	}()
}

// chunkIn copies a chunk of a pipelined payload into its pull; pollMu
// held.
func (d *Device) chunkIn(from *peer, h *header, p []byte) error {
	k := pipeKey{from.proc, h.id}
	d.mu.Lock()
	pp := d.pipes[k]
	d.mu.Unlock()
	if pp == nil {
		return fmt.Errorf("shm: a chunk of rendezvous %d that nobody pulls: %w", h.id, device.ErrArg)
	}
	off := int(h.source)
	if off < 0 || off+len(p) > len(pp.dst) {
		return fmt.Errorf("shm: a chunk of %d bytes at %d of a %d-byte message: %w", len(p), off, len(pp.dst), device.ErrArg)
	}
	copy(pp.dst[off:], p)
	pp.got += len(p)
	if pp.got == len(pp.dst) {
		d.mu.Lock()
		delete(d.pipes, k)
		d.mu.Unlock()
		pp.done(nil)
	}
	return nil
}

// failWith fails the rendezvous sends to p and the pipelined pulls from
// p with err.
func (d *Device) failWith(p *peer, err error) {
	var rvs []*outRV
	var pps []*pipe
	d.mu.Lock()
	for id, rv := range d.sends {
		if rv.to == p {
			rvs = append(rvs, rv)
			delete(d.sends, id)
			d.rvs.Add(-1)
			p.rvOut.Add(-1)
		}
	}
	for k, pp := range d.pipes {
		if k.proc == p.proc {
			pps = append(pps, pp)
			delete(d.pipes, k)
		}
	}
	d.mu.Unlock()
	for _, rv := range rvs {
		rv.pin.Unpin()
		rv.done(err)
	}
	for _, pp := range pps {
		pp.done(err)
	}
}
