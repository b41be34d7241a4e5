package comm_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// Lanes (comm/internal/engine/lane.go): while a rank has a window of
// receives posted on a pair and keeps calling mpgo, small messages from a
// rank of the same process come through the pair's lane. These tests make
// that happen (a window posted, then tested in a loop, so the receiver
// never sleeps), check that it did (Laned), and check the rules every
// other path keeps.

// testAll spins on TestAll until every request completed, yielding.
func testAll(rs []*comm.Request) error {
	for {
		ok, err := comm.TestAll(rs...)
		if ok || err != nil {
			return err
		}
		runtime.Gosched()
	}
}

// Windows of receives, tested in a loop, get their messages through the
// lane, in order per pair, among messages too large for it, synchronous
// ones and messages on a second tag; with several sizes, so records span
// cells and wrap round the ring.
func TestLaneWindowsInOrder(t *testing.T) {
	const windows, window = 60, 32
	run(t, 2, func(w *comm.Comm) error {
		for k := 0; k < windows; k++ {
			if w.Rank() == 1 {
				reqs := make([]*comm.Request, window)
				bufs := make([][]byte, window)
				for i := range reqs {
					bufs[i] = make([]byte, 1024)
					var err error
					if reqs[i], err = w.Irecv(bufs[i], comm.Byte, 0, i%2); err != nil {
						return err
					}
				}
				if err := w.Send(nil, comm.Byte, 0, 99); err != nil { // go
					return err
				}
				if err := testAll(reqs); err != nil {
					return err
				}
				next := [2]int{k * window, k*window + 1}
				for i, r := range reqs {
					st, _, _ := r.Test()
					want := next[i%2]
					next[i%2] += 2
					n := 8 + want%300
					if st.Count != n || !bytes.Equal(bufs[i][:n], payload(n, uint64(want))) {
						return fmt.Errorf("window %d receive %d (tag %d): %d bytes of message %d, want message %d",
							k, i, i%2, st.Count, val(bufs[i]), want)
					}
				}
				continue
			}
			if _, err := w.Recv(nil, comm.Byte, 1, 99); err != nil {
				return err
			}
			// Tag 0 gets the even messages, tag 1 the odd ones; the
			// receiver posted its window alternating the tags.
			for i := 0; i < window; i++ {
				id := k*window + i
				n := 8 + id%300
				var err error
				if id%7 == 3 {
					err = w.Ssend(payload(n, uint64(id)), comm.Byte, 1, id%2)
				} else {
					err = w.Send(payload(n, uint64(id)), comm.Byte, 1, id%2)
				}
				if err != nil {
					return err
				}
			}
		}
		if w.Rank() == 1 && comm.Laned(w, 0) == 0 {
			return errors.New("no message came through the lane")
		}
		return nil
	})
}

