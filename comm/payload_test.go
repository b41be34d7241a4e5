package comm_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// testSource produces data; it counts its pulls.
type testSource struct {
	data  []byte
	pulls atomic.Int32 // Pull calls, drops (dst nil) included
	drops atomic.Int32 // Pull(nil) calls
	err   error        // returned by Pull
}

func (s *testSource) Pull(dst []byte) error {
	s.pulls.Add(1)
	if dst == nil {
		s.drops.Add(1)
		return nil
	}
	if len(dst) != len(s.data) {
		return fmt.Errorf("testSource: pulled into %d bytes, have %d", len(dst), len(s.data))
	}
	if s.err != nil {
		return s.err
	}
	copy(dst, s.data)
	return nil
}

// testSink stores into buf. With direct set it reads a *testSource it is
// handed by its own means (as package typed's fused layout walk does).
type testSink struct {
	buf    []byte
	direct bool
	takes  atomic.Int32
	n      int
	how    string // "data", "pull" or "direct": how the last Take got its payload
}

func (k *testSink) Cap() int { return len(k.buf) }

func (k *testSink) Take(data []byte, from comm.Remote, n int) error {
	k.takes.Add(1)
	k.n = n
	if from == nil {
		k.how = "data"
		copy(k.buf, data[:n])
		return nil
	}
	if s, ok := from.(*testSource); ok && k.direct {
		k.how = "direct"
		copy(k.buf, s.data)
		return nil
	}
	k.how = "pull"
	return from.Pull(k.buf[:n])
}

// sendFromSizes are a message below the eager limit and one above.
var sendFromSizes = []int{64, 1 << 20}

// receiver starts a receive of a message of size bytes of float64 from
// rank 0 with tag; wait finishes it and returns the payload, the status
// (Count in elements) and, for a sink, how it took the payload.
type receiver struct {
	name  string
	plain bool // the sender uses a plain Send, not SendFrom
	start func(w *comm.Comm, size, tag int) (wait func() (got []byte, st comm.Status, how string, err error), err error)
}

func sinkReceiver(name string, direct, plain bool) receiver {
	return receiver{name: name, plain: plain, start: func(w *comm.Comm, size, tag int) (func() ([]byte, comm.Status, string, error), error) {
		k := &testSink{buf: make([]byte, size+8), direct: direct}
		r, err := w.IrecvInto(k, comm.Float64, 0, tag)
		return func() ([]byte, comm.Status, string, error) {
			st, err := r.Wait()
			if err == nil && k.takes.Load() != 1 {
				err = fmt.Errorf("sink took the payload %d times", k.takes.Load())
			}
			return k.buf[:k.n], st, k.how, err
		}, err
	}}
}

var receivers = []receiver{
	sinkReceiver("IrecvInto direct", true, false),
	sinkReceiver("IrecvInto pull", false, false),
	sinkReceiver("IrecvInto of Send", true, true),
	{name: "Irecv", start: func(w *comm.Comm, size, tag int) (func() ([]byte, comm.Status, string, error), error) {
		got := make([]byte, size+16)
		r, err := w.Irecv(got, comm.Float64, 0, tag)
		return func() ([]byte, comm.Status, string, error) {
			st, err := r.Wait()
			return got[:st.Count*8], st, "", err
		}, err
	}},
	{name: "RecvOwned", start: func(w *comm.Comm, size, tag int) (func() ([]byte, comm.Status, string, error), error) {
		return func() ([]byte, comm.Status, string, error) {
			got, st, err := w.RecvOwned(comm.Float64, 0, tag)
			return got, st, "", err
		}, nil
	}},
	{name: "RecvBuf", start: func(w *comm.Comm, size, tag int) (func() ([]byte, comm.Status, string, error), error) {
		return func() ([]byte, comm.Status, string, error) {
			b, st, err := w.RecvBuf(comm.Float64, 0, tag)
			if err != nil {
				return nil, st, "", err
			}
			got, _ := b.Bytes()
			got = bytes.Clone(got)
			return got, st, "", b.Free()
		}, nil
	}},
	{name: "Recv as bytes", start: func(w *comm.Comm, size, tag int) (func() ([]byte, comm.Status, string, error), error) {
		return func() ([]byte, comm.Status, string, error) {
			got := make([]byte, size)
			st, err := w.Recv(got, comm.Byte, 0, tag)
			st.Count /= 8
			return got, st, "", err
		}, nil
	}},
}

