package comm_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
)

// runPiped runs fn on n ranks split across two worlds, ranks 0..split-1 in
// the first, joined by the in-memory loopback device (package devicetest:
// eager messages as copies, larger or synchronous ones as rendezvous
// pulled on match, the way a network device moves them). It returns the
// devices.
func runPiped(t *testing.T, n, split int, fn func(w *comm.Comm) error) []*devicetest.Loopback {
	t.Helper()
	layout := device.Layout{Ranks: n, Owner: func(r int) int {
		if r < split {
			return 0
		}
		return 1
	}}
	devs, loops := devicetest.Loopbacks(2, layout, comm.DefaultEagerLimit)
	errs, err := devicetest.Run(devs, layout, 0, fn)
	if err != nil {
		t.Fatal(err)
	}
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	return loops
}

// The same matching rules hold for messages that crossed a device: order
// per pair, wildcards, truncation, types, synchronous and large sends.
func TestDeviceSemantics(t *testing.T) {
	devs := runPiped(t, 4, 2, func(w *comm.Comm) error {
		me := w.Rank()
		if me == 3 { // remote sender: eager, rendezvous and sync, in order
			for i := 0; i < 20; i++ {
				size := []int{8, 100 << 10, 16}[i%3]
				var err error
				if i%3 == 2 {
					err = w.Ssend(payload(size, uint64(i)), comm.Byte, 0, i%2)
				} else {
					err = w.Send(payload(size, uint64(i)), comm.Byte, 0, i%2)
				}
				if err != nil {
					return err
				}
			}
			if err := w.Send(payload(200<<10, 99), comm.Byte, 0, 5); err != nil {
				return err
			}
			if err := w.Send(make([]byte, 16), comm.Float64, 0, 6); err != nil {
				return err
			}
			return w.Barrier()
		}
		if me == 0 {
			buf := make([]byte, 200<<10)
			for i := 0; i < 20; i++ {
				st, err := w.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag)
				if err != nil {
					return err
				}
				if st.Source != 3 || val(buf) != uint64(i) || st.Tag != i%2 {
					return fmt.Errorf("message %d: got %d from %d tag %d", i, val(buf), st.Source, st.Tag)
				}
			}
			st, err := w.Probe(3, 5)
			if err != nil || st.Count != 200<<10 {
				return fmt.Errorf("probe of a remote: %v %v", st, err)
			}
			if _, err := w.Recv(buf[:10], comm.Byte, 3, 5); !errors.Is(err, comm.ErrTruncate) {
				return fmt.Errorf("truncated remote: %v", err)
			}
			if _, err := w.Recv(make([]byte, 16), comm.Int64, 3, 6); !errors.Is(err, comm.ErrType) {
				return fmt.Errorf("mistyped remote: %v", err)
			}
			return w.Barrier()
		}
		return w.Barrier()
	})
	sent, _ := devs[1].Counts()
	_, pulled := devs[0].Counts()
	if sent == 0 || pulled == 0 {
		t.Errorf("nothing went through the device: %d sent, %d pulled", sent, pulled)
	}
}

// A ring across the two worlds, with a Split and owned receives.
func TestDeviceRingAndSplit(t *testing.T) {
	const n = 6
	runPiped(t, n, 3, func(w *comm.Comm) error {
		next, prev := (w.Rank()+1)%n, (w.Rank()+n-1)%n
		in := make([]byte, 8)
		if _, err := w.Sendrecv(payload(8, uint64(w.Rank())), comm.Byte, next, 1, in, comm.Byte, prev, 1); err != nil {
			return err
		}
		if val(in) != uint64(prev) {
			return fmt.Errorf("got %d from %d", val(in), prev)
		}
		s, err := w.Split(w.Rank()%2, w.Rank())
		if err != nil {
			return err
		}
		if s.Size() != 3 {
			return fmt.Errorf("split size %d", s.Size())
		}
		// Around the split's ring too: its ranks differ from world ranks.
		sn, sp := (s.Rank()+1)%3, (s.Rank()+2)%3
		st, err := s.Sendrecv(payload(8, uint64(s.Rank())), comm.Byte, sn, 3, in, comm.Byte, sp, 3)
		if err != nil || val(in) != uint64(sp) || st.Source != sp {
			return fmt.Errorf("split ring: %v %d %v", st, val(in), err)
		}
		if w.Rank() == 1 {
			return w.SendOwned(payload(300<<10, 7), comm.Byte, 4, 2)
		}
		if w.Rank() == 4 {
			got, st, err := w.RecvOwned(comm.Byte, comm.AnySource, 2)
			if err != nil || st.Count != 300<<10 || val(got) != 7 {
				return fmt.Errorf("owned across the device: %v %v", st, err)
			}
		}
		return nil
	})
}

