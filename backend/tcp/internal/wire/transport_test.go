package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mpgo/mpgo/backend/tcp/internal/wire"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// arrival is a message a test node received, with its payload.
type arrival struct {
	h    wire.Header
	data []byte
	err  error
}

// node is one process of an in-test job: a transport and a handler that
// pulls every message as it arrives (inline when eager) unless hold is
// set, in which case messages wait in held until the test pulls them.
type node struct {
	t    *wire.Transport
	self int
	hold bool

	mu       sync.Mutex
	got      []arrival
	held     []*wire.Message
	lost     map[int]error
	finished []int
	pulls    sync.WaitGroup
	arrived  chan struct{}
}

func (n *node) Arrive(h *wire.Header, m *wire.Message) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	defer func() {
		select {
		case n.arrived <- struct{}{}:
		default:
		}
	}()
	if n.hold {
		n.held = append(n.held, m)
		n.got = append(n.got, arrival{h: *h})
		return nil
	}
	buf := make([]byte, m.Size())
	i := len(n.got)
	n.got = append(n.got, arrival{h: *h})
	if !m.Rendezvous() {
		n.got[i].err = m.PullArriving(buf)
		n.got[i].data = buf
		return nil
	}
	n.pulls.Add(1)
	go func() {
		defer n.pulls.Done()
		err := m.Pull(buf)
		n.mu.Lock()
		n.got[i].data, n.got[i].err = buf, err
		n.mu.Unlock()
	}()
	return nil
}

func (n *node) Finished(proc int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.finished = append(n.finished, proc)
}

func (n *node) Lost(proc int, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lost[proc] = err
}

func (n *node) arrivals() []arrival {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]arrival(nil), n.got...)
}

func (n *node) lostErr(proc int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lost[proc]
}

// cluster starts n transports on loopback, one rank per process.
func cluster(t *testing.T, n int, tweak func(i int, c *wire.Config)) []*node {
	t.Helper()
	lns, addrs := listeners(t, n)
	nodes := make([]*node, n)
	for i := range nodes {
		nodes[i] = newNode(t, i, lns, addrs, tweak)
	}
	startAll(t, nodes)
	return nodes
}

// listeners opens n loopback listeners: the job's processes' sockets.
func listeners(t *testing.T, n int) ([]net.Listener, []string) {
	t.Helper()
	lns := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	return lns, addrs
}

// newNode makes process i of the job whose processes listen on lns (at
// addrs), its configuration changed by tweak (when not nil).
func newNode(t *testing.T, i int, lns []net.Listener, addrs []string, tweak func(i int, c *wire.Config)) *node {
	t.Helper()
	n := len(lns)
	nd := &node{self: i, lost: map[int]error{}, arrived: make(chan struct{}, 1)}
	cfg := wire.Config{Self: i, Procs: n, Ranks: n, Owner: func(r int) int { return r },
		Secret: testSecret, Listener: lns[i], Handler: nd,
		Addr:             func(p int) (string, error) { return addrs[p], nil },
		HandshakeTimeout: 2 * time.Second, CloseTimeout: 2 * time.Second}
	if i%2 == 1 {
		// Odd processes' readers poll their sockets all the time (poll.go),
		// even ones wait in the network poller: every test runs both.
		cfg.Spin = time.Millisecond
	}
	if tweak != nil {
		tweak(i, &cfg)
	}
	var err error
	if nd.t, err = wire.New(cfg); err != nil {
		t.Fatal(err)
	}
	if i%2 == 1 {
		nd.t.PollAlways()
	}
	return nd
}

// startAll starts the nodes' transports, concurrently: with a heartbeat,
// Start waits for the ring's neighbours to start too.
func startAll(t *testing.T, nodes []*node) {
	t.Helper()
	var wg sync.WaitGroup
	for _, nd := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := nd.t.Start(); err != nil {
				t.Errorf("process %d: Start: %v", nd.self, err)
			}
		}()
	}
	wg.Wait()
}

func closeAll(nodes []*node) {
	var wg sync.WaitGroup
	for _, nd := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); nd.t.Close() }()
	}
	wg.Wait()
	for _, nd := range nodes {
		nd.pulls.Wait()
	}
}

// pattern fills a payload that names its message.
func pattern(n int, id int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(id*7 + i*13)
	}
	return b
}

// holdArrivals makes nd keep what arrives instead of pulling it.
func (nd *node) holdArrivals() {
	nd.mu.Lock()
	nd.hold = true
	nd.mu.Unlock()
}