// wantHow is how a sink takes a payload: a SendFrom is read directly by a
// sink that knows its Source (or pulled by one that does not), unless it
// was short and sent before the receive was posted: then it was pulled
// into an eager copy. A plain send is bytes at hand.
func wantHow(rc receiver, eager, recvFirst bool) string {
	switch {
	case !strings.HasPrefix(rc.name, "IrecvInto"):
		return ""
	case rc.plain || eager && !recvFirst:
		return "data"
	case strings.HasSuffix(rc.name, "direct"):
		return "direct"
	}
	return "pull"
}

// A SendFrom is received by every kind of receive, and a RecvInto receives
// a plain send; a RecvInto of a SendFrom in the same process is handed the
// Source itself. Receiver first (posted before the send starts) and sender
// first (sent, or queued by rendezvous, before the receive starts).
func TestSendFromRecvInto(t *testing.T) {
	for _, size := range sendFromSizes {
		for _, recvFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/recvFirst=%v", size, recvFirst), func(t *testing.T) {
				sendFromRecvInto(t, size, recvFirst)
			})
		}
	}
}

func sendFromRecvInto(t *testing.T, size int, recvFirst bool) {
	data := payload(size, 7)
	eager := size < comm.DefaultEagerLimit
	run(t, 2, func(w *comm.Comm) error {
		for tag, rc := range receivers {
			if w.Rank() == 0 {
				s := &testSource{data: data}
				var r *comm.Request
				var err error
				if recvFirst {
					err = w.Barrier()
				}
				if err == nil {
					if rc.plain {
						r, err = w.Isend(data, comm.Float64, 1, tag)
					} else {
						r, err = w.IsendFrom(s, size, comm.Float64, 1, tag)
					}
				}
				if err == nil && !recvFirst {
					err = w.Barrier()
				}
				if err == nil {
					_, err = r.Wait()
				}
				if err == nil && !rc.plain && s.pulls.Load() > 1 {
					err = fmt.Errorf("source pulled %d times", s.pulls.Load())
				}
				if err != nil {
					return fmt.Errorf("%s: send: %w", rc.name, err)
				}
				continue
			}
			var wait func() ([]byte, comm.Status, string, error)
			var err error
			if recvFirst {
				if wait, err = rc.start(w, size, tag); err == nil {
					err = w.Barrier()
				}
			} else if err = w.Barrier(); err == nil {
				wait, err = rc.start(w, size, tag)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", rc.name, err)
			}
			got, st, how, err := wait()
			if err != nil || st.Count != size/8 || st.Tag != tag || st.Source != 0 || !bytes.Equal(got, data) {
				return fmt.Errorf("%s: status %+v, err %v, payload equal %v", rc.name, st, err, bytes.Equal(got, data))
			}
			if want := wantHow(rc, eager, recvFirst); how != want {
				return fmt.Errorf("%s: sink took the payload as %q, want %q", rc.name, how, want)
			}
		}
		return nil
	})
}

// Like a plain send of its length, a SendFrom below the eager limit
// completes at once, its Source pulled into an eager copy; at or above it,
// it waits for the receive, which reads the Source.
func TestSendFromProtocol(t *testing.T) {
	for _, size := range sendFromSizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			eager := size < comm.DefaultEagerLimit
			posted := make(chan struct{})
			run(t, 2, func(w *comm.Comm) error {
				if w.Rank() == 1 {
					<-posted
					k := &testSink{buf: make([]byte, size), direct: true}
					_, err := w.RecvInto(k, comm.Float64, 0, 0)
					return err
				}
				var once sync.Once
				release := func() { once.Do(func() { close(posted) }) }
				defer release() // rank 1 must not wait for a rank 0 that failed
				s := &testSource{data: payload(size, 1)}
				r, err := w.IsendFrom(s, size, comm.Float64, 1, 0)
				if err != nil {
					return err
				}
				time.Sleep(20 * time.Millisecond)
				_, done, err := r.Test()
				switch {
				case err != nil:
					return err
				case eager && (!done || s.pulls.Load() != 1):
					return fmt.Errorf("eager SendFrom: done %v after %d pulls, want done after 1", done, s.pulls.Load())
				case !eager && (done || s.pulls.Load() != 0):
					return fmt.Errorf("rendezvous SendFrom: done %v after %d pulls before the receive", done, s.pulls.Load())
				}
				release()
				_, err = r.Wait()
				return err
			}, noDetector())
		})
	}
}

