//go:build linux && (amd64 || arm64)

package shm

import (
	"bytes"
	"encoding/binary"
	"os"
	"sync"
	"testing"
	"unsafe"
)

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// splitPair is a receiving device and a sending one wired by hand, as
// attach would wire two processes of a host, both in this process (so
// that process_vm_readv and process_vm_writev address this process's
// own memory): the receiver's ring to the sender, the receiver's control
// page (its slots) as both see it, and a rendezvous send of payload.
type splitPair struct {
	recv, send *Device
	rp, sp     *peer // the sender as the receiver sees it, and the other way round
	rv         *inRV
	payload    []byte
}

func newSplitPair(n int) *splitPair {
	ctl, ring := make([]byte, ctlSize), make([]byte, ringHeader+4096)
	x := &splitPair{
		recv:    &Device{split: true, seg: segment{mem: ctl}},
		send:    &Device{sends: map[uint64]*outRV{}},
		payload: make([]byte, n),
	}
	for i := range x.payload {
		x.payload[i] = byte(i*7 + i>>12)
	}
	x.rp = &peer{proc: 1, pid: os.Getpid(), out: newRing(ring), seg: segment{mem: make([]byte, ctlSize)}}
	x.sp = &peer{proc: 0, pid: os.Getpid(), in: newRing(ring), seg: segment{mem: ctl}}
	x.send.sends[7] = &outRV{to: x.sp, data: x.payload}
	x.rv = &inRV{d: x.recv, from: x.rp, id: 7, addr: addrOf(x.payload), size: n}
	return x
}

// answer is the sender's poller: it handles the write requests in its
// ring until stop is closed (and then the ones left), as handle would.
func (x *splitPair) answer(t *testing.T, stop <-chan struct{}) {
	var h header
	for {
		q, ok, err := x.sp.in.peek(&h)
		if err != nil {
			t.Error(err)
			return
		}
		if !ok {
			select {
			case <-stop:
				return
			default:
				continue
			}
		}
		if h.kind != kindWrite {
			t.Errorf("a record of kind %d in the ring", h.kind)
		} else if err := x.send.writeRV(x.sp, &h, q); err != nil {
			t.Error(err)
		}
		x.sp.in.next(&h)
	}
}

// A split read whose sender answers: the receiver reads the first part,
// the sender writes the rest into the receive buffer, and the payload
// arrives whole, the sender's part counted as written. The sender's
// poller answers each request as soon as it is written (a test hook):
// where it answers late, the receiver reads the part itself
// (TestSplitReadCancelled).
func TestSplitReadAnswered(t *testing.T) {
	x := newSplitPair(200 << 10)
	stop := make(chan struct{})
	close(stop)
	testHookSplitRequested = func() { x.answer(t, stop) }
	defer func() { testHookSplitRequested = nil }()
	for i := range 20 {
		dst := make([]byte, len(x.payload))
		at := x.recv.splitAt(dst)
		if at <= 0 || at >= len(dst) {
			t.Fatalf("split at %d of %d bytes", at, len(dst))
		}
		if err := x.recv.splitRead(x.rv, dst, at); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst, x.payload) {
			t.Fatalf("read %d: other bytes arrived", i)
		}
	}
	if written, taken := x.recv.splitWritten.Load(), x.recv.splitTaken.Load(); written != 20 || taken != 0 {
		t.Errorf("%d parts written by the sender, %d read by the receiver: want 20 and 0", written, taken)
	}
	if x.recv.slotBusy.Load() != 0 {
		t.Errorf("slots still taken: %b", x.recv.slotBusy.Load())
	}
}

