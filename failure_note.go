package mpgo

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mpgo/mpgo/comm"
)

// A rank's failure across processes: the failing process tells the others
// the rank's original error before it breaks off (comm.World.NotifyFailure),
// so that they report "rank R failed: …" once, instead of a chain of
// wrapped "peer process lost" errors.

// noteWait bounds how long a failing process waits for its failure note
// to be sent before it aborts.
const noteWait = time.Second

// notifyFailure tells w's other processes of e, when e is a rank's own
// failure (not one caused by an abort, a deadlock or a cancellation).
func notifyFailure(w *comm.World, e error) {
	var re *RankError
	if !errors.As(e, &re) || w.Err() != nil || errors.Is(e, comm.ErrAborted) || errors.Is(e, comm.ErrDeadlock) {
		return
	}
	w.NotifyFailure(re.Rank, re.summary(), noteWait)
}

// summary is e without the rank: its error, or its panic's value and the
// line that panicked (the frame under the panic in e.Stack).
func (e *RankError) summary() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	s := fmt.Sprintf("panicked: %v", e.Panic)
	lines := strings.Split(string(e.Stack), "\n")
	for i, l := range lines {
		// "panic(…)", its file, then the function that panicked and its
		// file:line.
		if strings.HasPrefix(l, "panic(") && i+3 < len(lines) {
			fn := strings.TrimSpace(lines[i+2])
			if j := strings.LastIndexByte(fn, '('); j > 0 {
				fn = fn[:j]
			}
			at := strings.TrimSpace(lines[i+3])
			if j := strings.LastIndex(at, " +0x"); j > 0 {
				at = at[:j]
			}
			s += fmt.Sprintf(" in %s at %s", fn, at)
			break
		}
	}
	return s
}

// peerFailure returns the peer failure err is a consequence of, if any.
func peerFailure(err error) *comm.PeerFailure {
	var pf *comm.PeerFailure
	if errors.As(err, &pf) {
		return pf
	}
	return nil
}
