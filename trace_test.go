package mpgo_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// traceEvent is an event of a Chrome trace file, as a reader sees it.
type traceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   float64         `json:"ts"`
	Dur  *float64        `json:"dur"`
	Pid  int             `json:"pid"`
	Tid  int             `json:"tid"`
	ID   json.RawMessage `json:"id"`
	Bp   string          `json:"bp"`
	Args map[string]any  `json:"args"`
}

// nbodyLike is the traffic of examples/nbody: each step a ring exchange
// (Sendrecv), non-blocking halo messages, and an Allreduce.
func nbodyLike(steps int) func(w *comm.Comm) error {
	return func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		n, r := w.Size(), w.Rank()
		next, prev := (r+1)%n, (r+n-1)%n
		out, in := make([]float64, 64), make([]float64, 64)
		for s := range steps {
			if _, err := c.Sendrecv(out, next, s, in, prev, s); err != nil {
				return err
			}
			rq, err := c.Irecv(in[:8], prev, 1000+s)
			if err != nil {
				return err
			}
			sq, err := c.Isend(out[:8], next, 1000+s)
			if err != nil {
				return err
			}
			if err := comm.WaitAll(rq, sq); err != nil {
				return err
			}
			e := []float64{float64(r)}
			if err := c.Allreduce(e, e, typed.Sum); err != nil {
				return err
			}
		}
		return nil
	}
}

// readTrace reads a trace file and checks what every trace must hold: it
// is JSON of the trace-event format, each complete event has a duration,
// the complete events of each track nest, async slices begin before they
// end, and each flow has both ends, each inside a complete event of its
// track. It returns the events.
func readTrace(t *testing.T, path string) []traceEvent {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	type track struct{ pid, tid int }
	slicesOf := map[track][]traceEvent{}
	async := map[string]int{}
	flows := map[string][2]int{}
	for _, e := range f.TraceEvents {
		tr := track{e.Pid, e.Tid}
		switch e.Ph {
		case "M":
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				t.Fatalf("complete event without a duration: %+v", e)
			}
			slicesOf[tr] = append(slicesOf[tr], e)
		case "b", "e":
			k := fmt.Sprintf("%s/%s", e.Cat, e.ID)
			if e.Ph == "b" {
				async[k]++
			} else {
				async[k]--
			}
		case "s", "f":
			fl := flows[string(e.ID)]
			if e.Ph == "s" {
				fl[0]++
			} else {
				fl[1]++
				if e.Bp != "e" {
					t.Fatalf("flow end not bound to its enclosing slice: %+v", e)
				}
			}
			flows[string(e.ID)] = fl
			if !inSlice(slicesOf[tr], e.Ts) && !inSlice(allX(f.TraceEvents, tr), e.Ts) {
				t.Fatalf("flow %s at %v is in no slice of its track %v", e.ID, e.Ts, tr)
			}
		default:
			t.Fatalf("unexpected phase %q", e.Ph)
		}
	}
	for k, n := range async {
		if n != 0 {
			t.Fatalf("async slice %s: %d begins without an end", k, n)
		}
	}
	for id, fl := range flows {
		if fl != [2]int{1, 1} {
			t.Fatalf("flow %s has %d starts and %d ends", id, fl[0], fl[1])
		}
	}
	for tr, xs := range slicesOf {
		slices.SortStableFunc(xs, func(a, b traceEvent) int {
			if a.Ts != b.Ts {
				return cmpF(a.Ts, b.Ts)
			}
			return cmpF(*b.Dur, *a.Dur)
		})
		var open []float64
		for _, x := range xs {
			for len(open) > 0 && open[len(open)-1] <= x.Ts {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && x.Ts+*x.Dur > open[len(open)-1]+1e-6 {
				t.Fatalf("track %v: %s at %v (%v µs) overlaps its enclosing slice", tr, x.Name, x.Ts, *x.Dur)
			}
			open = append(open, x.Ts+*x.Dur)
		}
	}
	return f.TraceEvents
}

func allX(evs []traceEvent, tr struct{ pid, tid int }) []traceEvent {
	var xs []traceEvent
	for _, e := range evs {
		if e.Ph == "X" && e.Pid == tr.pid && e.Tid == tr.tid {
			xs = append(xs, e)
		}
	}
	return xs
}

