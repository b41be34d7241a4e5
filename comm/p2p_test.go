package comm_test

import (
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
)

// MPI 3.1 §3.4: a synchronous send completes only once the matching
// receive has started.
func TestSsendWaitsForReceive(t *testing.T) {
	for _, size := range []int{8, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			started := make(chan struct{})
			run(t, 2, func(w *comm.Comm) error {
				if w.Rank() == 0 {
					r, err := w.Issend(make([]byte, size), comm.Byte, 1, 0)
					if err != nil {
						return err
					}
					time.Sleep(20 * time.Millisecond)
					if _, done, _ := r.Test(); done {
						return errors.New("Ssend completed before the receive was posted")
					}
					close(started)
					_, err = r.Wait()
					return err
				}
				<-started
				_, err := w.Recv(make([]byte, size), comm.Byte, 0, 0)
				return err
			}, noDetector())
		})
	}
}

// Blocking Ssend to a rank that receives later.
func TestSsendBlocking(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return w.Ssend([]byte("sync"), comm.Byte, 1, 4)
		}
		time.Sleep(5 * time.Millisecond)
		buf := make([]byte, 4)
		_, err := w.Recv(buf, comm.Byte, 0, 4)
		if string(buf) != "sync" {
			return fmt.Errorf("got %q", buf)
		}
		return err
	})
}

func TestCancelUnmatchedReceive(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			r, err := w.Irecv(make([]byte, 8), comm.Byte, 0, 1)
			if err != nil {
				return err
			}
			ra, err := w.Irecv(make([]byte, 8), comm.Byte, comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			if err := r.Cancel(); err != nil {
				return err
			}
			if err := ra.Cancel(); err != nil {
				return err
			}
			if _, err := r.Wait(); !errors.Is(err, comm.ErrCanceled) {
				return fmt.Errorf("cancelled receive: %v", err)
			}
			if _, err := ra.Wait(); !errors.Is(err, comm.ErrCanceled) {
				return fmt.Errorf("cancelled wildcard receive: %v", err)
			}
			if err := w.Barrier(); err != nil {
				return err
			}
			buf := make([]byte, 8)
			if _, err := w.Recv(buf, comm.Byte, 0, 1); err != nil {
				return err
			}
			if val(buf) != 42 {
				return fmt.Errorf("got %d after cancel", val(buf))
			}
			return nil
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		return w.Send(payload(8, 42), comm.Byte, 1, 1)
	})
}

// Cancelling a receive that already matched leaves its message to it.
func TestCancelAfterMatch(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return w.Send(payload(8, 7), comm.Byte, 1, 0)
		}
		buf := make([]byte, 8)
		r, err := w.Irecv(buf, comm.Byte, 0, 0)
		if err != nil {
			return err
		}
		<-r.Done()
		if err := r.Cancel(); err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil || val(buf) != 7 {
			return fmt.Errorf("after late cancel: %v %d", err, val(buf))
		}
		return nil
	})
}

func TestCancelSendNotSupported(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			r, err := w.Isend(payload(8, 1), comm.Byte, 1, 0)
			if err != nil {
				return err
			}
			if err := r.Cancel(); !errors.Is(err, comm.ErrNotSupported) {
				return fmt.Errorf("cancel of a send: %v", err)
			}
			_, err = r.Wait()
			return err
		}
		_, err := w.Recv(make([]byte, 8), comm.Byte, 0, 0)
		return err
	})
}

// A receive buffer shorter than the message: ErrTruncate, the message is
// consumed, the next receive gets the next message; the same whether the
// message was sent from a slice or from a Source (SendFrom).
func TestTruncation(t *testing.T) {
	sends := []struct {
		name string
		send func(w *comm.Comm, b []byte) error
	}{
		{"Send", func(w *comm.Comm, b []byte) error { return w.Send(b, comm.Byte, 1, 0) }},
		{"SendFrom", func(w *comm.Comm, b []byte) error {
			return w.SendFrom(&testSource{data: b}, len(b), comm.Byte, 1, 0)
		}},
	}
	for _, s := range sends {
		for _, size := range []int{16, 64, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", s.name, size), func(t *testing.T) {
				run(t, 2, func(w *comm.Comm) error {
					if w.Rank() == 0 {
						if err := s.send(w, payload(size, 1)); err != nil {
							return err
						}
						return s.send(w, payload(8, 2))
					}
					small := make([]byte, 8)
					if _, err := w.Recv(small[:4], comm.Byte, 0, 0); !errors.Is(err, comm.ErrTruncate) {
						return fmt.Errorf("short buffer: %v", err)
					}
					if _, err := w.Recv(small, comm.Byte, 0, 0); err != nil || val(small) != 2 {
						return fmt.Errorf("next receive: %v %d", err, val(small))
					}
					return nil
				})
			})
		}
	}
}

