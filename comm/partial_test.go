package comm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/buffer"
	"github.com/mpgo/mpgo/comm"
)

// A byte-level send of a partial element (3 bytes as Float64) fails with
// ErrArg before anything is sent, on every send path; the receiver sees
// only the messages that were whole.
func TestSendPartialElement(t *testing.T) {
	const tag = 4
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			// The one message that was sent whole, and nothing before it.
			buf := make([]byte, 16)
			st, err := w.Recv(buf, comm.Float64, 0, comm.AnyTag)
			if err != nil {
				return err
			}
			if st.Tag != tag+1 || st.Count != 2 || val(buf) != 7 {
				return fmt.Errorf("received %+v %v, want the whole message (tag %d, 2 elements)", st, buf, tag+1)
			}
			return nil
		}
		part := payload(8, 7)[:3]
		pool, err := buffer.NewPool()
		if err != nil {
			return err
		}
		src := &testSource{data: part}
		sends := map[string]func() error{
			"Send":       func() error { return w.Send(part, comm.Float64, 1, tag) },
			"Ssend":      func() error { return w.Ssend(part, comm.Float64, 1, tag) },
			"SendOwned":  func() error { return w.SendOwned(part, comm.Float64, 1, tag) },
			"Isend":      func() error { _, err := w.Isend(part, comm.Float64, 1, tag); return err },
			"Issend":     func() error { _, err := w.Issend(part, comm.Float64, 1, tag); return err },
			"IsendOwned": func() error { _, err := w.IsendOwned(part, comm.Float64, 1, tag); return err },
			"SendInit":   func() error { _, err := w.SendInit(part, comm.Float64, 1, tag); return err },
			"SsendInit":  func() error { _, err := w.SsendInit(part, comm.Float64, 1, tag); return err },
			"SendFrom":   func() error { return w.SendFrom(src, 3, comm.Float64, 1, tag) },
			"IsendFrom":  func() error { _, err := w.IsendFrom(src, 3, comm.Float64, 1, tag); return err },
			"Sendrecv": func() error {
				_, err := w.Sendrecv(part, comm.Complex64, 1, tag, nil, comm.Byte, 1, tag)
				return err
			},
			"SendBuf": func() error {
				b, err := pool.Alloc(3)
				if err != nil {
					return err
				}
				defer b.Free() //nolint:errcheck // not sent
				return w.SendBuf(b, comm.Int32, 1, tag)
			},
		}
		for name, send := range sends {
			if err := send(); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("%s of 3 bytes as a partial element: %v, want ErrArg", name, err)
			}
		}
		if src.pulls.Load() != 0 {
			return fmt.Errorf("the source was pulled %d times", src.pulls.Load())
		}
		return w.Send(payload(16, 7), comm.Float64, 1, tag+1)
	})
}

// Element sizes are powers of two: whole-element checks rely on it.
func TestTypeSizes(t *testing.T) {
	for typ := comm.Byte; typ.Valid(); typ++ {
		if sz := typ.Size(); sz <= 0 || sz&(sz-1) != 0 {
			t.Errorf("%v is %d bytes wide, not a power of two", typ, sz)
		}
	}
}

// The collectives that take bytes with a type check that every buffer
// holds whole elements: a partial one fails with ErrArg where it is
// passed, and the other ranks fail too or finish, never hang.
func TestCollectivePartialElement(t *testing.T) {
	t.Run("ReduceScatterBlock", func(t *testing.T) {
		errs := make([]error, 2)
		run(t, 2, func(w *comm.Comm) error {
			// 2 blocks of 4 bytes: the send buffer is whole, each block is not.
			errs[w.Rank()] = w.ReduceScatterBlock(payload(8, 1), make([]byte, 4), comm.Float64, affine)
			return nil
		})
		for r, err := range errs {
			if !errors.Is(err, comm.ErrArg) {
				t.Errorf("rank %d: %v, want ErrArg", r, err)
			}
		}
	})
	t.Run("IntercommAlltoall", func(t *testing.T) {
		errs := onIntercomm(t, 4, func(w *comm.Comm, ic *comm.Intercomm, even bool) error {
			k := 8 // bytes a block
			if w.Rank() == 1 {
				k = 3
			}
			return ic.Alltoall(garbage(2*k), garbage(2*k), comm.Float64)
		})
		if !errors.Is(errs[1], comm.ErrArg) {
			t.Errorf("rank 1 (blocks of 3 bytes): %v, want ErrArg", errs[1])
		}
	})
	t.Run("IntercommBcast", func(t *testing.T) {
		errs := onIntercomm(t, 4, func(w *comm.Comm, ic *comm.Intercomm, even bool) error {
			root := 0
			switch {
			case even && ic.Rank() == 0:
				root = comm.Root
			case even:
				root = comm.ProcNull
			}
			return ic.Bcast(garbage(3), comm.Float64, root)
		})
		if !errors.Is(errs[0], comm.ErrArg) {
			t.Errorf("the root: %v, want ErrArg", errs[0])
		}
		for _, r := range []int{1, 3} {
			if errs[r] == nil {
				t.Errorf("receiving rank %d succeeded", r)
			}
		}
	})
}

// onIntercomm runs fn on n ranks joined, even ranks to odd ones, by an
// intercommunicator, and returns each rank's error.
func onIntercomm(t *testing.T, n int, fn func(w *comm.Comm, ic *comm.Intercomm, even bool) error, opts ...mpgo.Option) []error {
	t.Helper()
	errs := make([]error, n)
	run(t, n, func(w *comm.Comm) error {
		_, ic, even, err := halves(w)
		if err != nil {
			return err
		}
		errs[w.Rank()] = fn(w, ic, even)
		return nil
	}, opts...)
	return errs
}
