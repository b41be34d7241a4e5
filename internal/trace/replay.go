package trace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Record and replay of the outcomes of wildcard matching.
//
// A program whose ranks receive from AnySource, probe, poll, or wait for
// any of several requests may take another path on every run: which
// sender a wildcard receive matched, which request WaitAny returned, how
// many times Iprobe or Test said "not yet" all depend on timing. Record
// mode logs those outcomes, and only those, per rank; replay mode forces
// them, so that the run takes the recorded path again (ReMPI's idea, for
// MPI). Everything else a rank does is deterministic given them.
//
// A rank's log is three streams, in the order of the rank's calls:
//
//   - sources: the sender (its rank in the communicator) each wildcard
//     receive or probe matched, in the order they were posted;
//   - polls: for each poll that succeeded, how many of the rank's polls
//     failed before it (since the previous success);
//   - picks: which request each WaitAny or TestAny returned, and for
//     WaitSome how many and which.
//
// Replay assumes what record saw: one goroutine of each rank makes these
// calls, in the same order. A replayed wildcard receive waits for the
// recorded sender's message; a replayed poll fails the recorded number
// of times, then waits until it succeeds; WaitAny waits for the recorded
// request. A call beyond the end of a stream runs live.

// Stream is one of a log's streams.
type Stream uint8

// The streams.
const (
	Sources Stream = iota
	Polls
	Picks
	numStreams
)

// Unknown marks a source slot whose receive's outcome was never seen (an
// Irecv never waited for): replay runs it live.
const Unknown = -2

// logMagic starts a log file.
const logMagic = "mpgo-replay 1\n"

// Log is one rank's record or replay log. Safe for concurrent use.
type Log struct {
	replay bool
	path   string
	ranks  int // the world's size, which a replay must have

	// Record: each stream appended without a lock (stream.go), the
	// polls failed since the last success, and under mu the wildcard
	// Irecvs not seen complete yet (request → its source slot).
	rec     [numStreams]stream
	fails   atomic.Int32
	mu      sync.Mutex
	pending map[any]int

	// Replay, under mu: the streams read, the next value of each, and the
	// failures still to force in the current run of polls.
	streams [numStreams][]int32
	next    [numStreams]int
	failed  int32
	armed   bool // failed holds the current run's remaining failures
}

// Replaying reports whether the log forces outcomes (else it records).
func (l *Log) Replaying() bool { return l.replay }

// Add appends v to stream s (record).
func (l *Log) Add(s Stream, v int) { l.rec[s].add(int32(v)) }

// Reserve appends a placeholder to stream s and returns its index, for an
// outcome seen later (Fill).
func (l *Log) Reserve(s Stream) int { return l.rec[s].add(Unknown) }

// Fill sets the value of stream s at index i (Reserve).
func (l *Log) Fill(s Stream, i, v int) {
	l.mu.Lock()
	l.rec[s].set(i, int32(v))
	l.mu.Unlock()
}

// Pend reserves the next slot of the Sources stream for the wildcard
// receive key, whose source Resolve fills once the receive is seen
// complete (record).
func (l *Log) Pend(key any) {
	i := l.rec[Sources].add(Unknown)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[any]int{}
	}
	l.pending[key] = i
}

// Resolve fills the slot Pend reserved for key with src, if key is
// pending (record).
func (l *Log) Resolve(key any, src int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i, ok := l.pending[key]; ok {
		l.rec[Sources].set(i, int32(src))
		delete(l.pending, key)
	}
}

// Next returns the next recorded value of stream s (replay); ok is false
// when the stream is exhausted.
func (l *Log) Next(s Stream) (v int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next[s] >= len(l.streams[s]) {
		return 0, false
	}
	v = int(l.streams[s][l.next[s]])
	l.next[s]++
	return v, true
}

// Poll records the outcome of a poll (record mode): a failure counts, a
// success logs the failures before it.
func (l *Log) Poll(ok bool) {
	if ok {
		l.rec[Polls].add(l.fails.Swap(0))
	} else {
		l.fails.Add(1)
	}
}

