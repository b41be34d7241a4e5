package tcp

import (
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/mpgo/mpgo/backend/tcp/internal/wire"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/pmi"
)

// DefaultEagerLimit is the protocol switch between processes unless one
// is configured: messages shorter than it travel with their payload. It
// is larger than the in-process one because a rendezvous over TCP costs a
// network round trip (tens of microseconds, the time to send a few
// hundred kilobytes), while an eager message that waits for its receive
// costs one copy; credits bound what the receiver buffers either way.
const DefaultEagerLimit = 512 << 10

// MaxEagerLimit is the largest eager limit the backend takes; a larger
// one is lowered to it.
const MaxEagerLimit = wire.MaxEagerLimit

// Config configures [Open].
type Config struct {
	// Layout says which process runs each world rank (required).
	Layout device.Layout
	// EagerLimit is the protocol switch between processes; zero means
	// DefaultEagerLimit, and more than MaxEagerLimit means MaxEagerLimit.
	EagerLimit int
	// Getenv reads the environment (nil: os.Getenv): MPGO_HOST, and
	// MPIR_CVAR_CH3_INTERFACE_HOSTNAME (see [Open]), MPGO_HEARTBEAT.
	Getenv func(string) string
	// Heartbeat, when not zero, is how long a connection to another
	// process may stay silent before that process counts as lost; zero
	// means MPGO_HEARTBEAT (a Go duration such as 10s; unset, empty or 0:
	// none). TCP notices a process that dies, or whose host does, but not
	// one that is stopped (SIGSTOP, a debugger) or wedged outside mpgo:
	// its connections stay open and its peers would wait for it forever.
	// With a heartbeat each end of a connection writes a small frame when
	// it wrote nothing for a quarter of it, from the transport's own
	// goroutines, so that a rank that computes for a long time without
	// calling mpgo is not lost; pending operations with a silent process
	// fail with an error wrapping [device.ErrPeerLost] that names it, and
	// the world aborts. Every process is watched by the next and the
	// previous in a ring, also when nobody sends it anything. The job runs
	// with process 0's setting (the others' is ignored), so that every
	// process expects of its peers the pace they keep. At least
	// [MinHeartbeat]; choose it well above the longest pause a process may
	// see (swapping, an overloaded node): 10s or more.
	Heartbeat time.Duration
	// Spin is how long the connections' readers poll their sockets,
	// non-blocking, after a rank of this process began to wait (see
	// [Device.Waiting]); zero means MPGO_TCP_SPIN (a Go duration; 0: never),
	// or unset [DefaultSpin] where the launcher says this node runs no more
	// processes than it has CPUs and no polling elsewhere (polling would
	// take cores from the other processes' work); negative: never.
	Spin time.Duration
}

// DefaultSpin is [Config.Spin]'s default where the node's processes
// each have a CPU: long enough to cover a round trip and a short
// computation between two messages, as the engine's own spin (a wait
// that outlasts it costs one network-poller wake-up, as before).
const DefaultSpin = 100 * time.Microsecond

// MinHeartbeat is the shortest [Config.Heartbeat].
const MinHeartbeat = wire.MinHeartbeat

// Key names in the launcher's key-value store.
const (
	keySecret    = "mpgo-secret"    // process 0: the job secret, hex
	keyHeartbeat = "mpgo-heartbeat" // process 0: the job's heartbeat, in nanoseconds
	keyAddr      = "mpgo-addr-"     // + process: its listening address, hex
)

