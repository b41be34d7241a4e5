//go:build linux && (amd64 || arm64)

package shm

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/mpgo/mpgo/comm/device"
)

// Split reads: a rendezvous that the receiver reads with
// process_vm_readv is copied by both processes at once, where the host
// has a core for each: the receiver asks the sender to write the second
// part of the payload straight into the receive buffer
// (process_vm_writev) and reads the first part itself meanwhile. The
// sender is usually waiting for that message's FIN, polling the rings,
// so its core is idle; the kernel copies across address spaces at a
// fifth of a copy()'s speed (it takes each page of the other process's
// memory in turn), so that one copy on each core beats one on one core
// by about as much as the syscall's fixed cost allows. One way under
// mpiexec -n 2, read whole / split / MPICH 4.0.2, medians of 5 alternated
// runs: 64 KiB 7.02 / 5.48 / 6.96 us, 192 KiB 16.5 / 10.1 / 16.3,
// 256 KiB 21.7 / 12.8 / 20.4; osu_bw at 256 KiB 11.1 / 18.7 / 11.4 GB/s.
//
// The receiver publishes the request in a slot of its own segment's
// control page (a word: a generation and a state), then writes a
// kindWrite record to the sender: the rendezvous id, the part's offset
// and length, the address in the receiver where it goes, and the slot
// and its generation. The sender's poller claims the slot (a CAS from
// requested to claimed, of that generation), writes the part, and
// stores done, or failed where the kernel refused. The receiver, once
// its own part is read:
//   - done: the payload is all there;
//   - requested (the sender does not poll: it computes, or its poller
//     is busy): it cancels (a CAS from requested to cancelled), and
//     reads the part itself; a sender that comes to the record later
//     finds no request to claim, and writes nothing;
//   - claimed: it waits for done or failed (a system call's length);
//     failed, or cancelled: it reads the part itself.
//
// The receive completes (and its buffer is the user's again) only once
// the slot says that the sender will write nothing more into it; the
// send completes on the FIN, which the receiver writes after that, so
// the sender's buffer stays pinned for as long as either process copies
// from it. A slot's generation grows with each use, so a record that
// comes after its request was cancelled and the slot reused finds
// another generation there and is ignored. A receiver whose sender dies
// while it writes sees the peer's end (eof) and fails the receive with
// ErrPeerLost.
//
// Two pollers may each wait for the other to answer (two processes that
// send each other large messages at once): each cancels what the other
// has not claimed by the time its own part is read, and reads the rest,
// so neither waits for the other for longer than a part's read.

// splitSlots is the number of slots of a segment: the split reads a
// process may have in flight at once (beyond them, reads are whole).
const splitSlots = 32

// splitMin is the smallest rendezvous whose read is split: below it the
// request's round trip costs about what half the copy saves (one way
// under mpiexec -n 2, whole / split: 40 KiB 5.71 / 5.72 us, 48 KiB 6.22
// / 5.78, 64 KiB 7.70 / 6.98).
const splitMin = 48 << 10

// Slot states, in a slot word's low byte; its other bits are the slot's
// generation.
const (
	slotRequested = iota + 1
	slotClaimed
	slotDone
	slotFailed
	slotCancelled
)

func slotWord(gen uint64, state uint64) uint64 { return gen<<8 | state }

// testHookSplitRequested, when set (by tests only), runs once a split
// read's request is written, before the receiver reads its part.
var testHookSplitRequested func()

