package mpgo

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/mpgo/mpgo/comm"
)

// ErrRankFailed is wrapped by Run's error when a rank returned an error or
// panicked; the rank's own error is wrapped too.
var ErrRankFailed = errors.New("mpgo: rank failed")

// RankError is a failure of one rank: the error its function returned, or
// its panic with the value and stack.
type RankError struct {
	Rank  int
	Err   error  // the error fn returned (nil after a panic)
	Panic any    // the panic value, if fn panicked
	Stack []byte // the stack at the panic
}

func (e *RankError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("mpgo: rank %d: %v", e.Rank, e.Err)
	}
	return fmt.Sprintf("mpgo: rank %d panicked: %v\n%s", e.Rank, e.Panic, e.Stack)
}

// Unwrap returns the rank's error and ErrRankFailed.
func (e *RankError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Err, ErrRankFailed}
	}
	return []error{ErrRankFailed}
}

// Run runs fn on n ranks, each a goroutine of this process sharing its
// memory, and returns when all have returned.
//
// A rank that returns an error or panics aborts the run: every blocked and
// later operation on every rank fails with [comm.ErrAborted], and Run
// returns that rank's [RankError]. When every live rank is blocked and none
// can progress, the blocked operations fail with [comm.ErrDeadlock] and Run
// returns a [comm.DeadlockError] listing each rank's pending operation. No
// goroutine outlives Run, and the communicators fail with [comm.ErrClosed]
// afterwards. Runs are independent: several may proceed at once.
func Run(n int, fn func(world *comm.Comm) error, opts ...Option) error {
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("mpgo: Run with %d ranks: %w", n, comm.ErrArg)
	}
	if fn == nil {
		return fmt.Errorf("mpgo: Run with a nil function: %w", comm.ErrArg)
	}
	w, err := comm.NewWorld(n, comm.Config{EagerLimit: cfg.eagerLimit, EagerBuffer: cfg.eagerBuffer, DetectDeadlock: !cfg.noDeadlock, Observe: cfg.obs.world()})
	if err != nil {
		return err
	}
	var stop func()
	if cfg.signals {
		stop = watchSignals(w, nil, "mpgo: ")
	}
	first := runRanks(w, nil, fn, cfg)
	if stop != nil {
		stop()
	}
	w.Close()
	if err := cfg.obs.report(w, -1, nil); err != nil && first == nil {
		first = err
	}
	if d := w.Deadlock(); d != nil {
		if first != nil && !errors.Is(first, comm.ErrDeadlock) {
			return fmt.Errorf("%w\n(first failure: %w)", d, first)
		}
		return d
	}
	return first
}

// runRanks runs fn on the given ranks of w (nil: all of them), each on a
// goroutine, and returns the first failure by time: an error or a panic
// of a rank as a [RankError], or the cancellation of cfg's context. A
// failure aborts w, so the other ranks' blocked and later operations fail
// too.
func runRanks(w *comm.World, ranks []int, fn func(world *comm.Comm) error, cfg *config) error {
	if ranks == nil {
		ranks = make([]int, w.Size())
		for r := range ranks {
			ranks[r] = r
		}
	}
	var (
		mu    sync.Mutex
		first error // the first failure, by time
		wg    sync.WaitGroup
	)
	fail := func(e error) {
		mu.Lock()
		isFirst := first == nil
		if isFirst {
			first = e
		}
		mu.Unlock()
		if isFirst {
			notifyFailure(w, e)
		}
		w.Abort()
	}
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() { // context cancellation aborts the run
		defer close(watched)
		select {
		case <-cfg.ctx.Done():
			fail(fmt.Errorf("mpgo: run cancelled: %w: %w", comm.ErrAborted, cfg.ctx.Err()))
		case <-stop:
		}
	}()
	for _, r := range ranks {
		c := w.Comm(r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.RankDone(r)
			defer func() {
				if p := recover(); p != nil {
					fail(&RankError{Rank: r, Panic: p, Stack: debug.Stack()})
				}
			}()
			if err := fn(c); err != nil {
				fail(&RankError{Rank: r, Err: err})
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-watched
	return first
}
