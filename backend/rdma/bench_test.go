//go:build rdma

package rdma_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mpgo/mpgo/backend/rdma"
	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// The RDMA backend beside the TCP backend in the same run: two processes
// (played by this one, each with its own endpoint or sockets) on
// loopback, one rank each, measured with the OSU definitions: osu_latency
// (half the round trip of a blocking ping-pong) at 8 bytes and osu_bw (a
// window of 64 Isends against pre-posted Irecvs, then a 4-byte ack) at
// 1 MiB and 4 MiB. Each sub-benchmark reports us/oneway or MB/s, and the
// RDMA ones the bytes the device copied per message on the rendezvous
// path (0: the payload is RMA-written straight into the receive buffer).
// rdma-net is libfabric 1.17's net provider: the rewrite of the tcp
// provider with native FI_EP_RDM that libfabric 1.18 renamed tcp
// (rdma-tcp is 1.17's tcp;ofi_rxm). A provider the machine lacks skips.
//
//	go test -tags rdma -run '^$' -bench FabricVsTCP -benchtime 2s ./comm/
func BenchmarkFabricVsTCP(b *testing.B) {
	backends := []struct {
		name string
		join func(b *testing.B) []*job.Job
	}{
		{"tcp-backend", func(b *testing.B) []*job.Job { return joinTCP(b, 2) }},
		{"rdma-tcp", func(b *testing.B) []*job.Job { return joinFabric(b, 2, fabricConfig{Provider: "tcp"}) }},
		{"rdma-net", func(b *testing.B) []*job.Job { return joinFabric(b, 2, fabricConfig{Provider: "net"}) }},
		{"rdma-shm", func(b *testing.B) []*job.Job { return joinFabric(b, 2, fabricConfig{Provider: "shm"}) }},
	}
	for _, size := range []int{8, 64 << 10, 1 << 20, 4 << 20} {
		for _, be := range backends {
			name := fmt.Sprintf("latency/%dB/%s", size, be.name)
			if size > 64<<10 {
				name = fmt.Sprintf("bw/%dMiB/%s", size>>20, be.name)
			}
			b.Run(name, func(b *testing.B) {
				jobs := be.join(b)
				var before rdma.Stats
				if s, ok := fabricStats(jobs[1]); ok {
					before = s
				}
				var took time.Duration
				var msgs int
				errs := runJobs(b, jobs, func(w *comm.Comm) error {
					var err error
					if size <= 64<<10 {
						took, err = pingPong(w, size, b.N)
						msgs = 2 * b.N
					} else {
						took, err = window(w, size, b.N)
						msgs = 64 * b.N
					}
					return err
				})
				for r, err := range errs {
					if err != nil {
						b.Fatalf("rank %d: %v", r, err)
					}
				}
				if size <= 64<<10 {
					b.ReportMetric(float64(took.Nanoseconds())/float64(msgs)/1e3, "us/oneway")
				} else {
					b.ReportMetric(float64(size)*float64(msgs)/took.Seconds()/1e6, "MB/s")
				}
				if s, ok := fabricStats(jobs[1]); ok && size > 64<<10 {
					copied := s.RndzCopied - before.RndzCopied + s.EagerCopied - before.EagerCopied
					b.ReportMetric(float64(copied)/float64(msgs), "copied-B/msg")
				}
				if s, ok := fabricStats(jobs[1]); ok {
					// The share of completions the waiting rank reaped itself
					// (the rest: the progress goroutine, and a handoff).
					rank, loop := s.RankReaped-before.RankReaped, s.LoopReaped-before.LoopReaped
					b.ReportMetric(100*float64(rank)/float64(max(rank+loop, 1)), "%rank-reaped")
				}
			})
		}
	}
}

// joinTCP plays procs processes joined by the TCP backend.
func joinTCP(b *testing.B, procs int) []*job.Job {
	return jobtest.Join(b, procs, job.Config{}, func(kv device.KV, l device.Layout) (device.Device, error) {
		return tcp.Open(kv, tcp.Config{Layout: l})
	})
}

// pingPong is osu_latency: it returns rank 0's time for iters round
// trips, after 100 warm-up ones.
func pingPong(w *comm.Comm, size, iters int) (time.Duration, error) {
	buf := make([]byte, size)
	peer := 1 - w.Rank()
	var start time.Time
	for i := range iters + 100 {
		if i == 100 {
			start = time.Now()
		}
		if w.Rank() == 0 {
			if err := w.Send(buf, comm.Byte, peer, 1); err != nil {
				return 0, err
			}
			if _, err := w.Recv(buf, comm.Byte, peer, 1); err != nil {
				return 0, err
			}
		} else {
			if _, err := w.Recv(buf, comm.Byte, peer, 1); err != nil {
				return 0, err
			}
			if err := w.Send(buf, comm.Byte, peer, 1); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start), nil
}

// window is osu_bw: iters windows of 64 messages of size bytes (after 2
// warm-up windows), each acknowledged by 4 bytes.
func window(w *comm.Comm, size, iters int) (time.Duration, error) {
	const n = 64
	buf, ack := make([]byte, size), make([]byte, 4)
	reqs := make([]*comm.Request, n)
	var start time.Time
	for i := range iters + 2 {
		if i == 2 {
			start = time.Now()
		}
		var err error
		for j := range n {
			if w.Rank() == 0 {
				reqs[j], err = w.Isend(buf, comm.Byte, 1, 2)
			} else {
				reqs[j], err = w.Irecv(buf, comm.Byte, 0, 2)
			}
			if err != nil {
				return 0, err
			}
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return 0, err
		}
		if w.Rank() == 0 {
			_, err = w.Recv(ack, comm.Byte, 1, 3)
		} else {
			err = w.Send(ack, comm.Byte, 0, 3)
		}
		if err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}
