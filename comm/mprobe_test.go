package comm_test

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// Several goroutines of one rank each Mprobe then Mrecv from the same
// source and tag: each receives the very message it probed (the probe took
// it off the queue), and none is lost or received twice. With Probe and
// Recv the same program can receive a message of another size than it
// probed.
func TestMprobeSharedComm(t *testing.T) {
	const workers, per = 4, 200
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			fn := func(w *comm.Comm) error {
				if w.Rank() == 1 {
					for i := range workers * per {
						// Sizes differ message to message, so that a receive
						// of another message than the probed one shows.
						if err := w.Send(payload(8+i%5*8, uint64(i)), comm.Byte, 0, 3); err != nil {
							return err
						}
					}
					return nil
				}
				var (
					mu  sync.Mutex
					got []int
					wg  sync.WaitGroup
				)
				errs := make(chan error, workers)
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range per {
							m, st, err := w.Mprobe(1, 3)
							if err != nil {
								errs <- err
								return
							}
							buf := make([]byte, st.Count)
							rst, err := w.Mrecv(m, buf, comm.Byte)
							if err != nil {
								errs <- err
								return
							}
							v := int(val(buf))
							if rst.Count != st.Count || rst.Source != 1 || rst.Tag != 3 || st.Count != 8+v%5*8 {
								errs <- fmt.Errorf("probed %+v, received %+v, message %d", st, rst, v)
								return
							}
							mu.Lock()
							got = append(got, v)
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				close(errs)
				if err := <-errs; err != nil {
					return err
				}
				sort.Ints(got)
				for i, v := range got {
					if v != i {
						return fmt.Errorf("message %d received as %d: lost or duplicated", i, v)
					}
				}
				return nil
			}
			// The deadlock detector sees one park per rank, and would take
			// rank 0 for blocked on one goroutine's probe while the other
			// receives: off, as for any rank of several goroutines.
			if procs == 1 {
				run(t, 2, fn, noDetector())
				return
			}
			for r, err := range runProcs(t, 2, 1, fn) {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// A matched probe takes the oldest matching message (non-overtaking), and
// a message it took is out of every other probe's and receive's reach.
func TestMprobeOrderAndQueue(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			for i := range 3 {
				if err := w.Send(payload(8, uint64(i)), comm.Byte, 0, i%2); err != nil {
					return err
				}
			}
			return w.Send(nil, comm.Byte, 0, 9) // all sent
		}
		if _, err := w.Recv(nil, comm.Byte, 1, 9); err != nil {
			return err
		}
		m0, st, err := w.Mprobe(comm.AnySource, comm.AnyTag)
		if err != nil || st.Tag != 0 {
			return fmt.Errorf("first Mprobe: %+v, %v", st, err)
		}
		m2, st, ok, err := w.Improbe(1, 0)
		if err != nil || !ok || st.Tag != 0 {
			return fmt.Errorf("Improbe of tag 0: %+v %v %v", st, ok, err)
		}
		if _, _, ok, err := w.Improbe(1, 0); ok || err != nil {
			return fmt.Errorf("a third tag-0 message: %v %v", ok, err)
		}
		if _, ok, err := w.Iprobe(1, 0); ok || err != nil {
			return fmt.Errorf("Iprobe sees a claimed message: %v %v", ok, err)
		}
		b := make([]byte, 8)
		if _, err := w.Recv(b, comm.Byte, 1, comm.AnyTag); err != nil || val(b) != 1 {
			return fmt.Errorf("Recv took %d, %v; want message 1", val(b), err)
		}
		for _, want := range []struct {
			m *comm.Message
			v uint64
		}{{m2, 2}, {m0, 0}} {
			if _, err := w.Mrecv(want.m, b, comm.Byte); err != nil || val(b) != want.v {
				return fmt.Errorf("Mrecv got %d, %v; want %d", val(b), err, want.v)
			}
		}
		return nil
	})
}