// MPI 3.1 §3.2.4: a message longer than the receive fails it with
// ErrTruncate, and one of another type with ErrType; either way it is
// consumed (the sender completes without error) and the next message is
// received. The sink is never called; the Source is dropped, not read.
func TestSendFromTruncateAndType(t *testing.T) {
	for _, size := range sendFromSizes {
		for _, recvFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/recvFirst=%v", size, recvFirst), func(t *testing.T) {
				data := payload(size, 3)
				run(t, 2, func(w *comm.Comm) error {
					type try struct {
						typ  comm.Type
						cap  int
						want error
					}
					tries := []try{
						{comm.Float64, size - 8, comm.ErrTruncate},
						{comm.Int64, size, comm.ErrType},
						{comm.Float64, size, nil},
					}
					for tag, tr := range tries {
						if w.Rank() == 0 {
							s := &testSource{data: data}
							err := w.Barrier()
							if err == nil {
								err = w.SendFrom(s, size, comm.Float64, 1, tag)
							}
							if err != nil {
								return fmt.Errorf("send %d: %w", tag, err)
							}
							if tr.want != nil && s.pulls.Load() != s.drops.Load() && size >= comm.DefaultEagerLimit {
								return fmt.Errorf("send %d: the failed receive read the source", tag)
							}
							continue
						}
						k := &testSink{buf: make([]byte, tr.cap), direct: true}
						var r *comm.Request
						err := w.Barrier()
						if err == nil && recvFirst {
							r, err = w.IrecvInto(k, tr.typ, 0, tag)
						}
						if err != nil {
							return err
						}
						var st comm.Status
						if recvFirst {
							st, err = r.Wait()
						} else {
							time.Sleep(time.Millisecond)
							st, err = w.RecvInto(k, tr.typ, 0, tag)
						}
						if tr.want == nil {
							if err != nil || !bytes.Equal(k.buf, data) || st.Count != size/8 {
								return fmt.Errorf("receive %d: %+v %v", tag, st, err)
							}
							continue
						}
						if !errors.Is(err, tr.want) || k.takes.Load() != 0 {
							return fmt.Errorf("receive %d: %v after %d takes, want %v and none", tag, err, k.takes.Load(), tr.want)
						}
					}
					return nil
				})
			})
		}
	}
}

// A Source that fails fails the receive that reads it (rendezvous) or the
// send that copies it eagerly.
func TestSendFromPullError(t *testing.T) {
	errPull := errors.New("pull failed")
	for _, size := range sendFromSizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			eager := size < comm.DefaultEagerLimit
			run(t, 2, func(w *comm.Comm) error {
				if w.Rank() == 0 {
					err := w.SendFrom(&testSource{data: payload(size, 1), err: errPull}, size, comm.Byte, 1, 0)
					if eager != errors.Is(err, errPull) {
						return fmt.Errorf("send: %v", err)
					}
					if err := w.Barrier(); err != nil {
						return err
					}
					return w.Send([]byte{1}, comm.Byte, 1, 1)
				}
				if !eager {
					k := &testSink{buf: make([]byte, size)}
					if _, err := w.RecvInto(k, comm.Byte, 0, 0); !errors.Is(err, errPull) {
						return fmt.Errorf("receive: %v, want the source's error", err)
					}
				}
				if err := w.Barrier(); err != nil {
					return err
				}
				// Nothing but the next message is there.
				st, err := w.Recv(make([]byte, 1), comm.Byte, 0, comm.AnyTag)
				if err != nil || st.Tag != 1 {
					return fmt.Errorf("next receive: %+v %v", st, err)
				}
				return nil
			})
		})
	}
}

