package tcp_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/pmi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// errDie makes the harness end a rank's process abruptly, as if it died.
var errDie = errors.New("test: this process dies")

// runTCP runs fn on procs processes of k ranks each, every process a
// job.Job of its own joined to the others over loopback TCP, bootstrapped
// through an in-memory key-value space. A process whose rank fails aborts
// its world and closes abruptly (the others see it lost); the others close
// gracefully once their ranks returned, each on its own schedule. It
// returns each rank's error.
func runTCP(t testing.TB, procs, k int, fn func(w *comm.Comm) error) []error {
	return runTCPConfig(t, procs, job.Config{RanksPerProcess: k}, fn)
}

// openTCP is the TCP backend's job.Opener, with eager as its eager limit.
func openTCP(eager int) job.Opener {
	return func(kv device.KV, l device.Layout) (device.Device, error) {
		return tcp.Open(kv, tcp.Config{Layout: l, EagerLimit: eager, Getenv: func(string) string { return "" }})
	}
}

// runTCPConfig is runTCP with every process joining with cfg (its eager
// limit both in process and over TCP).
func runTCPConfig(t testing.TB, procs int, cfg job.Config, fn func(w *comm.Comm) error) []error {
	t.Helper()
	kvs := pmi.NewMemory(procs)
	jobs := make([]*job.Job, procs)
	joinErrs := make([]error, procs)
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs[p], joinErrs[p] = job.Join(kvs[p], cfg, openTCP(cfg.EagerLimit))
		}()
	}
	wg.Wait()
	for p, err := range joinErrs {
		if err != nil {
			for _, j := range jobs {
				if j != nil {
					j.Abort(1, "test")
				}
			}
			t.Fatalf("process %d: %v", p, err)
		}
	}
	return runJobs(t, jobs, fn)
}

// runJobs runs fn on every rank of jobs (each a process of one job, on
// any backend) and closes them; it returns the ranks' errors.
func runJobs(t testing.TB, jobs []*job.Job, fn func(w *comm.Comm) error) []error {
	t.Helper()
	errs := make([]error, jobs[0].World().Size())
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := j.World()
			var ranks sync.WaitGroup
			for _, r := range j.Ranks() {
				ranks.Add(1)
				go func() {
					defer ranks.Done()
					defer w.RankDone(r)
					if err := fn(w.Comm(r)); err != nil {
						errs[r] = err
						w.Abort()
					}
				}()
			}
			ranks.Wait()
			j.Close()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		panic(fmt.Sprintf("runJobs: the job hangs; errors so far: %v", errs))
	}
	return errs
}

// The semantics suite over real TCP: one rank per process, two processes
// of two ranks each (shared memory inside a process, TCP between them),
// and a small eager limit, so that most messages go by rendezvous.
func TestTCPSemantics(t *testing.T) {
	tests := []struct {
		procs int
		cfg   job.Config
	}{
		{4, job.Config{}},
		{2, job.Config{RanksPerProcess: 2}},
		{3, job.Config{EagerLimit: 1024}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dx%d/eager=%d", tt.procs, max(tt.cfg.RanksPerProcess, 1), tt.cfg.EagerLimit), func(t *testing.T) {
			if testing.Short() && tt.procs > 2 {
				t.Skip("short")
			}
			for r, err := range runTCPConfig(t, tt.procs, tt.cfg, devicetest.Semantics) {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// A process that dies mid-run: the others' pending operations involving
// it, and their later ones, fail with ErrPeerLost (and ErrAborted), within
// a bounded time, never a hang.
func TestTCPPeerLost(t *testing.T) {
	start := time.Now()
	errs := runTCP(t, 3, 1, func(w *comm.Comm) error {
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == 1 {
			time.Sleep(50 * time.Millisecond) // the others block first
			return errDie
		}
		_, err := w.Recv(make([]byte, 8), comm.Byte, 1, 0)
		if !errors.Is(err, comm.ErrPeerLost) || !errors.Is(err, comm.ErrAborted) {
			return fmt.Errorf("pending receive from the lost process: %v", err)
		}
		if err := w.Send(make([]byte, 8), comm.Byte, (w.Rank()+2)%3, 0); !errors.Is(err, comm.ErrPeerLost) {
			return fmt.Errorf("later send: %v", err)
		}
		return nil
	})
	if !errors.Is(errs[1], errDie) {
		t.Errorf("rank 1: %v", errs[1])
	}
	for _, r := range []int{0, 2} {
		if errs[r] != nil {
			t.Errorf("rank %d: %v", r, errs[r])
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// A process that finishes early closes gracefully: what it sent is still
// received afterwards, and nobody counts it lost; a receive from it that
// was pending when it left fails with ErrPeerLost instead of hanging.
func TestTCPEarlyFinish(t *testing.T) {
	errs := runTCP(t, 2, 1, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			for i := range 10 {
				if err := w.Send(make([]byte, 1000*i), comm.Byte, 0, i); err != nil {
					return err
				}
			}
			return w.Barrier()
		}
		never, err := w.Irecv(make([]byte, 8), comm.Byte, 1, 99)
		if err != nil {
			return err
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if _, err := never.Wait(); !errors.Is(err, comm.ErrPeerLost) {
			return fmt.Errorf("receive pending when its sender left: %v", err)
		}
		for i := range 10 {
			st, err := w.Recv(make([]byte, 1000*i), comm.Byte, 1, i)
			if err != nil || st.Count != 1000*i {
				return fmt.Errorf("message %d after its sender left: %+v %v", i, st, err)
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
