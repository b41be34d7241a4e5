package trace

import "testing"

func TestRingKeepsTheMostRecent(t *testing.T) {
	g := newRing(5, 0, 2) // rounds up to 8
	for i := range 11 {
		g.add(&Record{Start: int64(i), Op: OpSend})
	}
	recs := g.records()
	if d := g.dropped[0].Load(); d != 3 || len(recs) != 8 {
		t.Fatalf("%d records, %d dropped; want 8 and 3", len(recs), d)
	}
	for i, r := range recs {
		if r.Start != int64(i+3) {
			t.Fatalf("record %d starts at %d, want %d", i, r.Start, i+3)
		}
	}
	g = newRing(4, 0, 1)
	g.add(&Record{Start: 7})
	if recs := g.records(); len(recs) != 1 || g.dropped[0].Load() != 0 || recs[0].Start != 7 {
		t.Fatalf("got %v, %d", recs, g.dropped[0].Load())
	}
}

// A record overwritten is counted against the rank it belonged to: a
// receive that another rank's send wrote into its own ring is the
// receiver's.
func TestRingCountsDropsByOwner(t *testing.T) {
	g := newRing(2, 0, 3)
	g.add(&Record{Op: OpSend, DstWorld: 2})
	g.add(&Record{Op: OpRecv, DstWorld: 2})
	g.add(&Record{Op: OpColl})
	g.add(&Record{Op: OpColl})
	if d0, d1, d2 := g.dropped[0].Load(), g.dropped[1].Load(), g.dropped[2].Load(); d0 != 1 || d1 != 0 || d2 != 1 {
		t.Fatalf("dropped by rank 0, 1, 2: %d %d %d; want 1 0 1", d0, d1, d2)
	}
}