// A cancelled IrecvInto never calls its sink, and the message it did not
// take goes to the next receive.
func TestRecvIntoCancel(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if err := w.Barrier(); err != nil {
				return err
			}
			return w.SendFrom(&testSource{data: payload(8, 5)}, 8, comm.Byte, 1, 0)
		}
		k := &testSink{buf: make([]byte, 8)}
		r, err := w.IrecvInto(k, comm.Byte, 0, 0)
		if err != nil {
			return err
		}
		if err := r.Cancel(); err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, comm.ErrCanceled) || k.takes.Load() != 0 {
			return fmt.Errorf("Wait after Cancel: %v, %d takes", err, k.takes.Load())
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		got := make([]byte, 8)
		if _, err := w.Recv(got, comm.Byte, 0, 0); err != nil || val(got) != 5 {
			return fmt.Errorf("next receive: %v %d", err, val(got))
		}
		return nil
	})
}

// Bad arguments fail with ErrArg, and ProcNull completes at once.
func TestSendFromArgs(t *testing.T) {
	run(t, 1, func(w *comm.Comm) error {
		s := &testSource{data: payload(8, 1)}
		if err := w.SendFrom(nil, 8, comm.Byte, 0, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("nil source: %v", err)
		}
		if err := w.SendFrom(s, -1, comm.Byte, 0, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("negative length: %v", err)
		}
		if _, err := w.IsendFrom(s, 8, comm.Byte, 3, 0); !errors.Is(err, comm.ErrRank) {
			return fmt.Errorf("bad rank: %v", err)
		}
		if err := w.SendFrom(s, 8, comm.Byte, 0, -2); !errors.Is(err, comm.ErrTag) {
			return fmt.Errorf("bad tag: %v", err)
		}
		if _, err := w.RecvInto(nil, comm.Byte, 0, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("nil sink: %v", err)
		}
		if err := w.SendFrom(s, 8, comm.Byte, comm.ProcNull, 0); err != nil {
			return err
		}
		k := &testSink{}
		if st, err := w.RecvInto(k, comm.Byte, comm.ProcNull, 0); err != nil || st.Source != comm.ProcNull || k.takes.Load() != 0 {
			return fmt.Errorf("ProcNull: %+v %v", st, err)
		}
		if s.pulls.Load() != 0 {
			return fmt.Errorf("source pulled %d times", s.pulls.Load())
		}
		return nil
	})
}

// A rank blocked in a rendezvous SendFrom or a RecvInto fails with
// ErrAborted when another rank fails.
func TestSendFromAbort(t *testing.T) {
	got := make(chan error, 2)
	err := mpgo.Run(3, func(w *comm.Comm) error {
		var err error
		switch w.Rank() {
		case 0:
			time.Sleep(10 * time.Millisecond)
			return errBoom
		case 1:
			err = w.SendFrom(&testSource{data: payload(1<<20, 1)}, 1<<20, comm.Byte, 2, 9)
		case 2:
			_, err = w.RecvInto(&testSink{buf: make([]byte, 8)}, comm.Byte, 0, 0)
		}
		got <- err
		return err
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Run = %v", err)
	}
	allAborted(t, got, "blocked operation")
}

// A SendFrom that no receive will match, and a RecvInto no send will, are
// a deadlock, reported like any other.
func TestSendFromDeadlock(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return w.SendFrom(&testSource{data: payload(1<<20, 1)}, 1<<20, comm.Byte, 1, 6)
		}
		_, err := w.RecvInto(&testSink{buf: make([]byte, 8)}, comm.Byte, 0, 5)
		return err
	})
	if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("Run = %v, want ErrDeadlock", err)
	}
	for _, want := range []string{
		"rank 0: SendFrom(dst=1, tag=6, 1048576 bytes) on world",
		"rank 1: RecvInto(src=0, tag=5) on world",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("report lacks %q:\n%v", want, err)
		}
	}
}

