package mpgo_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// The benchmarks follow the OSU Micro-Benchmarks definitions (osu_latency:
// blocking ping-pong, latency = half the round trip; osu_bw: a window of 64
// non-blocking sends against 64 pre-posted receives, then a 4-byte ack),
// each beside the baseline it is judged against: a raw unbuffered Go
// channel ping-pong of a []byte, and copy() of the same size. Compare
// ratios from one run (benchstat), not absolute figures.

var latencySizes = []int{0, 8, 1 << 10, 8 << 10, 64 << 10, 1 << 20}

// BenchmarkLatency: ns/op is one round trip; the oneway-ns metric is the
// osu_latency figure.
func BenchmarkLatency(b *testing.B) {
	for _, size := range latencySizes {
		b.Run(fmt.Sprintf("chan/%d", size), func(b *testing.B) {
			ping, pong := make(chan []byte), make(chan []byte)
			buf := make([]byte, size)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for m := range ping {
					pong <- m
				}
			}()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ping <- buf
				buf = <-pong
			}
			b.StopTimer()
			close(ping)
			wg.Wait()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "oneway-ns")
		})
		b.Run(fmt.Sprintf("mpgo/%d", size), func(b *testing.B) {
			pingPong(b, size, false)
		})
	}
}

// pingPong runs osu_latency between ranks 0 and 1.
func pingPong(b *testing.B, size int, owned bool) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[byte](w)
		buf := make([]byte, size)
		peer := 1 - w.Rank()
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == 0 {
			b.ResetTimer()
		}
		for i := 0; i < b.N; i++ {
			if owned {
				if w.Rank() == 0 {
					if err := c.SendOwned(buf, peer, 1); err != nil {
						return err
					}
				}
				got, _, err := c.RecvOwned(peer, 1)
				if err != nil {
					return err
				}
				buf = got
				if w.Rank() == 1 {
					if err := c.SendOwned(buf, peer, 1); err != nil {
						return err
					}
				}
				continue
			}
			if w.Rank() == 0 {
				if err := c.Send(buf, peer, 1); err != nil {
					return err
				}
				if _, err := c.Recv(buf, peer, 1); err != nil {
					return err
				}
			} else {
				if _, err := c.Recv(buf, peer, 1); err != nil {
					return err
				}
				if err := c.Send(buf, peer, 1); err != nil {
					return err
				}
			}
		}
		if w.Rank() == 0 {
			b.StopTimer()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "oneway-ns")
}

// BenchmarkOwned is osu_latency with SendOwned/RecvOwned: the time must not
// grow with the size (no copy).
func BenchmarkOwned(b *testing.B) {
	for _, size := range []int{8, 64 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) { pingPong(b, size, true) })
	}
}

var bwSizes = []int{8, 4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 64 << 20}

const bwWindow = 64

// BenchmarkBandwidth: osu_bw beside copy() of the same size; both report
// MB/s over the bytes moved. persistent is osu_bw on persistent requests
// made once (SendInit/RecvInit, then StartAll and WaitAll every window):
// the same messages without a request allocated per receive, which is
// what the garbage collector's share of a small message's cost is.
func BenchmarkBandwidth(b *testing.B) {
	for _, size := range bwSizes {
		b.Run(fmt.Sprintf("copy/%d", size), func(b *testing.B) {
			src, dst := make([]byte, size), make([]byte, size)
			b.SetBytes(int64(size))
			for i := 0; i < b.N; i++ {
				copy(dst, src)
			}
		})
		b.Run(fmt.Sprintf("mpgo/%d", size), func(b *testing.B) { osuBW(b, size, false) })
		if size <= 4<<10 {
			b.Run(fmt.Sprintf("persistent/%d", size), func(b *testing.B) { osuBW(b, size, true) })
		}
	}
}

