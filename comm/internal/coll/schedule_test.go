package coll

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// exchange is one Sendrecv a rank made.
type exchange struct{ dst, tag, src int }

// recordingPeer is a fakePeer that logs its Sendrecvs.
type recordingPeer struct {
	*fakePeer
	log []exchange
}

func (p *recordingPeer) Sendrecv(sbuf []byte, dst, stag int, rbuf []byte, src int) (Status, error) {
	p.log = append(p.log, exchange{dst, stag, src})
	return p.fakePeer.Sendrecv(sbuf, dst, stag, rbuf, src)
}

// Send and Recv are logged as exchanges with no receive (src -1) and no
// send (dst -1, tag the one received).
func (p *recordingPeer) Send(buf []byte, dst, tag int) error {
	p.log = append(p.log, exchange{dst, tag, -1})
	return p.fakePeer.Send(buf, dst, tag)
}

func (p *recordingPeer) Recv(buf []byte, src int) (Status, error) {
	st, err := p.fakePeer.Recv(buf, src)
	p.log = append(p.log, exchange{-1, st.Tag, src})
	return st, err
}

// recorded runs body on n ranks of a fake world, each with a Call of op
// through a recordingPeer, and returns the peers, their logs complete.
// A rank whose call fails fails t.
func recorded(t *testing.T, n int, op func(inout, in []byte), body func(x *Call, r int)) []*recordingPeer {
	w := newFakeWorld(n)
	peers := make([]*recordingPeer, n)
	var wg sync.WaitGroup
	for r := range n {
		peers[r] = &recordingPeer{fakePeer: &fakePeer{w, r}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var x Call
			x.Init(peers[r], "test", op, 4, &fakeErrors)
			body(&x, r)
			if err := x.Result(); err != nil {
				t.Errorf("%d ranks, rank %d: %v", n, r, err)
			}
		}()
	}
	wg.Wait()
	return peers
}

// TestRecursiveDoublingSchedule: the schedule is the exchanges recursive
// doubling's Allreduce makes, in its order, and its lower flags combine
// as the algorithm does (span, which does not commute).
func TestRecursiveDoublingSchedule(t *testing.T) {
	for _, n := range []int{2, 4, 8, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			results := make([][]byte, n)
			peers := recorded(t, n, span, func(x *Call, r int) {
				results[r] = make([]byte, 8)
				x.Allreduce(contribution(r, 2), results[r], RecursiveDoubling)
			})
			want := spanOf(0, n-1, 2)
			for r := range n {
				partners, _, ok := RecursiveDoublingSchedule(r, n)
				if !ok {
					t.Fatalf("rank %d of %d: no schedule", r, n)
				}
				var got []int
				for _, e := range peers[r].log {
					if e.tag != TagRecursiveDoubling || e.src != e.dst {
						t.Errorf("rank %d: exchange %+v", r, e)
					}
					got = append(got, e.dst)
				}
				if !slices.Equal(got, partners) {
					t.Errorf("rank %d: exchanged with %v, schedule says %v", r, got, partners)
				}
				// Replayed: the partners' vectors of each step are
				// what recursive doubling holds there.
				held := make([][]byte, n)
				for i := range n {
					held[i] = contribution(i, 2)
				}
				for k := range partners {
					next := make([][]byte, n)
					for i := range n {
						ps, lw, _ := RecursiveDoublingSchedule(i, n)
						v := slices.Clone(held[i])
						if lw[k] {
							in := slices.Clone(held[ps[k]])
							span(in, v)
							v = in
						} else {
							span(v, held[ps[k]])
						}
						next[i] = v
					}
					held = next
				}
				if !slices.Equal(held[r], want) || !slices.Equal(results[r], want) {
					t.Errorf("rank %d: replay %v, algorithm %v, want %v", r, held[r], results[r], want)
				}
			}
		})
	}
}

