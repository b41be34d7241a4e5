// Command mpcheck runs mpgo's backends (TCP, or RDMA with -tags rdma and
// MPGO_BACKEND=rdma) under a real launcher: the conformance suite, failure
// modes and benchmarks across processes: mpiexec -n 4 mpcheck MODE.
//
// Modes:
//
//	semantics  the devicetest semantics suite; every rank prints "rank R of N: ok"
//	fail       rank 2 returns an error after a barrier (Main aborts the job)
//	failpersistent
//	           rank 2 returns an error after two starts of a persistent
//	           Allreduce, while the others start it again
//	panic      rank 2 panics after a barrier, while the others wait for it
//	deadlock   a deadlock of the kind -case names (allreduce: the last rank
//	           skips an Allreduce; ring: every rank receives from the next;
//	           ssend: every rank Ssends to the next; barrier: rank 1
//	           probes instead; waitany: every rank waits for two receives
//	           nobody sends): the job must end with a report
//	hang       rank 1 sleeps for -busy in its own code while the others wait
//	           in a receive from it; each prints "rank R hangs" first (for
//	           the reports on SIGINT and SIGQUIT)
//	exit       rank 1's process exits abruptly after a barrier, while the
//	           others wait for it: they must fail with ErrPeerLost
//	kill       rank 1's process kills itself (SIGKILL) after a barrier
//	stop       rank 1's process stops itself (SIGSTOP) after a barrier, as
//	           one wedged outside mpgo would: with MPGO_HEARTBEAT set the
//	           others must fail with ErrPeerLost within about that time
//	compute    rank 1 computes for -busy without calling mpgo while the
//	           others wait for its result: with MPGO_HEARTBEAT set nobody
//	           may count it lost; rank 0 prints "result after ..."
//	bench      OSU latency and bandwidth between ranks 0 and 1 beside a raw
//	           TCP socket between the same processes (see bench.go)
//	join       the semantics suite through mpgo.Join instead of Main; each
//	           process prints "join: <error or ok>"
//	allocs     every persistent collective started 1,000 times: each rank
//	           fails if its process allocated for them (see allocs.go),
//	           else prints "rank R: allocs: ok"
//
// Started without a launcher it runs -np goroutine ranks, like any Main.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
)

func main() {
	np := flag.Int("np", 4, "goroutine ranks when no launcher started this process")
	sizeList := flag.String("sizes", "1,8,64,1024,8192,65536,1048576,4194304", "bench: message sizes in bytes")
	scale := flag.Int("scale", 1, "bench: divide the OSU iteration counts by this")
	only := flag.String("only", "", "bench: measure only mpgo or only raw")
	eager := flag.Int("eager", 0, "protocol switch in bytes (0: the default)")
	busy := flag.Duration("busy", 2*time.Second, "compute: how long rank 1 computes")
	dcase := flag.String("case", "allreduce", "deadlock: which deadlock")
	profile := flag.String("cpuprofile", "", "write a CPU profile to this file, suffixed with the process id")
	flag.Parse()
	mode := flag.Arg(0)
	// Flags may also follow the mode ("mpcheck bench -sizes 8"): the
	// standard flag package stops at the first argument that is not a flag,
	// and would ignore them without a word.
	if flag.NArg() > 0 {
		flag.CommandLine.Parse(flag.Args()[1:])
		if flag.NArg() > 0 {
			fmt.Fprintf(os.Stderr, "mpcheck: unexpected arguments after %s: %q\n", mode, flag.Args())
			os.Exit(2)
		}
	}
	if *profile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", *profile, os.Getpid()))
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	var fn func(w *comm.Comm) error
	switch mode {
	case "semantics":
		fn = func(w *comm.Comm) error {
			if err := devicetest.Semantics(w); err != nil {
				return err
			}
			fmt.Printf("rank %d of %d: ok\n", w.Rank(), w.Size())
			return nil
		}
	case "fail":
		fn = func(w *comm.Comm) error {
			if err := w.Barrier(); err != nil {
				return err
			}
			if w.Rank() == 2 {
				// As in exit and kill: the others are waiting by now, so they
				// learn of the abort at once, before the launcher ends them.
				time.Sleep(100 * time.Millisecond)
				return errors.New("mpcheck: rank 2 fails on purpose")
			}
			_, err := w.Recv(make([]byte, 8), comm.Byte, 2, 0)
			return err
		}
	case "failpersistent":
		fn = func(w *comm.Comm) error {
			// Replayed between processes from the second start on
			// (a power of two of ranks): the others wait in the
			// replay's receives when rank 2's failure aborts them.
			buf := make([]byte, 8)
			r, err := w.AllreduceInit(buf, make([]byte, 8), comm.Byte, func(inout, in []byte) {})
			if err != nil {
				return err
			}
			for i := 0; ; i++ {
				if i == 2 && w.Rank() == 2 {
					time.Sleep(100 * time.Millisecond) // the others are waiting by now
					return errors.New("mpcheck: rank 2 fails on purpose")
				}
				if err := r.Start(); err != nil {
					return err
				}
				if _, err := r.Wait(); err != nil {
					return err
				}
			}
		}
	case "panic":
		fn = func(w *comm.Comm) error {
			if err := w.Barrier(); err != nil {
				return err
			}
			if w.Rank() == 2 {
				time.Sleep(100 * time.Millisecond) // the others are waiting by now
				panic("mpcheck: rank 2 panics on purpose")
			}
			_, err := w.Recv(make([]byte, 8), comm.Byte, 2, 0)
			return err
		}
	case "deadlock":
		fn = func(w *comm.Comm) error { return deadlock(w, *dcase) }
	case "hang":
		fn = func(w *comm.Comm) error {
			if err := w.Barrier(); err != nil {
				return err
			}
			fmt.Printf("rank %d hangs\n", w.Rank())
			if w.Rank() == 1 {
				time.Sleep(*busy)
				return nil
			}
			_, err := w.Recv(make([]byte, 8), comm.Byte, 1, 0)
			return err
		}
	case "exit", "kill", "stop":
		fn = func(w *comm.Comm) error {
			if err := w.Barrier(); err != nil {
				return err
			}
			if w.Rank() == 1 {
				time.Sleep(100 * time.Millisecond) // the others are waiting by now
				switch mode {
				case "kill":
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
				case "stop":
					// Stopped for good: whatever continues it (a shared
					// machine's stray SIGCONT), it stops again at once.
					for {
						syscall.Kill(os.Getpid(), syscall.SIGSTOP)
					}
				}
				os.Exit(3)
			}
			start := time.Now()
			_, err := w.Recv(make([]byte, 8), comm.Byte, 1, 0)
			if err != nil {
				fmt.Printf("rank %d: peer lost: %v after %v\n", w.Rank(), errors.Is(err, comm.ErrPeerLost), time.Since(start).Round(time.Millisecond))
			}
			return err
		}
	case "compute":
		fn = func(w *comm.Comm) error {
			if err := w.Barrier(); err != nil {
				return err
			}
			buf := make([]byte, 8)
			switch w.Rank() {
			case 1:
				binary.LittleEndian.PutUint64(buf, compute(*busy))
				if err := w.Send(buf, comm.Byte, 0, 0); err != nil {
					return err
				}
			case 0:
				start := time.Now()
				if _, err := w.Recv(buf, comm.Byte, 1, 0); err != nil {
					return err
				}
				fmt.Printf("rank 0: result after %v\n", time.Since(start).Round(time.Millisecond))
			}
			return w.Barrier()
		}
	case "bench":
		sizes, err := parseSizes(*sizeList)
		if err != nil || *scale < 1 {
			fmt.Fprintf(os.Stderr, "mpcheck: -sizes %q -scale %d: %v\n", *sizeList, *scale, err)
			os.Exit(2)
		}
		fn = func(w *comm.Comm) error { return bench(w, sizes, *scale, *only) }
	case "allocs":
		fn = allocs
	case "join":
		err := mpgo.Join(devicetest.Semantics)
		fmt.Printf("join: %v\n", or(err, "ok"))
		if err != nil {
			os.Exit(1)
		}
		return
	default:
		fmt.Fprintf(os.Stderr, "mpcheck: unknown mode %q\n", mode)
		os.Exit(2)
	}
	if *profile != "" { // Main exits: stop the profile from inside
		inner := fn
		fn = func(w *comm.Comm) error {
			defer pprof.StopCPUProfile()
			return inner(w)
		}
	}
	mpgo.Main(fn, mpgo.WithRanks(*np), mpgo.WithEagerLimit(*eager))
}

