package shm_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mpgo/mpgo/backend/shm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openSHM is the shared-memory backend's job.Opener, with eager as its
// eager limit and cfg's other settings.
func openSHM(cfg shm.Config) func(eager int) job.Opener {
	return func(eager int) job.Opener {
		return func(kv device.KV, l device.Layout) (device.Device, error) {
			c := cfg
			c.Layout, c.EagerLimit, c.Getenv = l, eager, func(string) string { return "" }
			return shm.Open(kv, c)
		}
	}
}

// The conformance suite over shared memory: every process of these jobs
// is a goroutine of this one, so the rings, the futexes and
// process_vm_readv all work on this process's own memory, through the
// same mappings and system calls as between processes.
func TestSHMBackend(t *testing.T) {
	devicetest.TestBackend(t, jobtest.Harness(openSHM(shm.Config{})))
}

// The conformance suite with large messages pipelined through the rings,
// as where process_vm_readv is not allowed, and small rings (32 KiB:
// the eager limit drops to 16 KiB, still above the 9000 bytes the
// failure tests send eagerly), so that messages wait for room.
func TestSHMBackendNoCMA(t *testing.T) {
	devicetest.TestBackend(t, jobtest.Harness(openSHM(shm.Config{NoCMA: true, RingSize: 32 << 10})))
}
