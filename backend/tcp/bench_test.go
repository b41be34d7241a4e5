package tcp_test

import (
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// The TCP device against raw TCP, in one process: two jobs joined over
// loopback, osu_latency and osu_bw definitions, beside the same exchanges
// on a plain TCP_NODELAY socket pair. Both sides share this process's
// scheduler, so these measure the device's own cost; cmd/mpcheck's bench
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

// benchRaw times main against serve on the two ends of a loopback
// socket: serve runs on a goroutine of its own, main between the timer's
// reset and its stop.
func benchRaw(b *testing.B, serve, main func(c net.Conn)) {
	c0, c1 := rawTCPPair(b)
	defer c0.Close()
	defer c1.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve(c1)
	}()
	b.ResetTimer()
	main(c0)
	b.StopTimer()
	<-done
}

// benchTCP runs the loop prepare returns on the ranks of two processes
// joined by the TCP backend; rank 0 times it, from a barrier after
// prepare to the loop's return.
func benchTCP(b *testing.B, prepare func(w *comm.Comm) (loop func() error)) {
	errs := playTCP(b, devicetest.Shape{Procs: 2, Ranks: 1}, func(w *comm.Comm) error {
		loop := prepare(w)
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == 0 {
			b.ResetTimer()
		}
		err := loop()
		if w.Rank() == 0 {
			b.StopTimer()
		}
		return err
	})
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTCPLatency(b *testing.B) {
	for _, size := range tcpBenchSizes {
		b.Run(fmt.Sprintf("raw/%d", size), func(b *testing.B) {
			sbuf, buf := make([]byte, size), make([]byte, size)
			benchRaw(b, func(c net.Conn) {
				for range b.N {
					io.ReadFull(c, sbuf)
					c.Write(sbuf)
				}
			}, func(c net.Conn) {
				for range b.N {
					c.Write(buf)
					io.ReadFull(c, buf)
				}
			})
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "oneway-ns")
		})
		b.Run(fmt.Sprintf("mpgo/%d", size), func(b *testing.B) {
			benchTCP(b, func(w *comm.Comm) func() error {
				buf := make([]byte, size)
				return func() error {
					for range b.N {
						if err := jobtest.RoundTrip(w, buf, 1); err != nil {
							return err
						}
					}
					return nil
				}
			})
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "oneway-ns")
		})
	}
}

const bwWindow = 64

func BenchmarkTCPBandwidth(b *testing.B) {
	for _, size := range tcpBenchSizes {
		b.Run(fmt.Sprintf("raw/%d", size), func(b *testing.B) {
			sbuf, sack := make([]byte, size), make([]byte, 4)
			buf, ack := make([]byte, size), make([]byte, 4)
			b.SetBytes(int64(size * bwWindow))
			benchRaw(b, func(c net.Conn) {
				for range b.N {
					for range bwWindow {
						io.ReadFull(c, sbuf)
					}
					c.Write(sack)
				}
			}, func(c net.Conn) {
				for range b.N {
					for range bwWindow {
						c.Write(buf)
					}
					io.ReadFull(c, ack)
				}
			})
		})
		b.Run(fmt.Sprintf("mpgo/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size * bwWindow))
			benchTCP(b, func(w *comm.Comm) func() error {
				bufs := make([][]byte, bwWindow)
				for i := range bufs {
					bufs[i] = make([]byte, size)
				}
				reqs := make([]*comm.Request, bwWindow)
				ack := make([]byte, 4)
				return func() error {
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
					return nil
				}
			})
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
			sbuf, buf := make([]byte, size), make([]byte, size)
			b.SetBytes(int64(size))
			benchRaw(b, func(c net.Conn) {
				for range b.N {
					io.ReadFull(c, sbuf)
				}
				c.Write(sbuf[:1])
			}, func(c net.Conn) {
				for range b.N {
					c.Write(buf)
				}
				io.ReadFull(c, buf[:1])
			})
		})
		b.Run(fmt.Sprintf("mpgo/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			benchTCP(b, func(w *comm.Comm) func() error {
				buf := make([]byte, size)
				return func() error {
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
					// The last byte back: rank 0's time covers the
					// receiver's end of the stream.
					var err error
					if w.Rank() == 0 {
						_, err = w.Recv(buf[:1], comm.Byte, 1, 5)
					} else {
						err = w.Send(buf[:1], comm.Byte, 0, 5)
					}
					return err
				}
			})
		})
	}
}
