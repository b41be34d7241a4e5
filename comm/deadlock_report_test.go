package comm_test

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// nextLine returns the file:line of the line after its caller's, as a
// deadlock report names it.
func nextLine() string {
	_, file, n, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d", file[strings.LastIndexByte(file, '/')+1:], n+1)
}

// reportOf returns the deadlock report in err, failing t if there is none.
func reportOf(t *testing.T, err error) (*comm.DeadlockError, string) {
	t.Helper()
	var d *comm.DeadlockError
	if !errors.Is(err, comm.ErrDeadlock) || !errors.As(err, &d) {
		t.Fatalf("Run = %v, want a deadlock report", err)
	}
	return d, d.Error()
}

// rankLine returns the report's line for rank r.
func rankLine(t *testing.T, report string, r int) string {
	t.Helper()
	m := regexp.MustCompile(fmt.Sprintf(`(?m)^  rank %d: .*$`, r)).FindAllString(report, -1)
	if len(m) != 1 {
		t.Fatalf("report has %d lines for rank %d, want 1:\n%s", len(m), r, report)
	}
	return m[0]
}

// wantLine checks that rank r's line of report holds every want.
func wantLine(t *testing.T, report string, r int, want ...string) {
	t.Helper()
	l := rankLine(t, report, r)
	for _, w := range want {
		if !strings.Contains(l, w) {
			t.Errorf("rank %d's line lacks %q: %q\nreport:\n%s", r, w, l, report)
		}
	}
}

// A rank that skips an Allreduce: the report names every rank, the
// collective by its user-level name (not the internal messages it is made
// of), the communicator, and the line of the caller.
func TestDeadlockReportAllreduce(t *testing.T) {
	for _, alg := range []comm.Algorithm{comm.AlgAuto, comm.AlgRecursiveDoubling, comm.AlgSharedMemory} {
		t.Run(alg.String(), func(t *testing.T) {
			var at [4]string // each rank's; one line, taken by each
			var skip string
			err := mpgo.Run(4, func(w *comm.Comm) error {
				if err := w.SetAlgorithm(comm.CollAllreduce, alg); err != nil {
					return err
				}
				if w.Rank() == 3 {
					skip = nextLine()
					_, err := w.Recv(nil, comm.Byte, 0, 7)
					return err
				}
				send, recv := make([]byte, 8), make([]byte, 8)
				at[w.Rank()] = nextLine()
				return w.Allreduce(send, recv, comm.Byte, func(inout, in []byte) {})
			})
			d, report := reportOf(t, err)
			if len(d.Pending) != 4 {
				t.Errorf("report has %d ranks, want 4:\n%s", len(d.Pending), report)
			}
			for r := range 3 {
				wantLine(t, report, r, "Allreduce", "on world", at[r])
				if strings.Contains(rankLine(t, report, r), "tag 10") {
					t.Errorf("rank %d's line shows an internal tag:\n%s", r, report)
				}
			}
			wantLine(t, report, 3, "Recv(src=0, tag=7) on world", skip)
			if !strings.HasPrefix(report, "comm: deadlock") {
				t.Errorf("report does not start with comm: deadlock:\n%s", report)
			}
		})
	}
}

func TestDeadlockReportBarrier(t *testing.T) {
	var at [3]string
	err := mpgo.Run(3, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			at[1] = nextLine()
			_, err := w.Probe(2, 5)
			return err
		}
		at[w.Rank()] = nextLine()
		return w.Barrier()
	})
	_, report := reportOf(t, err)
	wantLine(t, report, 0, "Barrier on world", at[0])
	wantLine(t, report, 2, "Barrier on world", at[2])
	wantLine(t, report, 1, "Probe(src=2, tag=5) on world", at[1])
}