// AnySource takes the oldest arrival across pairs, lanes included: three
// senders take turns (a token orders their sends) into the lanes of a
// receiver that posted windows from each and then tests them; its
// AnySource receives then get the messages in the order they were sent.
func TestLaneWildcardOldestArrival(t *testing.T) {
	const senders, rounds = 3, 40
	run(t, senders+1, func(w *comm.Comm) error {
		me := w.Rank()
		if me == 0 {
			for k := 0; k < 20; k++ {
				// Windows of two from each sender, to arm the lanes, on tag 5.
				var reqs []*comm.Request
				for s := 1; s <= senders; s++ {
					for j := 0; j < 2; j++ {
						r, err := w.Irecv(make([]byte, 8), comm.Byte, s, 5)
						if err != nil {
							return err
						}
						reqs = append(reqs, r)
					}
				}
				if err := w.Send(nil, comm.Byte, 1, 98); err != nil { // start the token
					return err
				}
				if err := testAll(reqs); err != nil {
					return err
				}
				// The rounds went on tag 6 meanwhile; wait for the last
				// sender's word, then take them with AnySource.
				if _, err := w.Recv(nil, comm.Byte, senders, 97); err != nil {
					return err
				}
				buf := make([]byte, 8)
				for want := 0; want < rounds*senders; want++ {
					st, err := w.Recv(buf, comm.Byte, comm.AnySource, 6)
					if err != nil {
						return err
					}
					if got := val(buf); got != uint64(want) || st.Source != 1+want%senders {
						return fmt.Errorf("iteration %d: AnySource receive %d got message %d from rank %d", k, want, got, st.Source)
					}
				}
			}
			for s := 1; s <= senders; s++ {
				if comm.Laned(w, s) == 0 {
					return fmt.Errorf("no message from rank %d came through its lane", s)
				}
			}
			return nil
		}
		for k := 0; k < 20; k++ {
			prev := me - 1
			if me == 1 {
				prev = 0
			}
			if _, err := w.Recv(nil, comm.Byte, prev, 98); err != nil {
				return err
			}
			for j := 0; j < 2; j++ {
				if err := w.Send(payload(8, 0), comm.Byte, 0, 5); err != nil {
					return err
				}
			}
			if me < senders {
				if err := w.Send(nil, comm.Byte, me+1, 98); err != nil {
					return err
				}
			}
			// Rounds: each sender sends one message, then passes a token
			// to the next, so the messages to rank 0 are sent in a known
			// order.
			for r := 0; r < rounds; r++ {
				if me != 1 || r > 0 {
					from := me - 1
					if me == 1 {
						from = senders
					}
					if _, err := w.Recv(nil, comm.Byte, from, 96); err != nil {
						return err
					}
				}
				if err := w.Send(payload(8, uint64(r*senders+me-1)), comm.Byte, 0, 6); err != nil {
					return err
				}
				if me < senders {
					if err := w.Send(nil, comm.Byte, me+1, 96); err != nil {
						return err
					}
				} else if r < rounds-1 {
					if err := w.Send(nil, comm.Byte, 1, 96); err != nil {
						return err
					}
				}
			}
			if me == senders {
				if err := w.Send(nil, comm.Byte, 0, 97); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// sendAfterGo is rank 0's side of a test where rank 1 posts its
// receives, then says go (tag 99): n messages of 8 bytes, message i
// holding i, with tag(i).
func sendAfterGo(w *comm.Comm, n int, tag func(i int) int) error {
	if _, err := w.Recv(nil, comm.Byte, 1, 99); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := w.Send(payload(8, uint64(i)), comm.Byte, 1, tag(i)); err != nil {
			return err
		}
	}
	return nil
}

// A rank that armed a lane and then waits in ways that do not poll it —
// on a Done channel, in a receive parked by another goroutine of the
// rank — still gets its messages.
func TestLaneWaitsThatDoNotPoll(t *testing.T) {
	t.Run("done", func(t *testing.T) {
		run(t, 2, func(w *comm.Comm) error {
			if w.Rank() == 0 {
				return sendAfterGo(w, 4, func(int) int { return 0 })
			}
			reqs := make([]*comm.Request, 4)
			for i := range reqs {
				var err error
				if reqs[i], err = w.Irecv(make([]byte, 8), comm.Byte, 0, 0); err != nil {
					return err
				}
			}
			if err := w.Send(nil, comm.Byte, 0, 99); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // the messages are likely in the lane by now
			for _, r := range reqs {
				select {
				case <-r.Done():
				case <-time.After(10 * time.Second):
					return errors.New("a receive's Done channel never closed")
				}
			}
			return comm.WaitAll(reqs...)
		})
	})
	t.Run("parked", func(t *testing.T) {
		// Rank 1 waits outside mpgo (a sleep, wg.Wait) while its other
		// goroutine parks in mpgo: the deadlock detector, which counts
		// only a rank's goroutines in mpgo, may take it for blocked (it
		// did once, under the load of the whole -race suite).
		run(t, 2, func(w *comm.Comm) error {
			if w.Rank() == 0 {
				return sendAfterGo(w, 3, func(i int) int { return i })
			}
			// One goroutine of rank 1 waits for tag 0; the other posts a
			// window on the same pair (tags 1 and 2) and then blocks
			// outside mpgo until the first is done.
			var wg sync.WaitGroup
			var err0 error
			wg.Add(1)
			first := make(chan struct{})
			go func() {
				defer wg.Done()
				r, err := w.Irecv(make([]byte, 8), comm.Byte, 0, 0)
				close(first)
				if err != nil {
					err0 = err
					return
				}
				_, err0 = r.Wait()
			}()
			<-first
			time.Sleep(time.Millisecond) // let it park
			var reqs []*comm.Request
			for tag := 1; tag <= 2; tag++ {
				r, err := w.Irecv(make([]byte, 8), comm.Byte, 0, tag)
				if err != nil {
					return err
				}
				reqs = append(reqs, r)
			}
			if err := w.Send(nil, comm.Byte, 0, 99); err != nil {
				return err
			}
			wg.Wait() // outside mpgo
			if err0 != nil {
				return err0
			}
			return comm.WaitAll(reqs...)
		}, noDetector())
	})
}

// A lane's message that a receive cannot take fails that receive alone,
// as on every other path: truncated, of another type, or delivered
// through a Sink.
func TestLaneErrorsAndSinks(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if _, err := w.Recv(nil, comm.Byte, 1, 99); err != nil {
				return err
			}
			if err := w.Send(payload(40, 1), comm.Byte, 1, 0); err != nil { // truncated
				return err
			}
			if err := w.Send(make([]byte, 16), comm.Float64, 1, 0); err != nil { // wrong type
				return err
			}
			if err := w.Send(payload(24, 3), comm.Byte, 1, 0); err != nil { // into a Sink
				return err
			}
			return w.Send(payload(8, 4), comm.Byte, 1, 0)
		}
		short, err := w.Irecv(make([]byte, 16), comm.Byte, 0, 0)
		if err != nil {
			return err
		}
		typed, err := w.Irecv(make([]byte, 16), comm.Int32, 0, 0)
		if err != nil {
			return err
		}
		k := &sliceSink{buf: make([]byte, 64)}
		into, err := w.IrecvInto(k, comm.Byte, 0, 0)
		if err != nil {
			return err
		}
		last := make([]byte, 8)
		fine, err := w.Irecv(last, comm.Byte, 0, 0)
		if err != nil {
			return err
		}
		if err := w.Send(nil, comm.Byte, 0, 99); err != nil {
			return err
		}
		reqs := []*comm.Request{short, typed, into, fine}
		for {
			done := true
			for _, r := range reqs {
				if _, ok, _ := r.Test(); !ok {
					done = false
				}
			}
			if done {
				break
			}
			runtime.Gosched()
		}
		if _, err := short.Wait(); !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("short receive: %v, want ErrTruncate", err)
		}
		if _, err := typed.Wait(); !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("receive of another type: %v, want ErrType", err)
		}
		if st, err := into.Wait(); err != nil || st.Count != 24 || !bytes.Equal(k.got, payload(24, 3)) {
			return fmt.Errorf("receive into a Sink: %v, %d bytes %v", err, st.Count, k.got)
		}
		if _, err := fine.Wait(); err != nil || val(last) != 4 {
			return fmt.Errorf("the last receive: %v, message %d", err, val(last))
		}
		return nil
	})
}

