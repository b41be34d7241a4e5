package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Tags the queue tests draw from: small ones (the dense part of an
// index), large ones (its sparse map), and ones that start sparse and
// come into dense range as the index grows.
var testTags = []int{0, 1, 2, 3, 5, 7, 40, 100, 200, 1000, 1 << 40}

// The posted queue against a plain slice: random posts (specific and
// AnyTag receives on three contexts), matches of random envelopes,
// cancellations and drains keep MPI's order — the oldest receive that
// accepts a message matches it — in linear and in indexed mode alike.
func TestPostedQueueMatchesModel(t *testing.T) {
	for _, wild := range []int{0, 10, 30} { // percent of AnyTag receives
		rng := rand.New(rand.NewPCG(uint64(wild), 7))
		var q postedQueue
		var model []*Request
		var seq uint64
		indexed := 0
		for step := 0; step < 40000; step++ {
			switch op := rng.IntN(1000); {
			case op < 500 && len(model) < 300 || len(model) == 0:
				seq++
				r := &Request{ctx: uint64(rng.IntN(3)), tag: testTags[rng.IntN(len(testTags))], seq: seq}
				if rng.IntN(100) < wild {
					r.tag = AnyTag
				}
				q.push(r)
				model = append(model, r)
			case op < 900:
				ctx, tag := uint64(rng.IntN(3)), testTags[rng.IntN(len(testTags))]
				if rng.IntN(4) == 0 && len(model) > 0 { // mostly one that matches
					m := model[rng.IntN(len(model))]
					ctx = m.ctx
					if m.tag != AnyTag {
						tag = m.tag
					}
				}
				want := slices.IndexFunc(model, func(r *Request) bool { return r.matches(ctx, tag) })
				got, i := q.first(ctx, tag)
				if want < 0 {
					if got != nil {
						t.Fatalf("step %d: first(%d, %d) = seq %d, want none", step, ctx, tag, got.seq)
					}
					continue
				}
				if got != model[want] {
					t.Fatalf("step %d: first(%d, %d) = %v, want seq %d", step, ctx, tag, got, model[want].seq)
				}
				q.take(got, i)
				model = slices.Delete(model, want, want+1)
			case op < 995:
				i := rng.IntN(len(model))
				if !q.delete(model[i]) {
					t.Fatalf("step %d: delete of a queued receive failed", step)
				}
				if q.delete(model[i]) {
					t.Fatalf("step %d: deleted twice", step)
				}
				model = slices.Delete(model, i, i+1)
			default:
				if got := q.drain(nil); !slices.Equal(got, model) {
					t.Fatalf("step %d: drain returned %d receives, not the %d queued in order", step, len(got), len(model))
				}
				model = model[:0]
			}
			if q.idx != nil {
				indexed++
			}
			if q.len() != len(model) {
				t.Fatalf("step %d: len %d, want %d", step, q.len(), len(model))
			}
		}
		if indexed == 0 {
			t.Errorf("%d%% wildcards: the queue never switched to indexed", wild)
		}
	}
}

// The unexpected queue against a plain slice: random arrivals on three
// contexts, receives for one tag or AnyTag, removals anywhere, in linear
// and in indexed mode alike.
func TestUnexpQueueMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var q unexpQueue
	var model []*msg
	var seq uint64
	indexed := 0
	for step := 0; step < 40000; step++ {
		switch op := rng.IntN(100); {
		case op < 50 && len(model) < 300 || len(model) == 0:
			seq++
			m := &msg{ctx: uint64(rng.IntN(3)), tag: testTags[rng.IntN(len(testTags))], seq: seq}
			q.push(m)
			model = append(model, m)
		case op < 93:
			r := &Request{ctx: uint64(rng.IntN(3)), tag: testTags[rng.IntN(len(testTags))]}
			if rng.IntN(5) == 0 {
				r.tag = AnyTag
			}
			want := slices.IndexFunc(model, func(m *msg) bool { return m.matchedBy(r) })
			got := q.first(r)
			if want < 0 {
				if got != nil {
					t.Fatalf("step %d: first(%d, %d) = seq %d, want none", step, r.ctx, r.tag, got.seq)
				}
				continue
			}
			if got != model[want] {
				t.Fatalf("step %d: first(%d, %d) = %v, want seq %d", step, r.ctx, r.tag, got, model[want].seq)
			}
			q.remove(got)
			model = slices.Delete(model, want, want+1)
		default:
			i := rng.IntN(len(model))
			q.remove(model[i])
			model = slices.Delete(model, i, i+1)
		}
		if q.idx != nil {
			indexed++
		}
		if q.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, q.len(), len(model))
		}
		if want := int64(len(model)) * msgCost; q.bytes != want {
			t.Fatalf("step %d: %d bytes counted, want %d", step, q.bytes, want)
		}
		if step%101 == 0 {
			i := 0
			for m := q.head; m != nil; m = m.next {
				if i >= len(model) || m != model[i] {
					t.Fatalf("step %d: list out of arrival order at %d", step, i)
				}
				i++
			}
		}
	}
	if indexed == 0 {
		t.Error("the queue never switched to indexed")
	}
}

// A queue switches to indexed once its searches walked past more than
// twice what it holds, not at one long walk. An index keeps its memory to
// what is queued: the nodes of taken entries are reused, contexts that
// emptied are dropped beyond keepCtxs, and a queue that empties drops its
// index.
func TestIndexReusesMemory(t *testing.T) {
	var q postedQueue
	var rs []*Request
	for i := 0; i < 1000; i++ {
		r := &Request{ctx: uint64(i % 10), tag: 999 - i, seq: uint64(i + 1)}
		rs = append(rs, r)
		q.push(r)
	}
	if r, _ := q.first(9, 0); r != rs[999] || q.idx != nil { // one long walk: still linear
		t.Fatalf("first = %v, indexed %v", r, q.idx != nil)
	}
	for k := 0; k < 2; k++ { // walks past twice what it holds: indexed from here
		if r, _ := q.first(99, 0); r != nil {
			t.Fatalf("first = %v", r)
		}
	}
	if q.idx == nil {
		t.Fatal("not indexed after three long walks")
	}
	for round := 0; round < 10; round++ { // take and put back: no new nodes
		for _, r := range rs[:500] {
			got, i := q.first(r.ctx, r.tag)
			if got != r {
				t.Fatalf("round %d: first(%d, %d) = %v", round, r.ctx, r.tag, got)
			}
			q.take(got, i)
		}
		for _, r := range rs[:500] {
			q.push(r)
		}
	}
	if n := len(q.idx.nodes); n != 1000 {
		t.Errorf("%d nodes for 1000 entries", n)
	}
	for _, r := range rs[:995] {
		q.delete(r)
	}
	if n := len(q.idx.ctxs); n > keepCtxs+5 {
		t.Errorf("%d contexts kept, 5 with entries", n)
	}
	q.drain(nil)
	if q.idx != nil || q.len() != 0 {
		t.Error("drained queue still indexed")
	}
}