func TestSchedulesRefuse(t *testing.T) {
	for _, c := range [][2]int{{0, 1}, {0, 3}, {2, 6}, {4, 4}, {-1, 4}} {
		if _, _, ok := RecursiveDoublingSchedule(c[0], c[1]); ok {
			t.Errorf("recursive doubling: rank %d of %d: a schedule", c[0], c[1])
		}
	}
	for _, c := range [][2]int{{0, 1}, {4, 4}, {-1, 4}} {
		if _, _, ok := DisseminationSchedule(c[0], c[1]); ok {
			t.Errorf("dissemination: rank %d of %d: a schedule", c[0], c[1])
		}
		if _, _, ok := BinomialBcastSchedule(c[0], c[1], 0); ok {
			t.Errorf("binomial broadcast: rank %d of %d: a schedule", c[0], c[1])
		}
	}
	if _, _, ok := BinomialBcastSchedule(0, 4, 4); ok {
		t.Errorf("binomial broadcast from root 4 of 4: a schedule")
	}
	if _, _, _, _, ok := BinomialReduceSchedule(0, 1, 0); ok {
		t.Errorf("binomial reduction on 1 rank: a schedule")
	}
	if _, _, _, _, ok := BinomialReduceSchedule(0, 4, -1); ok {
		t.Errorf("binomial reduction to root -1: a schedule")
	}
}

// TestDisseminationSchedule: the schedule is the exchanges the
// dissemination barrier makes, in its order, and its sources differ.
func TestDisseminationSchedule(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 7, 8, 13} {
		peers := recorded(t, n, nil, func(x *Call, _ int) { x.Dissemination() })
		for r := range n {
			to, from, ok := DisseminationSchedule(r, n)
			if !ok {
				t.Fatalf("rank %d of %d: no schedule", r, n)
			}
			var gotTo, gotFrom []int
			for _, e := range peers[r].log {
				if e.tag != TagDissemination {
					t.Errorf("%d ranks, rank %d: exchange %+v", n, r, e)
				}
				gotTo, gotFrom = append(gotTo, e.dst), append(gotFrom, e.src)
			}
			if !slices.Equal(gotTo, to) || !slices.Equal(gotFrom, from) {
				t.Errorf("%d ranks, rank %d: sent to %v and heard from %v, schedule says %v and %v", n, r, gotTo, gotFrom, to, from)
			}
			if s := slices.Clone(from); len(slices.Compact(slices.Sorted(slices.Values(s)))) != len(from) {
				t.Errorf("%d ranks, rank %d: sources %v repeat", n, r, from)
			}
		}
	}
}

// TestBinomialBcastSchedule: the schedule is the messages the binomial
// broadcast sends and receives, in its order.
func TestBinomialBcastSchedule(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 7, 8, 13} {
		for _, root := range []int{0, n - 1, n / 2} {
			peers := recorded(t, n, nil, func(x *Call, r int) {
				buf := make([]byte, 8)
				if r == root {
					copy(buf, "payload!")
				}
				x.Bcast(buf, root, Binomial)
				if string(buf) != "payload!" {
					t.Errorf("%d ranks, root %d, rank %d: %q", n, root, r, buf)
				}
			})
			for r := range n {
				parent, children, ok := BinomialBcastSchedule(r, n, root)
				if !ok {
					t.Fatalf("rank %d of %d: no schedule", r, n)
				}
				want := []exchange{}
				if parent >= 0 {
					want = append(want, exchange{-1, TagBinomialBcast, parent})
				}
				for _, c := range children {
					want = append(want, exchange{c, TagBinomialBcast, -1})
				}
				if !slices.Equal(peers[r].log, want) {
					t.Errorf("%d ranks, root %d, rank %d: %v, schedule says %v", n, root, r, peers[r].log, want)
				}
			}
		}
	}
}

// TestBinomialReduceSchedule: the schedule is the messages the binomial
// reduction sends and receives, in its order, and combining in its
// order gives the reduction in rank order (span does not commute).
func TestBinomialReduceSchedule(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 7, 8, 13} {
		for _, root := range []int{0, n - 1, n / 2} {
			want := spanOf(0, n-1, 2)
			peers := recorded(t, n, span, func(x *Call, r int) {
				recv := make([]byte, 8)
				x.Reduce(contribution(r, 2), recv, root, Binomial)
				if r == root && !slices.Equal(recv, want) {
					t.Errorf("%d ranks, root %d: %v, want %v", n, root, recv, want)
				}
			})
			// The replay, sequentially: each rank's accumulator, children
			// first (a child's rank is above its parent's).
			acc := make([][]byte, n)
			for r := n - 1; r >= 0; r-- {
				children, parent, hopTo, hopFrom, ok := BinomialReduceSchedule(r, n, root)
				if !ok {
					t.Fatalf("rank %d of %d: no schedule", r, n)
				}
				var log []exchange
				acc[r] = contribution(r, 2)
				for _, c := range children {
					log = append(log, exchange{-1, TagBinomialReduce, c})
					span(acc[r], acc[c])
				}
				if parent >= 0 {
					log = append(log, exchange{parent, TagBinomialReduce, -1})
				}
				if hopTo >= 0 {
					log = append(log, exchange{hopTo, TagReduceHop, -1})
				}
				if hopFrom >= 0 {
					log = append(log, exchange{-1, TagReduceHop, hopFrom})
				}
				if !slices.Equal(peers[r].log, log) {
					t.Errorf("%d ranks, root %d, rank %d: %v, schedule says %v", n, root, r, peers[r].log, log)
				}
			}
			if !slices.Equal(acc[0], want) {
				t.Errorf("%d ranks: the replay reduces to %v, want %v", n, acc[0], want)
			}
		}
	}
}

