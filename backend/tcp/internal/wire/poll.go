package wire

import (
	"errors"
	"runtime"
	"syscall"
	"time"
)

// Polling the sockets while ranks wait.
//
// A reader goroutine that waits for its socket in the runtime's network
// poller is woken by whichever thread next polls the network: a thread
// that an idle P left blocked in epoll_wait, woken by the kernel, then
// handed the goroutine, which readies the rank it completes. Between two
// processes on this machine's loopback that path cost a ping-pong of 8
// bytes about 27 µs one way with plain Go sockets, against 5 µs for a
// reader that polls its socket with non-blocking reads (a throwaway
// program; UCX's TCP transport, which MPICH uses here, polls too: 6 µs).
//
// So, while a rank of this process waits for the transport (Waiting,
// called by the device's Drive before the rank parks), the readers of
// incoming messages poll their sockets with non-blocking reads, yielding
// their P between polls (the rank they wake runs on it), for up to
// Config.Spin after the last such call; then they wait in the network
// poller again. A rank that computes calls nothing, so a process whose
// ranks compute burns no core on polling. The readers of the frames that
// steer this process's own sends (clear-to-send, credit) poll too: a
// rendezvous waits for its clear-to-send (polling them as well changed
// nothing measurable on small messages, where each poll round costs one
// more system call).
//
// A poll lasts at most Config.Spin (and never more than pollEpisode),
// and then the read blocks in the poller once: a socket that stays quiet
// stops costing a system call every round, and the heartbeat's read
// deadline is seen there, so a peer that stays silent is found lost even
// while other ranks keep the readers polling. And at most maxPollers
// readers of a process poll at once: each poll round of a reader is a
// system call, so a process connected to many others would otherwise
// spend a round trip's time on empty sockets before it reached the one
// with the answer; the others wait in the network poller meanwhile.

// pollEpisode bounds one read's polling (see above).
const pollEpisode = 10 * time.Millisecond

// maxPollers is how many readers of a transport poll at once (see above).
const maxPollers = 4

// Waiting tells the transport that a rank of this process is about to
// wait for it: the readers poll their sockets for Config.Spin from now.
// Cheap (a clock read and a store); a no-op unless Config.Spin is set.
func (t *Transport) Waiting() {
	if t.cfg.Spin > 0 {
		t.hot.Store(int64(time.Since(epoch) + t.cfg.Spin))
	}
}

// polling reports whether the readers poll now: a rank waited within
// Config.Spin.
func (t *Transport) polling() bool {
	return t.cfg.Spin > 0 && int64(time.Since(epoch)) < t.hot.Load()
}

// poll reads into p with non-blocking reads while the transport is
// polling (for at most Config.Spin, and pollEpisode), yielding the P
// between them, if fewer than maxPollers readers poll already. It
// returns the bytes read, or ok false when it read none: the caller then
// reads as usual (blocking in the network poller), which also reports
// any error the socket has. Reader only.
func (c *conn) poll(p []byte) (n int, ok bool) {
	if c.raw == nil || len(p) == 0 {
		return 0, false
	}
	t := c.t
	if t.pollers.Add(1) > maxPollers {
		t.pollers.Add(-1)
		return 0, false
	}
	for n := t.pollers.Load(); ; { // the high-water mark (tests)
		m := t.pollersMax.Load()
		if n <= m || t.pollersMax.CompareAndSwap(m, n) {
			break
		}
	}
	pr := &c.pr
	pr.buf = p
	defer func() { pr.buf = nil; t.pollers.Add(-1) }()
	start, limit := time.Now(), min(t.cfg.Spin, pollEpisode)
	for i := 0; ; i++ {
		pr.n, pr.err, pr.ready = 0, syscall.EAGAIN, false
		if c.raw.Control(pr.check); pr.ready && c.raw.Read(pr.read) != nil {
			return 0, false
		}
		if pr.n > 0 {
			return pr.n, true
		}
		if !errors.Is(pr.err, syscall.EAGAIN) || !t.polling() {
			return 0, false
		}
		if i%16 == 15 && time.Since(start) > limit {
			return 0, false
		}
		runtime.Gosched()
	}
}

// poller is a reader's state for poll, with the functions it hands the
// socket's RawConn made once (closures made at each call would allocate).
type poller struct {
	buf   []byte
	ready bool
	n     int
	err   error
	check func(fd uintptr)      // sets ready
	read  func(fd uintptr) bool // reads into buf: n, err
}

func (pr *poller) init() {
	pr.check = func(fd uintptr) { pr.ready = readable(fd) }
	pr.read = func(fd uintptr) bool {
		pr.n, pr.err = syscall.Read(int(fd), pr.buf)
		return true
	}
}