// splitAt returns where the read of a payload into dst splits (the
// sender writes from there to the end), or 0 for a read that is not
// split: the device does not split (an oversubscribed host,
// MPGO_SHM_SPLIT=0), or dst is shorter than splitMin. The split falls on
// a page boundary of dst.
func (d *Device) splitAt(dst []byte) int {
	n := len(dst)
	if !d.split || n < splitMin {
		return 0
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
	page := uintptr(syscall.Getpagesize())
	at := int((base+uintptr(n/2))&^(page-1)) - int(base)
	if at <= 0 || at >= n {
		at = n / 2
	}
	return at
}

// splitFor is splitAt for a read of p's message, or 0 while p has a
// rendezvous of this process's to read (p.rvOut): its core is busy with
// that, not idle, and its part would be read here anyway once the
// request's wait ran out. Two processes that exchange large messages
// (a Sendrecv, osu_bibw, a ring's Allgather) read them whole, each on
// its own core. Under mpiexec -n 2, 4 alternated runs, split always /
// not while busy / MPICH 4.0.2: IMB Sendrecv 64 KiB 9.56 / 8.21 / 7.40
// us, 256 KiB 21.3 / 19.3 / 19.2; osu_bibw 64 KiB 13.8 / 17.2 GB/s;
// one way (osu_latency) and osu_bw unchanged.
func (d *Device) splitFor(p *peer, dst []byte) int {
	if p.rvOut.Load() > 0 {
		return 0
	}
	return d.splitAt(dst)
}

// takeSlot reserves a free slot of this process's segment and returns it
// with its next generation, or -1 when all are in use.
func (d *Device) takeSlot() (int, uint64) {
	for {
		busy := d.slotBusy.Load()
		if busy == 1<<splitSlots-1 {
			return -1, 0
		}
		i := bits.TrailingZeros32(^busy)
		if d.slotBusy.CompareAndSwap(busy, busy|1<<i) {
			d.slotGen[i]++
			return i, d.slotGen[i]
		}
	}
}

// freeSlot gives slot i back.
func (d *Device) freeSlot(i int) {
	for {
		busy := d.slotBusy.Load()
		if d.slotBusy.CompareAndSwap(busy, busy&^(1<<i)) {
			return
		}
	}
}

// splitRead reads rv's payload into dst, the part from at on written by
// the sender where it answers in time (see above). It writes the request
// only where the ring has room at once (the caller may be the poller,
// which must not wait for room). The error is readFrom's, of whichever
// read failed.
func (d *Device) splitRead(rv *inRV, dst []byte, at int) error {
	p := rv.from
	i, gen := d.takeSlot()
	if i < 0 {
		return readFrom(p.pid, dst, rv.addr)
	}
	defer d.freeSlot(i)
	slot := d.seg.slot(i)
	slot.Store(slotWord(gen, slotRequested))
	var pin runtime.Pinner
	pin.Pin(unsafe.SliceData(dst))
	defer pin.Unpin()
	var req [24]byte
	ne := binary.NativeEndian
	ne.PutUint64(req[:], uint64(uintptr(unsafe.Pointer(&dst[at]))))
	ne.PutUint64(req[8:], uint64(len(dst)-at))
	ne.PutUint64(req[16:], uint64(i)<<32|gen&0xffffffff)
	h := header{kind: kindWrite, id: rv.id, source: int64(at), len: uint64(len(req))}
	if !d.putNow(p, &h, req[:]) {
		return readFrom(p.pid, dst, rv.addr)
	}
	if hook := testHookSplitRequested; hook != nil {
		hook()
	}
	err := readFrom(p.pid, dst[:at], rv.addr)
	for spins := 0; ; spins++ {
		w := slot.Load()
		switch w & 0xff {
		case slotRequested:
			if !slot.CompareAndSwap(w, slotWord(gen, slotCancelled)) {
				continue // claimed meanwhile
			}
			d.splitTaken.Add(1)
		case slotClaimed:
			if p.eof.Load() || p.gone.Load() {
				return d.lostErr(p) // died writing: the part may be half there
			}
			if spins%64 == 63 {
				yieldCore()
			}
			continue
		case slotDone:
			d.splitWritten.Add(1)
			return err
		default: // failed: the sender's kernel refused
			d.splitTaken.Add(1)
		}
		break
	}
	if err != nil {
		return err
	}
	return readFrom(p.pid, dst[at:], rv.addr+uintptr(at))
}

// writeRV answers kindWrite record h (payload q) of p: it writes the part
// of rendezvous h.id that p asked for into p's memory, unless p cancelled
// the request first; pollMu held.
func (d *Device) writeRV(p *peer, h *header, q []byte) error {
	if len(q) != 24 {
		return fmt.Errorf("shm: a write request of %d bytes: %w", len(q), device.ErrArg)
	}
	ne := binary.NativeEndian
	addr, n, sg := uintptr(ne.Uint64(q)), int(ne.Uint64(q[8:])), ne.Uint64(q[16:])
	i, gen := int(sg>>32), sg&0xffffffff
	if i >= splitSlots {
		return fmt.Errorf("shm: a write request in slot %d: %w", i, device.ErrArg)
	}
	slot := p.seg.slot(i)
	// The generation as the slot holds it: the record carries its low
	// 32 bits.
	w := slot.Load()
	if w&0xff != slotRequested || (w>>8)&0xffffffff != gen {
		return nil // cancelled, and perhaps reused since: nothing to write
	}
	d.mu.Lock()
	rv := d.sends[h.id]
	d.mu.Unlock()
	off := int(h.source)
	if rv == nil || rv.to != p || off < 0 || n < 0 || off > len(rv.data) || n > len(rv.data)-off {
		// Not a rendezvous of ours to p (any more): the receiver reads
		// the part itself.
		slot.CompareAndSwap(w, w&^0xff|slotFailed)
		return nil
	}
	if !slot.CompareAndSwap(w, w&^0xff|slotClaimed) {
		return nil // cancelled meanwhile
	}
	state := uint64(slotDone)
	if writeTo(p.pid, rv.data[off:off+n], addr) != nil {
		state = slotFailed // refused (EPERM, EFAULT), or p is gone (ESRCH)
	}
	slot.Store(w&^0xff | state)
	return nil
}
