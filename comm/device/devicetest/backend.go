package devicetest

import (
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// Shape is a job as [TestBackend] asks a [Harness] to play it.
type Shape struct {
	// Procs is the number of processes, Ranks the number of ranks each
	// runs (at least 1): process p runs world ranks p·Ranks …
	// p·Ranks+Ranks-1, as [Blocks] lays them out.
	Procs, Ranks int
	// Eager is the eager limit in bytes, both between the ranks of a
	// process (comm.Config.EagerLimit) and over the backend's device;
	// zero means each one's default.
	Eager int
}

// String names s as TestBackend's subtests do: "4x1", "3x1/eager=1024".
func (s Shape) String() string {
	if s.Eager == 0 {
		return fmt.Sprintf("%dx%d", s.Procs, s.Ranks)
	}
	return fmt.Sprintf("%dx%d/eager=%d", s.Procs, s.Ranks, s.Eager)
}

// Harness plays a job of shape s over the backend under test, every rank
// calling fn with its world communicator, and returns each rank's error,
// indexed by world rank: [Run] does it over devices of this process,
// package jobtest over a backend joined through a launcher's key-value
// store. It must keep this contract, which the failure tests of
// [TestBackend] rely on:
//
//   - a rank whose fn returns an error aborts its process's world, and
//     once the process's ranks all returned its device closes abruptly,
//     so that the other processes see it lost;
//   - a process whose ranks all returned nil closes its device
//     gracefully, on its own schedule, while the others may still run;
//   - it returns once every process closed, and reports a job that hangs
//     (a panic, as Run does) rather than waiting for ever.
//
// It may end t (t.Fatal, or t.Skip where the backend is not supported
// here) when the job cannot start; it is called on t's goroutine.
type Harness func(t testing.TB, s Shape, fn func(w *comm.Comm) error) []error

// semanticsShapes are the jobs [TestBackend] runs [Semantics] on: one
// rank per process, several (shared memory inside a process, the device
// between them), and a small eager limit, so that most messages go by
// rendezvous.
var semanticsShapes = []Shape{
	{Procs: 4, Ranks: 1},
	{Procs: 2, Ranks: 2},
	{Procs: 3, Ranks: 1, Eager: 1024},
	{Procs: 2, Ranks: 3, Eager: 1024},
}

// TestBackend is the conformance suite of a backend, whose jobs h plays,
// as testing/fstest.TestFS is that of a file system; every backend's
// tests call it. It runs, as subtests of t:
//
//   - Semantics: [Semantics] on jobs of several shapes (skipped beyond
//     two processes under -short);
//   - EarlyFinish: a process that finishes while another still runs: what
//     it sent stays receivable, a receive from it that was pending when
//     it left fails with an error wrapping [comm.ErrPeerLost] and not
//     [comm.ErrAborted], and nobody fails;
//   - PeerLost: a process that dies mid-run: the others' receive from it
//     that was pending, their later receives from it, and their later
//     sends (to it or to anybody) fail with errors wrapping both
//     [comm.ErrPeerLost] and [comm.ErrAborted], within 10 seconds of the
//     job's start, never a hang.
//
// The subtests are named Semantics/, EarlyFinish/ and PeerLost/ followed
// by the job's [Shape]: a harness that cannot play one of them here (a
// provider's limit, say) skips it by that name with t.Skip, saying why.
//
// The failure tests send messages of up to 9000 bytes that must go
// eagerly under the backend's default eager limit (Shape.Eager zero): a
// process finishes early only once its sends completed.
func TestBackend(t *testing.T, h Harness) {
	t.Run("Semantics", func(t *testing.T) {
		for _, s := range semanticsShapes {
			t.Run(s.String(), func(t *testing.T) {
				if testing.Short() && s.Procs > 2 {
					t.Skip("short")
				}
				for r, err := range h(t, s, Semantics) {
					if err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
				}
			})
		}
	})
	t.Run("EarlyFinish", func(t *testing.T) {
		for _, s := range []Shape{{Procs: 2, Ranks: 1}, {Procs: 2, Ranks: 2}} {
			t.Run(s.String(), func(t *testing.T) { testEarlyFinish(t, h, s) })
		}
	})
	t.Run("PeerLost", func(t *testing.T) {
		for _, s := range []Shape{{Procs: 3, Ranks: 1}, {Procs: 3, Ranks: 2}} {
			t.Run(s.String(), func(t *testing.T) { testPeerLost(t, h, s) })
		}
	})
}
