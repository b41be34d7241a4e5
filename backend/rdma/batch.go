//go:build rdma

package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mpgo/mpgo/backend/rdma/internal/fabric"
	"github.com/mpgo/mpgo/comm/device"
)

// Batches: small eager messages that a process sends to one peer in a
// burst (a window of Isends, a collective's fan-out) share one send slot
// and one provider send, as the TCP backend's frames share one writev.
// Over a provider that moves each send through a socket (tcp, net) a
// send costs a system call and a completion on either side whatever its
// size, which bounds small-message bandwidth; a batch pays it once.
//
// A batch is a send slot holding an outer header of kind kindBatch, whose
// length is the bytes that follow, and then eager frames (header and
// payload, each padded to batchAlign bytes), each with its own sequence
// number. The receiver hands them to the engine one by one, exactly as
// if they had come alone, and reposts the slot after the last.
//
// When: an eager message of at most batchMax bytes sent within batchGap
// of the previous eager send to the same process with nothing from that
// process in between, or while that process has a batch open, joins the
// open batch (or opens one); any other message is sent alone, after the
// open batch, so a lone message (the reply of a ping-pong) never waits.
// A batch is sent when the next frame does not fit (batchFrames, or the
// slot's bytes), before an ordered message that is not batched, when a
// rank of this process is about to wait for anything (drive), and by the
// progress loop once it is batchAge old (a rank that sends and then
// computes without waiting).

const (
	kindBatch  = 7
	batchAlign = 32
	// batchGap is how soon after the previous eager send to a process
	// an eager send counts as part of a burst.
	batchGap = 5 * time.Microsecond
	// batchAge is how long the progress loop leaves a batch open.
	batchAge = 50 * time.Microsecond
	// batchFrames is the most messages a batch carries. Bigger batches
	// save provider sends, smaller ones let the receiver start sooner:
	// 1 KiB osu_bw over net gave 190 MB/s with 32 frames, 300-340 with 8
	// or 16; 8 KiB 2180 with 16, 1350 with batches cut at 24 KiB.
	batchFrames = 16
)

// batchGapOverride replaces batchGap when not zero (tests that need a
// burst whatever the machine's speed).
var batchGapOverride atomic.Int64

// inBurst reports whether an eager send at now (UnixNano) continues a
// burst to p: it follows the previous one closely, and nothing came
// from p in between (a ping-pong's sends are each answered before the
// next, however fast the round trip: they go at once). p.mu must be
// held.
func inBurst(p *fabricPeer, now int64) bool {
	gap := batchGap
	if g := batchGapOverride.Load(); g != 0 {
		gap = time.Duration(g)
	}
	return time.Duration(now-p.lastEager) < gap && p.lastArrived == p.arrived.Load()
}

// noteEager records an eager send to p for inBurst, with the count of
// arrivals from p read before the message could reach it (p's answer may
// arrive before the post returns); p.mu must be held.
func noteEager(p *fabricPeer, arrived uint64) {
	p.lastEager, p.lastArrived = time.Now().UnixNano(), arrived
}

// batchMax is the largest payload that may join a batch: a quarter of
// the eager limit, so that a batch carries several.
func (d *Device) batchMax() int { return d.eager / 4 }

// batchFrame is the slot space a frame of n payload bytes takes in a
// batch.
func batchFrame(n int) int { return (fabricHeader + n + batchAlign - 1) &^ (batchAlign - 1) }

// appendLocked adds an eager message (header h, already numbered, and
// payload) to p's open batch when it fits; p.mu must be held.
func (d *Device) appendLocked(p *fabricPeer, h *header, payload []byte) bool {
	if p.batch < 0 || p.bcount == batchFrames || p.bfill+batchFrame(len(payload)) > d.slot {
		return false
	}
	b := d.slotBytes(p.batch)[p.bfill:]
	h.put(b, p.tokOut)
	copy(b[fabricHeader:], payload)
	p.bfill += batchFrame(len(payload))
	p.bcount++
	return true
}

