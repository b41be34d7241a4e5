package comm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

var errBoom = errors.New("boom")

// A rank that returns an error aborts the run: blocked operations on every
// other rank fail with ErrAborted and Run reports the failing rank.
func TestAbortOnError(t *testing.T) {
	got := make(chan error, 8)
	err := mpgo.Run(8, func(w *comm.Comm) error {
		switch w.Rank() {
		case 3:
			time.Sleep(10 * time.Millisecond)
			return errBoom
		case 4: // blocked in a rendezvous send
			err := w.Send(make([]byte, 1<<20), comm.Byte, 5, 9)
			got <- err
			return err
		case 5: // blocked in a probe
			_, err := w.Probe(3, 1)
			got <- err
			return err
		default: // blocked in receives
			_, err := w.Recv(make([]byte, 8), comm.Byte, comm.AnySource, 0)
			got <- err
			return err
		}
	})
	var re *mpgo.RankError
	if !errors.As(err, &re) || re.Rank != 3 || !errors.Is(err, errBoom) || !errors.Is(err, mpgo.ErrRankFailed) {
		t.Fatalf("Run = %v", err)
	}
	if !strings.Contains(err.Error(), "rank 3") {
		t.Errorf("error does not name the rank: %v", err)
	}
	allAborted(t, got, "blocked operation")
}

func TestAbortOnPanic(t *testing.T) {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		if w.Rank() == 2 {
			panic("kaput")
		}
		_, err := w.Recv(nil, comm.Byte, comm.AnySource, comm.AnyTag)
		return err
	})
	var re *mpgo.RankError
	if !errors.As(err, &re) || re.Rank != 2 || re.Panic != "kaput" || len(re.Stack) == 0 {
		t.Fatalf("Run = %v", err)
	}
	if !strings.Contains(err.Error(), "kaput") || !strings.Contains(err.Error(), "failure_test.go") {
		t.Errorf("panic report lacks value or stack: %v", err)
	}
}

func TestDeadlockReport(t *testing.T) {
	err := mpgo.Run(3, func(w *comm.Comm) error {
		switch w.Rank() {
		case 0:
			_, err := w.Recv(make([]byte, 8), comm.Byte, 1, 5)
			return err
		case 1:
			return w.Ssend(make([]byte, 8), comm.Byte, 2, 6)
		default:
			_, err := w.Probe(comm.AnySource, 7)
			return err
		}
	})
	if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("Run = %v, want ErrDeadlock", err)
	}
	var d *comm.DeadlockError
	if !errors.As(err, &d) || len(d.Pending) != 3 {
		t.Fatalf("Run = %v, want a report of 3 operations", err)
	}
	for _, want := range []string{
		"rank 0: Recv(src=1, tag=5) on world at failure_test.go:",
		"rank 1: Ssend(dst=2, tag=6, 8 bytes) on world at failure_test.go:",
		"rank 2: Probe(src=any, tag=7) on world at failure_test.go:",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("report lacks %q:\n%v", want, err)
		}
	}
}

// A rank that returned leaves its peers waiting forever: that is a deadlock
// too, reported as soon as the others are all blocked.
func TestDeadlockAfterRankReturns(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return nil
		}
		_, err := w.Recv(nil, comm.Byte, 0, 0)
		return err
	})
	if !errors.Is(err, comm.ErrDeadlock) || !strings.Contains(err.Error(), "rank 1: Recv(src=0, tag=0) on world") {
		t.Fatalf("Run = %v", err)
	}
}

// A deadlock in a WaitAny and a self-send that can never complete.
func TestDeadlockWaitAny(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return w.Send(make([]byte, 1<<20), comm.Byte, 0, 1) // rendezvous to self, no receive
		}
		r1, _ := w.Irecv(nil, comm.Byte, 0, 1)
		r2, _ := w.Irecv(nil, comm.Byte, 0, 2)
		_, _, err := comm.WaitAny(r1, r2)
		return err
	})
	if !errors.Is(err, comm.ErrDeadlock) {
		t.Fatalf("Run = %v", err)
	}
}

func TestContextCancelAborts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	err := mpgo.Run(4, func(w *comm.Comm) error {
		for {
			// A busy rank that never blocks must notice as well.
			if err := w.Send(nil, comm.Byte, w.Rank(), 0); err != nil {
				return err
			}
			if _, err := w.Recv(nil, comm.Byte, w.Rank(), 0); err != nil {
				return err
			}
		}
	}, mpgo.WithContext(ctx))
	if !errors.Is(err, comm.ErrAborted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
}

