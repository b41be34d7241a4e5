package mpgo_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// BenchmarkObserve is osu_latency of 8 bytes (ns/op a round trip,
// oneway-ns the osu figure) with nothing recorded, and with each kind of
// recording on: what turning it on costs. The anysource runs receive
// from AnySource on rank 0, the case record/replay logs (ReMPI records
// at 13–25% over plain MPI).
func BenchmarkObserve(b *testing.B) {
	for _, bc := range observeCases {
		b.Run(bc.name, func(b *testing.B) { observedPingPong(b, 8, bc.any, bc.options(b)...) })
	}
}

// BenchmarkObserveSize is BenchmarkObserve's off and trace at larger
// payloads (1 KiB, eager; 64 KiB, a rendezvous), where a record costs the
// same and a message more.
func BenchmarkObserveSize(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		for _, bc := range observeCases[:2] {
			b.Run(fmt.Sprintf("%d/%s", size, bc.name), func(b *testing.B) {
				observedPingPong(b, size, bc.any, bc.options(b)...)
			})
		}
	}
}

// observeCases are the recordings the benchmarks compare: none, each
// kind, and the receives from AnySource that record/replay logs.
var observeCases = []observeCase{
	{"off", false, nil},
	{"trace", false, func(dir string) mpgo.Option { return mpgo.WithTrace(filepath.Join(dir, "t.json")) }},
	{"stats", false, func(string) mpgo.Option { return mpgo.WithStats(discard{}) }},
	{"anysource/off", true, nil},
	{"anysource/record", true, func(dir string) mpgo.Option { return mpgo.WithRecord(dir) }},
	{"anysource/trace", true, func(dir string) mpgo.Option { return mpgo.WithTrace(filepath.Join(dir, "t.json")) }},
}

// observeCase is a recording a benchmark runs with.
type observeCase struct {
	name string
	any  bool // rank 0 receives from AnySource
	opt  func(dir string) mpgo.Option
}

// options returns the run's options of case bc (files in b's TempDir).
func (bc observeCase) options(b *testing.B) []mpgo.Option {
	if bc.opt == nil {
		return nil
	}
	return []mpgo.Option{bc.opt(b.TempDir())}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// observedPingPong is pingPong of size bytes, rank 0 receiving from
// AnySource when any is set, run with opts.
func observedPingPong(b *testing.B, size int, any bool, opts ...mpgo.Option) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		buf := make([]byte, size)
		peer, from := 1-w.Rank(), 1-w.Rank()
		if any && w.Rank() == 0 {
			from = comm.AnySource
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == 0 {
			b.ResetTimer()
		}
		for i := 0; i < b.N; i++ {
			if w.Rank() == 0 {
				if err := w.Send(buf, comm.Byte, peer, 1); err != nil {
					return err
				}
				if _, err := w.Recv(buf, comm.Byte, from, 1); err != nil {
					return err
				}
			} else {
				if _, err := w.Recv(buf, comm.Byte, from, 1); err != nil {
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
	}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "oneway-ns")
}

// BenchmarkObserveSelf is a send of 8 bytes from a rank to itself and its
// receive (from AnySource in the anysource runs), on one goroutine: the
// engine's whole path without a goroutine switch, so that what recording
// adds to it shows on a loaded machine, where the ping-pong's scheduling
// noise hides it.
func BenchmarkObserveSelf(b *testing.B) {
	for _, bc := range observeCases {
		b.Run(bc.name, func(b *testing.B) {
			err := mpgo.Run(1, func(w *comm.Comm) error {
				buf := make([]byte, 8)
				from := 0
				if bc.any {
					from = comm.AnySource
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := w.Send(buf, comm.Byte, 0, 1); err != nil {
						return err
					}
					if _, err := w.Recv(buf, comm.Byte, from, 1); err != nil {
						return err
					}
				}
				b.StopTimer()
				return nil
			}, bc.options(b)...)
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