// A split read whose sender does not answer in time (it computes): the
// receiver cancels its request and reads the whole payload itself; the
// sender, coming to the request afterwards, writes nothing into the
// buffer, which is the receiver's user's again; and after the slot was
// used again, the stale request is still ignored, while the new one is
// answered.
func TestSplitReadCancelled(t *testing.T) {
	x := newSplitPair(96 << 10)
	dst := make([]byte, len(x.payload))
	at := x.recv.splitAt(dst)
	if err := x.recv.splitRead(x.rv, dst, at); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, x.payload) || x.recv.splitTaken.Load() != 1 || x.recv.splitWritten.Load() != 0 {
		t.Fatalf("intact %v, taken %d, written %d: want intact, taken 1, written 0",
			bytes.Equal(dst, x.payload), x.recv.splitTaken.Load(), x.recv.splitWritten.Load())
	}
	for i := range dst {
		dst[i] = 0xee // the user's again
	}
	// The sender comes to the request late.
	var h header
	q, ok, err := x.sp.in.peek(&h)
	if err != nil || !ok || h.kind != kindWrite {
		t.Fatalf("the request: %+v %v %v", h, ok, err)
	}
	stale := append([]byte(nil), q...)
	staleH := h
	if err := x.send.writeRV(x.sp, &h, q); err != nil {
		t.Fatal(err)
	}
	x.sp.in.next(&h)
	if !bytes.Equal(dst, bytes.Repeat([]byte{0xee}, len(dst))) {
		t.Fatal("the sender wrote into a buffer whose read was cancelled")
	}
	// The slot, taken again, holds a new request: the stale record,
	// handled again, must not claim it.
	i, gen := x.recv.takeSlot()
	slot := x.recv.seg.slot(i)
	slot.Store(slotWord(gen, slotRequested))
	if err := x.send.writeRV(x.sp, &staleH, stale); err != nil {
		t.Fatal(err)
	}
	if w := slot.Load(); w != slotWord(gen, slotRequested) {
		t.Fatalf("slot %d: %#x after the stale request, want %#x (requested, generation %d)", i, w, slotWord(gen, slotRequested), gen)
	}
	if !bytes.Equal(dst, bytes.Repeat([]byte{0xee}, len(dst))) {
		t.Fatal("the stale request wrote into the first buffer")
	}
	x.recv.freeSlot(i)
	// And the slot serves another read, answered.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { x.answer(t, stop) })
	dst2 := make([]byte, len(x.payload))
	if err := x.recv.splitRead(x.rv, dst2, at); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if !bytes.Equal(dst2, x.payload) {
		t.Fatal("the second read: other bytes arrived")
	}
}

// A request that names no rendezvous of the sender's to that peer (or a
// part beyond its payload) is answered failed: the receiver reads the
// part itself.
func TestSplitReadUnknown(t *testing.T) {
	x := newSplitPair(64 << 10)
	x.rv.id = 8 // not in the sender's sends
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { x.answer(t, stop) })
	dst := make([]byte, len(x.payload))
	err := x.recv.splitRead(x.rv, dst, x.recv.splitAt(dst))
	close(stop)
	wg.Wait()
	if err != nil || !bytes.Equal(dst, x.payload) {
		t.Fatalf("err %v, intact %v", err, bytes.Equal(dst, x.payload))
	}
	if x.recv.splitWritten.Load() != 0 || x.recv.splitTaken.Load() != 1 {
		t.Fatalf("written %d, taken %d: want 0 and 1", x.recv.splitWritten.Load(), x.recv.splitTaken.Load())
	}
}

// A request for a part beyond the payload (a length that overflows an
// offset's sum included) is answered failed, never a slice out of range.
func TestSplitWriteOutOfRange(t *testing.T) {
	x := newSplitPair(64 << 10)
	for _, part := range [][2]uint64{{1, 1 << 63}, {1, 1<<63 - 1}, {64 << 10, 1}, {1 << 40, 8}} {
		i, gen := x.recv.takeSlot()
		slot := x.recv.seg.slot(i)
		slot.Store(slotWord(gen, slotRequested))
		var q [24]byte
		binary.NativeEndian.PutUint64(q[:], uint64(addrOf(make([]byte, 8))))
		binary.NativeEndian.PutUint64(q[8:], part[1])
		binary.NativeEndian.PutUint64(q[16:], uint64(i)<<32|gen&0xffffffff)
		h := header{kind: kindWrite, id: 7, source: int64(part[0]), len: uint64(len(q))}
		if err := x.send.writeRV(x.sp, &h, q[:]); err != nil {
			t.Fatal(err)
		}
		if w := slot.Load(); w != slotWord(gen, slotFailed) {
			t.Errorf("part at %d of %d bytes: slot %#x, want failed", part[0], part[1], w)
		}
		x.recv.freeSlot(i)
	}
}

// A read of a peer's message is not split while the peer has a
// rendezvous of this process's to read (its core is busy with that): a
// pair that exchanges large messages reads them whole, each on its own.
func TestSplitNotWhilePeerReads(t *testing.T) {
	x := newSplitPair(200 << 10)
	dst := make([]byte, len(x.payload))
	if at := x.recv.splitFor(x.rp, dst); at <= 0 {
		t.Fatalf("an idle peer's message: split at %d", at)
	}
	x.rp.rvOut.Add(1)
	if at := x.recv.splitFor(x.rp, dst); at != 0 {
		t.Errorf("a busy peer's message: split at %d", at)
	}
	x.rp.rvOut.Add(-1)
	if at := x.recv.splitFor(x.rp, dst); at <= 0 {
		t.Errorf("the peer idle again: split at %d", at)
	}
}
