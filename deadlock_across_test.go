package mpgo_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// runJobs plays procs processes of k ranks over loopback TCP in this
// process, with the deadlock detector across processes, each running fn
// as Join does; it returns each process's error.
func runJobs(t *testing.T, procs, k int, fn func(w *comm.Comm) error) []error {
	t.Helper()
	jobs := jobtest.Join(t, procs, job.Config{RanksPerProcess: k, DetectDeadlock: true}, mpgo.OpenTCP())
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for p, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = mpgo.RunJob(j, fn)
			j.Close()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the job hangs")
	}
	return errs
}

// Deadlocks across processes end with ErrDeadlock in every process, and
// the lowest process has the whole job's report: a line for every rank
// of every process, with its call and file:line.
func TestDeadlockAcrossProcesses(t *testing.T) {
	tests := []struct {
		name string
		fn   func(w *comm.Comm) error
		want []string // by rank
	}{
		{"ring", func(w *comm.Comm) error {
			_, err := w.Recv(nil, comm.Byte, (w.Rank()+1)%w.Size(), 1)
			return err
		}, []string{"Recv(src=1, tag=1)", "Recv(src=2, tag=1)", "Recv(src=3, tag=1)", "Recv(src=0, tag=1)"}},
		{"allreduce", func(w *comm.Comm) error {
			if w.Rank() == 3 {
				_, err := w.Recv(nil, comm.Byte, 0, 7)
				return err
			}
			return w.Allreduce(make([]byte, 8), make([]byte, 8), comm.Byte, func(inout, in []byte) {})
		}, []string{"Allreduce on world", "Allreduce on world", "Allreduce on world", "Recv(src=0, tag=7)"}},
		{"ssend", func(w *comm.Comm) error {
			return w.Ssend(make([]byte, 8), comm.Byte, (w.Rank()+1)%w.Size(), 2)
		}, []string{"Ssend(dst=1, tag=2", "Ssend(dst=2, tag=2", "Ssend(dst=3, tag=2", "Ssend(dst=0, tag=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			errs := runJobs(t, 2, 2, tt.fn)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the deadlock took %v to end", d)
			}
			var d *comm.DeadlockError
			if !errors.As(errs[0], &d) {
				t.Fatalf("process 0: %v, want the job's deadlock report", errs[0])
			}
			if !errors.Is(errs[1], comm.ErrDeadlock) {
				t.Errorf("process 1: %v, want ErrDeadlock", errs[1])
			}
			report := d.Error()
			if len(d.Pending) != 4 {
				t.Errorf("report of %d ranks, want 4:\n%s", len(d.Pending), report)
			}
			for r, w := range tt.want {
				if l := fmt.Sprintf("  rank %d: %s", r, w); !strings.Contains(report, l) {
					t.Errorf("no %q in:\n%s", l, report)
				}
			}
			if strings.Count(report, "deadlock_across_test.go:") != 4 {
				t.Errorf("not every rank's line names its file:line:\n%s", report)
			}
		})
	}
}

// Process 0 returns at once and leaves; the three others then deadlock
// among themselves, never having spoken to it: it told them it left, so
// process 1 coordinates, and its report marks rank 0 returned.
func TestDeadlockAfterCoordinatorLeft(t *testing.T) {
	errs := runJobs(t, 4, 1, func(w *comm.Comm) error {
		me := w.Rank()
		if me == 0 {
			return nil
		}
		next := me%3 + 1                   // 1 → 2 → 3 → 1
		time.Sleep(100 * time.Millisecond) // process 0 is gone by now
		_, err := w.Recv(nil, comm.Byte, next, 1)
		return err
	})
	if errs[0] != nil {
		t.Errorf("process 0: %v", errs[0])
	}
	var d *comm.DeadlockError
	if !errors.As(errs[1], &d) {
		t.Fatalf("process 1: %v, want the job's deadlock report", errs[1])
	}
	report := d.Error()
	for _, want := range []string{"  rank 0: returned", "  rank 1: Recv(src=2, tag=1)", "  rank 2: Recv(src=3, tag=1)", "  rank 3: Recv(src=1, tag=1)"} {
		if !strings.Contains(report, want) {
			t.Errorf("no %q in:\n%s", want, report)
		}
	}
	for p := 2; p < 4; p++ {
		if !errors.Is(errs[p], comm.ErrDeadlock) {
			t.Errorf("process %d: %v, want ErrDeadlock", p, errs[p])
		}
	}
}

