package engine

import "fmt"

// Matched probes (MPI_Mprobe, MPI_Mrecv). A matched probe takes the
// message it finds off its unexpected queue, so that no other receive —
// another goroutine of the same rank, say — can take it between the probe
// and the receive that names it. Until that receive, the message waits in
// its pair's claimed list (under the pair's lock), where an abort or the
// deadlock detector still finds a rendezvous sender waiting on it; a
// message swept from there keeps the reason (msg.lost) for its receive.

// Claimed is a message a matched probe took off its queue, waiting for
// the receive that names it (comm.Message holds one).
type Claimed struct {
	m  *msg
	pr *pair
}

// Claim looks, for probe r, for a message from src (world rank peer, or
// AnySource for both) with tag, as Peek does, and takes the oldest one r
// accepts off its queue. When none is there and register is set, r is
// queued as a blocked probe (an arrival that r accepts completes it; the
// caller then claims again) and c is nil. An error names the probe.
func (r *Request) Claim(src, peer, tag int, register bool) (c *Claimed, st Status, err error) {
	r.typ, r.src, r.tag, r.peer = Byte, src, tag, peer
	st, m, p, err := r.ep.inbox.find(r, register, true)
	if err != nil {
		return nil, Status{}, r.describeErr(err)
	}
	if m == nil {
		return nil, Status{}, nil
	}
	return &Claimed{m: m, pr: p}, st, nil
}

// StartClaimed delivers c's message to receive r (its type and buffer set
// by SetRecv and the like), as a receive posted with the message
// unexpected would: at once, or, for a rendezvous from another process,
// on a goroutine (Wait for r). It fails when c was received already or
// was swept by an abort or a deadlock meanwhile.
func (r *Request) StartClaimed(c *Claimed) error {
	p, m := c.pr, c.m
	p.mu.Lock()
	ok := p.removeClaimed(m)
	lost := m.lost
	p.mu.Unlock()
	if !ok {
		if lost != nil {
			return r.describeErr(lost)
		}
		return r.describeErr(fmt.Errorf("the message was received already: %w", ErrArg))
	}
	r.src, r.tag, r.peer = m.src, m.tag, p.src
	r.ep.deliver(r, m, 0)
	return nil
}

// removeClaimed takes m off p's claimed list and reports whether it was
// there. p.mu is held.
func (p *pair) removeClaimed(m *msg) bool {
	for i, x := range p.claimed {
		if x == m {
			p.claimed = append(p.claimed[:i], p.claimed[i+1:]...)
			return true
		}
	}
	return false
}

// unclaim removes claimed m as lost for err (an abort, a deadlock): its
// receive will fail with err. The rendezvous sender waiting on it, if
// any, is the caller's to complete. Reports whether m was claimed. p.mu
// is held.
func (p *pair) unclaim(m *msg, err error) bool {
	if !p.removeClaimed(m) {
		return false
	}
	m.lost, m.sreq = err, nil
	return true
}