// flood makes node 0 hold what arrives and node 1 send it count messages
// of size bytes (tag i carries pattern(size, i)); it returns their done
// channels.
func flood(t *testing.T, nodes []*node, count, size int) []chan error {
	t.Helper()
	nodes[0].holdArrivals()
	var dones []chan error
	for i := range count {
		dones = append(dones, send(t, nodes[1], 0, wire.Header{Src: 1, Tag: i}, pattern(size, i)))
	}
	return dones
}

// send sends h and data to process to and returns a channel with done's
// error.
func send(t *testing.T, nd *node, to int, h wire.Header, data []byte) chan error {
	t.Helper()
	ch := make(chan error, 1)
	if err := nd.t.Send(to, h, data, func(err error) { ch <- err }); err != nil {
		ch <- fmt.Errorf("Send: %w", err)
	}
	return ch
}

// waitAll waits for every send of dones (send) and fails the test at the
// first that failed.
func waitAll(t *testing.T, dones []chan error) {
	t.Helper()
	for _, ch := range dones {
		if err := wait(t, ch); err != nil {
			t.Fatal(err)
		}
	}
}

func wait(t *testing.T, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("send never completed")
		return nil
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

var sizes = []int{0, 1, 100, 4 << 10, 5 << 10, 64<<10 - 1, 64 << 10, 1 << 20, 3<<20 + 17}

// Every size, eager and rendezvous, synchronous or not, from two senders:
// payloads intact, each sender's messages in order, envelopes carried.
func TestTransportMessages(t *testing.T) {
	nodes := cluster(t, 3, nil)
	defer closeAll(nodes)
	var dones []chan error
	for _, from := range []int{1, 2} {
		for i, size := range sizes {
			h := wire.Header{Src: from, Dst: 0, Source: from + 10, Tag: i, Context: 0xc0ffee, Type: 3}
			if i%4 == 3 {
				h.Flags = wire.FlagSync
			}
			dones = append(dones, send(t, nodes[from], 0, h, pattern(size, from*100+i)))
		}
	}
	waitAll(t, dones)
	waitFor(t, "every message", func() bool { return len(nodes[0].arrivals()) == 2*len(sizes) })
	nodes[0].pulls.Wait() // no Add after this: every message arrived
	got := nodes[0].arrivals()
	if len(got) != 2*len(sizes) {
		t.Fatalf("%d messages arrived, want %d", len(got), 2*len(sizes))
	}
	next := map[int]int{1: 0, 2: 0}
	for _, a := range got {
		i := next[a.h.Src]
		next[a.h.Src]++
		if a.err != nil {
			t.Errorf("from %d #%d: %v", a.h.Src, i, a.err)
			continue
		}
		if a.h.Tag != i || a.h.Source != a.h.Src+10 || a.h.Context != 0xc0ffee || a.h.Type != 3 || a.h.Dst != 0 {
			t.Errorf("from %d #%d: header %+v", a.h.Src, i, a.h)
		}
		if !bytes.Equal(a.data, pattern(sizes[i], a.h.Src*100+i)) {
			t.Errorf("from %d #%d: payload of %d bytes differs", a.h.Src, i, sizes[i])
		}
	}
}

// A flood of small messages to a receiver that takes none of them: the
// sender stops at the credit window, and continues as they are taken.
func TestTransportCredits(t *testing.T) {
	const window, size, count = 64 << 10, 1000, 500
	nodes := cluster(t, 2, func(i int, c *wire.Config) { c.Window = window; c.EagerLimit = 4096 })
	defer closeAll(nodes)
	dones := flood(t, nodes, count, size)
	maxHeld := window / (size + wire.MessageCost)
	waitFor(t, "the window to fill", func() bool { return len(nodes[0].arrivals()) >= maxHeld-1 })
	time.Sleep(50 * time.Millisecond)
	if n := len(nodes[0].arrivals()); n > maxHeld {
		t.Fatalf("%d messages of %d bytes arrived with a window of %d: want at most %d", n, size, window, maxHeld)
	}
	for taken := 0; taken < count; {
		nodes[0].mu.Lock()
		held := nodes[0].held
		nodes[0].held = nil
		nodes[0].mu.Unlock()
		for _, m := range held {
			buf := make([]byte, m.Size())
			if err := m.Pull(buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf, pattern(size, taken)) {
				t.Fatalf("message %d differs", taken)
			}
			taken++
		}
		if len(held) == 0 {
			select {
			case <-nodes[0].arrived:
			case <-time.After(10 * time.Second):
				t.Fatalf("stuck after %d of %d messages", taken, count)
			}
		}
	}
	waitAll(t, dones)
}

// Messages at or above the eager limit go eagerly while the credit
// covers them, by rendezvous once it does not: what the receiver buffers
// for receives not posted yet stays within the window.
func TestTransportLargeEager(t *testing.T) {
	const window, size, count = 8 << 20, 3 << 20, 5
	nodes := cluster(t, 2, func(i int, c *wire.Config) { c.Window = window; c.EagerLimit = 64 << 10 })
	defer closeAll(nodes)
	dones := flood(t, nodes, count, size)
	// Two fit in the window (3 MiB + MessageCost each); the third waits
	// for a CTS, and so do the ones after it (they leave in order).
	for i := range 2 {
		if err := wait(t, dones[i]); err != nil {
			t.Fatalf("eager send %d: %v", i, err)
		}
	}
	waitFor(t, "every message", func() bool { return len(nodes[0].arrivals()) == count })
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-dones[2]:
		t.Fatalf("send 2 completed (%v) before its receive: it went eagerly beyond the window", err)
	default:
	}
	nodes[0].mu.Lock()
	held := nodes[0].held
	nodes[0].held = nil
	nodes[0].mu.Unlock()
	buffered := 0
	for i, m := range held {
		if want := i >= 2; m.Rendezvous() != want {
			t.Errorf("message %d: rendezvous %v, want %v", i, m.Rendezvous(), want)
		}
		if !m.Rendezvous() {
			buffered += m.Size()
		}
	}
	if buffered > window {
		t.Errorf("%d payload bytes buffered with a window of %d", buffered, window)
	}
	pulled := make(chan error, len(held))
	for i, m := range held {
		go func() {
			buf := make([]byte, m.Size())
			err := m.Pull(buf)
			if err == nil && !bytes.Equal(buf, pattern(size, i)) {
				err = fmt.Errorf("message %d differs", i)
			}
			pulled <- err
		}()
	}
	for range held {
		if err := <-pulled; err != nil {
			t.Error(err)
		}
	}
	waitAll(t, dones[2:]) // the first two were waited for above
}