// sendrecvs returns the exchanges of log, each of which must be a
// Sendrecv with tag.
func sendrecvs(t *testing.T, r int, log []exchange, tag int) (to, from []int) {
	t.Helper()
	for _, e := range log {
		if e.tag != tag || e.dst < 0 || e.src < 0 {
			t.Errorf("rank %d: exchange %+v, want a Sendrecv with tag %d", r, e, tag)
		}
		to, from = append(to, e.dst), append(from, e.src)
	}
	return to, from
}

// TestPairwiseSchedule: the schedule is the exchanges the pairwise
// Alltoall makes, in its order, and its sources differ.
func TestPairwiseSchedule(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 7, 8, 13} {
		const k = 4
		off, cnt := layout(n, k)
		peers := recorded(t, n, nil, func(x *Call, r int) {
			x.AlltoallPairwise(make([]byte, n*k), off, cnt, make([]byte, n*k), off, cnt)
		})
		for r := range n {
			to, from, ok := PairwiseSchedule(r, n)
			if !ok {
				t.Fatalf("rank %d of %d: no schedule", r, n)
			}
			gotTo, gotFrom := sendrecvs(t, r, peers[r].log, TagPairwise)
			if !slices.Equal(gotTo, to) || !slices.Equal(gotFrom, from) {
				t.Errorf("%d ranks, rank %d: exchanged %v <- %v, schedule says %v <- %v", n, r, gotTo, gotFrom, to, from)
			}
			if s := slices.Sorted(slices.Values(from)); len(slices.Compact(s)) != len(from) || slices.Contains(from, r) {
				t.Errorf("%d ranks, rank %d: sources %v", n, r, from)
			}
		}
	}
}

// TestRingAllgatherSchedule: the schedule is the exchanges the ring
// Allgather makes, in its order; replayed, each rank receives from its
// left the block its left sends at that step, and ends with every block.
func TestRingAllgatherSchedule(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 7, 8, 13} {
		const k = 4
		off, cnt := layout(n, k)
		peers := recorded(t, n, nil, func(x *Call, r int) { x.AllgatherRing(make([]byte, n*k), off, cnt) })
		have := make([][]bool, n)
		for r := range n {
			have[r] = make([]bool, n)
			have[r][r] = true
		}
		for r := range n {
			right, left, sb, rb, ok := RingAllgatherSchedule(r, n)
			if !ok {
				t.Fatalf("rank %d of %d: no schedule", r, n)
			}
			gotTo, gotFrom := sendrecvs(t, r, peers[r].log, TagAllgatherRing)
			if len(gotTo) != n-1 || len(sb) != n-1 || len(rb) != n-1 {
				t.Fatalf("%d ranks, rank %d: %d exchanges, schedule %d", n, r, len(gotTo), len(sb))
			}
			for s := range gotTo {
				if gotTo[s] != right || gotFrom[s] != left {
					t.Errorf("%d ranks, rank %d step %d: %d <- %d, schedule %d <- %d", n, r, s, gotTo[s], gotFrom[s], right, left)
				}
				_, _, lsb, _, _ := RingAllgatherSchedule(left, n)
				if lsb[s] != rb[s] {
					t.Errorf("%d ranks, rank %d step %d: receives block %d, its left sends %d", n, r, s, rb[s], lsb[s])
				}
				if s > 0 && sb[s] != rb[s-1] {
					t.Errorf("%d ranks, rank %d step %d: sends block %d, received %d the step before", n, r, s, sb[s], rb[s-1])
				}
				have[r][rb[s]] = true
			}
			if slices.Contains(have[r], false) {
				t.Errorf("%d ranks, rank %d: blocks %v after the ring", n, r, have[r])
			}
		}
	}
}

