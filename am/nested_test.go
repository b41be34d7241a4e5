package am_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/am"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Handlers call handlers: on another rank, cyclically back to the caller's
// rank, and on their own rank (recursion through the dispatcher), while
// handlers of one endpoint still never run two at a time.
func TestNestedCalls(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			run(t, n, nestedCalls)
		})
	}
	onJobs(t, nestedCalls)
}

// nestedCalls is TestNestedCalls on one rank.
func nestedCalls(w *comm.Comm) error {
	n := w.Size()
	ep, err := am.New(w)
	if err != nil {
		return err
	}
	var inside atomic.Int32 // handlers of this endpoint running now
	enter := func() error {
		if inside.Add(1) != 1 {
			return errors.New("two handlers ran at once")
		}
		return nil
	}
	var fib *am.Handler[int, int]
	// fib(k) on rank r calls fib(k-1) on rank r+1 and fib(k-2)
	// on rank r (itself): nested, cyclic and self calls at once.
	fib, err = am.Register(ep, "fib", func(from int, k int) (int, error) {
		if err := enter(); err != nil {
			return 0, err
		}
		defer inside.Add(-1)
		if k < 2 {
			return k, nil
		}
		me := ep.Rank()
		inside.Add(-1) // Call (its window) and Wait may let the next handler run
		f1 := fib.Call((me+1)%n, k-1)
		f2 := fib.Call(me, k-2)
		a, err1 := f1.Wait()
		b, err2 := f2.Wait()
		if err := enter(); err != nil {
			return 0, err
		}
		return a + b, errors.Join(err1, err2)
	})
	if err != nil {
		return err
	}
	if err := w.Barrier(); err != nil { // fib is set on every rank before it runs
		return err
	}
	const k = 12
	v, err := fib.Call((w.Rank()+1)%n, k).Wait()
	if err != nil {
		return err
	}
	if v != 144 {
		return fmt.Errorf("fib(%d) = %d, want 144", k, v)
	}
	return ep.Close()
}

// A cascade of Posts — each handler posting to the next rank until its
// count runs out, and fanning out on the way — is all handled when
// Quiesce returns, on every rank.
func TestQuiesceCascade(t *testing.T) {
	t.Run("goroutines/6", func(t *testing.T) { run(t, 6, quiesceCascade) })
	onJobs(t, quiesceCascade)
}

// quiesceCascade is TestQuiesceCascade on one rank.
func quiesceCascade(w *comm.Comm) error {
	n := w.Size()
	ep, err := am.New(w, am.WithWindow(4))
	if err != nil {
		return err
	}
	var hops atomic.Int64
	var hop *am.Handler[[2]int, struct{}]
	hop, err = am.Register(ep, "hop", func(from int, arg [2]int) (struct{}, error) {
		hops.Add(1)
		left, fan := arg[0], arg[1]
		if left == 0 {
			return struct{}{}, nil
		}
		time.Sleep(10 * time.Microsecond) // slower than the senders: the window fills
		for i := range fan {
			if err := hop.Post((ep.Rank()+1+i)%n, [2]int{left - 1, 1}); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		return err
	}
	if err := w.Barrier(); err != nil { // hop is set on every rank before it runs
		return err
	}
	for round := range 3 {
		// Every rank starts a chain of 20 hops fanning out by 2 at
		// its first step: 1 + 2·20 hops per rank and round.
		if err := hop.Post((w.Rank()+1)%n, [2]int{20, 2}); err != nil {
			return err
		}
		if err := ep.Quiesce(); err != nil {
			return err
		}
		total := []int64{hops.Load()}
		if err := w.Barrier(); err != nil { // nobody counts before everybody has read
			return err
		}
		sum := make([]int64, 1)
		if err := typedSum(w, total, sum); err != nil {
			return err
		}
		if want := int64((round + 1) * n * 41); sum[0] != want {
			return fmt.Errorf("round %d: %d hops handled by Quiesce's return, want %d", round, sum[0], want)
		}
	}
	return ep.Close()
}

// A request for a name its destination registers later waits for it, and
// the sender's next requests wait behind it; one the destination never
// registers fails at its caller (and, posted, at its poster's Close) once
// the destination is in Close.
func TestRegistrationLater(t *testing.T) {
	onJobs(t, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		var order []string
		rec := func(name string) func(int, int) (int, error) {
			return func(from, x int) (int, error) {
				order = append(order, name)
				return x + 1, nil
			}
		}
		if w.Rank() == 0 {
			late, err := am.Register(ep, "late", rec("late"))
			if err != nil {
				return err
			}
			early, err := am.Register(ep, "early", rec("early"))
			if err != nil {
				return err
			}
			never, err := am.Register(ep, "never", rec("never"))
			if err != nil {
				return err
			}
			fl := late.Call(1, 1)
			fe := early.Call(1, 2) // behind late's, which waits
			if v, err := fl.Wait(); v != 2 || err != nil {
				return fmt.Errorf("late: %d, %v", v, err)
			}
			if v, err := fe.Wait(); v != 3 || err != nil {
				return fmt.Errorf("early: %d, %v", v, err)
			}
			fn := never.Call(1, 0)
			if err := never.Post(1, 0); err != nil {
				return err
			}
			err = ep.Close()
			if !errors.Is(err, am.ErrNoHandler) {
				return fmt.Errorf("Close after a Post to an unregistered name: %v", err)
			}
			_, err = fn.Wait()
			var he *am.HandlerError
			if !errors.Is(err, am.ErrNoHandler) || !errors.As(err, &he) || he.Handler != "never" || he.Rank != 1 {
				return fmt.Errorf("Call to an unregistered name: %v", err)
			}
			return nil
		}
		if w.Rank() > 1 {
			return ep.Close()
		}
		if _, err := am.Register(ep, "early", rec("early")); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond) // rank 0's requests arrive first
		if _, err := am.Register(ep, "late", rec("late")); err != nil {
			return err
		}
		if err := ep.Close(); err != nil {
			return err
		}
		if fmt.Sprint(order) != "[late early]" {
			return fmt.Errorf("handled %v, want late then early", order)
		}
		return nil
	})
}