// Processes that wait for each other while one computes, or while
// messages are on their way, are not deadlocked: a ring of messages
// passed slowly, and a large message pulled while its sender waits.
func TestNoDeadlockAcrossProcesses(t *testing.T) {
	errs := runJobs(t, 2, 2, func(w *comm.Comm) error {
		me, n := w.Rank(), w.Size()
		buf := make([]byte, 4<<20)
		for range 3 {
			if me == 0 {
				time.Sleep(600 * time.Millisecond) // more than two waves
				if err := w.Send(buf, comm.Byte, 1, 0); err != nil {
					return err
				}
				if _, err := w.Recv(buf, comm.Byte, n-1, 0); err != nil {
					return err
				}
				continue
			}
			if _, err := w.Recv(buf, comm.Byte, me-1, 0); err != nil {
				return err
			}
			if err := w.Send(buf, comm.Byte, (me+1)%n, 0); err != nil {
				return err
			}
		}
		return w.Barrier()
	})
	for p, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v", p, err)
		}
	}
}

// Under mpiexec -n 4: every deadlock of mpcheck's mode deadlock ends
// within 5 s, process 0 printing a line for every rank with its call and
// file:line.
func TestDeadlockUnderMPIExec(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("mpiexec not installed (apt-get install mpich)")
	}
	bin := buildTCPCheck(t)
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"allreduce", []string{"Allreduce on world", "Allreduce on world", "Allreduce on world", "Recv(src=0, tag=7) on world"}},
		{"ring", []string{"Recv(src=1, tag=1)", "Recv(src=2, tag=1)", "Recv(src=3, tag=1)", "Recv(src=0, tag=1)"}},
		{"ssend", []string{"Ssend(dst=1, tag=2", "Ssend(dst=2, tag=2", "Ssend(dst=3, tag=2", "Ssend(dst=0, tag=2"}},
		{"barrier", []string{"Barrier on world", "Probe(src=any, tag=3)", "Barrier on world", "Barrier on world"}},
		// The third start of a persistent Allreduce, replayed (coll_persistent_replay.go), that rank 3 does not make.
		{"persistent", []string{"Wait on world.allreduce_init1, waiting for rank 2", "Wait on world.allreduce_init1, waiting for rank 3",
			"Wait on world.allreduce_init1, waiting for rank 3", "Recv(src=0, tag=8) on world"}},
		{"waitany", []string{"WaitAny of Irecv(src=1, tag=4)", "WaitAny of Irecv(src=2, tag=4)", "WaitAny of Irecv(src=3, tag=4)", "WaitAny of Irecv(src=0, tag=4)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, code := runProgram(t, time.Minute, nil, mpiexec, "-n", "4", bin, "deadlock", "-case", tt.name)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the deadlock took %v to end", d)
			}
			if code == 0 {
				t.Errorf("exit status 0:\n%s", out)
			}
			if !strings.Contains(out, "mpgo: process 0 of 4: comm: deadlock: every live rank is blocked:") {
				t.Errorf("no report from process 0:\n%s", out)
			}
			for r, w := range tt.want {
				l := fmt.Sprintf("\n  rank %d: %s", r, w)
				i := strings.Index(out, l)
				if i < 0 {
					t.Errorf("no %q in:\n%s", l, out)
					continue
				}
				if line, _, _ := strings.Cut(out[i+1:], "\n"); !strings.Contains(line, " at main.go:") {
					t.Errorf("rank %d's line does not name its file:line: %q", r, line)
				}
			}
		})
	}
}
