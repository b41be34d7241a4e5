package engine

import (
	"encoding/binary"
	"testing"
)

// sendEager sends 8 bytes holding v from rank 0 of w to rank 1 with tag,
// on context 1, with no request, and returns what SendEager reported.
func sendEager(t *testing.T, w *World, tag int, v uint64) bool {
	t.Helper()
	buf := make([]byte, 8)
	binary.LittleEndian.PutUint64(buf, v)
	sent, err := w.eps[0].SendEager(1, 0, 1, 1, tag, Byte, buf, false)
	if err != nil {
		t.Fatal(err)
	}
	return sent
}

// A send with no request completes inside the call, into a receive
// already posted or as an unexpected copy, in order; where the copy
// would pass the receiver's eager buffer it sends nothing, and the send
// through a request that follows becomes a rendezvous, still in order.
func TestSendEager(t *testing.T) {
	w, err := NewWorld(2, Config{EagerBuffer: 2 * (8 + msgCost)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	in := &w.eps[1].inbox
	p := in.pairOf(0)

	// A receive posted first takes the message at once.
	r := postRecv(t, &w.eps[1], 0, 3)
	if !sendEager(t, w, 3, 30) {
		t.Fatal("a send to a posted receive needed a request")
	}
	if !r.done() || binary.LittleEndian.Uint64(r.buf) != 30 {
		t.Fatalf("posted receive: done %v, got %d", r.done(), binary.LittleEndian.Uint64(r.buf))
	}

	// Two fit the eager buffer; the third finds no room and sends nothing.
	for v := uint64(1); v <= 2; v++ {
		if !sendEager(t, w, 5, v) {
			t.Fatalf("message %d of 2 needed a request", v)
		}
	}
	if sendEager(t, w, 5, 3) {
		t.Fatal("a message beyond the eager buffer was sent without a request")
	}
	if n := p.unexp.len(); n != 2 {
		t.Fatalf("%d messages queued, want 2", n)
	}
	// The request path then sends it as a rendezvous.
	s := w.eps[0].NewRequest(KindSend, false, 1, nil)
	buf := make([]byte, 8)
	binary.LittleEndian.PutUint64(buf, 3)
	s.SetSend(ModeStandard, Byte, buf)
	if err := s.StartSend(0, 1, 1, 5, false); err != nil {
		t.Fatal(err)
	}
	if s.done() {
		t.Fatal("the send past the eager buffer completed before its receive")
	}
	for v := uint64(1); v <= 3; v++ {
		r := postRecv(t, &w.eps[1], 0, 5)
		if _, err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(r.buf); got != v {
			t.Fatalf("receive %d got message %d", v, got)
		}
	}
	if _, err := s.Wait(); err != nil {
		t.Fatal(err)
	}
}