// Open opens this process's TCP device of the job whose key-value store
// is kv: it listens on the interface the launcher names (loopback when
// every process is on this node; MPGO_HOST overrides), publishes its
// address in kv, process 0 a job secret too, and waits (kv.Fence) until
// every process did. Connections to the other processes open on first
// use, once the device is started. Errors wrap [device.ErrBootstrap].
func Open(kv device.KV, cfg Config) (*Device, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	procs, self := kv.Size(), kv.Rank()
	if cfg.Layout.Owner == nil || cfg.Layout.Ranks < procs {
		return nil, fmt.Errorf("%w: a layout of %d ranks over %d processes: %w", device.ErrBootstrap, cfg.Layout.Ranks, procs, device.ErrArg)
	}
	spinCfg := cfg.Spin
	if spinCfg == 0 {
		var err error
		if spinCfg, err = spinEnv(getenv); err != nil {
			return nil, err
		}
	}
	heartbeat := cfg.Heartbeat // checked in every process, process 0's used
	if heartbeat == 0 {
		var err error
		if heartbeat, err = heartbeatEnv(getenv); err != nil {
			return nil, err
		}
	}
	if heartbeat < 0 || heartbeat > 0 && heartbeat < MinHeartbeat {
		return nil, fmt.Errorf("%w: a heartbeat of %v: want at least %v: %w", device.ErrBootstrap, heartbeat, MinHeartbeat, device.ErrArg)
	}
	host, err := listenHost(kv, getenv)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("%w: listening on %s: %w", device.ErrBootstrap, host, err)
	}
	ok := false
	defer func() {
		if !ok {
			ln.Close()
		}
	}()
	put := func(key, value string) error {
		if err := kv.Put(key, value); err != nil {
			return fmt.Errorf("%w: %w", device.ErrBootstrap, err)
		}
		return nil
	}
	if err := put(keyAddr+strconv.Itoa(self), hex.EncodeToString([]byte(ln.Addr().String()))); err != nil {
		return nil, err
	}
	if err := pmi.PutSecret(kv, keySecret); err != nil {
		return nil, err
	}
	if self == 0 {
		if err := put(keyHeartbeat, strconv.FormatInt(int64(heartbeat), 10)); err != nil {
			return nil, err
		}
	}
	if err := kv.Fence(); err != nil {
		return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	secret, err := pmi.Secret(kv, keySecret)
	if err != nil {
		return nil, err
	}
	s, err := kv.Get(keyHeartbeat)
	if err != nil {
		return nil, fmt.Errorf("%w: the job's heartbeat: %w", device.ErrBootstrap, err)
	}
	ns, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ns < 0 || ns > 0 && ns < int64(MinHeartbeat) {
		return nil, fmt.Errorf("%w: process 0 published a heartbeat of %q", device.ErrBootstrap, s)
	}
	heartbeat = time.Duration(ns)
	eager := DefaultEagerLimit
	if cfg.EagerLimit > 0 {
		eager = min(cfg.EagerLimit, wire.MaxEagerLimit)
	}
	d := &Device{owner: cfg.Layout.Owner, ranks: cfg.Layout.Ranks}
	t, err := wire.New(wire.Config{
		Self: self, Procs: procs, Ranks: cfg.Layout.Ranks, Owner: d.owner,
		Secret: secret, Listener: ln, Handler: d, EagerLimit: eager, WrapError: wrapError,
		Heartbeat: heartbeat, Spin: spin(spinCfg, kv.LocalSize()),
		Addr: func(p int) (string, error) {
			v, err := kv.Get(keyAddr + strconv.Itoa(p))
			if err != nil {
				return "", err
			}
			a, err := hex.DecodeString(v)
			if err != nil {
				return "", fmt.Errorf("comm: address of process %d: %q", p, v)
			}
			return string(a), nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	d.t = t
	ok = true
	return d, nil
}

// spin is Config.Spin as the transport takes it, on a node that runs
// onNode processes of the job (0: unknown).
func spin(cfg time.Duration, onNode int) time.Duration {
	switch {
	case cfg < 0:
		return 0
	case cfg > 0:
		return cfg
	case onNode >= 1 && onNode <= runtime.NumCPU():
		return DefaultSpin
	}
	return 0
}

// spinEnv reads MPGO_TCP_SPIN as a Config.Spin: a Go duration, 0 (never:
// -1), or nothing (0: the default).
func spinEnv(getenv func(string) string) (time.Duration, error) {
	v := getenv("MPGO_TCP_SPIN")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v) // "0" too: never, below
	if err != nil || d < 0 || d > time.Second {
		return 0, fmt.Errorf("%w: MPGO_TCP_SPIN=%q: want a duration up to 1s such as 100us, or 0 for none: %w", device.ErrBootstrap, v, device.ErrArg)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}

// heartbeatEnv reads MPGO_HEARTBEAT: a Go duration, or nothing (none).
func heartbeatEnv(getenv func(string) string) (time.Duration, error) {
	v := getenv("MPGO_HEARTBEAT")
	if v == "" || v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > 0 && d < MinHeartbeat {
		return 0, fmt.Errorf("%w: MPGO_HEARTBEAT=%q: want a duration of at least %v such as 10s, or 0 for none: %w", device.ErrBootstrap, v, MinHeartbeat, device.ErrArg)
	}
	return d, nil
}

// listenHost picks the address to listen on: MPGO_HOST if set; loopback
// when every process runs on this node; otherwise the host the launcher
// names (Hydra's MPIR_CVAR_CH3_INTERFACE_HOSTNAME) or this host's name,
// resolved to an address other processes can reach.
func listenHost(kv device.KV, getenv func(string) string) (string, error) {
	if h := getenv("MPGO_HOST"); h != "" {
		return h, nil
	}
	if kv.LocalSize() == kv.Size() {
		return "127.0.0.1", nil
	}
	name := getenv("MPIR_CVAR_CH3_INTERFACE_HOSTNAME")
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("%w: this host's name: %w", device.ErrBootstrap, err)
		}
	}
	addrs, err := net.LookupHost(name)
	if err != nil || len(addrs) == 0 {
		return "", fmt.Errorf("%w: resolving %q (set MPGO_HOST to the address to listen on): %w", device.ErrBootstrap, name, err)
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && !ip.IsLoopback() {
			return a, nil
		}
	}
	return addrs[0], nil
}
