package devicetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mpgo/mpgo/comm"
)

// The failure semantics of [TestBackend]: a process that finishes early,
// and one that dies. Each is made deterministic by a handshake: the
// operations that must be pending when a process leaves are posted
// before a message or barrier that the leaving process waits for.

// errDies is what the rank of a process that [testPeerLost] makes die
// returns: its harness then ends the process abruptly.
var errDies = errors.New("devicetest: this process dies")

// lostWithin bounds the job in which a process dies: the others learn it
// and fail within it.
const lostWithin = 10 * time.Second

// early is the process that finishes early ([testEarlyFinish]) or dies
// ([testPeerLost]).
const early = 1

// earlyMessages is the number of messages each rank of the early
// process sends rank 0 before it finishes, message i of 1000·i bytes.
const earlyMessages = 10

// testEarlyFinish: every rank of process 1 sends rank 0 ten eager
// messages and finishes after a barrier; rank 0 posted, before that
// barrier, a receive from each that never matches. Once the process
// left, those receives fail with ErrPeerLost alone (not ErrAborted: a
// process that finished is not lost), and the ten messages are still
// received, in order. Nobody fails.
func testEarlyFinish(t *testing.T, h Harness, s Shape) {
	gone := make([]int, s.Ranks) // the ranks of the process that finishes
	for i := range gone {
		gone[i] = early*s.Ranks + i
	}
	errs := h(t, s, func(w *comm.Comm) error {
		me := w.Rank()
		if me/s.Ranks == early {
			for i := range earlyMessages {
				if err := w.Send(payload(1000*i, uint64(me*100+i)), comm.Byte, 0, i); err != nil {
					return err
				}
			}
			return w.Barrier()
		}
		if me != 0 {
			return w.Barrier()
		}
		never := make([]*comm.Request, len(gone))
		for i, src := range gone {
			var err error
			if never[i], err = w.Irecv(make([]byte, 8), comm.Byte, src, 99); err != nil {
				return err
			}
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		for i, r := range never {
			if _, err := r.Wait(); !errors.Is(err, comm.ErrPeerLost) || errors.Is(err, comm.ErrAborted) {
				return fmt.Errorf("receive from rank %d pending when its process finished: %v, want ErrPeerLost and not ErrAborted", gone[i], err)
			}
		}
		for _, src := range gone {
			for i := range earlyMessages {
				buf := make([]byte, 1000*i)
				st, err := w.Recv(buf, comm.Byte, src, i)
				if err != nil || st.Count != 1000*i {
					return fmt.Errorf("message %d from rank %d after its process finished: %+v %v", i, src, st, err)
				}
				if err := check(buf, 1000*i, uint64(src*100+i)); err != nil {
					return fmt.Errorf("from rank %d after its process finished: %w", src, err)
				}
			}
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// testPeerLost: the first rank of process 1 (dead) dies once every other
// rank posted a receive from it and told it so (a ready message); the
// other ranks of its process return. The others then block in a receive
// from dead, wait for the one they posted before, and send to dead and
// to their neighbour in the ring: each fails with an error wrapping both
// ErrPeerLost and ErrAborted, and the job ends within lostWithin.
func testPeerLost(t *testing.T, h Harness, s Shape) {
	const tagLost, tagReady = 0, 1
	dead := early * s.Ranks
	start := time.Now()
	errs := h(t, s, func(w *comm.Comm) error {
		me, n := w.Rank(), w.Size()
		if me == dead {
			for range n - 1 {
				if _, err := w.Recv(nil, comm.Byte, comm.AnySource, tagReady); err != nil {
					return err
				}
			}
			time.Sleep(50 * time.Millisecond) // the others block first
			return errDies
		}
		var pending *comm.Request
		if me/s.Ranks != early {
			var err error
			if pending, err = w.Irecv(make([]byte, 8), comm.Byte, dead, tagLost); err != nil {
				return err
			}
		}
		if err := w.Send(nil, comm.Byte, dead, tagReady); err != nil {
			return err
		}
		if pending == nil {
			return nil // a rank of the process that dies
		}
		if _, err := w.Recv(make([]byte, 8), comm.Byte, dead, tagLost); !lost(err) {
			return fmt.Errorf("receive from the lost rank %d: %v, want ErrPeerLost and ErrAborted", dead, err)
		}
		if _, err := pending.Wait(); !lost(err) {
			return fmt.Errorf("receive from rank %d pending when its process died: %v, want ErrPeerLost and ErrAborted", dead, err)
		}
		for _, to := range []int{dead, (me + n - 1) % n} {
			if err := w.Send(make([]byte, 8), comm.Byte, to, tagLost); !lost(err) {
				return fmt.Errorf("send to rank %d after rank %d was lost: %v, want ErrPeerLost and ErrAborted", to, dead, err)
			}
		}
		return nil
	})
	for r, err := range errs {
		switch {
		case r == dead && !errors.Is(err, errDies):
			t.Errorf("rank %d: %v, want %v", r, err, errDies)
		case r != dead && err != nil:
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if d := time.Since(start); d > lostWithin {
		t.Errorf("the job took %v after a process died, want at most %v", d, lostWithin)
	}
}

// lost reports whether err tells of a process lost: the world aborted
// because a peer broke off.
func lost(err error) bool {
	return errors.Is(err, comm.ErrPeerLost) && errors.Is(err, comm.ErrAborted)
}