// osuBW is osu_bw of size-byte messages on 2 goroutine ranks, on
// persistent requests when persistent is set.
func osuBW(b *testing.B, size int, persistent bool) {
	window := bwWindow
	b.SetBytes(int64(size) * int64(window))
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[byte](w)
		// As osu_bw: one send buffer and one receive buffer, used by
		// every message of the window.
		buf := make([]byte, size)
		reqs := make([]*comm.Request, window)
		ack := make([]byte, 4)
		// fill makes the window's requests: rank 0's by send, rank 1's
		// by recv.
		fill := func(send, recv func() (*comm.Request, error)) error {
			mk := recv
			if w.Rank() == 0 {
				mk = send
			}
			for j := range reqs {
				var err error
				if reqs[j], err = mk(); err != nil {
					return err
				}
			}
			return nil
		}
		isend := func() (*comm.Request, error) { return c.Isend(buf, 1, 100) }
		irecv := func() (*comm.Request, error) { return c.Irecv(buf, 0, 100) }
		// start starts the window's requests.
		start := func() error { return fill(isend, irecv) }
		if persistent {
			sendInit := func() (*comm.Request, error) { return c.SendInit(buf, 1, 100) }
			recvInit := func() (*comm.Request, error) { return c.RecvInit(buf, 0, 100) }
			if err := fill(sendInit, recvInit); err != nil {
				return err
			}
			start = func() error { return comm.StartAll(reqs...) }
		}
		for i := -2; i < b.N; i++ { // two windows of warm-up
			if i == 0 {
				if err := w.Barrier(); err != nil {
					return err
				}
				if w.Rank() == 0 {
					b.ResetTimer()
				}
			}
			if err := start(); err != nil {
				return err
			}
			if err := comm.WaitAll(reqs...); err != nil {
				return err
			}
			if w.Rank() == 0 {
				if _, err := c.Recv(ack, 1, 101); err != nil {
					return err
				}
			} else if err := c.Send(ack, 0, 101); err != nil {
				return err
			}
		}
		if w.Rank() == 0 {
			b.StopTimer()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPairs: message rate of 8-byte ping-pong for 1 pair and for 32
// pairs (64 ranks) at GOMAXPROCS=2; msgs/s is the aggregate rate.
func BenchmarkPairs(b *testing.B) {
	for _, pairs := range []int{1, 32} {
		b.Run(fmt.Sprint(pairs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			err := mpgo.Run(2*pairs, func(w *comm.Comm) error {
				c := typed.Of[byte](w)
				buf := make([]byte, 8)
				peer := w.Rank() ^ 1
				if err := w.Barrier(); err != nil {
					return err
				}
				if w.Rank() == 0 {
					b.ResetTimer()
				}
				for i := 0; i < b.N; i++ {
					if w.Rank()%2 == 0 {
						if err := c.Send(buf, peer, 0); err != nil {
							return err
						}
						if _, err := c.Recv(buf, peer, 0); err != nil {
							return err
						}
					} else {
						if _, err := c.Recv(buf, peer, 0); err != nil {
							return err
						}
						if err := c.Send(buf, peer, 0); err != nil {
							return err
						}
					}
				}
				if err := w.Barrier(); err != nil {
					return err
				}
				if w.Rank() == 0 {
					b.StopTimer()
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(2*pairs*b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkIdleRankMemory reports the memory (heap and stacks) one idle
// rank costs: 10,000 ranks wait in a Barrier while rank 0 reads the
// runtime's statistics.
func BenchmarkIdleRankMemory(b *testing.B) {
	const n = 10000
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, during runtime.MemStats
		runtime.ReadMemStats(&before)
		err := mpgo.Run(n, func(w *comm.Comm) error {
			if err := w.Barrier(); err != nil { // every rank has met every peer it will
				return err
			}
			if w.Rank() == 0 {
				runtime.GC()
				runtime.ReadMemStats(&during)
			}
			return w.Barrier()
		})
		if err != nil {
			b.Fatal(err)
		}
		used := (during.HeapInuse + during.StackInuse) - (before.HeapInuse + before.StackInuse)
		b.ReportMetric(float64(used)/n, "bytes/rank")
	}
}
