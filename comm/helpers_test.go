package comm_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
)

// run runs fn on n goroutine ranks and fails the test on error.
func run(t testing.TB, n int, fn func(w *comm.Comm) error, opts ...mpgo.Option) {
	t.Helper()
	if err := mpgo.Run(n, fn, opts...); err != nil {
		t.Fatal(err)
	}
}

// payload returns n bytes whose first 8 hold v.
func payload(n int, v uint64) []byte {
	b := make([]byte, max(n, 8))
	binary.LittleEndian.PutUint64(b, v)
	for i := 8; i < len(b); i++ {
		b[i] = byte(v) + byte(i)
	}
	return b[:max(n, 8)]
}

func val(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// noDetector turns the deadlock detector off, for tests that block on
// purpose.
func noDetector() mpgo.Option { return mpgo.WithoutDeadlockDetection() }

// allAborted closes got and checks that every error in it is ErrAborted:
// what the operations blocked in the other ranks returned once one rank
// failed.
func allAborted(t *testing.T, got chan error, what string) {
	t.Helper()
	close(got)
	for e := range got {
		if !errors.Is(e, comm.ErrAborted) {
			t.Errorf("%s returned %v, want ErrAborted", what, e)
		}
	}
}

// runProcs runs fn on procs processes of k ranks each, every process a
// world of its own joined to the others by the in-memory loopback device
// (package devicetest). It returns each rank's error.
func runProcs(t testing.TB, procs, k int, fn func(w *comm.Comm) error) []error {
	t.Helper()
	layout := devicetest.Blocks(procs, k)
	devs, _ := devicetest.Loopbacks(procs, layout, comm.DefaultEagerLimit)
	errs, err := devicetest.Run(devs, layout, 0, fn)
	if err != nil {
		t.Fatal(err)
	}
	return errs
}