// Ranks blocked in Calls that cannot progress — to names their
// destinations never register, with no handler left to run — are a
// deadlock: the calls fail with ErrDeadlock and Run reports it. A
// cycle through a handler's own Call is one too.
func TestDeadlock(t *testing.T) {
	t.Run("unregistered", func(t *testing.T) {
		err := mpgo.Run(2, func(w *comm.Comm) error {
			ep, err := am.New(w)
			if err != nil {
				return err
			}
			x, err := am.Register(ep, fmt.Sprint("x", w.Rank()), func(int, int) (int, error) { return 0, nil })
			if err != nil {
				return err
			}
			_, err = x.Call(1-w.Rank(), 0).Wait()
			if !errors.Is(err, comm.ErrDeadlock) {
				return fmt.Errorf("Call: %v, want ErrDeadlock", err)
			}
			return err
		})
		if !errors.Is(err, comm.ErrDeadlock) {
			t.Fatalf("Run: %v, want a deadlock", err)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		err := mpgo.Run(2, func(w *comm.Comm) error {
			ep, err := am.New(w)
			if err != nil {
				return err
			}
			stuck, err := am.Register(ep, fmt.Sprint("stuck", w.Rank()), func(int, int) (int, error) { return 0, nil })
			if err != nil {
				return err
			}
			// Rank 1's relay handler waits on a call nobody will answer;
			// rank 0 waits on the relay, rank 1 on rank 0's own stuck name.
			relay, err := am.Register(ep, "relay", func(from, x int) (int, error) {
				return stuck.Call(from, x).Wait()
			})
			if err != nil {
				return err
			}
			if w.Rank() == 0 {
				_, err = relay.Call(1, 0).Wait()
			} else {
				_, err = stuck.Call(0, 0).Wait()
			}
			return err
		})
		if !errors.Is(err, comm.ErrDeadlock) {
			t.Fatalf("Run: %v, want a deadlock", err)
		}
	})
}

// A rank blocked in Call while its destination's handler works for a
// while (longer than the deadlock detector's period) is not deadlocked.
func TestSlowHandlerIsNoDeadlock(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		slow, err := am.Register(ep, "slow", func(int, int) (int, error) {
			time.Sleep(30 * time.Millisecond)
			return 1, nil
		})
		if err != nil {
			return err
		}
		// Both ranks wait in Call: for a while, only the handlers run.
		if _, err := slow.Call(1-w.Rank(), 0).Wait(); err != nil {
			return err
		}
		return ep.Close()
	})
}

