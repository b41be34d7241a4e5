package comm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// irecvs posts one 8-byte receive from each of srcs on tag 0.
func irecvs(w *comm.Comm, srcs ...int) ([]*comm.Request, [][]byte, error) {
	rs := make([]*comm.Request, len(srcs))
	bufs := make([][]byte, len(srcs))
	for i, s := range srcs {
		bufs[i] = make([]byte, 8)
		r, err := w.Irecv(bufs[i], comm.Byte, s, 0)
		if err != nil {
			return nil, nil, err
		}
		rs[i] = r
	}
	return rs, bufs, nil
}

// TestAll is true only once every request completed, and then reports the
// first error among them, in argument order; nil requests are skipped.
func TestTestAll(t *testing.T) {
	go1 := make(chan struct{})
	run(t, 3, func(w *comm.Comm) error {
		switch w.Rank() {
		case 1:
			return w.Send(payload(8, 1), comm.Byte, 0, 0)
		case 2:
			<-go1
			return w.Send(payload(8, 2), comm.Byte, 0, 0)
		}
		rs, bufs, err := irecvs(w, 1, 2)
		if err != nil {
			return err
		}
		if _, err := rs[0].Wait(); err != nil {
			return err
		}
		if ok, err := comm.TestAll(rs[0], nil, rs[1]); ok || err != nil {
			return fmt.Errorf("TestAll with rank 2's receive pending = %v, %v", ok, err)
		}
		close(go1)
		for {
			ok, err := comm.TestAll(rs[0], nil, rs[1])
			if err != nil {
				return err
			}
			if ok {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if val(bufs[0]) != 1 || val(bufs[1]) != 2 {
			return fmt.Errorf("received %d and %d", val(bufs[0]), val(bufs[1]))
		}
		// A cancelled receive's error comes back once all are done.
		c, _, err := irecvs(w, 1)
		if err != nil {
			return err
		}
		if err := c[0].Cancel(); err != nil {
			return err
		}
		if ok, err := comm.TestAll(rs[0], c[0]); !ok || !errors.Is(err, comm.ErrCanceled) {
			return fmt.Errorf("TestAll with a cancelled receive = %v, %v", ok, err)
		}
		if ok, err := comm.TestAll(); !ok || err != nil {
			return fmt.Errorf("TestAll() = %v, %v", ok, err)
		}
		return nil
	})
}

// TestAny reports a completed request's index and status, or -1 and false
// when none has completed; with no requests at all it fails with ErrArg,
// as WaitAny does.
func TestTestAny(t *testing.T) {
	go2 := make(chan struct{})
	run(t, 3, func(w *comm.Comm) error {
		if w.Rank() != 0 {
			<-go2
			if w.Rank() == 2 {
				return w.Send(payload(8, 2), comm.Byte, 0, 0)
			}
			return nil
		}
		rs, bufs, err := irecvs(w, 1, 2)
		if err != nil {
			return err
		}
		if i, _, ok, err := comm.TestAny(rs...); i != -1 || ok || err != nil {
			return fmt.Errorf("TestAny with nothing sent = %d, %v, %v", i, ok, err)
		}
		close(go2)
		for {
			i, st, ok, err := comm.TestAny(nil, rs[0], rs[1])
			if err != nil {
				return err
			}
			if !ok {
				time.Sleep(time.Millisecond)
				continue
			}
			if i != 2 || st.Source != 2 || val(bufs[1]) != 2 {
				return fmt.Errorf("TestAny = %d, %+v, buffer %d", i, st, val(bufs[1]))
			}
			break
		}
		if err := rs[0].Cancel(); err != nil {
			return err
		}
		if _, _, _, err := comm.TestAny(nil, nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("TestAny of nil requests: %v", err)
		}
		return nil
	})
}

// WaitSome blocks until at least one request completed and returns the
// indices of all that have; TestSome returns them without blocking
// (none: an empty slice). Both fail with ErrArg when every request is nil.
func TestWaitSomeTestSome(t *testing.T) {
	sent := make(chan struct{})
	run(t, 4, func(w *comm.Comm) error {
		switch w.Rank() {
		case 1, 3:
			if err := w.Send(payload(8, uint64(w.Rank())), comm.Byte, 0, 0); err != nil {
				return err
			}
			return w.Send(nil, comm.Byte, 0, 1) // "sent"
		case 2:
			<-sent
			return w.Send(payload(8, 2), comm.Byte, 0, 0)
		}
		rs, bufs, err := irecvs(w, 1, 2, 3)
		if err != nil {
			return err
		}
		for _, s := range []int{1, 3} {
			if _, err := w.Recv(nil, comm.Byte, s, 1); err != nil {
				return err
			}
		}
		// Ranks 1 and 3 sent before their "sent": both receives matched.
		got, err := comm.WaitSome(rs...)
		if err != nil || !slices.Equal(got, []int{0, 2}) {
			return fmt.Errorf("WaitSome = %v, %v; want [0 2]", got, err)
		}
		some, err := comm.TestSome(nil, rs[1])
		if err != nil || len(some) != 0 {
			return fmt.Errorf("TestSome with rank 2's receive pending = %v, %v", some, err)
		}
		close(sent)
		got, err = comm.WaitSome(nil, rs[1])
		if err != nil || !slices.Equal(got, []int{1}) || val(bufs[1]) != 2 {
			return fmt.Errorf("WaitSome = %v, %v, buffer %d", got, err, val(bufs[1]))
		}
		if val(bufs[0]) != 1 || val(bufs[2]) != 3 {
			return fmt.Errorf("buffers %d, %d", val(bufs[0]), val(bufs[2]))
		}
		if got, err := comm.TestSome(rs...); err != nil || !slices.Equal(got, []int{0, 1, 2}) {
			return fmt.Errorf("TestSome of completed requests = %v, %v", got, err)
		}
		if _, err := comm.WaitSome(nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("WaitSome(nil): %v", err)
		}
		if _, err := comm.TestSome(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("TestSome(): %v", err)
		}
		return nil
	})
}

// WaitSome reports the first error among the requests that completed.
func TestWaitSomeError(t *testing.T) {
	run(t, 1, func(w *comm.Comm) error {
		rs, _, err := irecvs(w, 0, 0)
		if err != nil {
			return err
		}
		if err := rs[1].Cancel(); err != nil {
			return err
		}
		got, err := comm.WaitSome(rs...)
		if !errors.Is(err, comm.ErrCanceled) || !slices.Equal(got, []int{1}) {
			return fmt.Errorf("WaitSome with a cancelled receive = %v, %v", got, err)
		}
		return rs[0].Cancel()
	})
}

// WaitContext returns the context's error when it is done first and
// leaves the request as it was: a later Wait receives the message.
func TestWaitContext(t *testing.T) {
	waited := make(chan struct{})
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			<-waited
			return w.Send(payload(8, 7), comm.Byte, 0, 0)
		}
		rs, bufs, err := irecvs(w, 1)
		if err != nil {
			return err
		}
		r := rs[0]
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if _, err := r.WaitContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("WaitContext past its deadline: %v", err)
		}
		done, cancelNow := context.WithCancel(context.Background())
		cancelNow()
		if _, err := r.WaitContext(done); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("WaitContext with a cancelled context: %v", err)
		}
		if _, ok, _ := r.Test(); ok {
			return errors.New("the request completed while nothing was sent")
		}
		close(waited)
		st, err := r.WaitContext(context.Background())
		if err != nil || st.Source != 1 || val(bufs[0]) != 7 {
			return fmt.Errorf("WaitContext = %+v, %v, buffer %d", st, err, val(bufs[0]))
		}
		// Completed: the same result, whatever the context.
		if st2, err := r.WaitContext(done); err != nil || st2 != st {
			return fmt.Errorf("WaitContext of a completed request = %+v, %v", st2, err)
		}
		var nilReq *comm.Request
		if _, err := nilReq.WaitContext(ctx); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("WaitContext of nil: %v", err)
		}
		return nil
	})
}

