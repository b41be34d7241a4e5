package coll

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// A fake world for the algorithms: n peers in one process, connected by
// unbounded queues, one per ordered pair, so that every send completes at
// once (eager) and receives take messages in order per sender, as MPI
// matches a receive from one source with any tag.

var (
	errArg      = errors.New("fake: bad argument")
	errTruncate = errors.New("fake: truncated")
	errType     = errors.New("fake: type")
	errRank     = errors.New("fake: rank")
	errClosed   = errors.New("fake: world closed")
	fakeErrors  = Errors{Arg: errArg, Truncate: errTruncate, Type: errType, Rank: errRank}
)

type fakeMsg struct {
	tag  int
	data []byte
}

// queue is one sender's messages to one receiver.
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	msgs   []fakeMsg
	closed bool
}

type fakeWorld struct {
	n  int
	qs [][]*queue // qs[src][dst]
}

func newFakeWorld(n int) *fakeWorld {
	w := &fakeWorld{n: n, qs: make([][]*queue, n)}
	for i := range w.qs {
		w.qs[i] = make([]*queue, n)
		for j := range w.qs[i] {
			q := &queue{}
			q.cond = sync.NewCond(&q.mu)
			w.qs[i][j] = q
		}
	}
	return w
}

// close fails every receive that waits or will wait on an empty queue: the
// test's stand-in for comm's deadlock detector.
func (w *fakeWorld) close() {
	for _, row := range w.qs {
		for _, q := range row {
			q.mu.Lock()
			q.closed = true
			q.cond.Broadcast()
			q.mu.Unlock()
		}
	}
}

// fakePeer is rank me of a fakeWorld.
type fakePeer struct {
	w  *fakeWorld
	me int
}

var _ Peer = (*fakePeer)(nil)

func (p *fakePeer) Rank() int { return p.me }
func (p *fakePeer) Size() int { return p.w.n }

func (p *fakePeer) Send(buf []byte, dst, tag int) error {
	if dst < 0 || dst >= p.w.n {
		return fmt.Errorf("fake: send to %d: %w", dst, errRank)
	}
	q := p.w.qs[p.me][dst]
	q.mu.Lock()
	q.msgs = append(q.msgs, fakeMsg{tag, append([]byte(nil), buf...)})
	q.cond.Signal()
	q.mu.Unlock()
	return nil
}

func (p *fakePeer) Recv(buf []byte, src int) (Status, error) {
	q := p.w.qs[src][p.me]
	q.mu.Lock()
	for len(q.msgs) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.msgs) == 0 {
		q.mu.Unlock()
		return Status{}, errClosed
	}
	m := q.msgs[0]
	q.msgs = q.msgs[1:]
	q.mu.Unlock()
	if len(m.data) > len(buf) {
		return Status{Tag: m.tag}, fmt.Errorf("fake: %d bytes into %d: %w", len(m.data), len(buf), errTruncate)
	}
	copy(buf, m.data)
	return Status{Tag: m.tag, Len: len(m.data)}, nil
}

func (p *fakePeer) Sendrecv(sbuf []byte, dst, stag int, rbuf []byte, src int) (Status, error) {
	if err := p.Send(sbuf, dst, stag); err != nil {
		return Status{}, err
	}
	return p.Recv(rbuf, src)
}

// fakeReq is a request: sends are done at once, receives run at Wait (in
// order, which keeps per-sender order since they were started in order).
type fakeReq struct {
	buf []byte
	src int
}

func (p *fakePeer) Isend(buf []byte, dst, tag int) (Request, error) {
	return nil, p.Send(buf, dst, tag)
}

func (p *fakePeer) Irecv(buf []byte, src int) (Request, error) {
	return &fakeReq{buf, src}, nil
}

func (p *fakePeer) Wait(r Request) (Status, error) {
	if r, ok := r.(*fakeReq); ok {
		return p.Recv(r.buf, r.src)
	}
	return Status{}, nil
}

func (p *fakePeer) Withdraw(r Request) {}

func (p *fakePeer) Scratch(k, n int) [][]byte {
	out := make([][]byte, k)
	for i := range out {
		w := make([]uint64, (n+63)/8+1)
		out[i] = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)[:n:n]
	}
	return out
}

// run runs body on n fake ranks at once and returns each rank's outcome.
// A rank that is still blocked once the others are done is failed by
// closing the world, as comm's deadlock detector would; a hang shows as
// errClosed.
func run(n int, op func(inout, in []byte), body func(x *Call)) []error {
	w := newFakeWorld(n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	done := make(chan int, n)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var x Call
			x.Init(&fakePeer{w, r}, "test", op, 4, &fakeErrors)
			body(&x)
			errs[r] = x.Result()
			done <- r
		}()
	}
	for left := n; left > 0; {
		select {
		case <-done:
			left--
		case <-time.After(5 * time.Second):
			w.close() // blocked: fail the receives
		}
	}
	wg.Wait()
	w.close()
	return errs
}

// span combines 4-byte elements (sum, first, last, count): associative and
// not commutative, so a result shows whether every rank's contribution
// came in, once, in rank order.
func span(inout, in []byte) {
	for i := 0; i < len(inout); i += 4 {
		inout[i] += in[i]
		inout[i+2] = in[i+2]
		inout[i+3] += in[i+3]
	}
}

// contribution is rank r's vector of m elements for span: element j is
// (r+j, r, r, 1).
func contribution(r, m int) []byte {
	b := make([]byte, 4*m)
	for j := range m {
		b[4*j], b[4*j+1], b[4*j+2], b[4*j+3] = byte(r+j), byte(r), byte(r), 1
	}
	return b
}

// spanOf is the reduction of the contributions of ranks lo..hi.
func spanOf(lo, hi, m int) []byte {
	b := contribution(lo, m)
	for r := lo + 1; r <= hi; r++ {
		span(b, contribution(r, m))
	}
	return b
}