// Bad Mrecvs fail with a clear error and consume nothing else: a nil
// message, a second receive of one message, a message of another
// communicator; a truncation or a type mismatch consumes the message.
func TestMrecvErrors(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			for i := range 3 {
				if err := w.Send(payload(16, uint64(i)), comm.Byte, 0, 0); err != nil {
					return err
				}
			}
			return nil
		}
		dup, err := w.Dup()
		if err != nil {
			return err
		}
		if _, err := w.Mrecv(nil, nil, comm.Byte); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Mrecv(nil): %v", err)
		}
		m, _, err := w.Mprobe(1, 0)
		if err != nil {
			return err
		}
		if _, err := dup.Mrecv(m, make([]byte, 16), comm.Byte); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Mrecv on another communicator: %v", err)
		}
		if _, err := w.Mrecv(m, make([]byte, 4), comm.Byte); !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("Mrecv into 4 bytes: %v", err)
		}
		if _, err := w.Mrecv(m, make([]byte, 16), comm.Byte); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("second Mrecv: %v", err)
		}
		m, _, err = w.Mprobe(1, 0)
		if err != nil {
			return err
		}
		if _, err := w.Mrecv(m, make([]byte, 16), comm.Float64); !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("Mrecv of float64s from bytes: %v", err)
		}
		b := make([]byte, 16)
		if _, err := w.Recv(b, comm.Byte, 1, 0); err != nil || val(b) != 2 {
			return fmt.Errorf("the third message: %d, %v", val(b), err)
		}
		return dup.Free()
	})
}

// A rendezvous message (above the eager limit) claimed by a matched
// probe holds its sender until Mrecv, whichever of Mrecv and Imrecv.
func TestMprobeRendezvous(t *testing.T) {
	const n = 256 << 10
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			for i := range 2 {
				if err := w.Send(payload(n, uint64(i)), comm.Byte, 0, 0); err != nil {
					return err
				}
			}
			return nil
		}
		for i := range 2 {
			m, st, err := w.Mprobe(1, 0)
			if err != nil || st.Count != n {
				return fmt.Errorf("Mprobe: %+v, %v", st, err)
			}
			b := make([]byte, n)
			if i == 0 {
				_, err = w.Mrecv(m, b, comm.Byte)
			} else {
				var r *comm.Request
				if r, err = w.Imrecv(m, b, comm.Byte); err == nil {
					_, err = r.Wait()
				}
			}
			if err != nil || val(b) != uint64(i) || b[n-1] != byte(i)+byte((n-1)%256) {
				return fmt.Errorf("message %d: %d, %v", i, val(b), err)
			}
		}
		return nil
	})
}

// An abort fails a sender held by a claimed rendezvous message, and the
// message's Mrecv, instead of leaving them hanging.
func TestMprobeAbort(t *testing.T) {
	cause := errors.New("giving up")
	sendErr := make(chan error, 1)
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			err := w.Send(make([]byte, 256<<10), comm.Byte, 0, 0)
			sendErr <- err
			return err
		}
		m, _, err := w.Mprobe(1, 0)
		if err != nil {
			return err
		}
		w.Abort(cause)
		if _, err := w.Mrecv(m, make([]byte, 256<<10), comm.Byte); !errors.Is(err, comm.ErrAborted) {
			return fmt.Errorf("Mrecv after the abort: %v", err)
		}
		return nil
	})
	if !errors.Is(err, cause) {
		t.Fatalf("Run = %v", err)
	}
	if err := <-sendErr; !errors.Is(err, comm.ErrAborted) {
		t.Fatalf("the sender's Send = %v, want ErrAborted", err)
	}
}

// A message claimed and never received leaves its rendezvous sender
// blocked: the deadlock detector reports it, instead of a hang.
func TestMprobeDeadlock(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			return w.Send(make([]byte, 256<<10), comm.Byte, 0, 0)
		}
		if _, _, err := w.Mprobe(1, 0); err != nil {
			return err
		}
		_, err := w.Recv(nil, comm.Byte, 1, 5) // never sent
		return err
	})
	if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("Run = %v, want ErrDeadlock", err)
	}
}

// Mprobe of ProcNull returns at once a message that Mrecv receives empty.
func TestMprobeProcNull(t *testing.T) {
	run(t, 1, func(w *comm.Comm) error {
		m, st, err := w.Mprobe(comm.ProcNull, 4)
		if err != nil || st.Source != comm.ProcNull {
			return fmt.Errorf("Mprobe(ProcNull): %+v, %v", st, err)
		}
		st, err = w.Mrecv(m, make([]byte, 8), comm.Byte)
		if err != nil || st.Source != comm.ProcNull || st.Count != 0 {
			return fmt.Errorf("Mrecv of the null message: %+v, %v", st, err)
		}
		return nil
	})
}
