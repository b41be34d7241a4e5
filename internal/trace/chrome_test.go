package trace

import (
	"bytes"
	"testing"
)

// twoRanks is a set of two ranks in which rank 0 sends rank 1 two
// messages of one key, the second (eager) completing before the first
// (rendezvous, an Isend), and rank 1 receives them in order.
func twoRanks(t *testing.T, local []int, process int) *Set {
	t.Helper()
	s, err := NewSet(2, local, process, Options{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if o := s.Rank(0); o != nil {
		// Records go in by completion: the rendezvous (started at 10)
		// after the eager one (started at 20).
		s.writeRecord(&Record{Op: OpSend, Start: 20, End: 21, Ctx: 2, Src: 0, Dst: 1, DstWorld: 1, Tag: 5, Bytes: 8})
		s.writeRecord(&Record{Op: OpSend, Start: 10, End: 40, Ctx: 2, Src: 0, Dst: 1, DstWorld: 1, Tag: 5, Bytes: 1 << 20, Flags: FlagAsync})
	}
	if o := s.Rank(1); o != nil {
		s.writeRecord(&Record{Op: OpRecv, Start: 15, End: 40, Ctx: 2, Src: 0, Dst: -1, DstWorld: 1, Tag: 5, Bytes: 1 << 20, Rank: 1})
		s.writeRecord(&Record{Op: OpRecv, Start: 41, End: 42, Ctx: 2, Src: 0, Dst: -1, DstWorld: 1, Tag: 5, Bytes: 8, Flags: FlagAsync, Rank: 1})
	}
	return s
}

// flowPairs returns, for each flow, the bytes of its send and receive.
func flowPairs(t *testing.T, f *File) [][2]any {
	t.Helper()
	at := map[string]Event{}
	var out [][2]any
	find := func(e Event) Event {
		for _, x := range f.TraceEvents {
			if x.Ph == "X" && x.Pid == e.Pid && x.Tid == e.Tid && x.Ts <= e.Ts && e.Ts <= x.Ts+*x.Dur {
				return x
			}
		}
		t.Fatalf("flow %+v in no slice", e)
		return Event{}
	}
	for _, e := range f.TraceEvents {
		switch e.Ph {
		case "s":
			at[e.ID] = find(e)
		case "f":
			s, ok := at[e.ID]
			if !ok {
				t.Fatalf("flow end %s before its start", e.ID)
			}
			out = append(out, [2]any{s.Args["bytes"], find(e).Args["bytes"]})
		}
	}
	return out
}

func TestExportPairsByStartOrder(t *testing.T) {
	s := twoRanks(t, nil, 0)
	f := s.Export()
	pairs := flowPairs(t, &f)
	if len(pairs) != 2 {
		t.Fatalf("%d flows, want 2", len(pairs))
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Fatalf("a flow joins a send of %v bytes to a receive of %v", p[0], p[1])
		}
	}
}

func TestMergeJoinsProcesses(t *testing.T) {
	var files []*File
	for p := range 2 {
		f := twoRanks(t, []int{p}, p).Export()
		if n := len(flowPairs(t, &f)); n != 0 {
			t.Fatalf("process %d alone: %d flows, want none", p, n)
		}
		var b bytes.Buffer
		if err := WriteFile(&b, &f); err != nil {
			t.Fatal(err)
		}
		g, err := ReadFile(&b)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, g)
	}
	m, err := Merge(files)
	if err != nil {
		t.Fatal(err)
	}
	pairs := flowPairs(t, m)
	if len(pairs) != 2 {
		t.Fatalf("%d flows after merging, want 2", len(pairs))
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Fatalf("a flow joins a send of %v bytes to a receive of %v", p[0], p[1])
		}
	}
	if _, err := Merge([]*File{files[0], files[0]}); err == nil {
		t.Fatal("two files of one process merged")
	}
	if _, err := ReadFile(bytes.NewReader([]byte(`{"traceEvents":[]}`))); err == nil {
		t.Fatal("a file of another producer read")
	}
}

func TestDroppedRecordsGetNoFlows(t *testing.T) {
	s, err := NewSet(2, nil, 0, Options{Trace: true, Events: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 { // rings of 1 record a P (2 with one P)
		s.Rank(0).Sent(0, 1, 2, 0, 1, 1, 0, 8, false, false)
		s.Rank(1).Received(0, 1, 2, 0, 0, 8, false)
	}
	f := s.Export()
	if n := len(flowPairs(t, &f)); n != 0 {
		t.Fatalf("%d flows from rings that dropped records, want none", n)
	}
	if f.OtherData.Dropped["0"] == 0 || f.OtherData.Dropped["1"] == 0 {
		t.Fatalf("dropped %v, want some of each rank", f.OtherData.Dropped)
	}
}

func TestNestTurnsOverlapsAsync(t *testing.T) {
	d := func(v float64) *float64 { return &v }
	evs := nest([]Event{
		{Name: "outer", Ph: "X", Ts: 0, Dur: d(10), Args: map[string]any{}},
		{Name: "inner", Ph: "X", Ts: 2, Dur: d(3), Args: map[string]any{}},
		{Name: "crossing", Ph: "X", Ts: 8, Dur: d(5), Args: map[string]any{"match": "k"}},
	})
	var phases string
	for _, e := range evs {
		phases += e.Name + ":" + e.Ph + " "
	}
	if want := "outer:X inner:X crossing:b crossing:e "; phases != want {
		t.Fatalf("got %q, want %q", phases, want)
	}
	if _, ok := evs[2].Args["match"]; ok {
		t.Fatal("an overlapping slice kept its flow")
	}
}
