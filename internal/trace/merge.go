package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// ReadFile reads a trace file that an mpgo process wrote.
func ReadFile(r io.Reader) (*File, error) {
	var f File
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("trace: not a trace file: %w", err)
	}
	if f.OtherData.Producer != producer {
		return nil, fmt.Errorf("trace: not a trace file of mpgo (producer %q)", f.OtherData.Producer)
	}
	if _, err := time.Parse(time.RFC3339Nano, f.OtherData.WallStart); err != nil {
		return nil, fmt.Errorf("trace: wallStart: %w", err)
	}
	return &f, nil
}

// Merge returns one trace of the files of a job's processes: their
// events on one time axis (aligned by their wall-clock starts, the
// earliest at 0), and the flows between all of them, those of messages
// between processes included. Two files of one process are an error.
func Merge(files []*File) (*File, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("trace: nothing to merge")
	}
	starts := make([]time.Time, len(files))
	first := 0
	seen := map[int]bool{}
	for i, f := range files {
		t, err := time.Parse(time.RFC3339Nano, f.OtherData.WallStart)
		if err != nil {
			return nil, fmt.Errorf("trace: file %d: wallStart: %w", i, err)
		}
		if seen[f.OtherData.Process] {
			return nil, fmt.Errorf("trace: two files of process %d", f.OtherData.Process)
		}
		seen[f.OtherData.Process] = true
		starts[i] = t
		if t.Before(starts[first]) {
			first = i
		}
	}
	out := &File{DisplayTimeUnit: "ns", OtherData: Meta{Producer: producer, Process: -1, WallStart: starts[first].Format(time.RFC3339Nano)}}
	for i, f := range files {
		shift := micros(starts[i].Sub(starts[first]).Nanoseconds())
		for _, e := range f.TraceEvents {
			if e.Cat == "flow" {
				continue // drawn again below, between all files
			}
			if e.Ph != "M" {
				e.Ts += shift
			}
			out.TraceEvents = append(out.TraceEvents, e)
		}
		for r, n := range f.OtherData.Dropped {
			if out.OtherData.Dropped == nil {
				out.OtherData.Dropped = map[string]uint64{}
			}
			out.OtherData.Dropped[r] = n
		}
	}
	out.TraceEvents = append(out.TraceEvents, Flows(out.TraceEvents)...)
	return out, nil
}
