package trace

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Options say what a set records.
type Options struct {
	Trace  bool   // a timeline of each rank's operations
	Events int    // the records kept of each rank, the most recent (0: DefaultEvents; ring.go)
	Stats  bool   // per-rank counters
	Record string // a directory: log the outcomes of wildcard matching there
	Replay string // a directory: force the outcomes logged there
}

// On reports whether o asks for anything.
func (o Options) On() bool { return o.Trace || o.Stats || o.Record != "" || o.Replay != "" }

// Set is what a world records: one [Rank] per rank that runs in this
// process, one clock, and the names its records refer to.
//
// Safe for concurrent use.
type Set struct {
	opts    Options
	clock   Clock
	wall    time.Time // when clock read 0
	process int       // this process's number in its job (0 for a single process)
	ranks   []*Rank   // by world rank; nil for the ranks of other processes

	rings    atomic.Pointer[rings] // by P (pin.go)
	ringSize int                   // records of each ring

	mu    sync.Mutex
	ids   sync.Map          // name → uint16 (read without mu)
	names []string          // by number; names[0] is ""
	comms map[uint64]string // context → communicator name
}

// NewSet returns the set of a world of n ranks of which local run here
// (nil: all), in process number process.
func NewSet(n int, local []int, process int, o Options) (*Set, error) {
	if o.Events < 0 {
		return nil, fmt.Errorf("trace: %d events a rank: want a positive number", o.Events)
	}
	if o.Events == 0 {
		o.Events = DefaultEvents
	}
	if o.Record != "" && o.Replay != "" {
		return nil, fmt.Errorf("trace: both record (%s) and replay (%s)", o.Record, o.Replay)
	}
	s := &Set{opts: o, clock: NewClock(), process: process, ranks: make([]*Rank, n), names: []string{""}, comms: map[uint64]string{}}
	s.wall = time.Now()
	add := func(r int) error {
		if r < 0 || r >= n {
			return fmt.Errorf("trace: rank %d of %d", r, n)
		}
		s.ranks[r] = &Rank{clock: s.clock, world: r, set: s, trace: s.opts.Trace, count: s.opts.Stats}
		return nil
	}
	if local == nil {
		for r := range n {
			add(r) //nolint:errcheck // in range
		}
	}
	for _, r := range local {
		if err := add(r); err != nil {
			return nil, err
		}
	}
	s.rings.Store(&rings{})
	s.ringSize = ringSize(s.opts.Events, len(local))
	if local == nil {
		s.ringSize = ringSize(s.opts.Events, n)
	}
	if err := s.openLogs(); err != nil {
		return nil, err
	}
	return s, nil
}

// Rank returns world rank r's recorder, nil when r runs elsewhere.
func (s *Set) Rank(r int) *Rank { return s.ranks[r] }

// Options returns what s records.
func (s *Set) Options() Options { return s.opts }

// Name returns the number that stands for name in records.
func (s *Set) Name(name string) uint16 {
	if id, ok := s.ids.Load(name); ok {
		return id.(uint16)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.ids.Load(name); ok {
		return id.(uint16)
	}
	if len(s.names) > 1<<16-1 {
		return 0 // out of numbers: unnamed
	}
	id := uint16(len(s.names))
	s.names = append(s.names, name)
	s.ids.Store(name, id)
	return id
}

// name returns the name numbered id.
func (s *Set) name(id uint16) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(id) < len(s.names) {
		return s.names[id]
	}
	return ""
}

// NameComm records that the communicator of context ctx is called name.
func (s *Set) NameComm(ctx uint64, name string) {
	s.mu.Lock()
	s.comms[ctx] = name
	s.mu.Unlock()
}

// commName returns the name of the communicator of context ctx.
func (s *Set) commName(ctx uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.comms[ctx]; ok {
		return n
	}
	if n, ok := s.comms[ctx&^1]; ok {
		return n // its collective context
	}
	return fmt.Sprintf("context %#x", ctx)
}

// Stats returns the counters of the ranks that run here, by world rank;
// nil when s keeps none.
func (s *Set) Stats() []Stats {
	if !s.opts.Stats {
		return nil
	}
	var st []Stats
	for _, o := range s.ranks {
		if o != nil {
			st = append(st, o.Stats())
		}
	}
	return st
}
