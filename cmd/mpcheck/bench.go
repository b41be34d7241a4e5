package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpgo/mpgo/comm"
)

// The bench mode measures ranks 0 and 1, each in a process of its own,
// with the OSU Micro-Benchmarks definitions, side by side with the same
// exchanges over a raw TCP socket between the same two processes:
//
//   - latency (osu_latency): blocking ping-pong, half the round trip,
//     10,000 iterations after 100 warm-up up to 8 KiB, 1,000 after 10
//     above;
//   - bandwidth (osu_bw): a window of 64 sends against 64 pre-posted
//     receives, then a 4-byte acknowledgement; 100 windows after 10
//     warm-up up to 8 KiB, 20 after 2 above.
//
// Each measurement is split into blocks that alternate between mpgo and
// the raw socket, and the median block of each is reported.
//
// The raw baseline writes each message whole on a TCP_NODELAY socket and
// reads it with io.ReadFull: what a Go program gets from the kernel
// without any framing or matching.

const (
	window    = 64
	tagBench  = 40
	tagAck    = 41
	largeSize = 8 << 10
)

// backendName is the backend mpgo.Main picks (MPGO_BACKEND), with the
// libfabric provider asked for over rdma.
func backendName() string {
	b := os.Getenv("MPGO_BACKEND")
	if b == "" {
		b = "tcp"
	}
	if b == "rdma" {
		p := os.Getenv("FI_PROVIDER")
		if p == "" {
			p = "default"
		}
		b += ", FI_PROVIDER " + p
	}
	return b
}

// congestionControl names the kernel's TCP congestion control, which
// every socket here uses, the provider's included. It sets the figures
// for large messages: with bbr, TCP paces even loopback (one 2-core VM:
// 4 MiB latency about 1350 us and bandwidth about 3.8 GB/s with bbr,
// 630 us and 7.5 GB/s with cubic, for both backends).
func congestionControl() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

func latIters(size, scale int) (iters, skip int) {
	if size > largeSize {
		return max(1000/scale, 10), 10
	}
	return max(10000/scale, 10), 100
}

func bwIters(size, scale int) (iters, skip int) {
	if size > largeSize {
		return max(20/scale, 2), 2
	}
	return max(100/scale, 2), 10
}

// bench runs the sweep on ranks 0 and 1 of w; rank 0 prints the table.
// scale divides the OSU iteration counts (for quick runs).
func bench(w *comm.Comm, sizes []int, scale int, only string) error {
	me := w.Rank()
	if me > 1 {
		return nil
	}
	raw, err := rawPair(w)
	if err != nil {
		return err
	}
	defer raw.Close()
	if me == 0 {
		fmt.Printf("# two processes on loopback: mpgo (backend %s) vs raw Go TCP; latency ratio = mpgo/raw time (target <= 1.3), bandwidth ratio = mpgo/raw rate (target >= 0.8)\n", backendName())
		fmt.Printf("# kernel TCP congestion control: %s\n", congestionControl())
		fmt.Printf("%-10s %12s %12s %7s %12s %12s %7s\n", "size(B)", "lat-mpgo(µs)", "lat-raw(µs)", "ratio", "bw-mpgo(MB/s)", "bw-raw(MB/s)", "ratio")
	}
	for _, size := range sizes {
		buf := make([]byte, size)
		// Alternate mpgo and raw in blocks and keep the median block of
		// each: on a shared machine the load drifts during a sweep.
		var lms, lrs, bms, brs []time.Duration
		it, skip := latIters(size, scale)
		bit, bskip := bwIters(size, scale)
		for range trials {
			if only != "raw" {
				d, err := latencyMPGO(w, buf, max(it/trials, 5), skip)
				if err != nil {
					return err
				}
				lms = append(lms, d)
			}
			if only != "mpgo" {
				d, err := latencyRaw(raw, me, buf, max(it/trials, 5), skip)
				if err != nil {
					return err
				}
				lrs = append(lrs, d)
			}
			if only != "raw" {
				d, err := bandwidthMPGO(w, size, max(bit/trials, 2), bskip)
				if err != nil {
					return err
				}
				bms = append(bms, d)
			}
			if only != "mpgo" {
				d, err := bandwidthRaw(raw, me, size, max(bit/trials, 2), bskip)
				if err != nil {
					return err
				}
				brs = append(brs, d)
			}
			skip, bskip = skip/10+1, 1 // warm after the first block
		}
		lm, lr, bm, br := median(lms), median(lrs), median(bms), median(brs)
		if me == 0 {
			fmt.Printf("%-10d %12.2f %12.2f %7.2f %12.1f %12.1f %7.2f\n", size,
				us(lm), us(lr), float64(lm)/float64(lr), mbs(size, bm), mbs(size, br), float64(br)/float64(bm))
		}
	}
	return nil
}

