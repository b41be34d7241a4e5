package comm_test

import (
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// The TCP device against raw TCP, in one process: two jobs joined over
// loopback, osu_latency and osu_bw definitions, beside the same exchanges
// on a plain TCP_NODELAY socket pair. Both sides share this process's
// scheduler, so these measure the device's own cost; cmd/tcpcheck's bench
// mode measures two real processes.

var tcpBenchSizes = []int{8, 1 << 10, 8 << 10, 64 << 10, 1 << 20}

// rawTCPPair returns the two ends of a loopback TCP connection.
func rawTCPPair(b *testing.B) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c0, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c1 := <-accepted
	if c1 == nil {
		b.Fatal("accept failed")
	}
	c0.(*net.TCPConn).SetNoDelay(true)
	c1.(*net.TCPConn).SetNoDelay(true)
	return c0, c1
}

func BenchmarkTCPLatency(b *testing.B) {
	for _, size := range tcpBenchSizes {
		b.Run(fmt.Sprintf("raw/%d", size), func(b *testing.B) {
			c0, c1 := rawTCPPair(b)
			defer c0.Close()
			defer c1.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				buf := make([]byte, size)
				for range b.N {
					io.ReadFull(c1, buf)
					c1.Write(buf)
				}
			}()
			buf := make([]byte, size)
			b.ResetTimer()
			for range b.N {
				c0.Write(buf)
				io.ReadFull(c0, buf)
			}
			b.StopTimer()
			<-done
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "oneway-ns")
		})
		b.Run(fmt.Sprintf("mpgo/%d", size), func(b *testing.B) {
			errs := runTCP(b, 2, 1, func(w *comm.Comm) error {
				buf := make([]byte, size)
				peer := 1 - w.Rank()
				if err := w.Barrier(); err != nil {
					return err
				}
				if w.Rank() == 0 {
					b.ResetTimer()
				}
				for range b.N {
					if w.Rank() == 0 {
						if err := w.Send(buf, comm.Byte, peer, 1); err != nil {
							return err
						}
						if _, err := w.Recv(buf, comm.Byte, peer, 1); err != nil {
							return err
						}
					} else {
						if _, err := w.Recv(buf, comm.Byte, peer, 1); err != nil {
							return err
						}
						if err := w.Send(buf, comm.Byte, peer, 1); err != nil {
							return err
						}
					}
				}
				if w.Rank() == 0 {
					b.StopTimer()
				}
				return nil
			})
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "oneway-ns")
		})
	}
}

const bwWindow = 64

func BenchmarkTCPBandwidth(b *testing.B) {
	for _, size := range tcpBenchSizes {
		b.Run(fmt.Sprintf("raw/%d", size), func(b *testing.B) {
			c0, c1 := rawTCPPair(b)
			defer c0.Close()
			defer c1.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				buf, ack := make([]byte, size), make([]byte, 4)
				for range b.N {
					for range bwWindow {
						io.ReadFull(c1, buf)
					}
					c1.Write(ack)
				}
			}()
			buf, ack := make([]byte, size), make([]byte, 4)
			b.SetBytes(int64(size * bwWindow))
			b.ResetTimer()
			for range b.N {
				for range bwWindow {
					c0.Write(buf)
				}
				io.ReadFull(c0, ack)
			}
			b.StopTimer()
			<-done
		})
		b.Run(fmt.Sprintf("mpgo/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size * bwWindow))
			errs := runTCP(b, 2, 1, func(w *comm.Comm) error {
				bufs := make([][]byte, bwWindow)
				for i := range bufs {
					bufs[i] = make([]byte, size)
				}
				reqs := make([]*comm.Request, bwWindow)
				ack := make([]byte, 4)
				if err := w.Barrier(); err != nil {
					return err
				}
				if w.Rank() == 0 {
					b.ResetTimer()
				}
				for range b.N {
					var err error
					for j := range reqs {
						if w.Rank() == 0 {
							reqs[j], err = w.Isend(bufs[j], comm.Byte, 1, 2)
						} else {
							reqs[j], err = w.Irecv(bufs[j], comm.Byte, 0, 2)
						}
						if err != nil {
							return err
						}
					}
					if err := comm.WaitAll(reqs...); err != nil {
						return err
					}
					if w.Rank() == 0 {
						_, err = w.Recv(ack, comm.Byte, 1, 3)
					} else {
						err = w.Send(ack, comm.Byte, 0, 3)
					}
					if err != nil {
						return err
					}
				}
				if w.Rank() == 0 {
					b.StopTimer()
				}
				return nil
			})
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTCPSendStream streams blocking sends one way (each Send waits
// for its own write before the next), the pattern that the writer's
// burst coalescing must not slow down, beside the same stream of writes
// on a raw socket.
func BenchmarkTCPSendStream(b *testing.B) {
	for _, size := range []int{8, 1 << 10} {
		b.Run(fmt.Sprintf("raw/%d", size), func(b *testing.B) {
			c0, c1 := rawTCPPair(b)
			defer c0.Close()
			defer c1.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				buf := make([]byte, size)
				for range b.N {
					io.ReadFull(c1, buf)
				}
				c1.Write(buf[:1])
			}()
			buf := make([]byte, size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				c0.Write(buf)
			}
			io.ReadFull(c0, buf[:1])
			b.StopTimer()
			<-done
		})
		b.Run(fmt.Sprintf("mpgo/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			errs := runTCP(b, 2, 1, func(w *comm.Comm) error {
				buf := make([]byte, size)
				if err := w.Barrier(); err != nil {
					return err
				}
				if w.Rank() == 0 {
					b.ResetTimer()
				}
				for range b.N {
					var err error
					if w.Rank() == 0 {
						err = w.Send(buf, comm.Byte, 1, 4)
					} else {
						_, err = w.Recv(buf, comm.Byte, 0, 4)
					}
					if err != nil {
						return err
					}
				}
				var err error
				if w.Rank() == 0 {
					_, err = w.Recv(buf[:1], comm.Byte, 1, 5)
					b.StopTimer()
				} else {
					err = w.Send(buf[:1], comm.Byte, 0, 5)
				}
				return err
			})
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
