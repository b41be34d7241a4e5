//go:build linux && (amd64 || arm64)

package shm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/pmi"
)

// Key names in the launcher's key-value store.
const (
	keySecret = "mpgo-shm-secret" // process 0: the job secret, hex
	keyRing   = "mpgo-shm-ring"   // process 0: the ring size
	keyHost   = "mpgo-shm-host-"  // + process: its host, hex
	keyAddr   = "mpgo-shm-addr-"  // + process: its socket's abstract name, hex
)

// attachWithin bounds the handshakes of Open.
const attachWithin = 60 * time.Second

// Open opens this process's shared-memory device of the job whose
// key-value store is kv: it publishes its host and the name of a Unix
// socket it listens on, waits (kv.Fence) until every process did, and
// attaches the segments of the other processes of its host (and they
// its own) through authenticated connections. Every process of the job
// must call it; a process alone on its host opens a device with no peer.
// Errors wrap [device.ErrBootstrap].
func Open(kv device.KV, cfg Config) (*Device, error) {
	procs, self := kv.Size(), kv.Rank()
	if cfg.Layout.Owner == nil || cfg.Layout.Ranks < procs {
		return nil, fmt.Errorf("%w: a layout of %d ranks over %d processes: %w", device.ErrBootstrap, cfg.Layout.Ranks, procs, device.ErrArg)
	}
	ringSize := cfg.RingSize
	if ringSize == 0 {
		ringSize = DefaultRingSize
	}
	if ringSize < minRingSize || ringSize&(ringSize-1) != 0 {
		return nil, fmt.Errorf("%w: a ring of %d bytes: want a power of two of at least %d: %w", device.ErrBootstrap, ringSize, minRingSize, device.ErrArg)
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	host := cfg.Host
	if host == "" {
		host = pmi.HostID()
	}
	var nameBytes [12]byte
	rand.Read(nameBytes[:])
	name := "@mpgo-shm-" + hex.EncodeToString(nameBytes[:])
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("%w: listening on a Unix socket: %w", device.ErrBootstrap, err)
	}
	defer ln.Close() // nobody attaches after Open
	put := func(key, value string) error {
		if err := kv.Put(key, value); err != nil {
			return fmt.Errorf("%w: %w", device.ErrBootstrap, err)
		}
		return nil
	}
	if err := put(keyHost+strconv.Itoa(self), hex.EncodeToString([]byte(host))); err != nil {
		return nil, err
	}
	if err := put(keyAddr+strconv.Itoa(self), hex.EncodeToString([]byte(name))); err != nil {
		return nil, err
	}
	if err := pmi.PutSecret(kv, keySecret); err != nil {
		return nil, err
	}
	if self == 0 {
		if err := put(keyRing, strconv.Itoa(ringSize)); err != nil {
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
	get := func(key string) (string, error) {
		v, err := kv.Get(key)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %w", device.ErrBootstrap, key, err)
		}
		b, err := hex.DecodeString(v)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %q", device.ErrBootstrap, key, v)
		}
		return string(b), nil
	}
	v, err := kv.Get(keyRing)
	if ringSize, err = strconv.Atoi(v); err != nil || ringSize < minRingSize || ringSize&(ringSize-1) != 0 {
		return nil, fmt.Errorf("%w: process 0 published a ring size of %q", device.ErrBootstrap, v)
	}
	var local []int // the processes of this host, ascending
	for p := range procs {
		h, err := get(keyHost + strconv.Itoa(p))
		if err != nil {
			return nil, err
		}
		if h == host {
			local = append(local, p)
		}
	}
	eager := cfg.EagerLimit
	if v := getenv("MPGO_SHM_EAGER"); v != "" && eager <= 0 {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("shm: MPGO_SHM_EAGER=%q: want a positive number of bytes: %w", v, device.ErrArg)
		}
		eager = n
	}
	pipeAt := cfg.PipeLimit
	if v := getenv("MPGO_SHM_PIPE"); v != "" && pipeAt == 0 {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("shm: MPGO_SHM_PIPE=%q: want a number of bytes (0: never): %w", v, device.ErrArg)
		}
		pipeAt = n
		if n == 0 {
			pipeAt = -1
		}
	}
	if pipeAt == 0 {
		pipeAt = DefaultPipeLimit
	}
	ringEager := eager
	if eager <= 0 {
		eager, ringEager = DefaultEagerLimit, DefaultRingEagerLimit
	}
	carried := maxRecord(ringSize) - cell + 1
	eager, ringEager = min(eager, carried), min(ringEager, carried)
	d := &Device{self: self, layout: cfg.Layout, eager: eager, ringEager: ringEager, chunk: ringSize / 4, byProc: map[int]*peer{},
		spin: defaultSpins, kick: make(chan struct{}, 1), loopDone: make(chan struct{}),
		sends: map[uint64]*outRV{}, pipes: map[pipeKey]*pipe{}}
	d.noCMA.Store(cfg.NoCMA || getenv("MPGO_SHM_CMA") == "0")
	d.split = getenv("MPGO_SHM_SPLIT") != "0"
	if pipeAt > 0 {
		d.pipeLimit = pipeAt
	}
	ranks := 0
	for r := range cfg.Layout.Ranks {
		if slices.Contains(local, cfg.Layout.Owner(r)) {
			ranks++
		}
	}
	var spin *spins // MPGO_SHM_SPIN's windows, which the cores do not decide
	if v := getenv("MPGO_SHM_SPIN"); v != "" {
		t, err := time.ParseDuration(v)
		if err != nil || t < 0 {
			return nil, fmt.Errorf("%w: MPGO_SHM_SPIN=%q: want a duration such as 50us: %w", device.ErrBootstrap, v, device.ErrArg)
		}
		spin = &spins{rank: t, loop: 2 * t}
	}
	if len(local) == 1 {
		return d, nil
	}
	if err := d.attach(local, ringSize, secret, ln, get); err != nil {
		d.Close()
		return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	if ranks > d.cores() {
		d.pipeLimit = 0 // the two copies would take turns on a core
		d.split = false // as would the two parts of a split read
	}
	switch {
	case spin != nil:
		d.spin = *spin
	case ranks > yieldOver*d.cores():
		d.spin = spins{} // oversubscribed: poll once, then sleep
	case ranks > d.cores():
		d.spin = yieldSpins // oversubscribed: poll by yielding the core, briefly
	}
	return d, nil
}