// sliceSink keeps what it is given.
type sliceSink struct {
	buf []byte
	got []byte
}

func (k *sliceSink) Cap() int { return len(k.buf) }

func (k *sliceSink) Take(data []byte, from comm.Remote, n int) error {
	if from != nil {
		return from.Pull(k.buf[:n])
	}
	k.got = append(k.got[:0], data...)
	return nil
}

// Goroutines of one rank send into one lane at once: each one's messages
// arrive in its order, none lost or mixed up (run it with -race).
func TestLaneConcurrentSenders(t *testing.T) {
	const goroutines, each = 4, 300
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if _, err := w.Recv(nil, comm.Byte, 1, 99); err != nil {
				return err
			}
			errs := make([]error, goroutines)
			var wg sync.WaitGroup
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each && errs[g] == nil; i++ {
						errs[g] = w.Send(payload(8+i%100, uint64(i)), comm.Byte, 1, g)
					}
				}()
			}
			wg.Wait()
			return errors.Join(errs...)
		}
		var reqs []*comm.Request
		var bufs [][]byte
		for i := 0; i < each; i++ {
			for g := 0; g < goroutines; g++ {
				b := make([]byte, 128)
				r, err := w.Irecv(b, comm.Byte, 0, g)
				if err != nil {
					return err
				}
				reqs, bufs = append(reqs, r), append(bufs, b)
			}
		}
		if err := w.Send(nil, comm.Byte, 0, 99); err != nil {
			return err
		}
		if err := testAll(reqs); err != nil {
			return err
		}
		for k, r := range reqs {
			st, _, _ := r.Test()
			i := k / goroutines
			if n := 8 + i%100; st.Count != n || !bytes.Equal(bufs[k][:n], payload(n, uint64(i))) {
				return fmt.Errorf("goroutine %d's message %d came as message %d of %d bytes", k%goroutines, i, val(bufs[k]), st.Count)
			}
		}
		return nil
	})
}

