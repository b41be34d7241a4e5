package typed_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// BenchmarkLayoutIndexed is the indexed-datatype benchmark of the MPJ
// Express multicore evaluation: float64, blocklengths [8 7 6 5 4 3 2 1] at
// displacements that make them the upper triangle of an 8×8 block (row i
// from (i, i)), 36 of every 64 elements, the block repeated count times
// end to end (MPI count = count), counts 1, 4, 16, … 262,144 (288 B to
// 72 MiB of payload).
//
// Each count runs, side by side:
//
//   - copy: copy() of the payload's bytes, the baseline the target is set
//     against (≥ 0.5× its throughput for large counts);
//   - pack, unpack: typed.Pack / typed.Unpack alone, one rank, no message;
//   - pingpong/layout: SendLayout, RecvLayout between two ranks, the
//     message sent back the same way; ns/op is the round trip,
//     ns/transfer half of it (the MPJ Express "transfer time"), MB/s the
//     payload moved (both directions) per second;
//   - pingpong/packloop: the same with a hand-written pack loop: copy()
//     each row into a contiguous slice, Send, Recv, copy() each row back;
//   - stream/layout, stream/packloop: one direction, a window of messages
//     in flight before a zero-length acknowledgement (osu_bw's scheme; the
//     window is 64 messages, fewer when they would hold more than 512 MiB),
//     MB/s of payload. Messages at or above the eager limit go by
//     rendezvous, layout and plain alike, so each send waits for its
//     receive: the window bounds the sends, not the copies in flight.
func BenchmarkLayoutIndexed(b *testing.B) {
	tri := upperTriangle(b, 8)
	for count := 1; count <= 262144; count *= 4 {
		l, err := tri.Repeat(count)
		if err != nil {
			b.Fatal(err)
		}
		payload := int64(l.Count()) * 8
		b.Run(fmt.Sprintf("count=%d", count), func(b *testing.B) {
			// Every buffer written once, so that no timing pays for first
			// touches of fresh pages.
			src := make([]float64, l.Extent())
			for i := range src {
				src[i] = float64(i)
			}
			bufs := [2][]float64{src, slices.Clone(src)}
			packed := [2][]float64{make([]float64, l.Count()), make([]float64, l.Count())}
			for _, p := range packed {
				clear(p)
			}

			b.Run("copy", func(b *testing.B) {
				b.SetBytes(payload)
				b.ReportAllocs()
				for b.Loop() {
					copy(packed[1], packed[0])
				}
			})
			b.Run("pack", func(b *testing.B) {
				b.SetBytes(payload)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := typed.Pack(packed[0], src, l); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("unpack", func(b *testing.B) {
				b.SetBytes(payload)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := typed.Unpack(bufs[1], packed[0], l); err != nil {
						b.Fatal(err)
					}
				}
			})

			viaLayout := func(c *typed.Comm[float64], rank int) (send func(int) error, recv func(int) error) {
				send = func(peer int) error { return c.SendLayout(bufs[rank], l, peer, 0) }
				recv = func(peer int) error { _, err := c.RecvLayout(bufs[rank], l, peer, 0); return err }
				return
			}
			viaPackLoop := func(c *typed.Comm[float64], rank int) (send func(int) error, recv func(int) error) {
				send = func(peer int) error {
					packTriangle(packed[rank], bufs[rank], count)
					return c.Send(packed[rank], peer, 0)
				}
				recv = func(peer int) error {
					if _, err := c.Recv(packed[rank], peer, 0); err != nil {
						return err
					}
					unpackTriangle(bufs[rank], packed[rank], count)
					return nil
				}
				return
			}
			for _, v := range []struct {
				name string
				f    func(*typed.Comm[float64], int) (func(int) error, func(int) error)
			}{{"layout", viaLayout}, {"packloop", viaPackLoop}} {
				b.Run("pingpong/"+v.name, func(b *testing.B) {
					b.SetBytes(2 * payload)
					b.ReportAllocs()
					pingPong(b, v.f)
				})
			}
			window := int(max(2, min(64, (512<<20)/payload)))
			for _, v := range []struct {
				name string
				f    func(*typed.Comm[float64], int) (func(int) error, func(int) error)
			}{{"layout", viaLayout}, {"packloop", viaPackLoop}} {
				b.Run("stream/"+v.name, func(b *testing.B) {
					b.SetBytes(payload)
					b.ReportAllocs()
					stream(b, window, v.f)
				})
			}
		})
	}
}

// pingPong times b.N round trips between ranks 0 and 1 with the send and
// receive that mk makes for each rank.
func pingPong(b *testing.B, mk func(*typed.Comm[float64], int) (func(int) error, func(int) error)) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		me := w.Rank()
		send, recv := mk(typed.Of[float64](w), me)
		round := func() error {
			if me == 0 {
				if err := send(1); err != nil {
					return err
				}
				return recv(1)
			}
			if err := recv(0); err != nil {
				return err
			}
			return send(0)
		}
		for range warmUp {
			if err := round(); err != nil {
				return err
			}
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if me == 0 {
			b.ResetTimer()
		}
		for range b.N {
			if err := round(); err != nil {
				return err
			}
		}
		if me == 0 {
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/transfer")
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// warmUp is the number of round trips, or windows, run before timing:
// they fill the pools a steady state draws on.
const warmUp = 3

// stream times b.N messages from rank 0 to rank 1, window at a time, each
// window acknowledged with an empty message.
func stream(b *testing.B, window int, mk func(*typed.Comm[float64], int) (func(int) error, func(int) error)) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		me := w.Rank()
		c := typed.Of[float64](w)
		send, recv := mk(c, me)
		run := func(n int) error {
			for i := range n {
				last := (i+1)%window == 0 || i == n-1
				if me == 0 {
					if err := send(1); err != nil {
						return err
					}
					if last {
						if _, err := c.Recv(nil, 1, 1); err != nil {
							return err
						}
					}
				} else {
					if err := recv(0); err != nil {
						return err
					}
					if last {
						if err := c.Send(nil, 0, 1); err != nil {
							return err
						}
					}
				}
			}
			return nil
		}
		if err := run(warmUp * window); err != nil {
			return err
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if me == 0 {
			b.ResetTimer()
		}
		if err := run(b.N); err != nil {
			return err
		}
		if me == 0 {
			b.StopTimer()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// packTriangle is the hand-written pack of count upper triangles of 8×8
// blocks: each row's run copied with copy().
func packTriangle(dst, src []float64, count int) {
	k := 0
	for r := range count {
		base := r * 64
		for i := range 8 {
			n := 8 - i
			at := base + i*9
			copy(dst[k:k+n], src[at:at+n])
			k += n
		}
	}
}

func unpackTriangle(dst, src []float64, count int) {
	k := 0
	for r := range count {
		base := r * 64
		for i := range 8 {
			n := 8 - i
			at := base + i*9
			copy(dst[at:at+n], src[k:k+n])
			k += n
		}
	}
}
