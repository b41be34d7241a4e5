package tcp_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
	"github.com/mpgo/mpgo/internal/pmi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// playTCP plays a job's processes in this one, each a job.Job of its own
// joined to the others over loopback TCP, bootstrapped through an
// in-memory key-value space.
var playTCP = jobtest.Harness(openTCP)

// openTCP is the TCP backend's job.Opener, with eager as its eager limit.
func openTCP(eager int) job.Opener { return openTCPWith(nil)(eager) }

// openTCPWith is openTCP with tweak applied to each process's Config.
func openTCPWith(tweak func(c *tcp.Config)) func(eager int) job.Opener {
	return func(eager int) job.Opener {
		return func(kv device.KV, l device.Layout) (device.Device, error) {
			cfg := tcp.Config{Layout: l, EagerLimit: eager, Getenv: func(string) string { return "" }}
			if tweak != nil {
				tweak(&cfg)
			}
			return tcp.Open(kv, cfg)
		}
	}
}

// The conformance suite over real TCP: the semantics suite on jobs of
// several shapes (shared memory inside a process, TCP between them), a
// process that finishes early (it says goodbye) and one that dies (its
// connections break off).
func TestTCPBackend(t *testing.T) {
	devicetest.TestBackend(t, playTCP)
}

// The conformance suite with every process's readers polling their
// sockets while its ranks wait (Config.Spin, whatever the node's size):
// the same semantics whether a reader polls or waits in the poller.
func TestTCPBackendPolling(t *testing.T) {
	devicetest.TestBackend(t, jobtest.Harness(openTCPWith(func(c *tcp.Config) { c.Spin = 50 * time.Microsecond })))
}

// Config.Spin: negative never polls, positive is taken as it is, zero
// polls for DefaultSpin on a node with no more processes than CPUs and
// not at all where the launcher did not say or the node is oversubscribed.
func TestSpinDefault(t *testing.T) {
	cpus := runtime.NumCPU()
	for _, tt := range []struct {
		cfg    time.Duration
		onNode int
		want   time.Duration
	}{
		{-1, 1, 0}, {time.Millisecond, cpus + 1, time.Millisecond},
		{0, 1, tcp.DefaultSpin}, {0, cpus, tcp.DefaultSpin}, {0, cpus + 1, 0}, {0, 0, 0},
	} {
		if got := tcp.SpinFor(tt.cfg, tt.onNode); got != tt.want {
			t.Errorf("Spin %v with %d processes on a node of %d CPUs: %v, want %v", tt.cfg, tt.onNode, cpus, got, tt.want)
		}
	}
}

// MPGO_TCP_SPIN: a duration up to a second, or 0 for none; anything else
// fails Open with ErrBootstrap and ErrArg.
func TestSpinEnv(t *testing.T) {
	checkEnv(t, "MPGO_TCP_SPIN", []envCase{{"", true}, {"0", true}, {"0s", true}, {"100us", true}, {"1s", true},
		{"2s", false}, {"-1ms", false}, {"100", false}})
}

// The conformance suite with a heartbeat: pings on idle connections, the
// ring of watched connections opened at start, processes that finish
// early or die, and nobody lost who is not. Every process of these jobs
// is a goroutine of this one, ranks spinning beside them under -race on
// few cores: a heartbeat of 200 ms saw a process's ping come too late
// once in three runs; a second leaves ample margin.
func TestTCPBackendHeartbeat(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	devicetest.TestBackend(t, jobtest.Harness(openTCPWith(func(c *tcp.Config) { c.Heartbeat = time.Second })))
}

// MPGO_HEARTBEAT: a Go duration of at least MinHeartbeat, or 0 for none;
// anything else fails Open with ErrBootstrap and ErrArg.
func TestHeartbeatEnv(t *testing.T) {
	checkEnv(t, "MPGO_HEARTBEAT", []envCase{{"", true}, {"0", true}, {"10s", true}, {"100ms", true},
		{"50ms", false}, {"-1s", false}, {"10", false}, {"soon", false}})
}

// envCase is a value of an environment variable and whether Open takes it.
type envCase struct {
	value string
	ok    bool
}

// checkEnv opens a one-process device with each case's value of the
// environment variable key: Open succeeds when the case says ok, and
// fails otherwise with an error wrapping ErrBootstrap and ErrArg.
func checkEnv(t *testing.T, key string, cases []envCase) {
	t.Helper()
	for _, tt := range cases {
		kv := pmi.NewMemory(1)[0]
		d, err := tcp.Open(kv, tcp.Config{Layout: device.Layout{Ranks: 1, Owner: func(int) int { return 0 }},
			Getenv: func(k string) string {
				if k == key {
					return tt.value
				}
				return ""
			}})
		if d != nil {
			d.Close()
		}
		if ok := err == nil; ok != tt.ok || !ok && (!errors.Is(err, device.ErrBootstrap) || !errors.Is(err, device.ErrArg)) {
			t.Errorf("%s=%q: %v", key, tt.value, err)
		}
	}
}

// A small-message ping-pong between processes whose readers poll
// allocates nothing a round trip: the polls hand the socket functions
// made once (closures made at each poll allocated 30 objects a round
// trip). Process-wide, so the bound leaves room for the runtime's own
// (one allocation a round trip would be 2,000).
func TestPollingAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const rounds = 2000
	var before, after runtime.MemStats
	play := jobtest.Harness(openTCPWith(func(c *tcp.Config) { c.Spin = time.Millisecond }))
	errs := play(t, devicetest.Shape{Procs: 2, Ranks: 1}, func(w *comm.Comm) error {
		buf := make([]byte, 8)
		for range 100 { // warm-up: connections, pools
			if err := jobtest.RoundTrip(w, buf, 1); err != nil {
				return err
			}
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == 0 {
			runtime.ReadMemStats(&before)
		}
		for range rounds {
			if err := jobtest.RoundTrip(w, buf, 1); err != nil {
				return err
			}
		}
		if w.Rank() == 0 {
			runtime.ReadMemStats(&after)
		}
		return nil
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := after.Mallocs - before.Mallocs; n > rounds/4 {
		t.Errorf("%d allocations in %d round trips of 8 bytes over TCP", n, rounds)
	}
}
