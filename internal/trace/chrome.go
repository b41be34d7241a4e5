package trace

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The Chrome trace-event format (the JSON Object Format of Google's "Trace
// Event Format" document), which ui.perfetto.dev and chrome://tracing
// open: one process per mpgo process (pid), one thread per rank (tid);
// a blocking call is a complete event ("X") from its start to its end,
// a non-blocking request an async slice ("b"/"e") from its start to its
// completion, with a thin complete event where its message leaves (a
// send's start) or arrives (a receive's end) for a flow to bind to; a
// collective call is a complete event named with its algorithm, around
// the point-to-point calls it made; flow events ("s"/"f") join each send
// to the receive that matched it (flows.go).

// Event is one trace event.
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`            // microseconds
	Dur  *float64       `json:"dur,omitempty"` // "X" only
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   string         `json:"id,omitempty"` // async slices and flows
	Bp   string         `json:"bp,omitempty"` // flow ends: "e", bind to the enclosing slice
	Args map[string]any `json:"args,omitempty"`
}

// File is a trace file: its events, and what merging files needs.
type File struct {
	TraceEvents     []Event `json:"traceEvents"`
	DisplayTimeUnit string  `json:"displayTimeUnit,omitempty"`
	OtherData       Meta    `json:"otherData"`
}

// Meta is a trace file's own data.
type Meta struct {
	Producer string `json:"producer"`
	Process  int    `json:"process"`
	// WallStart is the wall-clock time (RFC 3339, nanoseconds) at the
	// file's time 0: merging aligns files by it, which is exact for
	// processes on one host and as good as the hosts' clocks otherwise.
	WallStart string `json:"wallStart"`
	// Dropped counts, per rank, the oldest of its records the rings
	// overwrote; such a rank's messages get no flows.
	Dropped map[string]uint64 `json:"dropped,omitempty"`
}

// producer names mpgo in a file's Meta.
const producer = "mpgo"

// micros converts nanoseconds to the format's microseconds.
func micros(ns int64) float64 { return float64(ns) / 1e3 }

// The minimum length of a complete event: a send that completed at once
// still shows, and still encloses its flow's start.
const minDur = 1

// Export returns s's timeline as a trace file: every rank of this
// process, with flows between the messages sent and received in it.
// Call it once the ranks have returned.
func (s *Set) Export() File {
	f := File{DisplayTimeUnit: "ns", OtherData: Meta{Producer: producer, Process: s.process, WallStart: s.wall.Format(time.RFC3339Nano)}}
	pid := s.process
	f.TraceEvents = append(f.TraceEvents,
		Event{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": fmt.Sprintf("mpgo process %d", pid)}},
		Event{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": pid}})
	async := 0
	scale := s.clock.Scale()
	byRank, drops := s.records()
	for r, o := range s.ranks {
		if o == nil || !o.trace {
			continue
		}
		recs, dropped := byRank[r], drops[r]
		if dropped > 0 {
			if f.OtherData.Dropped == nil {
				f.OtherData.Dropped = map[string]uint64{}
			}
			f.OtherData.Dropped[strconv.Itoa(r)] = dropped
		}
		f.TraceEvents = append(f.TraceEvents,
			Event{Name: "thread_name", Ph: "M", Pid: pid, Tid: r, Args: map[string]any{"name": fmt.Sprintf("rank %d", r)}},
			Event{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: r, Args: map[string]any{"sort_index": r}})
		for i := range recs { // ticks to nanoseconds
			recs[i].Start = int64(float64(recs[i].Start) * scale)
			recs[i].End = int64(float64(recs[i].End) * scale)
		}
		nth := numberMessages(recs, dropped == 0)
		var evs []Event
		for i := range recs {
			evs = s.events(evs, &recs[i], nth[i], pid, r, &async)
		}
		f.TraceEvents = append(f.TraceEvents, nest(evs)...)
	}
	f.TraceEvents = append(f.TraceEvents, Flows(f.TraceEvents)...)
	return f
}

// records returns the records of each rank of s, gathered from the
// rings of every P, and how many of each rank's records the rings
// overwrote, by world rank.
func (s *Set) records() (recs [][]Record, dropped []uint64) {
	recs, dropped = make([][]Record, len(s.ranks)), make([]uint64, len(s.ranks))
	for _, g := range s.allRings() {
		if g == nil {
			continue
		}
		for _, rec := range g.records() {
			recs[rec.Rank] = append(recs[rec.Rank], rec)
		}
		for r, n := range g.dropped {
			dropped[r] += n
		}
	}
	return recs, dropped
}

// WriteChrome writes s's timeline (Export) to w as JSON.
func (s *Set) WriteChrome(w io.Writer) error {
	f := s.Export()
	return WriteFile(w, &f)
}

// WriteFile writes f to w as JSON, one event a line.
func WriteFile(w io.Writer, f *File) error {
	if _, err := io.WriteString(w, "{\"traceEvents\":[\n"); err != nil {
		return err
	}
	for i := range f.TraceEvents {
		b, err := json.Marshal(&f.TraceEvents[i])
		if err != nil {
			return err
		}
		if i < len(f.TraceEvents)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	meta, err := json.Marshal(&f.OtherData)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "],\n\"displayTimeUnit\":%q,\n\"otherData\":%s}\n", f.DisplayTimeUnit, meta)
	return err
}

// numberMessages numbers each point-to-point record of one rank among
// those of its message key (matchKey) by start time: with non-overtaking,
// the nth send of a key is received by the nth receive of that key.
// -1 for the others, and for all when exact is false (records were lost).
func numberMessages(recs []Record, exact bool) []int {
	nth := make([]int, len(recs))
	order := make([]int, 0, len(recs))
	for i := range recs {
		nth[i] = -1
		if exact && (recs[i].Op == OpSend || recs[i].Op == OpRecv) && recs[i].Flags&FlagFailed == 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(recs[a].Start, recs[b].Start) })
	seen := map[matchKey]int{}
	for _, i := range order {
		k := keyOf(&recs[i])
		nth[i] = seen[k]
		seen[k]++
	}
	return nth
}

// events appends the events of rec, a record of world rank r, to evs.
func (s *Set) events(evs []Event, rec *Record, nth, pid, r int, async *int) []Event {
	start, end := rec.Start, max(rec.End, rec.Start+minDur)
	args := map[string]any{"comm": s.commName(rec.Ctx), "bytes": rec.Bytes}
	var name string
	switch rec.Op {
	case OpColl:
		name = title(s.name(rec.Name))
		if alg := s.name(rec.Alg); alg != "" {
			args["algorithm"] = alg
			name += " (" + alg + ")"
		}
		return append(evs, complete(name, "collective", start, end, pid, r, args))
	case OpSend:
		name = rec.Op.String()
		args["to"], args["tag"] = rec.Dst, rec.Tag
	case OpRecv:
		name = rec.Op.String()
		args["from"], args["tag"] = rec.Src, rec.Tag
	default:
		return evs
	}
	if rec.Flags&FlagFailed != 0 {
		args["failed"] = true
	}
	if nth >= 0 {
		args["match"] = keyOf(rec).String(nth)
	}
	if rec.Flags&FlagAsync == 0 {
		return append(evs, complete(name, "p2p", start, end, pid, r, args))
	}
	*async++
	id := fmt.Sprintf("p%d.%d", pid, *async)
	name = "I" + strings.ToLower(name)
	req := map[string]any{"comm": args["comm"], "bytes": rec.Bytes, "tag": rec.Tag}
	evs = append(evs,
		Event{Name: name, Cat: "request", Ph: "b", Ts: micros(start), Pid: pid, Tid: r, ID: id, Args: req},
		Event{Name: name, Cat: "request", Ph: "e", Ts: micros(end), Pid: pid, Tid: r, ID: id})
	at := start // a send leaves when posted
	if rec.Op == OpRecv {
		at = end - minDur // a receive's message is there when it completes
	}
	return append(evs, complete(name, "p2p", at, at+minDur, pid, r, args))
}

// complete returns a complete event.
func complete(name, cat string, start, end int64, pid, tid int, args map[string]any) Event {
	d := micros(end - start)
	return Event{Name: name, Cat: cat, Ph: "X", Ts: micros(start), Dur: &d, Pid: pid, Tid: tid, Args: args}
}

// nest sorts one track's events by time and turns each complete event
// that overlaps another without nesting in it (two goroutines of a rank
// in blocking calls at once, a non-blocking collective's helper) into an
// async slice, which may overlap: a track's complete events must nest.
func nest(evs []Event) []Event {
	slices.SortStableFunc(evs, func(a, b Event) int {
		if c := cmp.Compare(a.Ts, b.Ts); c != 0 {
			return c
		}
		return cmp.Compare(dur(b), dur(a)) // the enclosing one first
	})
	var open []float64 // ends of the enclosing slices
	var out []Event
	n := 0
	for _, e := range evs {
		if e.Ph != "X" {
			out = append(out, e)
			continue
		}
		end := e.Ts + *e.Dur
		for len(open) > 0 && open[len(open)-1] <= e.Ts {
			open = open[:len(open)-1]
		}
		if len(open) > 0 && end > open[len(open)-1] {
			n++
			id := fmt.Sprintf("p%d.r%d.o%d", e.Pid, e.Tid, n)
			delete(e.Args, "match")
			b := e
			b.Ph, b.Dur, b.ID, b.Cat = "b", nil, id, e.Cat+",overlapping"
			out = append(out, b, Event{Name: e.Name, Cat: b.Cat, Ph: "e", Ts: end, Pid: e.Pid, Tid: e.Tid, ID: id})
			continue
		}
		open = append(open, end)
		out = append(out, e)
	}
	return out
}

// title capitalises a collective's name as users call it ("allreduce":
// Allreduce).
func title(s string) string {
	if s == "" {
		return "collective"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func dur(e Event) float64 {
	if e.Dur == nil {
		return 0
	}
	return *e.Dur
}
