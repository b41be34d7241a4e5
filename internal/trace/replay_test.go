package trace

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestLogRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewSet(1, nil, 0, Options{Record: dir})
	if err != nil {
		t.Fatal(err)
	}
	l := rec.Rank(0).Log()
	l.Add(Sources, 3)
	i := l.Reserve(Sources)
	l.Add(Sources, 1)
	l.Fill(Sources, i, 7)
	for _, ok := range []bool{false, false, true, true, false} {
		l.Poll(ok)
	}
	l.Add(Picks, 2)
	if err := rec.SaveLogs(); err != nil {
		t.Fatal(err)
	}
	rep, err := NewSet(1, nil, 0, Options{Replay: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Rank(0).Log()
	for _, want := range []int{3, 7, 1} {
		if v, ok := r.Next(Sources); !ok || v != want {
			t.Fatalf("source %d, %v; want %d", v, ok, want)
		}
	}
	if _, ok := r.Next(Sources); ok {
		t.Fatal("a source beyond the log")
	}
	// Two failures then a success, a success, then live.
	for i, want := range [][2]bool{{false, true}, {false, true}, {true, true}, {true, true}, {false, false}} {
		if s, f := r.ForcePoll(); [2]bool{s, f} != want {
			t.Fatalf("poll %d: %v %v, want %v", i, s, f, want)
		}
	}
	if v, ok := r.Next(Picks); !ok || v != 2 {
		t.Fatalf("pick %d %v", v, ok)
	}
	if _, err := NewSet(1, nil, 0, Options{Replay: t.TempDir()}); err == nil {
		t.Fatal("replay of an empty directory")
	}
	if _, err := NewSet(2, []int{0}, 0, Options{Replay: dir}); err == nil || !strings.Contains(err.Error(), "recorded on 1 ranks, replayed on 2") {
		t.Fatalf("replay on another number of ranks: %v", err)
	}
}

func FuzzLogDecode(f *testing.F) {
	f.Add([]byte(logMagic + "\x01\x01\x06\x00\x00"))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := Log{ranks: 1}
		if err := l.decode(bufio.NewReader(bytes.NewReader(b))); err != nil {
			return
		}
		for s := range l.streams {
			for _, v := range l.streams[s] {
				if v < Unknown {
					t.Fatalf("decoded %d", v)
				}
			}
		}
	})
}

// A stream appended by several goroutines at once keeps every value,
// across chunks.
func TestStreamConcurrent(t *testing.T) {
	var s stream
	const writers, each = 4, 3 * chunkLen
	done := make(chan struct{})
	for w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				s.add(int32(w*each + i))
			}
		}()
	}
	for range writers {
		<-done
	}
	vs := s.values()
	if len(vs) != writers*each {
		t.Fatalf("%d values, want %d", len(vs), writers*each)
	}
	seen := make([]bool, writers*each)
	for _, v := range vs {
		if seen[v] {
			t.Fatalf("value %d twice", v)
		}
		seen[v] = true
	}
}
