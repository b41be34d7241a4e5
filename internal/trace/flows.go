package trace

import (
	"fmt"
	"slices"
)

// Pairing each send with the receive that matched it.
//
// MPI's non-overtaking rule makes this exact without any identifier on the
// wire: messages of one sender to one receiver on one communicator with
// one tag are received in the order they were sent, so the nth send of a
// key (context, sender's rank in the communicator, receiver's world rank,
// tag) is matched by the nth receive of that key. Each rank numbers its
// own records (chrome.go), so the files of several processes pair up when
// merged as they do in one.

// matchKey is what a send and its receive have in common.
type matchKey struct {
	ctx      uint64
	src, dst int32 // sender's rank in the communicator, receiver's world rank
	tag      int32
}

func keyOf(rec *Record) matchKey {
	return matchKey{ctx: rec.Ctx, src: rec.Src, dst: rec.DstWorld, tag: rec.Tag}
}

// String writes the key and the message's number in it, as the "match"
// argument of both ends' events.
func (k matchKey) String(nth int) string {
	return fmt.Sprintf("%#x:%d>%d:%d#%d", k.ctx, k.src, k.dst, k.tag, nth)
}

// Flows returns a flow ("s" at the send, "f" at the receive, binding to
// their enclosing slices) for each pair of complete events with the same
// "match" argument, one a send (it has a "to" argument) and the other a
// receive.
func Flows(evs []Event) []Event {
	type ends struct{ send, recv int }
	pairs := map[string]*ends{}
	var keys []string
	for i := range evs {
		e := &evs[i]
		if e.Ph != "X" {
			continue
		}
		m, ok := e.Args["match"].(string)
		if !ok {
			continue
		}
		p := pairs[m]
		if p == nil {
			p = &ends{-1, -1}
			pairs[m] = p
			keys = append(keys, m)
		}
		if _, send := e.Args["to"]; send {
			p.send = i
		} else {
			p.recv = i
		}
	}
	slices.Sort(keys)
	var out []Event
	id := 0
	for _, k := range keys {
		p := pairs[k]
		if p.send < 0 || p.recv < 0 {
			continue
		}
		id++
		s, r := &evs[p.send], &evs[p.recv]
		fid := fmt.Sprint(id)
		out = append(out,
			Event{Name: "message", Cat: "flow", Ph: "s", Ts: mid(s), Pid: s.Pid, Tid: s.Tid, ID: fid},
			Event{Name: "message", Cat: "flow", Ph: "f", Bp: "e", Ts: mid(r), Pid: r.Pid, Tid: r.Tid, ID: fid})
	}
	return out
}

// mid is the middle of a complete event: inside it, and inside no
// sibling.
func mid(e *Event) float64 { return e.Ts + dur(*e)/2 }