func TestTypeMismatch(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			for i := 0; i < 3; i++ {
				if err := w.Send(make([]byte, 16), comm.Float64, 1, 0); err != nil {
					return err
				}
			}
			return nil
		}
		if _, err := w.Recv(make([]byte, 16), comm.Int64, 0, 0); !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("float64 received as int64: %v", err)
		}
		st, err := w.Recv(make([]byte, 16), comm.Float64, 0, 0)
		if err != nil || st.Count != 2 {
			return fmt.Errorf("float64 as float64: %v %v", st, err)
		}
		st, err = w.Recv(make([]byte, 16), comm.Byte, 0, 0)
		if err != nil || st.Count != 16 {
			return fmt.Errorf("float64 as bytes: %v %v", st, err)
		}
		return nil
	})
}

func TestZeroLength(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if err := w.Send(nil, comm.Float64, 1, 3); err != nil {
				return err
			}
			return w.Ssend([]byte{}, comm.Byte, 1, 4)
		}
		st, err := w.Recv(nil, comm.Float64, 0, 3)
		if err != nil || st.Count != 0 || st.Tag != 3 {
			return fmt.Errorf("zero-length: %v %v", st, err)
		}
		st, err = w.Recv(make([]byte, 10), comm.Byte, comm.AnySource, comm.AnyTag)
		if err != nil || st.Count != 0 || st.Tag != 4 {
			return fmt.Errorf("zero-length ssend: %v %v", st, err)
		}
		return nil
	})
}

func TestSendToSelf(t *testing.T) {
	run(t, 3, func(w *comm.Comm) error {
		me := w.Rank()
		if err := w.Send(payload(8, uint64(me)), comm.Byte, me, 0); err != nil {
			return err
		}
		buf := make([]byte, 8)
		if _, err := w.Recv(buf, comm.Byte, me, 0); err != nil || val(buf) != uint64(me) {
			return fmt.Errorf("eager to self: %v %d", err, val(buf))
		}
		big := make([]byte, 1<<20)
		r, err := w.Irecv(big, comm.Byte, me, 1)
		if err != nil {
			return err
		}
		if err := w.Send(payload(1<<20, 9), comm.Byte, me, 1); err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil || val(big) != 9 {
			return fmt.Errorf("rendezvous to self: %v %d", err, val(big))
		}
		return nil
	})
}

func TestDupSplitIsolation(t *testing.T) {
	run(t, 6, func(w *comm.Comm) error {
		d, err := w.Dup()
		if err != nil {
			return err
		}
		s, err := w.Split(w.Rank()%2, -w.Rank()) // reverse order within each color
		if err != nil {
			return err
		}
		if s.Size() != 3 || s.Rank() != 2-w.Rank()/2 {
			return fmt.Errorf("split: rank %d of %d", s.Rank(), s.Size())
		}
		// The same (peer, tag) on three communicators: each receive gets
		// its own communicator's message, though they were sent in the
		// opposite order.
		peer := w.Rank() ^ 1
		speer := (s.Rank() + 1) % s.Size()
		sfrom := (s.Rank() - 1 + s.Size()) % s.Size()
		if err := s.Send(payload(8, 3), comm.Byte, speer, 0); err != nil {
			return err
		}
		if err := d.Send(payload(8, 2), comm.Byte, peer, 0); err != nil {
			return err
		}
		if err := w.Send(payload(8, 1), comm.Byte, peer, 0); err != nil {
			return err
		}
		buf := make([]byte, 8)
		for _, c := range []struct {
			c    *comm.Comm
			from int
			want uint64
		}{{w, peer, 1}, {d, peer, 2}, {s, sfrom, 3}} {
			st, err := c.c.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			if val(buf) != c.want || st.Source != c.from {
				return fmt.Errorf("on %v: got %d from %d", c.c, val(buf), st.Source)
			}
		}
		u, err := w.Split(comm.Undefined, 0)
		if u != nil || err != nil {
			return fmt.Errorf("Split(Undefined) = %v, %v", u, err)
		}
		return nil
	})
}

func TestWaitAnyAndDone(t *testing.T) {
	release := make(chan struct{}) // rank 1 sends only after WaitAny returned
	run(t, 3, func(w *comm.Comm) error {
		if w.Rank() != 0 {
			if w.Rank() == 1 {
				<-release
			}
			return w.Send(payload(8, uint64(w.Rank())), comm.Byte, 0, 0)
		}
		b1, b2 := make([]byte, 8), make([]byte, 8)
		r1, err := w.Irecv(b1, comm.Byte, 1, 0)
		if err != nil {
			return err
		}
		r2, err := w.Irecv(b2, comm.Byte, 2, 0)
		if err != nil {
			return err
		}
		i, st, err := comm.WaitAny(nil, r1, r2)
		close(release)
		if err != nil || i != 2 || st.Source != 2 || val(b2) != 2 {
			return fmt.Errorf("WaitAny = %d %v %v", i, st, err)
		}
		select {
		case <-r1.Done():
		case <-time.After(10 * time.Second):
			return errors.New("Done never closed")
		}
		if st, ok, err := r1.Test(); !ok || err != nil || st.Source != 1 {
			return fmt.Errorf("Test after Done: %v %v %v", st, ok, err)
		}
		if _, _, err := comm.WaitAny(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("WaitAny(): %v", err)
		}
		return nil
	})
}