// Between processes the Source is pulled into bytes that travel, and a
// Sink is fed what arrives (eager or pulled by rendezvous), or fails with
// ErrTruncate when it is too short.
func TestSendFromAcrossProcesses(t *testing.T) {
	for _, size := range sendFromSizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := payload(size, 9)
			errs := runProcs(t, 2, 1, func(w *comm.Comm) error {
				if w.Rank() == 0 {
					if err := w.SendFrom(&testSource{data: data}, size, comm.Float64, 1, 0); err != nil {
						return err
					}
					if err := w.Send(data, comm.Float64, 1, 1); err != nil {
						return err
					}
					return w.SendFrom(&testSource{data: data}, size, comm.Float64, 1, 2)
				}
				for tag := range 2 {
					k := &testSink{buf: make([]byte, size), direct: true}
					st, err := w.RecvInto(k, comm.Float64, 0, tag)
					if err != nil || st.Count != size/8 || !bytes.Equal(k.buf, data) || k.how == "direct" {
						return fmt.Errorf("tag %d: %+v %v, taken as %q", tag, st, err, k.how)
					}
				}
				short := &testSink{buf: make([]byte, 8)}
				if _, err := w.RecvInto(short, comm.Float64, 0, 2); !errors.Is(err, comm.ErrTruncate) || short.takes.Load() != 0 {
					return fmt.Errorf("short sink: %v after %d takes, want ErrTruncate", err, short.takes.Load())
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// RecvIntoInit receives one message through its Sink each start, from
// this process (the Source handed over when the receive is first) and
// from another; a start can be cancelled and the request started again;
// a nil Sink fails with ErrArg.
func TestRecvIntoInit(t *testing.T) {
	const n = 5
	body := func(w *comm.Comm) error {
		if w.Rank() == 1 {
			for i := range n {
				if err := w.SendFrom(&testSource{data: payload(8, uint64(i))}, 8, comm.Byte, 0, 3); err != nil {
					return err
				}
			}
			return w.Barrier()
		}
		if _, err := w.RecvIntoInit(nil, comm.Byte, 1, 3); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("RecvIntoInit(nil): %v", err)
		}
		k := &testSink{buf: make([]byte, 8), direct: true}
		r, err := w.RecvIntoInit(k, comm.Byte, comm.AnySource, 3)
		if err != nil {
			return err
		}
		for i := range n {
			if err := r.Start(); err != nil {
				return err
			}
			if st, err := r.Wait(); err != nil || st.Source != 1 || val(k.buf) != uint64(i) {
				return fmt.Errorf("start %d: %v, %+v, got %d", i, err, st, val(k.buf))
			}
		}
		if err := r.Start(); err != nil {
			return err
		}
		if err := r.Cancel(); err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, comm.ErrCanceled) {
			return fmt.Errorf("Wait after Cancel: %v", err)
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		return r.Free()
	}
	run(t, 2, body)
	for r, err := range runProcs(t, 2, 1, body) {
		if err != nil {
			t.Errorf("across processes, rank %d: %v", r, err)
		}
	}
}

// SendFromInit sends its Source's payload as it is at each start, to a
// receive in this process (handed over when the receive comes first) and
// in another; a nil Source fails with ErrArg.
func TestSendFromInit(t *testing.T) {
	const n = 5
	body := func(w *comm.Comm) error {
		if w.Rank() == 1 {
			if _, err := w.SendFromInit(nil, 8, comm.Byte, 0, 3); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("SendFromInit(nil): %v", err)
			}
			src := &testSource{data: payload(8, 0)}
			r, err := w.SendFromInit(src, 8, comm.Byte, 0, 3)
			if err != nil {
				return err
			}
			for i := range n {
				src.data = payload(8, uint64(i))
				if err := r.Start(); err != nil {
					return err
				}
				if _, err := r.Wait(); err != nil {
					return err
				}
			}
			return r.Free()
		}
		for i := range n {
			got := make([]byte, 8)
			k := &testSink{buf: got, direct: i%2 == 0}
			if _, err := w.RecvInto(k, comm.Byte, 1, 3); err != nil || val(got) != uint64(i) {
				return fmt.Errorf("receive %d: %v, got %d", i, err, val(got))
			}
		}
		return nil
	}
	run(t, 2, body)
	for r, err := range runProcs(t, 2, 1, body) {
		if err != nil {
			t.Errorf("across processes, rank %d: %v", r, err)
		}
	}
}