// A rank that fails while its messages wait in a lane aborts the run:
// the receiver's pending receives fail, nothing hangs.
func TestLaneAbort(t *testing.T) {
	boom := errors.New("boom")
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if err := sendAfterGo(w, 3, func(int) int { return 0 }); err != nil {
				return err
			}
			return boom
		}
		var reqs []*comm.Request
		for i := 0; i < 5; i++ { // two more than will come
			r, err := w.Irecv(make([]byte, 8), comm.Byte, 0, 0)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		if err := w.Send(nil, comm.Byte, 0, 99); err != nil {
			return err
		}
		return testAll(reqs)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want rank 0's error", err)
	}
}

// A rank that waits for a receive small enough for a lane, in a world
// whose waiters spin, while its sender runs on another P, arms the pair's
// lane (Request.watched in the engine): a ping-pong's small messages then
// come through the lanes, in order, among larger receives (no lane),
// synchronous sends (none either) and receives that find their message
// already there. Ranks that share a P the whole run never arm it (the
// sender never runs while the receiver waits), so the lanes' use is
// required of one run in up to ten, the order and contents of every run.
func TestLaneWatchedReceives(t *testing.T) {
	const rounds, runs = 3000, 10
	for k := 0; k < runs; k++ {
		var laned atomic.Uint64
		run(t, 2, func(w *comm.Comm) error {
			peer := 1 - w.Rank()
			small, large := make([]byte, 1024), make([]byte, 4096)
			for i := 0; i < rounds; i++ {
				buf, n := small, 8+i%1016
				if i%5 == 0 {
					buf, n = large, 8+i%4000
				}
				tag := i % 3
				send := func() error {
					if i%7 == 3 {
						return w.Ssend(payload(n, uint64(i)), comm.Byte, peer, tag)
					}
					return w.Send(payload(n, uint64(i)), comm.Byte, peer, tag)
				}
				if w.Rank() == 0 {
					if err := send(); err != nil {
						return err
					}
				}
				st, err := w.Recv(buf, comm.Byte, peer, tag)
				if err != nil {
					return fmt.Errorf("round %d: %w", i, err)
				}
				if st.Count != n || !bytes.Equal(buf[:n], payload(n, uint64(i))) {
					return fmt.Errorf("round %d: %d bytes of message %d, want %d bytes of message %d", i, st.Count, val(buf), n, i)
				}
				if w.Rank() == 1 {
					if err := send(); err != nil {
						return err
					}
				}
			}
			laned.Add(comm.Laned(w, peer))
			return nil
		})
		if laned.Load() > 0 || runtime.GOMAXPROCS(0) < 2 {
			return
		}
	}
	t.Errorf("no message came through a lane in %d runs", runs)
}
