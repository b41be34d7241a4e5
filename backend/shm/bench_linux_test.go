//go:build linux && (amd64 || arm64)

package shm_test

import (
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/backend/shm"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// BenchmarkRendezvousSplit: a ping-pong of rendezvous messages between
// two processes of this one (goroutines, each with its own device;
// process_vm_readv and process_vm_writev on this process's memory), read
// whole by the receiver or split with the sender (split_linux.go); an op
// is a round trip, ns/msg one message one way. Under mpiexec the same comparison is
// cmd/mpbench's latency with and without MPGO_SHM_SPLIT=0.
func BenchmarkRendezvousSplit(b *testing.B) {
	for _, size := range []int{64 << 10, 128 << 10, 256 << 10} {
		for _, split := range []string{"0", ""} {
			name := "split"
			if split == "0" {
				name = "whole"
			}
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, name), func(b *testing.B) {
				open := func(kv device.KV, l device.Layout) (device.Device, error) {
					return shm.Open(kv, shm.Config{Layout: l, Getenv: func(k string) string {
						if k == "MPGO_SHM_SPLIT" {
							return split
						}
						return ""
					}})
				}
				jobs := jobtest.Join(b, 2, job.Config{}, open)
				b.SetBytes(int64(2 * size)) // an op is a round trip: two messages
				errs := jobtest.Run(b, jobs, func(w *comm.Comm) error {
					buf := make([]byte, size)
					for i := -10; i < b.N; i++ {
						if i == 0 {
							if err := w.Barrier(); err != nil {
								return err
							}
							if w.Rank() == 0 {
								b.ResetTimer()
							}
						}
						if err := jobtest.RoundTrip(w, buf, 0); err != nil {
							return err
						}
					}
					if w.Rank() == 0 {
						b.StopTimer()
					}
					return nil
				})
				for r, err := range errs {
					if err != nil {
						b.Fatalf("rank %d: %v", r, err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/msg")
			})
		}
	}
}