// ForcePoll says how a poll must come out in replay: fail (false, true),
// succeed (true, true), or run live (_, false) once the stream is spent.
// After a forced success the caller waits until the poll succeeds.
func (l *Log) ForcePoll() (succeed, forced bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.armed {
		if l.next[Polls] >= len(l.streams[Polls]) {
			return false, false
		}
		l.failed = l.streams[Polls][l.next[Polls]]
		l.next[Polls]++
		l.armed = true
	}
	if l.failed > 0 {
		l.failed--
		return false, true
	}
	l.armed = false
	return true, true
}

// logPath is the file of world rank r's log in dir.
func logPath(dir string, r int) string {
	return filepath.Join(dir, fmt.Sprintf("rank-%d.mpgo-replay", r))
}

// openLogs gives each rank of s a log: empty to record into, or read
// from the replay directory.
func (s *Set) openLogs() error {
	dir, replay := s.opts.Record, false
	if s.opts.Replay != "" {
		dir, replay = s.opts.Replay, true
	}
	if dir == "" {
		return nil
	}
	if !replay {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("trace: record directory: %w", err)
		}
	}
	for r, o := range s.ranks {
		if o == nil {
			continue
		}
		l := &Log{replay: replay, path: logPath(dir, r), ranks: len(s.ranks)}
		if replay {
			if err := l.load(); err != nil {
				return err
			}
		}
		o.log = l
	}
	return nil
}

// SaveLogs writes the recorded logs of s's ranks (record mode; nothing
// otherwise).
func (s *Set) SaveLogs() error {
	if s.opts.Record == "" {
		return nil
	}
	var errs []error
	for _, o := range s.ranks {
		if o != nil && o.log != nil {
			errs = append(errs, o.log.save())
		}
	}
	return errors.Join(errs...)
}

// save writes l to its file: the magic line, the world's size, then each
// stream as its length and its values, as varints (a source or a count of
// a few bits takes a byte).
func (l *Log) save() error {
	f, err := os.Create(l.path)
	if err != nil {
		return fmt.Errorf("trace: record: %w", err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(logMagic) //nolint:errcheck // Flush reports it
	var b [binary.MaxVarintLen64]byte
	w.Write(b[:binary.PutUvarint(b[:], uint64(l.ranks))]) //nolint:errcheck // Flush reports it
	l.mu.Lock()
	for s := range l.rec {
		st := l.rec[s].values()
		w.Write(b[:binary.PutUvarint(b[:], uint64(len(st)))]) //nolint:errcheck // Flush reports it
		for _, v := range st {
			w.Write(b[:binary.PutVarint(b[:], int64(v))]) //nolint:errcheck // Flush reports it
		}
	}
	l.mu.Unlock()
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("trace: record: %w", err)
	}
	return nil
}

// load reads l's file.
func (l *Log) load() error {
	f, err := os.Open(l.path)
	if err != nil {
		return fmt.Errorf("trace: replay: %w", err)
	}
	defer f.Close()
	if err := l.decode(bufio.NewReader(f)); err != nil {
		return fmt.Errorf("trace: replay %s: %w", l.path, err)
	}
	return nil
}

// decode reads a log's streams from r (the format save writes).
func (l *Log) decode(r *bufio.Reader) error {
	magic := make([]byte, len(logMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != logMagic {
		return errors.New("not an mpgo replay log")
	}
	ranks, err := binary.ReadUvarint(r)
	if err != nil {
		return fmt.Errorf("world size: %w", err)
	}
	if ranks != uint64(l.ranks) {
		return fmt.Errorf("recorded on %d ranks, replayed on %d", ranks, l.ranks)
	}
	for s := range l.streams {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return fmt.Errorf("stream %d: %w", s, err)
		}
		if n > 1<<31 {
			return fmt.Errorf("stream %d: %d values", s, n)
		}
		vs := make([]int32, 0, min(n, 1<<16))
		for range n {
			v, err := binary.ReadVarint(r)
			if err != nil {
				return fmt.Errorf("stream %d: %w", s, err)
			}
			if v < Unknown || v > 1<<31-1 {
				return fmt.Errorf("stream %d: value %d", s, v)
			}
			vs = append(vs, int32(v))
		}
		l.streams[s] = vs
	}
	return nil
}
