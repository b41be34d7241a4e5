package wire_test

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpgo/mpgo/backend/tcp/internal/wire"
)

// silentProcess plays process self of a job of procs that passes every
// handshake and then goes silent, as a process does that is stopped
// (SIGSTOP) or wedged: its kernel keeps the connections open, nothing
// more comes. It accepts on ln, and dials each address in dial (process
// to → address). Its connections close when the test ends.
func silentProcess(t *testing.T, ln net.Listener, self, procs int, dial map[int]string) {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	keep := func(nc net.Conn) {
		mu.Lock()
		conns = append(conns, nc)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			keep(nc)
			wire.AcceptHandshake(nc, testSecret, self, procs, 5*time.Second, func(wire.Hello) (wire.Terms, error) {
				return wire.Terms{Window: 1 << 20, Chunk: 1 << 20}, nil
			})
		}
	}()
	for to, addr := range dial {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Errorf("silent process %d dialing %d: %v", self, to, err)
				return
			}
			keep(nc)
			if _, err := wire.DialHandshake(nc, testSecret, self, to, 1<<10, 5*time.Second); err != nil {
				t.Errorf("silent process %d dialing %d: %v", self, to, err)
			}
		}()
	}
}

// A process that goes silent is lost within about a heartbeat, on both
// kinds of connection: process 0 dialed it (the heartbeat ring's
// 0 → 1), and it dialed process 2 (1 → 2). Nobody sent it a message:
// the ring alone watches it. The live processes do not lose each other.
func TestHeartbeatSilentProcess(t *testing.T) {
	t.Run("waiting", func(t *testing.T) { heartbeatSilentProcess(t, false) })
	// Readers that poll all the time, as if ranks kept waiting: a poll
	// ends after Config.Spin, and the read that blocks then sees the
	// heartbeat's deadline.
	t.Run("polling", func(t *testing.T) { heartbeatSilentProcess(t, true) })
}

func heartbeatSilentProcess(t *testing.T, polling bool) {
	const n, heartbeat = 3, 100 * time.Millisecond
	lns, addrs := listeners(t, n)
	silentProcess(t, lns[1], 1, n, map[int]string{2: addrs[2]})
	withHeartbeat := func(i int, c *wire.Config) {
		c.Heartbeat = heartbeat
		if polling {
			c.Spin = 5 * time.Millisecond
		}
	}
	nodes := []*node{newNode(t, 0, lns, addrs, withHeartbeat), newNode(t, 2, lns, addrs, withHeartbeat)}
	if polling {
		for _, nd := range nodes {
			nd.t.PollAlways()
		}
	}
	start := time.Now()
	startAll(t, nodes)
	defer closeAll(nodes)
	for _, nd := range nodes {
		waitFor(t, "process 1 lost", func() bool { return nd.lostErr(1) != nil })
		err := nd.lostErr(1)
		if !errors.Is(err, wire.ErrPeerGone) || !strings.Contains(err.Error(), "sent nothing") {
			t.Errorf("process %d lost process 1 with %v, want ErrPeerGone for its silence", nd.self, err)
		}
		if nd.lostErr(2-nd.self) != nil {
			t.Errorf("process %d lost live process %d: %v", nd.self, 2-nd.self, nd.lostErr(2-nd.self))
		}
	}
	if d := time.Since(start); d > 10*heartbeat {
		t.Errorf("losing a silent process took %v with a heartbeat of %v", d, heartbeat)
	}
	if err := wait(t, send(t, nodes[0], 1, wire.Header{Src: 0, Dst: 1}, []byte("x"))); !errors.Is(err, wire.ErrPeerGone) {
		t.Errorf("send to a silent process: %v, want ErrPeerGone", err)
	}
}

// Connections that carry nothing for many heartbeats stay up: both ends
// write pings when idle, and read the other's. Messages flow before and
// after, and the close is clean.
func TestHeartbeatIdle(t *testing.T) {
	const heartbeat = 300 * time.Millisecond
	nodes := cluster(t, 3, func(i int, c *wire.Config) { c.Heartbeat = heartbeat })
	exchange := func() {
		for i, nd := range nodes {
			for j := range nodes {
				if i != j {
					if err := wait(t, send(t, nd, j, wire.Header{Src: i, Dst: j}, pattern(100, i))); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	exchange()
	time.Sleep(6 * heartbeat)
	exchange()
	closeAll(nodes)
	for _, nd := range nodes {
		if len(nd.lost) != 0 {
			t.Errorf("process %d lost %v", nd.self, nd.lost)
		}
	}
}

// With a heartbeat, Start fails when the next process in the ring never
// answers (here: it listens, but never accepts), rather than leaving it
// unwatched.
func TestHeartbeatStartNeedsTheRing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	nd := &node{lost: map[int]error{}, arrived: make(chan struct{}, 1)}
	tr, err := wire.New(wire.Config{Self: 0, Procs: 2, Ranks: 2, Owner: func(r int) int { return r },
		Secret: testSecret, Listener: ln, Handler: nd, Heartbeat: time.Second,
		Addr:             func(int) (string, error) { return mute.Addr().String(), nil },
		HandshakeTimeout: 100 * time.Millisecond, DialTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Abort()
	if err := tr.Start(); !errors.Is(err, wire.ErrPeerGone) {
		t.Errorf("Start with a mute next process: %v, want ErrPeerGone", err)
	}
}

func TestHeartbeatConfig(t *testing.T) {
	for _, hb := range []time.Duration{-time.Second, wire.MinHeartbeat - 1} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, err = wire.New(wire.Config{Self: 0, Procs: 2, Ranks: 2, Owner: func(r int) int { return r },
			Secret: testSecret, Listener: ln, Handler: &node{}, Heartbeat: hb,
			Addr: func(int) (string, error) { return "", nil }})
		ln.Close()
		if !errors.Is(err, wire.ErrConfig) {
			t.Errorf("heartbeat %v: %v, want ErrConfig", hb, err)
		}
	}
}