func TestBadInput(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		buf := make([]byte, 8)
		cases := []struct {
			name string
			err  error
			want error
		}{
			{"send to -1", w.Send(buf, comm.Byte, -1, 0), comm.ErrRank},
			{"send to AnySource", w.Send(buf, comm.Byte, comm.AnySource, 0), comm.ErrRank},
			{"send to size", w.Send(buf, comm.Byte, 2, 0), comm.ErrRank},
			{"send tag -2", w.Send(buf, comm.Byte, 0, -2), comm.ErrTag},
			{"send AnyTag", w.Send(buf, comm.Byte, 0, comm.AnyTag), comm.ErrTag},
			{"ssend to 5", w.Ssend(buf, comm.Byte, 5, 0), comm.ErrRank},
			{"send bad type", w.Send(buf, comm.Type(200), 0, 0), comm.ErrArg},
			{"recv from 2", second(w.Recv(buf, comm.Byte, 2, 0)), comm.ErrRank},
			{"recv from -5", second(w.Recv(buf, comm.Byte, -5, 0)), comm.ErrRank},
			{"recv tag -3", second(w.Recv(buf, comm.Byte, 0, -3)), comm.ErrTag},
			{"irecv tag -3", second(w.Irecv(buf, comm.Byte, 0, -3)), comm.ErrTag},
			{"isend to 9", second(w.Isend(buf, comm.Byte, 9, 0)), comm.ErrRank},
			{"probe from 3", second(w.Probe(3, 0)), comm.ErrRank},
			{"iprobe tag -9", third(w.Iprobe(0, -9)), comm.ErrTag},
			{"RecvValue nil", second(w.RecvValue(nil, 0, 0)), comm.ErrArg},
			{"RecvValue non-pointer", second(w.RecvValue(3, 0, 0)), comm.ErrArg},
			{"RecvValue nil pointer", second(w.RecvValue((*int)(nil), 0, 0)), comm.ErrArg},
			{"SendValue nil", w.SendValue(nil, 0, 0), comm.ErrArg},
			{"split color -7", second(w.Split(-7, 0)), comm.ErrArg},
		}
		for _, c := range cases {
			if !errors.Is(c.err, c.want) {
				return fmt.Errorf("%s: got %v, want %v", c.name, c.err, c.want)
			}
		}
		var nilReq *comm.Request
		if _, err := nilReq.Wait(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("nil request Wait: %v", err)
		}
		// Nothing above disturbed the real traffic.
		if w.Rank() == 0 {
			return w.Send(payload(8, 77), comm.Byte, 1, 0)
		}
		if _, err := w.Recv(buf, comm.Byte, 0, 0); err != nil || val(buf) != 77 {
			return fmt.Errorf("after bad calls: %v %d", err, val(buf))
		}
		return nil
	})
}

func second[A any](_ A, err error) error        { return err }
func third[A, B any](_ A, _ B, err error) error { return err }

func TestClosedAfterRun(t *testing.T) {
	var kept *comm.Comm
	var req *comm.Request
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			kept = w
			var err error
			req, err = w.Irecv(make([]byte, 8), comm.Byte, 1, 99) // never matched
			return err
		}
		return nil
	}, noDetector())
	if err := kept.Send(nil, comm.Byte, 1, 0); !errors.Is(err, comm.ErrClosed) {
		t.Errorf("Send after Run: %v", err)
	}
	if _, err := kept.Recv(nil, comm.Byte, 1, 0); !errors.Is(err, comm.ErrClosed) {
		t.Errorf("Recv after Run: %v", err)
	}
	if err := kept.Barrier(); !errors.Is(err, comm.ErrClosed) {
		t.Errorf("Barrier after Run: %v", err)
	}
	if _, err := req.Wait(); !errors.Is(err, comm.ErrAborted) {
		t.Errorf("pending receive after Run: %v", err)
	}
}

func TestRunBadArguments(t *testing.T) {
	if err := mpgo.Run(0, func(*comm.Comm) error { return nil }); !errors.Is(err, comm.ErrArg) {
		t.Errorf("Run(0): %v", err)
	}
	if err := mpgo.Run(2, nil); !errors.Is(err, comm.ErrArg) {
		t.Errorf("Run(nil fn): %v", err)
	}
	if err := mpgo.Run(2, func(*comm.Comm) error { return nil }, mpgo.WithEagerLimit(-1)); !errors.Is(err, comm.ErrArg) {
		t.Errorf("WithEagerLimit(-1): %v", err)
	}
}

// Two runs at once are independent worlds.
func TestConcurrentRuns(t *testing.T) {
	errs := make(chan error, 2)
	for k := 0; k < 2; k++ {
		go func() {
			errs <- mpgo.Run(4, func(w *comm.Comm) error {
				for i := 0; i < 200; i++ {
					if err := w.Barrier(); err != nil {
						return err
					}
				}
				return nil
			})
		}()
	}
	for k := 0; k < 2; k++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
