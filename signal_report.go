package mpgo

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mpgo/mpgo/comm"
)

// Reports on a signal: a job that hangs is usually ended with Ctrl-C
// (SIGINT, which mpiexec forwards to every process) or SIGQUIT. Main and
// Join catch both while the ranks run, and each process prints what its
// ranks are doing — the same lines as a deadlock report — before it ends
// as the signal would have ended it.

// errSignal is the cause of the abort a signal's report makes.
var errSignal = errors.New("mpgo: stopped by a signal")

// siteWait bounds how long a signal's report waits for the woken ranks
// to say where they were called.
const siteWait = 200 * time.Millisecond

// signalGrace is how long a process waits, after its report on a signal,
// before the signal ends it.
const signalGrace = 300 * time.Millisecond

// watchSignals catches SIGINT and SIGQUIT until stop is called: on one,
// it prints to stderr the pending operations of w's ranks (all of w's
// when ranks is nil), prefixed with who (this process, under a launcher),
// and lets the signal do what it does by default. stop waits for a report
// in progress.
func watchSignals(w *comm.World, ranks []int, who string) (stop func()) {
	if ranks == nil {
		ranks = make([]int, w.Size())
		for r := range ranks {
			ranks[r] = r
		}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGQUIT)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case sig := <-ch:
			signal.Stop(ch)
			ops := w.AbortReport(ranks, fmt.Errorf("%w: %v", errSignal, sig), siteWait)
			fmt.Fprintf(os.Stderr, "%s%v: pending operations:%s\n", who, sig, comm.FormatPending(ops))
			// The other processes of a job get the signal at about the
			// same time (mpiexec forwards it to all): let them take their
			// reports before this one's end breaks their connections.
			time.Sleep(signalGrace)
			signal.Reset(sig)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Signal(sig) // as if we had not caught it
			}
		case <-quit:
			signal.Stop(ch)
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