func or(err error, ok string) any {
	if err == nil {
		return ok
	}
	return err
}

// compute keeps a core busy for about d without calling anything but the
// clock now and then: a rank deep in its own work.
func compute(d time.Duration) uint64 {
	x := uint64(1)
	for start := time.Now(); time.Since(start) < d; {
		for i := uint64(0); i < 1<<22; i++ {
			x = x*6364136223846793005 + i
		}
	}
	return x
}

// deadlock runs the deadlock named c (see the mode deadlock).
func deadlock(w *comm.Comm, c string) error {
	me, n := w.Rank(), w.Size()
	if err := w.Barrier(); err != nil {
		return err
	}
	buf := make([]byte, 8)
	switch c {
	case "allreduce":
		if me == n-1 {
			_, err := w.Recv(buf, comm.Byte, 0, 7)
			return err
		}
		return w.Allreduce(buf, make([]byte, 8), comm.Byte, func(inout, in []byte) {})
	case "ring":
		_, err := w.Recv(buf, comm.Byte, (me+1)%n, 1)
		return err
	case "ssend":
		return w.Ssend(buf, comm.Byte, (me+1)%n, 2)
	case "barrier":
		if me == 1 {
			_, err := w.Probe(comm.AnySource, 3)
			return err
		}
		return w.Barrier()
	case "persistent":
		// Two starts of a persistent Allreduce complete (replayed from the
		// second on, on a power of two of ranks); at the third the last
		// rank receives instead of starting.
		r, err := w.AllreduceInit(buf, make([]byte, 8), comm.Byte, func(inout, in []byte) {})
		if err != nil {
			return err
		}
		for i := range 3 {
			if i == 2 && me == n-1 {
				_, err := w.Recv(buf, comm.Byte, 0, 8)
				return err
			}
			if err := r.Start(); err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
		}
		return nil
	case "waitany":
		r1, err := w.Irecv(buf, comm.Byte, (me+1)%n, 4)
		if err != nil {
			return err
		}
		r2, err := w.Irecv(make([]byte, 8), comm.Byte, comm.AnySource, 5)
		if err != nil {
			return err
		}
		_, _, err = comm.WaitAny(r1, r2)
		return err
	}
	return fmt.Errorf("mpcheck: unknown deadlock %q", c)
}
