package wire

import (
	"fmt"
	"io"
	"math/bits"
	"sync"
)

// Message is a message that arrived for one of this process's ranks; its
// payload is fetched with Pull (exactly once). An eager message's payload
// follows its header on the connection, and is either read straight into
// the receive buffer by [Message.PullArriving] while the handler still has
// it, or buffered for a later Pull. A rendezvous message's payload is
// still with its sender: Pull asks for it (clear-to-send) and the data is
// written straight into the buffer.
type Message struct {
	c    *conn
	h    Header // handed to Arrive
	seq  uint64
	size int
	cost int
	rdv  bool

	// Guarded by c.rmu.
	state   msgState
	waiters bool
	buf     []byte // eager: the buffered payload
	err     error

	// Rendezvous pulls: dst is written by the reader goroutine until done
	// is closed; got is the reader's.
	dst  []byte
	got  int
	done chan struct{}
}

type msgState uint8

const (
	msgArriving msgState = iota // eager: the payload is not read yet
	msgBuffered                 // eager: the payload is in buf
	msgFailed                   // eager: the connection failed before the payload was read
	msgTaken                    // pulled
)

// Size returns the payload's length in bytes.
func (m *Message) Size() int { return m.size }

// Rendezvous reports whether the payload is still with the sender (a
// large or synchronous message): pulling it waits for the network.
func (m *Message) Rendezvous() bool { return m.rdv }

// PullArriving reads an eager message's payload straight from the
// connection into dst (len(dst) == Size(); nil discards it). Only the
// handler may call it, from inside Arrive, on a message that is not a
// rendezvous and that nobody else can reach; it returns once dst is
// filled. The transport reuses a message pulled inline once Arrive
// returns: neither it nor its header may be kept.
func (m *Message) PullArriving(dst []byte) error {
	c := m.c
	if m.rdv {
		return fmt.Errorf("wire: PullArriving of a rendezvous: %w", ErrConfig)
	}
	c.rmu.Lock()
	taken := m.state == msgTaken
	m.state = msgTaken
	c.rmu.Unlock()
	if taken {
		return fmt.Errorf("wire: message pulled twice: %w", ErrConfig)
	}
	n := min(len(dst), m.size)
	_, err := io.ReadFull(c.br, dst[:n])
	if err == nil && n < m.size {
		_, err = c.br.Discard(m.size - n)
	}
	if err != nil {
		err = c.t.wrap(c.proc, fmt.Errorf("wire: payload from process %d: %w: %w", c.proc, ErrPeerGone, err))
		c.mu.Lock()
		c.rerr = err
		c.mu.Unlock()
		return err
	}
	c.release(m.cost)
	return nil
}

// Pull fetches the payload into dst (len(dst) == Size()) and tells the
// sender it was received; with dst nil the payload is discarded and the
// sender told all the same. It blocks until the payload is in dst or the
// connection failed (an error wrapping ErrPeerGone or ErrClosed), and
// must not be called from inside Arrive on a rendezvous.
func (m *Message) Pull(dst []byte) error {
	if m.rdv {
		return m.pullRendezvous(dst)
	}
	c := m.c
	c.rmu.Lock()
	for m.state == msgArriving {
		m.waiters = true
		c.rcond.Wait()
	}
	st, buf, err := m.state, m.buf, m.err
	m.state, m.buf = msgTaken, nil
	c.rmu.Unlock()
	switch st {
	case msgTaken:
		return fmt.Errorf("wire: message pulled twice: %w", ErrConfig)
	case msgFailed:
		return err
	}
	copy(dst, buf)
	putBuf(buf)
	c.release(m.cost)
	return nil
}

func (m *Message) pullRendezvous(dst []byte) error {
	c := m.c
	if dst == nil || m.size == 0 {
		h := Header{Kind: KindCTS, Seq: m.seq}
		if dst == nil && m.size > 0 {
			h.Flags = FlagDiscard
		}
		c.queueCtrl(h)
		c.release(m.cost)
		return nil
	}
	if len(dst) < m.size {
		return fmt.Errorf("wire: pull of %d bytes into %d: %w", m.size, len(dst), ErrConfig)
	}
	c.rmu.Lock()
	if err := c.rfailed; err != nil {
		c.rmu.Unlock()
		return err
	}
	if m.done != nil {
		c.rmu.Unlock()
		return fmt.Errorf("wire: message pulled twice: %w", ErrConfig)
	}
	m.dst, m.done = dst[:m.size], make(chan struct{})
	c.pulls[m.seq] = m
	c.rmu.Unlock()
	c.queueCtrl(Header{Kind: KindCTS, Seq: m.seq})
	c.release(m.cost) // no longer queued at the receiver
	<-m.done
	return m.err
}

// Eager payloads that wait for their receive are buffered in pooled
// storage, one pool per power-of-two size class.
var bufPools [28]sync.Pool

func bufClass(n int) int {
	if n <= 64 {
		return 0
	}
	return bits.Len(uint(n-1)) - 6
}

func getBuf(n int) []byte {
	c := bufClass(n)
	if c >= len(bufPools) {
		return make([]byte, n)
	}
	if b, ok := bufPools[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 64<<c)
}

func putBuf(b []byte) {
	c := bufClass(cap(b))
	if c >= len(bufPools) || cap(b) != 64<<c {
		return
	}
	b = b[:0]
	bufPools[c].Put(&b)
}