// engineOf is a device that only keeps the engine it is started with.
type engineOf struct{ e device.Engine }

func (d *engineOf) Start(e device.Engine) error { d.e = e; return nil }
func (d *engineOf) Send(int, int, device.Envelope, []byte, func(error)) error {
	return device.ErrNotSupported
}
func (d *engineOf) Close() error { return nil }

// remoteWorld makes a world of 2 ranks: rank 0 runs here, rank 1 in
// another process behind the returned device. It closes as the test ends.
func remoteWorld(t *testing.T) (*engineOf, *comm.World) {
	t.Helper()
	d := &engineOf{}
	w, err := comm.NewWorld(2, comm.Config{Local: []int{0}, Device: d, Process: func(r int) int { return r }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return d, w
}

func TestDeviceConfigErrors(t *testing.T) {
	one := func(int) int { return 0 }
	if _, err := comm.NewWorld(4, comm.Config{Local: []int{0, 1}}); !errors.Is(err, comm.ErrArg) {
		t.Errorf("remote ranks without a device: %v", err)
	}
	if _, err := comm.NewWorld(4, comm.Config{Local: []int{0, 9}, Device: &engineOf{}, Process: one}); !errors.Is(err, comm.ErrRank) {
		t.Errorf("local rank out of range: %v", err)
	}
	if _, err := comm.NewWorld(4, comm.Config{Local: []int{0}, Device: &engineOf{}}); !errors.Is(err, comm.ErrArg) {
		t.Errorf("a device without a process map: %v", err)
	}
	d, _ := remoteWorld(t)
	if _, err := d.e.Arrive(0, 1, device.Envelope{}, device.Bytes(nil)); !errors.Is(err, comm.ErrRank) {
		t.Errorf("arrival for a rank that is not local: %v", err)
	}
	if _, err := d.e.Arrive(7, 0, device.Envelope{}, device.Bytes(nil)); !errors.Is(err, comm.ErrRank) {
		t.Errorf("arrival from a rank outside the world: %v", err)
	}
	if _, err := d.e.Arrive(1, 0, device.Envelope{Type: 200}, device.Bytes(nil)); !errors.Is(err, comm.ErrArg) {
		t.Errorf("arrival of an unknown element type: %v", err)
	}
	if _, err := d.e.Arrive(1, 0, device.Envelope{Len: 1}, nil); !errors.Is(err, comm.ErrArg) {
		t.Errorf("arrival without a payload: %v", err)
	}
	if err := d.e.Err(); err != nil {
		t.Errorf("a running world's Err: %v", err)
	}
	d.e.PeerLost(fmt.Errorf("test: %w", comm.ErrPeerLost))
	if err := d.e.Err(); !errors.Is(err, comm.ErrAborted) || !errors.Is(err, comm.ErrPeerLost) {
		t.Errorf("Err after PeerLost: %v", err)
	}
	if _, err := d.e.Arrive(1, 0, device.Envelope{}, device.Bytes(nil)); !errors.Is(err, comm.ErrAborted) {
		t.Errorf("arrival in an aborted world: %v", err)
	}
}

// A failure note from another process (context 0, the engine's control
// messages) aborts the world with the failed rank's own error, a
// PeerFailure that wraps ErrPeerLost; a control message that is not one
// is refused as malformed.
func TestDeviceFailureNote(t *testing.T) {
	d, w := remoteWorld(t)
	if _, err := d.e.Arrive(1, 0, device.Envelope{Tag: 99, Len: 2}, device.Bytes("hi")); !errors.Is(err, comm.ErrArg) {
		t.Errorf("control message of an unknown kind: %v", err)
	}
	if _, err := d.e.Arrive(1, 0, device.Envelope{Tag: 1, Len: 1 << 20}, device.Bytes(make([]byte, 1<<20))); !errors.Is(err, comm.ErrArg) {
		t.Errorf("failure note of 1 MiB: %v", err)
	}
	if err := d.e.Err(); err != nil {
		t.Fatalf("refused control messages aborted the world: %v", err)
	}
	note := "panicked: boom in main.f at main.go:3"
	if _, err := d.e.Arrive(1, 0, device.Envelope{Tag: 1, Len: len(note)}, device.Bytes(note)); err != nil {
		t.Fatalf("failure note: %v", err)
	}
	err := d.e.Err()
	var pf *comm.PeerFailure
	if !errors.As(err, &pf) || pf.Rank != 1 || pf.Msg != note || !errors.Is(err, comm.ErrPeerLost) || !errors.Is(err, comm.ErrAborted) {
		t.Fatalf("Err after a failure note: %v", err)
	}
	if want := "rank 1 failed: " + note; pf.Error() != want {
		t.Errorf("PeerFailure says %q, want %q", pf.Error(), want)
	}
	// A rank's error on a world without other processes tells nobody.
	w.NotifyFailure(0, "x", time.Second)
}

// incoming is a device's message whose payload lives in memory the
// device reuses once Arrive returns (a ring's record, a receive slot): it
// counts how the engine pulled it.
type incoming struct {
	b                []byte
	pulls, arrivings int
}

func (m *incoming) Pull(dst []byte) error         { m.pulls++; copy(dst, m.b); return nil }
func (m *incoming) PullArriving(dst []byte) error { m.arrivings++; copy(dst, m.b); return nil }

// An eager message that no receive waits for is copied before Arrive
// returns (kept false), so that the device may reuse its memory at once
// and need not allocate a copy of its own; a rendezvous is kept. Small
// and large eager payloads, and an empty one, reach their receives
// intact after the device's memory was overwritten.
func TestDeviceEagerArrivalCopied(t *testing.T) {
	d, w := remoteWorld(t)
	sizes := []int{8, 64, 65, 4 << 10, 0}
	for i, n := range sizes {
		m := &incoming{b: payload(n, uint64(i+1))}
		kept, err := d.e.Arrive(1, 0, device.Envelope{Context: comm.WorldContext, Tag: i, Len: n}, m)
		if err != nil || kept || m.arrivings != 1 || m.pulls != 0 {
			t.Fatalf("eager arrival of %d bytes: kept %v, %v, pulled %d inside Arrive and %d after", n, kept, err, m.arrivings, m.pulls)
		}
		for j := range m.b {
			m.b[j] = 0xee // the device reuses its memory
		}
	}
	rv := &incoming{b: payload(1<<20, 9)}
	if kept, err := d.e.Arrive(1, 0, device.Envelope{Context: comm.WorldContext, Tag: 9, Len: 1 << 20, Rendezvous: true}, rv); err != nil || !kept || rv.arrivings+rv.pulls != 0 {
		t.Fatalf("rendezvous arrival: kept %v, %v, pulled %d+%d", kept, err, rv.arrivings, rv.pulls)
	}
	c := w.Comm(0)
	for i, n := range sizes {
		buf := make([]byte, n)
		st, err := c.Recv(buf, comm.Byte, 1, i)
		if err != nil || st.Count != n || n >= 8 && val(buf) != uint64(i+1) {
			t.Errorf("message %d of %d bytes: %v, %v, %v", i, n, st, err, buf[:min(n, 8)])
		}
		if n > 8 && buf[n-1] == 0xee {
			t.Errorf("message %d of %d bytes: its tail is the device's reused memory", i, n)
		}
	}
	buf := make([]byte, 1<<20)
	if st, err := c.Recv(buf, comm.Byte, 1, 9); err != nil || st.Count != 1<<20 || val(buf) != 9 || rv.pulls != 1 {
		t.Errorf("rendezvous: %v, %v, %d pulls", st, err, rv.pulls)
	}
	w.RankDone(0)
}