func inSlice(xs []traceEvent, ts float64) bool {
	for _, x := range xs {
		if x.Ts <= ts && ts <= x.Ts+*x.Dur {
			return true
		}
	}
	return false
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// count returns how many events f accepts.
func count(evs []traceEvent, f func(e traceEvent) bool) int {
	n := 0
	for _, e := range evs {
		if f(e) {
			n++
		}
	}
	return n
}

func TestTraceNbodyLike(t *testing.T) {
	const ranks, steps = 4, 5
	path := filepath.Join(t.TempDir(), "trace.json")
	if err := mpgo.Run(ranks, nbodyLike(steps), mpgo.WithTrace(path)); err != nil {
		t.Fatal(err)
	}
	evs := readTrace(t, path)
	tracks := map[int]bool{}
	for _, e := range evs {
		if e.Ph == "M" && e.Name == "thread_name" {
			tracks[e.Tid] = true
		}
	}
	if len(tracks) != ranks {
		t.Fatalf("%d tracks, want one per rank (%d)", len(tracks), ranks)
	}
	// Per rank and step: a Sendrecv's send and receive, an Isend and an
	// Irecv; each message one flow.
	sends := count(evs, func(e traceEvent) bool { return e.Ph == "X" && e.Args["to"] != nil })
	flows := count(evs, func(e traceEvent) bool { return e.Ph == "s" })
	if want := ranks * steps * 2; sends < want || flows < want {
		t.Fatalf("%d sends and %d flows, want at least %d of each", sends, flows, want)
	}
	if flows != sends {
		t.Fatalf("%d sends but %d flows: each message is received in this program", sends, flows)
	}
	colls := count(evs, func(e traceEvent) bool {
		return e.Ph == "X" && e.Cat == "collective" && e.Args["algorithm"] != nil && len(e.Name) > len("Allreduce") && e.Name[:9] == "Allreduce"
	})
	if colls != ranks*steps {
		t.Fatalf("%d Allreduce slices named with their algorithm, want %d", colls, ranks*steps)
	}
	asyncs := count(evs, func(e traceEvent) bool { return e.Ph == "b" && e.Cat == "request" })
	if asyncs != ranks*steps*2 {
		t.Fatalf("%d async request slices, want %d (an Isend and an Irecv per rank and step)", asyncs, ranks*steps*2)
	}
}

func TestTraceOptions(t *testing.T) {
	ok := func(*comm.Comm) error { return nil }
	for _, o := range []mpgo.Option{mpgo.WithTrace(""), mpgo.WithStats(nil), mpgo.WithRecord(""), mpgo.WithReplay("")} {
		if err := mpgo.Run(1, ok, o); !errors.Is(err, comm.ErrArg) {
			t.Fatalf("got %v, want ErrArg", err)
		}
	}
	dir := t.TempDir()
	if err := mpgo.Run(1, ok, mpgo.WithRecord(dir), mpgo.WithReplay(dir)); !errors.Is(err, comm.ErrArg) {
		t.Fatalf("record and replay at once: got %v, want ErrArg", err)
	}
	if err := mpgo.Run(1, ok, mpgo.WithTrace(filepath.Join(dir, "no", "such", "dir", "t.json"))); err == nil {
		t.Fatal("a trace file that cannot be created: no error")
	}
}

// Under MPICH's mpiexec, two processes each write their trace file, and
// cmd/mptrace merges them into one whose flows join the sends of one
// process to the receives of the other.
func TestTraceUnderMPIExec(t *testing.T) {
	mpiexec := needMPIExec(t)
	dir := t.TempDir()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	mptrace := filepath.Join(dir, "mptrace")
	if out, err := exec.Command(gocmd, "build", "-o", mptrace, "github.com/mpgo/mpgo/cmd/mptrace").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := []string{helperEnv + "=nbody", "MPGO_TRACE=" + filepath.Join(dir, "t.json")}
	if out, code := runProgram(t, time.Minute, env, mpiexec, "-n", "2", os.Args[0]); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, out)
	}
	merged := filepath.Join(dir, "merged.json")
	if out, code := runProgram(t, time.Minute, nil, mptrace, "-o", merged, filepath.Join(dir, "t.0.json"), filepath.Join(dir, "t.1.json")); code != 0 {
		t.Fatalf("mptrace: exit status %d:\n%s", code, out)
	}
	evs := readTrace(t, merged)
	pids := map[int]bool{}
	for _, e := range evs {
		if e.Ph == "X" {
			pids[e.Pid] = true
		}
	}
	if len(pids) != 2 {
		t.Fatalf("slices of %d processes, want 2", len(pids))
	}
	pidOf := map[string]int{}
	across := 0
	for _, e := range evs {
		switch e.Ph {
		case "s":
			pidOf[string(e.ID)] = e.Pid
		case "f":
			if pidOf[string(e.ID)] != e.Pid {
				across++
			}
		}
	}
	// Each step: rank 0 and rank 1 each send the other a Sendrecv's
	// message and an Isend's.
	if across < 2*3*2 {
		t.Fatalf("%d flows between the processes, want at least %d", across, 2*3*2)
	}
}

func TestTracePath(t *testing.T) {
	for _, tt := range []struct {
		path    string
		process int
		want    string
	}{
		{"t.json", -1, "t.json"},
		{"t.json", 3, "t.3.json"},
		{"dir/trace", 0, "dir/trace.0"},
		{"run-%p/t.json", 2, "run-2/t.json"},
	} {
		if got := mpgo.TracePath(tt.path, tt.process); got != tt.want {
			t.Errorf("TracePath(%q, %d) = %q, want %q", tt.path, tt.process, got, tt.want)
		}
	}
}

func TestObserveEnv(t *testing.T) {
	ok := func(*comm.Comm) error { return nil }
	for _, kv := range [][2]string{{"MPGO_TRACE_EVENTS", "0"}, {"MPGO_TRACE_EVENTS", "x"}, {"MPGO_STATS", "yes"}} {
		t.Run(kv[0]+"="+kv[1], func(t *testing.T) {
			t.Setenv(kv[0], kv[1])
			if err := mpgo.Run(1, ok); !errors.Is(err, comm.ErrArg) {
				t.Fatalf("got %v, want ErrArg", err)
			}
		})
	}
	dir := t.TempDir()
	t.Setenv("MPGO_TRACE", filepath.Join(dir, "env.json"))
	t.Setenv("MPGO_TRACE_EVENTS", "64")
	if err := mpgo.Run(2, nbodyLike(1)); err != nil {
		t.Fatal(err)
	}
	readTrace(t, filepath.Join(dir, "env.json"))
}

// needMPIExec returns MPICH's mpiexec, or skips t when it is not
// installed or tests are short (it starts processes).
func needMPIExec(t *testing.T) string {
	t.Helper()
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("mpiexec not installed (apt-get install mpich)")
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	return mpiexec
}
