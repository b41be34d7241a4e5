package engine

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// newWorld returns a world of n ranks, closed when the test ends.
func newWorld(t *testing.T, n int) *World {
	t.Helper()
	w, err := NewWorld(n, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// postRecv posts a receive of 8 bytes at ep from world rank src (or
// AnySource) with tag, on context 1.
func postRecv(t *testing.T, ep *Endpoint, src, tag int) *Request {
	t.Helper()
	r := ep.NewRequest(KindRecv, false, 1, nil)
	r.SetRecv(Byte, make([]byte, 8), false)
	if err := r.StartRecv(src, src, tag, false); err != nil {
		t.Fatal(err)
	}
	return r
}

// laneWorld returns a world of two ranks and the lane of messages from
// rank 0 to rank 1, with rank 1's inbox.
func laneWorld(t *testing.T) (*inbox, *pair, *lane) {
	t.Helper()
	w := newWorld(t, 2)
	in := &w.eps[1].inbox
	p := in.pairOf(0)
	l := in.laneOf(p)
	if l == nil {
		t.Fatal("no lane between two ranks of one process")
	}
	return in, p, l
}

// laneSend writes a message of n bytes with tag and its first word v
// into l, as rank 0's send would.
func laneSend(t *testing.T, in *inbox, l *lane, tag, n int, v uint64) {
	t.Helper()
	buf := laneBytes(n, v)
	if !l.put(in, &msg{ctx: 1, tag: tag, typ: Byte, data: buf}) {
		t.Fatalf("lane full at a message of %d bytes", n)
	}
}

// laneBytes is laneSend's payload: v in its first 8 bytes, and after
// them bytes that differ with v and with their offset.
func laneBytes(n int, v uint64) []byte {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(v*7 + uint64(i)*13 + 1)
	}
	if n >= 8 {
		binary.LittleEndian.PutUint64(buf, v)
	}
	return buf
}

// A record's continuation cells hold payload where a header holds its
// stamp. The consumer clears those words when it frees the cells, or a
// payload word equal to the stamp a later header at that cell would carry
// reads as that header: here a two-cell record's continuation word is
// exactly the stamp the lane expects at that cell one lap later, and the
// lane, once it has reached that position, must read as empty.
func TestLaneStampsCleared(t *testing.T) {
	in, p, l := laneWorld(t)
	// Position 0: a record of two cells; its payload's word at cell 1
	// (payload offset cacheLine-laneInline-... : the first word of cell 1)
	// is the stamp of position laneCells+1.
	n := laneInline + cacheLine
	buf := make([]byte, n)
	binary.LittleEndian.PutUint64(buf[laneInline:], laneCells+1+1)
	if !l.put(in, &msg{ctx: 1, tag: 7, typ: Byte, data: buf}) {
		t.Fatal("lane full")
	}
	in.drain(p)
	// Positions 2 .. laneCells: one cell each, so that the tail reaches
	// position laneCells+1, whose cell is the continuation cell above.
	for i := 2; i <= laneCells; i++ {
		laneSend(t, in, l, 7, 0, 0)
		in.drain(p)
	}
	if got := l.tail.Load(); got != laneCells+1 {
		t.Fatalf("tail %d, want %d", got, laneCells+1)
	}
	if l.ready() {
		t.Fatal("an empty lane reads as holding a record: a continuation word was not cleared")
	}
	if got := p.unexp.len(); got != laneCells {
		t.Fatalf("%d messages queued, want %d", got, laneCells)
	}
}

// Records of every size up to laneMax, many laps round the ring (with
// skip records where one would wrap), come out in order and intact.
func TestLaneRecordsWrap(t *testing.T) {
	in, p, l := laneWorld(t)
	v := uint64(0)
	for lap := 0; lap < 20; lap++ {
		for n := 8; n <= laneMax; n += 24 {
			laneSend(t, in, l, n, n, v)
			v++
			if lap%3 == 0 && v%8 != 0 { // let several records gather before a drain (8 fit the ring)
				continue
			}
			in.drain(p)
		}
		in.drain(p)
	}
	want := uint64(0)
	for m := p.unexp.head; m != nil; m = m.next {
		if len(m.data) != m.tag {
			t.Fatalf("message %d: %d bytes, want %d", want, len(m.data), m.tag)
		}
		if got := binary.LittleEndian.Uint64(m.data); got != want {
			t.Fatalf("message %d came as message %d", want, got)
		}
		if !bytes.Equal(m.data, laneBytes(len(m.data), want)) {
			t.Fatalf("message %d (%d bytes) came with other bytes", want, len(m.data))
		}
		want++
	}
	if want != v {
		t.Fatalf("%d messages queued, want %d", want, v)
	}
	if l.laned != v {
		t.Fatalf("laned %d, want %d", l.laned, v)
	}
}

// Arming: a second receive posted on a pair arms its lane; a park (here
// its disarm) disarms it; the engine's own Done channels (a collective's
// gate sleeps on one, registered as parked) leave arming alone, while a
// user's Done turns it off for the rank.
func TestLaneArming(t *testing.T) {
	ep := newWorld(t, 2).Endpoint(1)
	p := ep.inbox.pairOf(0)
	post := func(tag int) *Request { return postRecv(t, ep, 0, tag) }
	armed := func() bool {
		l := p.lane.Load()
		return l != nil && l.active.Load()&armBit != 0
	}
	a := post(1)
	if armed() {
		t.Fatal("one receive armed the lane")
	}
	b := post(2)
	if !armed() {
		t.Fatal("a second receive on the pair did not arm its lane")
	}
	_ = a.Done() // as a gate's sleep does
	if !armed() || ep.noArm.Load() {
		t.Fatal("the engine's own Done turned arming off")
	}
	ep.inbox.disarm() // as a park does
	if armed() {
		t.Fatal("disarm left the lane armed")
	}
	c := post(3)
	if !armed() {
		t.Fatal("a receive posted beside others did not arm the lane again")
	}
	_ = b.UserDone() // a user's select on it may wait outside mpgo
	if armed() || !ep.noArm.Load() {
		t.Fatal("a user's Done left the lane armed")
	}
	d := post(4)
	if armed() {
		t.Fatal("a rank whose user asked for a Done channel armed a lane")
	}
	for _, r := range []*Request{a, b, c, d} {
		if err := r.Cancel(); err != nil {
			t.Fatal(err)
		}
	}
}

// AnySource receives waiting while two lanes hold messages (a sender
// that wrote before the receives raised anyN): a drain of one lane
// drains both, merged in arrival order, so the older receive gets the
// oldest message of either lane, not the next one of the lane drained.
func TestLaneDrainMerged(t *testing.T) {
	ep := newWorld(t, 3).Endpoint(2)
	in := &ep.inbox
	pa, pb := in.pairOf(0), in.pairOf(1)
	la, lb := in.laneOf(pa), in.laneOf(pb)
	r1, r2 := postRecv(t, ep, AnySource, 7), postRecv(t, ep, AnySource, 7)
	laneSend(t, in, la, 7, 8, 1) // arrival order: 1 (from 0), 2 (from 1), 3 (from 0)
	laneSend(t, in, lb, 7, 8, 2)
	laneSend(t, in, la, 7, 8, 3)
	in.drain(pa)
	for i, r := range []*Request{r1, r2} {
		if !r.done() {
			t.Fatalf("receive %d not matched", i+1)
		}
		if got := binary.LittleEndian.Uint64(r.buf); got != uint64(i+1) {
			t.Fatalf("receive %d got message %d, want %d", i+1, got, i+1)
		}
	}
	if lb.ready() {
		t.Fatal("the other lane was not drained")
	}
	if pa.unexp.len() != 1 {
		t.Fatalf("%d messages queued from rank 0, want 1 (message 3)", pa.unexp.len())
	}
}