// A rank that returned is marked so, and a receive from it says it.
func TestDeadlockReportFinishedRank(t *testing.T) {
	var at string
	err := mpgo.Run(3, func(w *comm.Comm) error {
		switch w.Rank() {
		case 0:
			return nil
		case 1:
			at = nextLine()
			_, err := w.Recv(nil, comm.Byte, 0, 4)
			return err
		default:
			return w.Ssend(nil, comm.Byte, 1, 6)
		}
	})
	_, report := reportOf(t, err)
	wantLine(t, report, 0, "returned")
	wantLine(t, report, 1, "Recv(src=0, tag=4) on world", "rank 0 has returned", at)
	wantLine(t, report, 2, "Ssend(dst=1, tag=6, 0 bytes) on world")
}

// A named communicator (SetName) is named in the report; ranks sorted.
func TestDeadlockReportCommName(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c, err := w.Dup()
		if err != nil {
			return err
		}
		if err := c.SetName("halo"); err != nil {
			return err
		}
		if c.Name() != "halo" || c.String() != "halo" || w.Name() != "world" {
			return fmt.Errorf("Name() = %q, String() = %q, world's %q", c.Name(), c.String(), w.Name())
		}
		_, err = c.Recv(nil, comm.Byte, 1-c.Rank(), comm.AnyTag)
		return err
	})
	_, report := reportOf(t, err)
	wantLine(t, report, 0, "Recv(src=1, tag=any) on halo")
	wantLine(t, report, 1, "Recv(src=0, tag=any) on halo")
	var nilComm *comm.Comm
	if err := nilComm.SetName("x"); !errors.Is(err, comm.ErrArg) {
		t.Errorf("SetName on nil: %v, want ErrArg", err)
	}
	if strings.Index(report, "rank 0:") > strings.Index(report, "rank 1:") {
		t.Errorf("ranks out of order:\n%s", report)
	}
}

// WaitAny and a typed call on a split communicator.
func TestDeadlockReportWaitAny(t *testing.T) {
	var at [2]string
	err := mpgo.Run(2, func(w *comm.Comm) error {
		r1, _ := w.Irecv(nil, comm.Byte, 1-w.Rank(), 1)
		r2, _ := w.Irecv(nil, comm.Byte, 1-w.Rank(), 2)
		at[w.Rank()] = nextLine()
		_, _, err := comm.WaitAny(r1, r2)
		return err
	})
	_, report := reportOf(t, err)
	wantLine(t, report, 0, "WaitAny of Irecv(src=1, tag=1) on world, Irecv(src=1, tag=2) on world at", at[0])
}

// A rank with a helper goroutine (Comm.Go) blocked in a plain receive
// while its own goroutine blocks too: every goroutine of the rank is
// parked, so the run is a deadlock, and the rank's line names both.
func TestDeadlockReportHelperGoroutine(t *testing.T) {
	var at, helperAt string
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			_, err := w.Recv(nil, comm.Byte, 0, 1)
			return err
		}
		r, err := w.Go(func() error {
			helperAt = nextLine()
			_, err := w.Recv(nil, comm.Byte, 1, 9)
			return err
		})
		if err != nil {
			return err
		}
		at = nextLine()
		_, err = w.Recv(nil, comm.Byte, 1, 8)
		_, gerr := r.Wait()
		return errors.Join(err, gerr)
	})
	_, report := reportOf(t, err)
	wantLine(t, report, 0, "Recv(src=1, tag=8) on world at", at, "Recv(src=1, tag=9) on world at", helperAt)
	wantLine(t, report, 1, "Recv(src=0, tag=1)")
}

// A helper that computes while its rank's own goroutine and every other
// rank are blocked keeps the run alive: its send comes, and no deadlock
// is reported.
func TestHelperComputingIsNoDeadlock(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			_, err := w.Recv(nil, comm.Byte, 0, 1)
			return err
		}
		r, err := w.Go(func() error {
			time.Sleep(50 * time.Millisecond) // many detector periods
			if err := w.Send(nil, comm.Byte, 1, 1); err != nil {
				return err
			}
			return w.Send(nil, comm.Byte, 0, 2)
		})
		if err != nil {
			return err
		}
		if _, err := w.Recv(nil, comm.Byte, 0, 2); err != nil {
			return err
		}
		_, err = r.Wait()
		return err
	})
}