// TestBruckAllgatherSchedule: the schedule is the exchanges Bruck's
// Allgather makes, in its order; replayed on a buffer of rank numbers,
// block i of rank r's buffer ends as rank r+i's, and no step receives
// into blocks that it or an earlier step sends.
func TestBruckAllgatherSchedule(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 7, 8, 13} {
		const k = 4
		peers := recorded(t, n, nil, func(x *Call, r int) { x.AllgatherBruck(make([]byte, k), make([]byte, n*k), k) })
		buf := make([][]int, n)
		for r := range n {
			buf[r] = make([]int, n)
			buf[r][0] = r
		}
		steps := 0
		for r := range n {
			to, from, _, _, ok := BruckAllgatherSchedule(r, n)
			if !ok {
				t.Fatalf("rank %d of %d: no schedule", r, n)
			}
			gotTo, gotFrom := sendrecvs(t, r, peers[r].log, TagAllgatherBruck)
			if !slices.Equal(gotTo, to) || !slices.Equal(gotFrom, from) {
				t.Errorf("%d ranks, rank %d: exchanged %v <- %v, schedule says %v <- %v", n, r, gotTo, gotFrom, to, from)
			}
			steps = len(to)
		}
		for s := range steps {
			next := make([][]int, n)
			for r := range n {
				_, from, at, count, _ := BruckAllgatherSchedule(r, n)
				next[r] = slices.Clone(buf[r])
				copy(next[r][at[s]:at[s]+count[s]], buf[from[s]][:count[s]])
				for q := 0; q <= s; q++ {
					if _, _, _, c, _ := BruckAllgatherSchedule(r, n); at[s] < c[q] {
						t.Errorf("%d ranks, rank %d: step %d receives at block %d, step %d sends %d blocks", n, r, s, at[s], q, c[q])
					}
				}
			}
			buf = next
		}
		for r := range n {
			for i := range n {
				if buf[r][i] != (r+i)%n {
					t.Errorf("%d ranks, rank %d: replayed buffer %v", n, r, buf[r])
					break
				}
			}
		}
	}
}

// TestBruckAlltoallSchedule: the schedule is the exchanges Bruck's
// Alltoall makes, in its order; replayed on buffers of (sender, receiver)
// pairs, block i of rank r's buffer ends as rank r-i's block for r.
func TestBruckAlltoallSchedule(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 7, 8, 13} {
		const k = 4
		peers := recorded(t, n, nil, func(x *Call, r int) { x.AlltoallBruck(make([]byte, n*k), make([]byte, n*k), k) })
		type blk struct{ from, to int }
		buf := make([][]blk, n)
		for r := range n {
			for i := range n { // the send buffer rotated left by r blocks
				buf[r] = append(buf[r], blk{r, (r + i) % n})
			}
			to, from, _, ok := BruckAlltoallSchedule(r, n)
			if !ok {
				t.Fatalf("rank %d of %d: no schedule", r, n)
			}
			gotTo, gotFrom := sendrecvs(t, r, peers[r].log, TagAlltoallBruck)
			if !slices.Equal(gotTo, to) || !slices.Equal(gotFrom, from) {
				t.Errorf("%d ranks, rank %d: exchanged %v <- %v, schedule says %v <- %v", n, r, gotTo, gotFrom, to, from)
			}
		}
		_, _, blocks, _ := BruckAlltoallSchedule(0, n)
		for s := range blocks {
			next := make([][]blk, n)
			for r := range n {
				_, from, bs, _ := BruckAlltoallSchedule(r, n)
				next[r] = slices.Clone(buf[r])
				for _, i := range bs[s] {
					next[r][i] = buf[from[s]][i]
				}
			}
			buf = next
		}
		for r := range n {
			for i := range n {
				if want := (blk{(r - i + n) % n, r}); buf[r][i] != want {
					t.Errorf("%d ranks, rank %d: block %d is %v, want %v", n, r, i, buf[r][i], want)
				}
			}
		}
	}
}