// A failing rank aborts the others' waits in Call and Quiesce, and the
// dispatchers end.
func TestAbort(t *testing.T) {
	boom := errors.New("boom")
	got := make(chan error, 4)
	err := mpgo.Run(4, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		hang, err := am.Register(ep, fmt.Sprint("hang", w.Rank()), func(from, x int) (int, error) { return 0, nil })
		if err != nil {
			return err
		}
		switch w.Rank() {
		case 0:
			time.Sleep(20 * time.Millisecond)
			return boom
		case 1:
			_, err = hang.Call(0, 1).Wait() // rank 0 has no such name: it waits there
		default:
			err = ep.Quiesce()
		}
		got <- err
		return err
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run: %v", err)
	}
	close(got)
	for err := range got {
		if !errors.Is(err, comm.ErrAborted) {
			t.Errorf("a blocked call returned %v, want ErrAborted", err)
		}
	}
}

// WaitContext gives up with the context's error and leaves the Future to
// be waited for again, by the rank and inside a handler alike.
func TestWaitContext(t *testing.T) {
	gates := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	timedOut := make(chan struct{}) // the inner handler's WaitContext gave up
	run(t, 2, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		slow, err := am.Register(ep, "slow", func(int, int) (int, error) {
			<-gates[ep.Rank()]
			return 5, nil
		})
		if err != nil {
			return err
		}
		inner, err := am.Register(ep, "inner", func(from, x int) (int, error) {
			f := slow.Call(from, x)
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			_, err := f.WaitContext(ctx)
			close(timedOut)
			if !errors.Is(err, context.DeadlineExceeded) {
				return 0, fmt.Errorf("WaitContext in a handler: %v", err)
			}
			return f.Wait()
		})
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			f := slow.Call(1, 0)
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			if _, err := f.WaitContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("WaitContext: %v", err)
			}
			close(gates[1])
			if v, err := f.WaitContext(context.Background()); v != 5 || err != nil {
				return fmt.Errorf("after WaitContext: %d, %v", v, err)
			}
			g := inner.Call(1, 0) // whose handler calls slow here, on rank 0
			<-timedOut            // slow cannot answer before gates[0] closes
			close(gates[0])
			if v, err := g.Wait(); v != 5 || err != nil {
				return fmt.Errorf("inner: %d, %v", v, err)
			}
		}
		return ep.Close()
	})
}

// typedSum sums in over w's ranks into out.
func typedSum(w *comm.Comm, in, out []int64) error {
	return typed.Of[int64](w).Allreduce(in, out, typed.Sum[int64])
}

// Quiesce fails the requests of its own epoch for names not registered:
// a call sent before it fails with ErrNoHandler once its destination
// quiesces. A request sent after its sender's Quiesce belongs to the next
// epoch and waits for a registration that comes after the destination's
// Quiesce, even if it arrives while the destination still quiesces.
func TestQuiesceEpochs(t *testing.T) {
	onJobs(t, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		id := func(from, x int) (int, error) { return x, nil }
		if w.Rank() == 0 {
			never, err := am.Register(ep, "never", id)
			if err != nil {
				return err
			}
			later, err := am.Register(ep, "later", id)
			if err != nil {
				return err
			}
			f := never.Call(w.Size()-1, 1)
			if err := ep.Quiesce(); err != nil {
				return err
			}
			if _, err := f.Wait(); !errors.Is(err, am.ErrNoHandler) {
				return fmt.Errorf("a call of the Quiesce's epoch to an unregistered name: %v", err)
			}
			g := later.Call(w.Size()-1, 2) // the next epoch: it waits
			if err := ep.Quiesce(); err != nil {
				return err
			}
			if v, err := g.Wait(); v != 2 || err != nil {
				return fmt.Errorf("a call of the next epoch: %d, %v", v, err)
			}
			return ep.Close()
		}
		if err := ep.Quiesce(); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
		if w.Rank() == w.Size()-1 {
			if _, err := am.Register(ep, "later", id); err != nil {
				return err
			}
		}
		if err := ep.Quiesce(); err != nil {
			return err
		}
		return ep.Close()
	})
}

// A rank that registers a name while a request for it arrives runs it,
// however the two interleave (a hold and a registration exclude each
// other).
func TestRegisterWhileArriving(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 20
	}
	for i := range n {
		run(t, 2, func(w *comm.Comm) error {
			ep, err := am.New(w)
			if err != nil {
				return err
			}
			if w.Rank() == 1 {
				for range i % 7 {
					runtime.Gosched()
				}
			}
			x, err := am.Register(ep, "x", func(from, v int) (int, error) { return v + 1, nil })
			if err != nil {
				return err
			}
			if w.Rank() == 0 {
				if v, err := x.Call(1, i).Wait(); v != i+1 || err != nil {
					return fmt.Errorf("call %d: %d, %v", i, v, err)
				}
			}
			return ep.Close()
		})
	}
}