// cores counts the CPUs that the processes of the host may run on, all
// together: the union of their affinity masks, which each wrote in its
// segment. A process's own mask is not the answer: a launcher that binds
// each process to a core of its own (mpiexec -bind-to core, srun
// --cpu-bind=cores, Open MPI's default for two processes) leaves each one
// CPU, although the host's ranks do not outnumber the cores they run on;
// taken for oversubscribed, they slept between messages and a ping-pong
// cost 60 us instead of 0.2-0.5. A job confined to fewer CPUs than the
// host has (taskset, a cgroup's cpuset) is judged by the CPUs it has.
func (d *Device) cores() int {
	all := d.seg.cpus()
	for _, p := range d.peers {
		all.or(p.seg.cpus())
	}
	return max(all.count(), 1)
}

// attach creates this process's segment and attaches the segments of the
// other processes of the host (local, ascending), dialing those before
// this one and accepting those after it on ln.
func (d *Device) attach(local []int, ringSize int, secret []byte, ln *net.UnixListener, get func(string) (string, error)) error {
	size := segmentSize(len(local), ringSize)
	fd, err := memfd("mpgo-shm", size)
	if err != nil {
		return err
	}
	defer syscall.Close(fd) // the peers hold their mappings
	mem, err := mapShared(fd, size)
	if err != nil {
		return err
	}
	d.seg = segment{mem: mem, ringSize: ringSize}
	d.seg.setCPUs(affinity()) // before any peer maps it: the handshake hands the segment over
	if d.bell, d.bellFD, err = eventfd(); err != nil {
		return err
	}
	index := slices.Index(local, d.self)
	hl := &hello{self: d.self, secret: secret, fd: fd, bell: d.bellFD, segSize: size}
	deadline := time.Now().Add(attachWithin)
	later := local[index+1:]
	type result struct {
		as  []*attached
		err error
	}
	accepted := make(chan result, 1)
	go func() {
		var as []*attached
		want := func(p int) bool {
			return slices.Contains(later, p) && !slices.ContainsFunc(as, func(a *attached) bool { return a.proc == p })
		}
		ln.SetDeadline(deadline)
		for len(as) < len(later) {
			c, err := ln.AcceptUnix()
			if err != nil {
				accepted <- result{as, fmt.Errorf("waiting for %d processes of this host to attach: %w", len(later)-len(as), err)}
				return
			}
			by := time.Now().Add(5 * time.Second) // a stranger does not hold up the others
			if deadline.Before(by) {
				by = deadline
			}
			a, err := hl.accept(c, want, by)
			if err != nil {
				c.Close() // not one of the job's: it attaches nothing
				continue
			}
			as = append(as, a)
		}
		accepted <- result{as, nil}
	}()
	var as []*attached
	var errs []error
	for _, p := range local[:index] {
		name, err := get(keyAddr + strconv.Itoa(p))
		if err != nil {
			errs = append(errs, err)
			break
		}
		a, err := hl.dial(name, p, deadline)
		if err != nil {
			errs = append(errs, err)
			break
		}
		as = append(as, a)
	}
	if len(errs) > 0 {
		ln.Close() // the acceptor gives up too
	}
	r := <-accepted
	as = append(as, r.as...)
	errs = append(errs, r.err)
	populated := 2*len(as)*(ringHeader+ringSize) <= populateBudget
	for _, a := range as {
		i := slices.Index(local, a.proc)
		ps := segment{mem: a.mem, ringSize: ringSize}
		p := &peer{proc: a.proc, pid: a.pid, conn: a.conn, done: make(chan struct{}), seg: ps, bell: a.bell, out: ps.ring(index), in: d.seg.ring(i)}
		if populated {
			ps.populate(index)
			d.seg.populate(i)
		}
		d.peers = append(d.peers, p)
		d.byProc[a.proc] = p
	}
	return errors.Join(errs...)
}
