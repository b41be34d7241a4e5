package am_test

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/am"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/internal/job/jobtest"
	"github.com/mpgo/mpgo/typed"
)

// The benchmarks measure as GASNet's testam does — the round trip of an
// empty request and its reply, and the rate of one-way messages — each in
// the same run as the baseline it is judged against: a plain Send/Recv
// ping-pong (osu_latency's, a raw Go channel's) and osu_bw's window of 64
// Isends of 8 bytes against pre-posted receives. Compare ratios from one
// run (benchstat), not absolute figures.

// BenchmarkRoundTrip: ns/op is one round trip on 2 goroutine ranks.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("chan", func(b *testing.B) {
		ping, pong := make(chan struct{}), make(chan struct{})
		go func() {
			for range ping {
				pong <- struct{}{}
			}
		}()
		for b.Loop() {
			ping <- struct{}{}
			<-pong
		}
		close(ping)
	})
	b.Run("sendrecv", func(b *testing.B) {
		benchRun(b, func(w *comm.Comm) error { return sendRecv(b, w, b.N) })
	})
	b.Run("call", func(b *testing.B) {
		benchRun(b, func(w *comm.Comm) error { return withBenchAM(w, func(a *benchAM) error { return a.calls(b, w, b.N) }) })
	})
}

// BenchmarkMessageRate: ns/op is one 8-byte message from rank 0 to rank 1
// (goroutine ranks), the msgs/s metric its rate: osu_bw's windows of 64
// Isends, each acknowledged by 4 bytes, beside windows of 64 Posts, each
// acknowledged by an empty Call (which returns once they have run: the
// sender's requests start in order, one at a time).
func BenchmarkMessageRate(b *testing.B) {
	b.Run("isend", func(b *testing.B) {
		benchRun(b, func(w *comm.Comm) error { return isendWindows(b, w, b.N) })
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("post", func(b *testing.B) {
		benchRun(b, func(w *comm.Comm) error { return withBenchAM(w, func(a *benchAM) error { return a.posts(b, w, b.N) }) })
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}

// BenchmarkPaired measures each pair of figures the targets compare in
// one job of 2 goroutine ranks, alternating blocks of 1000 of each, so
// that a load on the machine weighs on both alike: the round trips of a
// ping-pong and of a Call (call/sendrecv), and the time per message of
// osu_bw's windows of 64 Isends of 8 bytes and of windows of 64 Posts of
// 8 bytes, each closed by an empty Call as osu_bw's ack (isend/post, the
// rate ratio). ns/op is one block of each.
func BenchmarkPaired(b *testing.B) {
	const block = 1000
	var t [4]time.Duration // sendrecv, call, isend, post
	benchRun(b, func(w *comm.Comm) error {
		return withBenchAM(w, func(a *benchAM) error {
			var clocks [4]clock
			measures := [4]func(n int) error{
				func(n int) error { return sendRecv(&clocks[0], w, n) },
				func(n int) error { return a.calls(&clocks[1], w, n) },
				func(n int) error { return isendWindows(&clocks[2], w, n) },
				func(n int) error { return a.posts(&clocks[3], w, n) },
			}
			if w.Rank() == 0 {
				b.ResetTimer()
			}
			for range b.N {
				for i, m := range measures {
					if err := m(block); err != nil {
						return err
					}
					t[i] += clocks[i].total
				}
			}
			return nil
		})
	})
	n := float64(b.N * block)
	b.ReportMetric(float64(t[0].Nanoseconds())/n, "sendrecv-ns")
	b.ReportMetric(float64(t[1].Nanoseconds())/n, "call-ns")
	b.ReportMetric(float64(t[1])/float64(t[0]), "call/sendrecv")
	b.ReportMetric(float64(t[2].Nanoseconds())/n, "isend-ns/msg")
	b.ReportMetric(float64(t[3].Nanoseconds())/n, "post-ns/msg")
	b.ReportMetric(float64(t[2])/float64(t[3]), "post/isend-rate")
}

// BenchmarkRoundTripTCP: the round trip of BenchmarkRoundTrip between two
// processes (this test binary, started twice) over TCP on the loopback
// interface. ns/op is the Call's round trip; sendrecv-ns the ping-pong's
// measured in the same processes just before, and ratio the first over
// the second.
func BenchmarkRoundTripTCP(b *testing.B) {
	call, sr, err := tcpRoundTrips(max(b.N, 100))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(call.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(sr.Nanoseconds()), "sendrecv-ns")
	b.ReportMetric(float64(call)/float64(sr), "ratio")
}

// benchRun runs fn on 2 goroutine ranks.
func benchRun(b *testing.B, fn func(w *comm.Comm) error) {
	if err := mpgo.Run(2, fn); err != nil {
		b.Fatal(err)
	}
}

// timer is what a measurement on rank 0 starts and stops: b's timer, or
// a clock of its own (in a process of BenchmarkRoundTripTCP's job).
type timer interface {
	ResetTimer()
	StopTimer()
}

// sendRecv times n ping-pongs of 0 bytes between ranks 0 and 1.
func sendRecv(t timer, w *comm.Comm, n int) error {
	c := typed.Of[byte](w)
	peer := 1 - w.Rank()
	round := func() error {
		if w.Rank() == 0 {
			if err := c.Send(nil, peer, 1); err != nil {
				return err
			}
			_, err := c.Recv(nil, peer, 1)
			return err
		}
		if _, err := c.Recv(nil, peer, 1); err != nil {
			return err
		}
		return c.Send(nil, peer, 1)
	}
	return timed(t, w, n, round)
}

// benchAM is an endpoint with the benchmarks' handlers: empty (an empty
// request and response) and add (a sum of 8-byte requests).
type benchAM struct {
	ep    *am.Endpoint
	empty *am.Handler[struct{}, struct{}]
	add   *am.Handler[uint64, struct{}]
	sum   uint64 // add's, on its rank
}

// withBenchAM runs fn with a benchAM on w, and closes it.
func withBenchAM(w *comm.Comm, fn func(a *benchAM) error) error {
	ep, err := am.New(w)
	if err != nil {
		return err
	}
	a := &benchAM{ep: ep}
	if a.empty, err = am.Register(ep, "empty", func(int, struct{}) (struct{}, error) { return struct{}{}, nil }); err != nil {
		return err
	}
	a.add, err = am.Register(ep, "add", func(_ int, x uint64) (struct{}, error) {
		a.sum += x
		return struct{}{}, nil
	})
	if err != nil {
		return err
	}
	if err := fn(a); err != nil {
		return err
	}
	return ep.Close()
}

// calls times n Calls of an empty request from rank 0 to rank 1.
func (a *benchAM) calls(t timer, w *comm.Comm, n int) error {
	return timed(t, w, n, func() error {
		if w.Rank() != 0 {
			return nil
		}
		_, err := a.empty.Call(1, struct{}{}).Wait()
		return err
	})
}

// posts times n Posts of 8 bytes (rounded up to windows of 64) from rank
// 0 to rank 1, each window closed by an empty Call, as osu_bw's by its
// ack.
func (a *benchAM) posts(t timer, w *comm.Comm, n int) error {
	if err := w.Barrier(); err != nil {
		return err
	}
	if w.Rank() != 0 {
		return nil
	}
	t.ResetTimer()
	for sent := 0; sent < n; sent += 64 {
		for i := range 64 {
			if err := a.add.Post(1, uint64(i)); err != nil {
				return err
			}
		}
		if _, err := a.empty.Call(1, struct{}{}).Wait(); err != nil {
			return err
		}
	}
	t.StopTimer()
	return nil
}

// isendWindows times osu_bw at 8 bytes for n messages (rounded up to
// windows of 64): rank 1 pre-posts 64 receives, rank 0 sends 64 Isends,
// and rank 1 acknowledges each window with 4 bytes.
func isendWindows(t timer, w *comm.Comm, n int) error {
	const window = 64
	c := typed.Of[byte](w)
	sbuf, rbuf, ack := make([]byte, 8), make([]byte, 8), make([]byte, 4)
	reqs := make([]*comm.Request, window)
	if err := w.Barrier(); err != nil {
		return err
	}
	if w.Rank() == 0 {
		t.ResetTimer()
	}
	for sent := 0; sent < n; sent += window {
		var err error
		for i := range reqs {
			if w.Rank() == 0 {
				reqs[i], err = c.Isend(sbuf, 1, 1)
			} else {
				reqs[i], err = c.Irecv(rbuf, 0, 1)
			}
			if err != nil {
				return err
			}
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return err
		}
		if w.Rank() == 0 {
			_, err = c.Recv(ack, 1, 2)
		} else {
			err = c.Send(ack, 0, 2)
		}
		if err != nil {
			return err
		}
	}
	if w.Rank() == 0 {
		t.StopTimer()
	}
	return nil
}

// timed runs round n times on every rank after 100 warm-up rounds, timing
// rank 0's.
func timed(t timer, w *comm.Comm, n int, round func() error) error {
	for range 100 {
		if err := round(); err != nil {
			return err
		}
	}
	if err := w.Barrier(); err != nil {
		return err
	}
	if w.Rank() == 0 {
		t.ResetTimer()
	}
	for range n {
		if err := round(); err != nil {
			return err
		}
	}
	if w.Rank() == 0 {
		t.StopTimer()
	}
	return nil
}

// benchEnv, set in a child process, asks it to measure round trips:
// "iters".
const benchEnv = "MPGO_TEST_AM_BENCH"

// tcpRoundTrips starts this test binary twice as the processes of one job
// over TCP and returns rank 0's mean round trips of a Call and of a
// ping-pong, n of each.
func tcpRoundTrips(n int) (call, sendrecv time.Duration, err error) {
	outs, err := jobtest.Spawn(2, fmt.Sprintf("%s=%d", benchEnv, n))
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(outs[0]))
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "am-bench call %d sendrecv %d", &call, &sendrecv); err == nil {
			return call, sendrecv, nil
		}
	}
	return 0, 0, fmt.Errorf("process 0 printed no figures:\n%s", outs[0])
}

// clock is a timer for a child process.
type clock struct{ start, total time.Duration }

func (c *clock) ResetTimer() { c.start = time.Duration(time.Now().UnixNano()) }
func (c *clock) StopTimer()  { c.total = time.Duration(time.Now().UnixNano()) - c.start }

// benchChild is a process of tcpRoundTrips' job: it measures and, on rank
// 0, prints the figures. It returns the exit status.
func benchChild(spec string) int {
	n, err := strconv.Atoi(spec)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a count\n", benchEnv, spec)
		return 2
	}
	err = mpgo.Join(func(w *comm.Comm) error {
		var sr, call clock
		if err := sendRecv(&sr, w, n); err != nil {
			return err
		}
		if err := withBenchAM(w, func(a *benchAM) error { return a.calls(&call, w, n) }); err != nil {
			return err
		}
		if w.Rank() == 0 {
			fmt.Printf("am-bench call %d sendrecv %d\n", call.total/time.Duration(n), sr.total/time.Duration(n))
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