// openLocked opens a batch for p in send slot s; p.mu must be held.
func (d *Device) openLocked(p *fabricPeer, s int) {
	p.batch, p.bfill, p.bcount, p.bopened = s, fabricHeader, 0, time.Now().UnixNano()
	d.batches.Add(1)
}

// flushLocked sends p's open batch, if any, to process proc. p.mu must be
// held. With wait it retries while the provider says to try again (up to
// limit), as a sender does; without, it leaves the batch open on EAGAIN
// (the progress loop must not block) and returns false.
func (d *Device) flushLocked(proc int, p *fabricPeer, wait bool, limit time.Duration) (bool, error) {
	if p.batch < 0 {
		return true, nil
	}
	s, n := p.batch, p.bfill
	h := header{kind: kindBatch, from: uint32(d.self), n: n - fabricHeader}
	h.put(d.slotBytes(s), p.tokOut)
	post := func() error { return d.postSlot(proc, s, &h, n) }
	var err error
	if wait {
		err = d.post(limit, post)
	} else if err = post(); errors.Is(err, fabric.ErrAgain) {
		return false, nil
	}
	d.stats.batched.Add(int64(p.bcount))
	p.batch = -1
	d.batches.Add(-1)
	if err != nil {
		d.sfree <- s
		return true, d.postError(proc, err)
	}
	d.wake()
	return true, nil
}

// flushBatches sends the open batches at least age old. A rank about to
// wait (wait true) takes every peer's lock; the progress loop only tries
// them, and reports a failed post as a lost peer.
func (d *Device) flushBatches(wait bool, age time.Duration) {
	if d.batches.Load() == 0 {
		return
	}
	d.slabMu.RLock()
	defer d.slabMu.RUnlock()
	if d.slabGone {
		return
	}
	now := time.Now().UnixNano()
	for proc := range d.peers {
		p := &d.peers[proc]
		if wait {
			p.mu.Lock()
		} else if !p.mu.TryLock() {
			continue
		}
		var err error
		if p.batch >= 0 && time.Duration(now-p.bopened) >= age {
			_, err = d.flushLocked(proc, p, wait, fabricPostTimeout)
		}
		p.mu.Unlock()
		if err != nil {
			d.lost(proc, err) // the batch's messages were reported sent
		}
	}
}

// dropBatches gives the slots of open batches back unsent (an aborting
// Close: nothing more is delivered). A peer whose lock is held (a sender
// still retrying a post) keeps its batch: Close's bounded wait for the
// slots then runs out, as it would for that sender's own slot.
func (d *Device) dropBatches() {
	for proc := range d.peers {
		p := &d.peers[proc]
		if !p.mu.TryLock() {
			continue
		}
		if p.batch >= 0 {
			d.sfree <- p.batch
			p.batch = -1
			d.batches.Add(-1)
		}
		p.mu.Unlock()
	}
}

// arriveBatch hands the frames of a batch to arrive, in order (progress
// only).
func (d *Device) arriveBatch(batch []byte) {
	h, err := d.parseHeader(batch)
	from := -1
	if len(batch) >= fabricHeader && int(h.from) < len(d.peers) && int(h.from) != d.self {
		from = int(h.from)
	}
	if err != nil {
		d.lost(from, fmt.Errorf("comm: a malformed batch: %w", err))
		return
	}
	le := binary.LittleEndian
	for off := fabricHeader; off < len(batch); {
		if len(batch)-off < fabricHeader || batch[off+hdrKind] != kindEager ||
			le.Uint32(batch[off+hdrFrom:]) != h.from {
			d.lost(from, fmt.Errorf("comm: a malformed frame at %d of a %d-byte batch: %w", off, len(batch), device.ErrArg))
			return
		}
		n := le.Uint64(batch[off+hdrLen:])
		if n > uint64(len(batch)-off-fabricHeader) {
			d.lost(from, fmt.Errorf("comm: a frame of %d bytes at %d of a %d-byte batch: %w", n, off, len(batch), device.ErrArg))
			return
		}
		d.arrive(batch[off:off+fabricHeader+int(n)], true)
		off += batchFrame(int(n))
	}
}