// A rank in WaitContext may leave by its context, so the deadlock
// detector (looking every 5 ms) does not take it for blocked: every rank
// waiting with a timeout, then sending, is not a deadlock.
func TestWaitContextIsNoDeadlock(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		peer := 1 - w.Rank()
		rs, bufs, err := irecvs(w, peer)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		// The peer's deadline may pass first, and its message arrive
		// before this rank's: either outcome, but no deadlock.
		if _, err := rs[0].WaitContext(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("WaitContext: %v", err)
		}
		if err := w.Send(payload(8, uint64(w.Rank())), comm.Byte, peer, 0); err != nil {
			return err
		}
		if _, err := rs[0].Wait(); err != nil || val(bufs[0]) != uint64(peer) {
			return fmt.Errorf("Wait: %v, buffer %d", err, val(bufs[0]))
		}
		return nil
	})
}

// Abort fails every rank's pending and later operations with an error
// that wraps both ErrAborted and the cause given.
func TestCommAbort(t *testing.T) {
	cause := errors.New("input file is corrupt")
	got := make(chan error, 3)
	err := mpgo.Run(4, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			w.Abort(cause)
			return nil
		}
		_, err := w.Recv(make([]byte, 8), comm.Byte, 0, 0)
		got <- err
		return err
	})
	if !errors.Is(err, comm.ErrAborted) || !errors.Is(err, cause) {
		t.Fatalf("Run = %v, want ErrAborted and the cause", err)
	}
	close(got)
	for e := range got {
		if !errors.Is(e, comm.ErrAborted) || !errors.Is(e, cause) {
			t.Errorf("Recv returned %v, want ErrAborted and the cause", e)
		}
	}
}

// Go runs its func on a goroutine of its own and its request completes
// with the func's error; Cancel refuses it; calls need not match across
// ranks (only rank 0 calls it here), and a nil func fails with ErrArg.
func TestGo(t *testing.T) {
	boom := errors.New("boom")
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			return w.Send(payload(8, 5), comm.Byte, 0, 0)
		}
		buf := make([]byte, 8)
		r, err := w.Go(func() error {
			_, err := w.Recv(buf, comm.Byte, 1, 0)
			return err
		})
		if err != nil {
			return err
		}
		if err := r.Cancel(); !errors.Is(err, comm.ErrNotSupported) {
			return fmt.Errorf("Cancel of a Go request: %v", err)
		}
		if _, err := r.Wait(); err != nil || val(buf) != 5 {
			return fmt.Errorf("Go: %v, received %d", err, val(buf))
		}
		r, err = w.Go(func() error { return boom })
		if err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, boom) {
			return fmt.Errorf("Go's error: %v", err)
		}
		if _, err := w.Go(nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Go(nil): %v", err)
		}
		return nil
	})
}

// GoInit runs its func once a start; Start of an active one is refused,
// and Free ends it.
func TestGoInit(t *testing.T) {
	run(t, 1, func(w *comm.Comm) error {
		n := 0
		r, err := w.GoInit(func() error { n++; return nil })
		if err != nil {
			return err
		}
		for range 5 {
			if err := r.Start(); err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
		}
		if n != 5 {
			return fmt.Errorf("the func ran %d times in 5 starts", n)
		}
		if err := r.Free(); err != nil {
			return err
		}
		if err := r.Start(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Start after Free: %v", err)
		}
		if _, err := w.GoInit(nil); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("GoInit(nil): %v", err)
		}
		return nil
	})
}
