package mpgo_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// Rank 0 sends rank 1 five messages of 8 bytes before rank 1 receives
// any (they wait in its unexpected queue), then, 20ms later, one more that
// rank 1 is blocked waiting for. (A first barrier sets the shared-memory
// collectives up, with a message of their own: the counts are taken
// after it.)
func TestStats(t *testing.T) {
	var out bytes.Buffer
	got := make([]comm.RankStats, 2)
	err := mpgo.Run(2, func(w *comm.Comm) error {
		buf := make([]byte, 8)
		if err := w.Barrier(); err != nil {
			return err
		}
		before := w.Stats()
		defer func() {
			s := w.Stats()
			s.MsgsSent -= before.MsgsSent
			s.BytesSent -= before.BytesSent
			s.MsgsRecv -= before.MsgsRecv
			s.BytesRecv -= before.BytesRecv
			s.Collectives -= before.Collectives
			s.Blocked -= before.Blocked
			got[w.Rank()] = s
		}()
		if w.Rank() == 0 {
			for i := range 5 {
				if err := w.Send(buf, comm.Byte, 1, i); err != nil {
					return err
				}
			}
			if err := w.Barrier(); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
			if err := w.Send(buf[:4], comm.Byte, 1, 9); err != nil {
				return err
			}
		} else {
			if err := w.Barrier(); err != nil {
				return err
			}
			for i := range 5 {
				if _, err := w.Recv(buf, comm.Byte, 0, i); err != nil {
					return err
				}
			}
			if _, err := w.Recv(buf, comm.Byte, 0, 9); err != nil {
				return err
			}
		}
		return nil
	}, mpgo.WithStats(&out))
	if err != nil {
		t.Fatal(err)
	}
	s0, s1 := got[0], got[1]
	if s0.MsgsSent != 6 || s0.BytesSent != 44 || s0.MsgsRecv != 0 {
		t.Fatalf("rank 0: %v", s0)
	}
	if s1.MsgsRecv != 6 || s1.BytesRecv != 44 || s1.MsgsSent != 0 {
		t.Fatalf("rank 1: %v", s1)
	}
	if s1.UnexpectedMax != 5 {
		t.Fatalf("rank 1's unexpected queue held at most %d messages, want 5", s1.UnexpectedMax)
	}
	if s1.Blocked < 5*time.Millisecond {
		t.Fatalf("rank 1 blocked %v, want most of 20ms", s1.Blocked)
	}
	if s0.Collectives != 1 || s1.Collectives != 1 {
		t.Fatalf("collectives %d and %d, want 1 each", s0.Collectives, s1.Collectives)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "mpgo stats: rank 1: sent 0 msgs 0 B, received ") {
		t.Fatalf("printed:\n%s", out.String())
	}
}

func TestStatsOff(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if err := w.Barrier(); err != nil {
			return err
		}
		if s := w.Stats(); s != (comm.RankStats{Rank: w.Rank()}) {
			return fmt.Errorf("counters of a run that keeps none: %v", s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