// SendOwned/RecvOwned hand the very slice over, whichever side comes first.
func TestOwnedHandoffIsZeroCopy(t *testing.T) {
	for _, size := range []int{8, 1 << 20} {
		for _, recvFirst := range []bool{false, true} {
			t.Run(fmt.Sprint(size, recvFirst), func(t *testing.T) {
				sent := make(chan uintptr, 1)
				run(t, 2, func(w *comm.Comm) error {
					if w.Rank() == 0 {
						b := payload(size, 5)
						sent <- uintptr(unsafe.Pointer(&b[0]))
						if recvFirst {
							time.Sleep(5 * time.Millisecond)
						}
						return w.SendOwned(b, comm.Byte, 1, 0)
					}
					if !recvFirst {
						time.Sleep(5 * time.Millisecond)
					}
					got, st, err := w.RecvOwned(comm.Byte, 0, 0)
					if err != nil {
						return err
					}
					if uintptr(unsafe.Pointer(&got[0])) != <-sent || st.Count != size || val(got) != 5 {
						return errors.New("RecvOwned did not get the sender's slice")
					}
					return nil
				})
			})
		}
	}
}

// An owned send received into a buffer, and a plain send received owned.
func TestOwnedMixedWithCopies(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if err := w.SendOwned(payload(8, 1), comm.Byte, 1, 0); err != nil {
				return err
			}
			return w.Send(payload(100<<10, 2), comm.Byte, 1, 0)
		}
		buf := make([]byte, 8)
		if _, err := w.Recv(buf, comm.Byte, 0, 0); err != nil || val(buf) != 1 {
			return fmt.Errorf("owned into buffer: %v %d", err, val(buf))
		}
		got, _, err := w.RecvOwned(comm.Byte, 0, 0)
		if err != nil || len(got) != 100<<10 || val(got) != 2 {
			return fmt.Errorf("plain into owned: %v", err)
		}
		return nil
	})
}

func TestValues(t *testing.T) {
	type point struct {
		X, Y int
		Name string
	}
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if err := w.SendValue(point{1, 2, "p"}, 1, 0); err != nil {
				return err
			}
			r, err := w.IsendValue(map[string]int{"a": 1}, 1, 1)
			if err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
			return w.SendValue("not a point", 1, 2)
		}
		var p point
		st, err := w.RecvValue(&p, 0, 0)
		if err != nil || p != (point{1, 2, "p"}) || st.Count == 0 {
			return fmt.Errorf("RecvValue: %v %+v %v", st, p, err)
		}
		var m map[string]int
		if _, err := w.RecvValue(&m, 0, 1); err != nil || m["a"] != 1 {
			return fmt.Errorf("map: %v %v", m, err)
		}
		if _, err := w.RecvValue(&p, 0, 2); !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("string into struct: %v", err)
		}
		return nil
	})
}

// ProcNull as MPI defines it: sends and receives succeed at once, probes
// find an empty message from ProcNull with tag AnyTag.
func TestProcNullProbeAndValue(t *testing.T) {
	run(t, 1, func(w *comm.Comm) error {
		if err := w.Send([]byte("x"), comm.Byte, comm.ProcNull, 3); err != nil {
			return err
		}
		buf := []byte("keep")
		st, err := w.Recv(buf, comm.Byte, comm.ProcNull, 3)
		if err != nil || st.Source != comm.ProcNull || st.Tag != comm.AnyTag || st.Count != 0 || string(buf) != "keep" {
			return fmt.Errorf("Recv(ProcNull) = %v, %v, %q", st, err, buf)
		}
		if st, err := w.Probe(comm.ProcNull, comm.AnyTag); err != nil || st.Source != comm.ProcNull {
			return fmt.Errorf("Probe(ProcNull) = %v, %v", st, err)
		}
		if st, ok, err := w.Iprobe(comm.ProcNull, 0); err != nil || !ok || st.Count != 0 {
			return fmt.Errorf("Iprobe(ProcNull) = %v, %v, %v", st, ok, err)
		}
		v := 7
		if _, err := w.RecvValue(&v, comm.ProcNull, 0); err != nil || v != 7 {
			return fmt.Errorf("RecvValue(ProcNull) = %v, %d", err, v)
		}
		if _, err := w.Probe(comm.ProcNull, -5); !errors.Is(err, comm.ErrTag) {
			return fmt.Errorf("Probe(ProcNull, -5): %v", err)
		}
		return nil
	})
}