// A process that dies: the others learn it, pending transfers with it
// fail, later sends to it fail.
func TestTransportPeerLost(t *testing.T) {
	nodes := cluster(t, 3, nil)
	defer closeAll(nodes)
	nodes[0].holdArrivals()
	// 1 → 0 rendezvous (synchronous, so it cannot go eagerly), held by 0:
	// the sender waits for a CTS.
	pending := send(t, nodes[1], 0, wire.Header{Src: 1, Flags: wire.FlagSync}, pattern(1<<20, 1))
	// 0 → 2 eager, so 2 knows 0 too.
	if err := wait(t, send(t, nodes[0], 2, wire.Header{Src: 0, Dst: 2}, []byte("hi"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rts", func() bool { return len(nodes[0].arrivals()) == 1 })
	nodes[0].t.Abort()
	if err := wait(t, pending); !errors.Is(err, wire.ErrPeerGone) {
		t.Errorf("pending send to a lost process: %v", err)
	}
	waitFor(t, "Lost(0) at 1 and 2", func() bool { return nodes[1].lostErr(0) != nil && nodes[2].lostErr(0) != nil })
	if err := wait(t, send(t, nodes[2], 0, wire.Header{Src: 2}, []byte("x"))); !errors.Is(err, wire.ErrPeerGone) {
		t.Errorf("send to a lost process: %v", err)
	}
	// The pull of the held message fails too (its connection is gone).
	nodes[0].mu.Lock()
	held := nodes[0].held
	nodes[0].mu.Unlock()
	if err := held[0].Pull(make([]byte, 1<<20)); err == nil {
		t.Error("pull after abort succeeded")
	}
}

// Graceful close: nobody is reported lost.
func TestTransportClose(t *testing.T) {
	nodes := cluster(t, 4, nil)
	for i, nd := range nodes {
		for j := range nodes {
			if i != j {
				if err := wait(t, send(t, nd, j, wire.Header{Src: i, Dst: j}, pattern(100, i))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	closeAll(nodes)
	for _, nd := range nodes {
		if len(nd.lost) != 0 {
			t.Errorf("process %d saw %v lost", nd.self, nd.lost)
		}
	}
	if err := nodes[0].t.Send(1, wire.Header{}, nil, func(error) {}); !errors.Is(err, wire.ErrClosed) {
		t.Errorf("send after close: %v", err)
	}
}

// One process closes while another still runs: sends to it fail, the
// other hears it finished (it had sent messages), and is not told it was
// lost.
func TestTransportPeerFinished(t *testing.T) {
	nodes := cluster(t, 2, nil)
	defer closeAll(nodes)
	if err := wait(t, send(t, nodes[1], 0, wire.Header{Src: 1}, []byte("bye"))); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, send(t, nodes[0], 1, wire.Header{Src: 0, Dst: 1}, []byte("bye"))); err != nil {
		t.Fatal(err)
	}
	// A correct program finishes once it has received what was sent to
	// it: until then, process 0 may still be accepting process 1's
	// connection, and a process that closes mid-handshake is one its
	// peer loses.
	waitFor(t, "process 1's message at 0", func() bool { return len(nodes[0].arrivals()) == 1 })
	nodes[0].t.Close()
	waitFor(t, "the fin", func() bool {
		err := nodes[1].t.Send(0, wire.Header{Src: 1}, nil, func(error) {})
		return errors.Is(err, wire.ErrPeerGone)
	})
	waitFor(t, "process 0 finished at 1", func() bool {
		nodes[1].mu.Lock()
		defer nodes[1].mu.Unlock()
		return len(nodes[1].finished) == 1 && nodes[1].finished[0] == 0
	})
	if err := nodes[1].lostErr(0); err != nil {
		t.Errorf("a clean close reported as lost: %v", err)
	}
	nodes[0].mu.Lock()
	defer nodes[0].mu.Unlock()
	if len(nodes[0].finished) != 0 {
		t.Errorf("process 0, closing, heard %v finish", nodes[0].finished)
	}
}

// A receiver whose readers poll (Config.Spin, poll.go) reads every size,
// eager and rendezvous, intact and in order, with its polls; one whose
// readers do not poll never does.
func TestTransportPolling(t *testing.T) {
	nodes := cluster(t, 2, nil) // process 1 polls, process 0 does not
	defer closeAll(nodes)
	for _, to := range []int{0, 1} {
		from := 1 - to
		var dones []chan error
		for i, size := range sizes {
			h := wire.Header{Src: from, Dst: to, Tag: i}
			if i%4 == 3 {
				h.Flags = wire.FlagSync
			}
			dones = append(dones, send(t, nodes[from], to, h, pattern(size, i)))
		}
		waitAll(t, dones)
		waitFor(t, "every message", func() bool { return len(nodes[to].arrivals()) == len(sizes) })
		nodes[to].pulls.Wait()
		for i, a := range nodes[to].arrivals() {
			if a.err != nil || a.h.Tag != i || !bytes.Equal(a.data, pattern(sizes[i], i)) {
				t.Errorf("to %d #%d (tag %d, %d bytes): err %v, payload intact %v", to, i, a.h.Tag, sizes[i], a.err, bytes.Equal(a.data, pattern(sizes[i], i)))
			}
		}
	}
	if n := nodes[1].t.Polled(); n == 0 {
		t.Errorf("process 1 polls, but none of its reads was a poll's")
	}
	if n := nodes[0].t.Polled(); n != 0 {
		t.Errorf("process 0 does not poll, but %d of its reads were a poll's", n)
	}
}

// A process that hears from many others polls at most MaxPollers of its
// sockets at once, and reads every message all the same.
func TestTransportPollersBounded(t *testing.T) {
	const procs, count = 6, 200
	nodes := cluster(t, procs, func(i int, c *wire.Config) {
		if i == 1 {
			c.Spin = 10 * time.Millisecond // polls of 10 ms: its readers all want to poll at once
		}
	})
	defer closeAll(nodes)
	var dones []chan error
	for i := range count {
		if i == 1 {
			// Every connection is open and its reader polls for its
			// next frame: without the bound all of them would.
			waitAll(t, dones)
			dones = nil
			time.Sleep(5 * time.Millisecond)
		}
		for from := range procs {
			if from != 1 {
				dones = append(dones, send(t, nodes[from], 1, wire.Header{Src: from, Dst: 1, Tag: i}, pattern(64, i)))
			}
		}
	}
	waitAll(t, dones)
	waitFor(t, "every message", func() bool { return len(nodes[1].arrivals()) == (procs-1)*count })
	nodes[1].pulls.Wait()
	next := map[int]int{}
	for _, a := range nodes[1].arrivals() {
		i := next[a.h.Src]
		next[a.h.Src]++
		if a.err != nil || a.h.Tag != i || !bytes.Equal(a.data, pattern(64, i)) {
			t.Fatalf("from %d #%d: tag %d, err %v", a.h.Src, i, a.h.Tag, a.err)
		}
	}
	if n := nodes[1].t.PollersMax(); n < 2 || n > wire.MaxPollers {
		t.Errorf("at most %d readers polled at once, want 2 to %d", n, wire.MaxPollers)
	}
}
