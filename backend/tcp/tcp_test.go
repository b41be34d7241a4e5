package tcp_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// playTCP plays a job's processes in this one, each a job.Job of its own
// joined to the others over loopback TCP, bootstrapped through an
// in-memory key-value space.
var playTCP = jobtest.Harness(openTCP)

// openTCP is the TCP backend's job.Opener, with eager as its eager limit.
func openTCP(eager int) job.Opener {
	return func(kv device.KV, l device.Layout) (device.Device, error) {
		return tcp.Open(kv, tcp.Config{Layout: l, EagerLimit: eager, Getenv: func(string) string { return "" }})
	}
}

// The conformance suite over real TCP: the semantics suite on jobs of
// several shapes (shared memory inside a process, TCP between them), a
// process that finishes early (it says goodbye) and one that dies (its
// connections break off).
func TestTCPBackend(t *testing.T) {
	devicetest.TestBackend(t, playTCP)
}
