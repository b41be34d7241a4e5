package trace

import "testing"

func TestRingKeepsTheMostRecent(t *testing.T) {
	g := newRing(5, 2) // rounds up to 8
	for i := range 11 {
		g.add(&Record{Start: int64(i), Op: OpSend})
	}
	recs := g.records()
	if d := g.dropped[0]; d != 3 || len(recs) != 8 {
		t.Fatalf("%d records, %d dropped; want 8 and 3", len(recs), d)
	}
	for i, r := range recs {
		if r.Start != int64(i+3) {
			t.Fatalf("record %d starts at %d, want %d", i, r.Start, i+3)
		}
	}
	g = newRing(4, 1)
	g.add(&Record{Start: 7})
	if recs := g.records(); len(recs) != 1 || g.dropped[0] != 0 || recs[0].Start != 7 {
		t.Fatalf("got %v, %d", recs, g.dropped[0])
	}
}

// A record overwritten is counted against the rank it belonged to.
func TestRingCountsDropsByOwner(t *testing.T) {
	g := newRing(2, 3)
	g.add(&Record{Op: OpSend, Rank: 0})
	g.add(&Record{Op: OpRecv, Rank: 2})
	g.add(&Record{Op: OpColl, Rank: 1})
	g.add(&Record{Op: OpColl, Rank: 1})
	if d0, d1, d2 := g.dropped[0], g.dropped[1], g.dropped[2]; d0 != 1 || d1 != 0 || d2 != 1 {
		t.Fatalf("dropped by rank 0, 1, 2: %d %d %d; want 1 0 1", d0, d1, d2)
	}
}

// The records of goroutines on every P land in the set's rings, each
// under its rank, whatever P wrote it.
func TestRingsOfEveryP(t *testing.T) {
	const ranks, each = 4, 1000
	s, err := NewSet(ranks, nil, 0, Options{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for r := range ranks {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				s.Rank(r).Sent(int64(i), int64(i), 1, r, 0, 0, 0, 8, false, false)
			}
		}()
	}
	for range ranks {
		<-done
	}
	recs, dropped := s.records()
	for r := range ranks {
		if len(recs[r]) != each || dropped[r] != 0 {
			t.Fatalf("rank %d: %d records, %d dropped; want %d and 0", r, len(recs[r]), dropped[r], each)
		}
		for _, rec := range recs[r] {
			if rec.Src != int32(r) {
				t.Fatalf("rank %d holds a record of rank %d", r, rec.Src)
			}
		}
	}
}