// trials is the number of alternating blocks each measurement is split in.
const trials = 5

// median returns the median of ds (1ns when empty, to keep ratios finite).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 1
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// mbs converts the time per message into MB/s.
func mbs(size int, perMsg time.Duration) float64 {
	return float64(size) / (float64(perMsg.Nanoseconds()) / 1e3)
}

// rawPair opens a plain TCP connection between ranks 0 and 1 (rank 0
// listens on loopback and sends its port through mpgo).
func rawPair(w *comm.Comm) (net.Conn, error) {
	port := make([]byte, 8)
	if w.Rank() == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		binary.LittleEndian.PutUint64(port, uint64(ln.Addr().(*net.TCPAddr).Port))
		if err := w.Send(port, comm.Byte, 1, tagBench); err != nil {
			return nil, err
		}
		c, err := ln.Accept()
		if err != nil {
			return nil, err
		}
		c.(*net.TCPConn).SetNoDelay(true)
		return c, nil
	}
	if _, err := w.Recv(port, comm.Byte, 0, tagBench); err != nil {
		return nil, err
	}
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", binary.LittleEndian.Uint64(port)))
	if err != nil {
		return nil, err
	}
	c.(*net.TCPConn).SetNoDelay(true)
	return c, nil
}

// latencyMPGO is osu_latency: the one-way time.
func latencyMPGO(w *comm.Comm, buf []byte, iters, skip int) (time.Duration, error) {
	peer := 1 - w.Rank()
	if err := w.Barrier(); err != nil {
		return 0, err
	}
	var start time.Time
	for i := range iters + skip {
		if i == skip {
			start = time.Now()
		}
		if w.Rank() == 0 {
			if err := w.Send(buf, comm.Byte, peer, tagBench); err != nil {
				return 0, err
			}
			if _, err := w.Recv(buf, comm.Byte, peer, tagBench); err != nil {
				return 0, err
			}
		} else {
			if _, err := w.Recv(buf, comm.Byte, peer, tagBench); err != nil {
				return 0, err
			}
			if err := w.Send(buf, comm.Byte, peer, tagBench); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start) / time.Duration(2*iters), nil
}

func latencyRaw(c net.Conn, me int, buf []byte, iters, skip int) (time.Duration, error) {
	var start time.Time
	for i := range iters + skip {
		if i == skip {
			start = time.Now()
		}
		if me == 0 {
			if err := writeAll(c, buf); err != nil {
				return 0, err
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				return 0, err
			}
		} else {
			if _, err := io.ReadFull(c, buf); err != nil {
				return 0, err
			}
			if err := writeAll(c, buf); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start) / time.Duration(2*iters), nil
}

func writeAll(c net.Conn, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := c.Write(b)
	return err
}

// bandwidthMPGO is osu_bw: the time per message. As in osu_bw, the 64
// sends of a window share one buffer, and so do the 64 receives.
func bandwidthMPGO(w *comm.Comm, size, iters, skip int) (time.Duration, error) {
	buf := make([]byte, size)
	ack := make([]byte, 4)
	reqs := make([]*comm.Request, window)
	if err := w.Barrier(); err != nil {
		return 0, err
	}
	var start time.Time
	for i := range iters + skip {
		if i == skip {
			start = time.Now()
		}
		var err error
		for j := range window {
			if w.Rank() == 0 {
				reqs[j], err = w.Isend(buf, comm.Byte, 1, tagBench)
			} else {
				reqs[j], err = w.Irecv(buf, comm.Byte, 0, tagBench)
			}
			if err != nil {
				return 0, err
			}
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return 0, err
		}
		if w.Rank() == 0 {
			_, err = w.Recv(ack, comm.Byte, 1, tagAck)
		} else {
			err = w.Send(ack, comm.Byte, 0, tagAck)
		}
		if err != nil {
			return 0, err
		}
	}
	return time.Since(start) / time.Duration(iters*window), nil
}

func bandwidthRaw(c net.Conn, me, size, iters, skip int) (time.Duration, error) {
	buf := make([]byte, size)
	ack := make([]byte, 4)
	var start time.Time
	for i := range iters + skip {
		if i == skip {
			start = time.Now()
		}
		for range window {
			var err error
			if me == 0 {
				err = writeAll(c, buf)
			} else {
				_, err = io.ReadFull(c, buf)
			}
			if err != nil {
				return 0, err
			}
		}
		var err error
		if me == 0 {
			_, err = io.ReadFull(c, ack)
		} else {
			err = writeAll(c, ack)
		}
		if err != nil {
			return 0, err
		}
	}
	if size == 0 {
		return 0, errors.New("bandwidth of empty messages")
	}
	return time.Since(start) / time.Duration(iters*window), nil
}
