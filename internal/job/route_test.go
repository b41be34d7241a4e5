package job_test

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/mpgo/mpgo/backend/shm"
	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The conformance suite over a job of two hosts (played in this
// process: process p on host p%2): the processes of one host talk
// through shared memory, the others over TCP, both devices under one
// engine, each process's end told once.
func TestRouteTwoHosts(t *testing.T) {
	devicetest.TestBackend(t, jobtest.Harness(func(eager int) job.Opener {
		noEnv := func(string) string { return "" }
		return job.WithNear(func(kv device.KV, l device.Layout) (job.Near, error) {
			return shm.Open(kv, shm.Config{Layout: l, EagerLimit: eager, Getenv: noEnv, Host: fmt.Sprint("host", kv.Rank()%2)})
		}, func(kv device.KV, l device.Layout) (device.Device, error) {
			return tcp.Open(kv, tcp.Config{Layout: l, EagerLimit: eager, Getenv: noEnv})
		})
	}))
}
