package comm

import (
	"fmt"
	"strings"
	"time"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Deadlock reports: what every rank was doing when the deadlock detector
// found them all blocked, in users' terms — the call they made (a
// collective by its name, not the messages it is made of), its
// communicator, the caller's file:line, and which ranks had returned.

// Deadlock returns the deadlock the detector found, or nil.
func (w *World) Deadlock() *DeadlockError {
	d := w.e().Deadlock()
	if d == nil {
		return nil
	}
	e := &DeadlockError{Pending: make([]PendingOp, len(d.Ranks))}
	for i, r := range d.Ranks {
		e.Pending[i] = pendingOp(r)
	}
	return e
}

// AbortReport describes what the given world ranks of this process are
// doing now, one [PendingOp] a rank as in a deadlock report, for a process
// about to end (on a signal, say): to learn where each blocked goroutine
// called mpgo it aborts w with cause, which wakes them, and waits up to
// wait for them to say.
func (w *World) AbortReport(ranks []int, cause error, wait time.Duration) []PendingOp {
	prs := w.e().AbortReport(ranks, cause, wait)
	ops := make([]PendingOp, len(prs))
	for i, r := range prs {
		ops[i] = pendingOp(r)
	}
	return ops
}

// FormatPending writes ops one line a rank, in rank order, as a deadlock
// report does, each line starting with a newline and two spaces.
func FormatPending(ops []PendingOp) string {
	var b strings.Builder
	writePending(&b, ops)
	return b.String()
}

// JobDeadlock waits, up to wait, until this process's part of a deadlock
// that the detector across processes declared is over (its ranks'
// operations failed with [ErrDeadlock] and its lines of the report went
// to the coordinating process). In the coordinating process it returns the
// whole job's report, a line for every rank of every process, and true;
// elsewhere, and without such a deadlock, nil and false.
func (w *World) JobDeadlock(wait time.Duration) (*DeadlockError, bool) {
	lines, coord := w.e().JobDeadlock(wait)
	if !coord {
		return nil, false
	}
	e := &DeadlockError{Pending: make([]PendingOp, len(lines))}
	for i, l := range lines {
		e.Pending[i] = PendingOp{Rank: l.Rank, Op: l.Line, Returned: l.Line == "returned"}
	}
	return e, true
}

// PendingOp is one rank's line of a deadlock report.
type PendingOp struct {
	Rank     int    // the rank in the world
	Returned bool   // the rank's function had returned
	Op       string // e.g. `Recv(src=1, tag=7) on world at main.go:42`
}

// DeadlockError reports a deadlock: every live rank was blocked in mpgo with
// nothing able to progress. It lists every rank, by world rank. It wraps
// [ErrDeadlock].
type DeadlockError struct {
	Pending []PendingOp
}

func (e *DeadlockError) Error() string {
	var b strings.Builder
	b.WriteString("comm: deadlock: every live rank is blocked:")
	writePending(&b, e.Pending)
	return b.String()
}

// writePending writes one line a rank, in rank order.
func writePending(b *strings.Builder, ops []PendingOp) {
	ops = append([]PendingOp(nil), ops...)
	sortPending(ops)
	for _, p := range ops {
		fmt.Fprintf(b, "\n  rank %d: %s", p.Rank, p.Op)
	}
}

func sortPending(ops []PendingOp) {
	for i := 1; i < len(ops); i++ { // insertion sort: reports are short
		for j := i; j > 0 && ops[j].Rank < ops[j-1].Rank; j-- {
			ops[j], ops[j-1] = ops[j-1], ops[j]
		}
	}
}

// Unwrap returns ErrDeadlock.
func (e *DeadlockError) Unwrap() error { return ErrDeadlock }

var _ error = (*DeadlockError)(nil)

// pendingOp describes one rank's state.
func pendingOp(r engine.PendingRank) PendingOp {
	p := PendingOp{Rank: r.Rank, Returned: r.Returned}
	var parts []string
	for _, w := range r.Waits {
		parts = append(parts, describeWait(w))
	}
	switch {
	case len(parts) > 0 && r.Returned:
		p.Op = "returned; its helpers wait: " + strings.Join(parts, "; ")
	case len(parts) > 0:
		p.Op = strings.Join(parts, "; ")
	case r.Returned:
		p.Op = "returned"
	default:
		p.Op = "running"
	}
	return p
}

// describeWait describes one parked goroutine of a rank.
func describeWait(w engine.PendingWait) string {
	var s string
	switch {
	case len(w.Reqs) > 0 && isCollective(w.Reqs[0]):
		s = describeCollective(w)
	case strings.HasPrefix(w.Call, "Wait") || strings.HasPrefix(w.Call, "Test"):
		ops := make([]string, len(w.Reqs))
		for i, r := range w.Reqs {
			ops[i] = describeReq(nonBlockingName(r), r)
		}
		s = w.Call + " of " + strings.Join(ops, ", ")
	default:
		ops := make([]string, len(w.Reqs))
		for i, r := range w.Reqs {
			call := w.Call
			if call == "" {
				call = blockingName(r)
			}
			ops[i] = describeReq(call, r)
		}
		s = strings.Join(ops, ", ")
	}
	if w.At != "" {
		s += " at " + w.At
	}
	var gone []string
	for _, r := range w.Reqs {
		if r.PeerReturned {
			gone = append(gone, fmt.Sprintf("rank %d has returned", peerOf(r)))
		}
	}
	if len(gone) > 0 {
		s += " (" + strings.Join(gone, ", ") + ")"
	}
	return s
}

// describeCollective describes a goroutine waiting inside a collective:
// by the collective's name and communicator, and whom it waits for.
func describeCollective(w engine.PendingWait) string {
	call := w.Call
	if call == "" {
		call = "a collective"
	}
	s := call + " on " + ownerName(w.Reqs[0])
	var peers []string
	for _, r := range w.Reqs {
		switch {
		case r.Tag == tagCollGate:
			peers = append(peers, "every rank")
		case r.Kind == engine.KindSend:
			peers = append(peers, fmt.Sprintf("rank %d to receive", r.To))
		case r.Src == AnySource:
			peers = append(peers, "any rank")
		case r.Kind == engine.KindRecv || r.Kind == engine.KindProbe:
			peers = append(peers, fmt.Sprintf("rank %d", r.Src))
		}
	}
	if len(peers) > 0 {
		s += ", waiting for " + strings.Join(peers, ", ")
	}
	return s
}

// describeReq describes a point-to-point operation as call(args) on its
// communicator.
func describeReq(call string, r engine.PendingReq) string {
	if r.Kind == engine.KindSend {
		return fmt.Sprintf("%s(dst=%d, tag=%d, %d bytes) on %s", call, r.To, r.Tag, r.Bytes, ownerName(r))
	}
	return fmt.Sprintf("%s(src=%s, tag=%s) on %s", call, argStr(r.Src), argStr(r.Tag), ownerName(r))
}

// argStr prints a source or tag as a call's argument ("any": the
// wildcard).
func argStr(v int) string {
	if v == AnySource {
		return "any"
	}
	return fmt.Sprint(v)
}

// blockingName names the blocking call that waits for r, when its stack
// did not tell.
func blockingName(r engine.PendingReq) string {
	switch {
	case r.Kind == engine.KindProbe:
		return "Probe"
	case r.Kind == engine.KindRecv:
		return "Recv"
	case r.Mode == engine.ModeSync:
		return "Ssend"
	default:
		return "Send"
	}
}

// nonBlockingName names the call that started request r, waited for by a
// Wait.
func nonBlockingName(r engine.PendingReq) string {
	if r.Kind == engine.KindProbe {
		return "Probe"
	}
	return "I" + strings.ToLower(blockingName(r)[:1]) + blockingName(r)[1:]
}

// peerOf returns the peer of r in its communicator.
func peerOf(r engine.PendingReq) int {
	if r.Kind == engine.KindSend {
		return r.To
	}
	return r.Src
}

// isCollective reports whether r runs on a collective context.
func isCollective(r engine.PendingReq) bool { return r.Ctx&1 == 1 }

// ownerName names r's communicator.
func ownerName(r engine.PendingReq) string {
	if r.Owner == nil {
		return "?"
	}
	return r.Owner.String()
}
