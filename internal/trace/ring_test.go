package trace

import "testing"

func TestRingKeepsTheMostRecent(t *testing.T) {
	g := newRing(5) // rounds up to 8
	for i := range 11 {
		g.add(&Record{Start: int64(i)})
	}
	recs, dropped := g.records()
	if dropped != 3 || len(recs) != 8 {
		t.Fatalf("%d records, %d dropped; want 8 and 3", len(recs), dropped)
	}
	for i, r := range recs {
		if r.Start != int64(i+3) {
			t.Fatalf("record %d starts at %d, want %d", i, r.Start, i+3)
		}
	}
	g = newRing(4)
	g.add(&Record{Start: 7})
	if recs, dropped := g.records(); len(recs) != 1 || dropped != 0 || recs[0].Start != 7 {
		t.Fatalf("got %v, %d", recs, dropped)
	}
}
