// Package mpgo is message passing for Go: MPI semantics (ranks, tagged
// point-to-point messages, non-blocking requests, probe, communicators)
// with an idiomatic Go API.
//
// # Usage
//
// [Run] starts n ranks as goroutines of this process and calls fn on each
// with its world communicator; package typed sends and receives slices of
// numbers over it:
//
//	err := mpgo.Run(4, func(w *comm.Comm) error {
//		c := typed.Of[float64](w)
//		next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
//		in := make([]float64, 1)
//		_, err := c.Sendrecv([]float64{float64(w.Rank())}, next, 0, in, prev, 0)
//		return err
//	})
//
// [Main] is the SPMD entry point for a program's main function: started
// plainly it runs MPGO_NP goroutine ranks when the environment sets it,
// else [WithRanks]'s number, else runtime.NumCPU(); started by a launcher it
// joins the job ([Join]), and warns when WithRanks disagrees with the
// number of ranks the launcher started:
//
//	func main() {
//		np := flag.Int("np", 4, "ranks when started without a launcher")
//		flag.Parse()
//		mpgo.Main(work, mpgo.WithRanks(*np))
//	}
//
// # Choosing a backend
//
// The same program runs on every backend; the choice is made when it
// starts, not in its code.
//
//   - Goroutine ranks ([Run], and [Main] without a launcher) share the
//     process's memory: a message is copied at most once, straight from
//     the sender's slice into the receiver's, SendOwned/RecvOwned hand the
//     slice itself over, and collectives read each other's buffers.
//   - TCP ([Main] or [Join] under MPICH's mpiexec, Slurm's srun
//     --mpi=pmi2, or Open MPI's mpirun): one or
//     more ranks per process (MPGO_RANKS_PER_PROC), shared memory between
//     the ranks of a process, TCP between processes, two-level
//     collectives. Processes of one host (mpiexec -n 16 on a node) talk
//     through memory they share instead (package backend/shm: rings for
//     small messages, a single copy by process_vm_readv for large ones),
//     found by host name and boot id; MPGO_SHM=0 or [WithoutSharedMemory]
//     keeps them on TCP. [comm.Comm.SplitType] with [comm.SplitShared]
//     gives the ranks of each host a communicator.
//   - RDMA (build tag rdma, Debian's libfabric-dev; [WithFabric] or
//     MPGO_BACKEND=rdma with FI_PROVIDER): the same over libfabric —
//     InfiniBand and RoCE (verbs), EFA, Slingshot, or its tcp and shm
//     providers. Without the tag it returns [comm.ErrNotSupported].
//
// # Launchers
//
// Under a launcher [Main] and [Join] find the job from the environment
// the launcher gives each process:
//
//   - MPICH's mpiexec (Hydra) and Slurm's srun --mpi=pmi2: through their
//     PMI socket; nothing to set.
//   - Open MPI's mpirun: on one host, nothing to set; across hosts, with
//     MPGO_ROOT and MPGO_SECRET, as follows.
//
// Open MPI's processes share no key-value space mpgo can reach, so process
// 0 serves one. Where every process of the job runs on one host, it serves
// it on an abstract Unix socket named after the job (its PMIx namespace)
// and the user, and both ends check with SO_PEERCRED that the other runs
// as the same user (Linux). Across hosts, it serves it at an address the
// user names, MPGO_ROOT=host:port (a free
// port on the host of rank 0), and every process proves to it that it
// holds the job's secret, MPGO_SECRET (16 bytes or more, the same in every
// process). Without a secret anyone who reaches the address during
// start-up could join the job as one of its ranks and read or send its
// messages, so the processes refuse to start; MPGO_INSECURE=1 starts them
// anyway, on a network nobody else reaches. Pass the secret through the
// environment, not the command line, which other users of the host can
// read:
//
//	export MPGO_SECRET=$(head -c16 /dev/urandom | base64)
//	mpirun -n 4 -x MPGO_ROOT=node1:7000 -x MPGO_SECRET ./prog
//
// A process whose rank another process holding the secret claimed first
// (two jobs started with the same MPGO_ROOT and MPGO_SECRET) fails at once
// with [ErrBootstrap] naming its rank, and so does the rest of the job.
// Once joined, the processes authenticate every connection between them
// with a secret that process 0 draws for the job.
//
// MPGO_RANKS_PER_PROC runs several ranks in each process (default 1);
// MPGO_HOST names the address to listen on when the launcher's host name
// does not resolve to one the other processes reach.
//
// # Failures
//
// A rank that returns an error or panics aborts the run: every blocked and
// later operation fails with [comm.ErrAborted] and Run returns a
// [RankError] naming the rank. When every live rank is blocked and none can
// progress, the blocked operations fail with [comm.ErrDeadlock] and Run
// returns a [comm.DeadlockError] with a line for every rank, in rank
// order: the call it is blocked in as the program made it (a collective
// by its name, "Allreduce on world, waiting for rank 3"; a point-to-point
// call with its arguments, "Recv(src=2, tag=7) on halo"), the
// communicator by its name ([comm.Comm.SetName]), the caller's file:line,
// and "returned" for a rank whose function returned (a call waiting for
// such a rank says so). Cancelling the context given with [WithContext]
// aborts the run.
//
// What the detector sees: a rank is blocked when every goroutine of it
// inside mpgo sleeps on an operation that has not completed: its own
// goroutine, and the helpers started with [comm.Comm.Go] (a helper that
// computes keeps its rank running). It does not see a rank that spins in
// its own code (polling with Test or Iprobe in a loop: that rank runs), a
// goroutine the program started itself with go (start those with
// [comm.Comm.Go]), nor a wait outside mpgo (a channel, a mutex): a rank
// blocked there is running as far as mpgo knows, and the others wait
// for it, as they would for a long computation.
//
// Deadlocks across processes: under a launcher ([Main], [Join]) a
// detector runs across the job's processes. Each process counts the
// messages it handed to the network and those that arrived; the lowest
// process still running asks every process, every 250 ms while it is
// blocked itself, whether all its ranks are blocked and for its counts.
// When two consecutive rounds find every rank of every process blocked,
// nobody woken in between, and as many messages arrived as were sent
// (Mattern's four-counter termination detection), the job is deadlocked:
// every blocked operation fails with [comm.ErrDeadlock], each process
// sends its ranks' lines to that process, and it prints the whole job's
// report, a line for every rank as above ("mpgo: process 0 of 4: comm:
// deadlock: every live rank is blocked:" and the ranks' lines), within a
// second of the deadlock. A process whose ranks all returned tells every
// other that it leaves (one small message to each, at exit), so that the
// next process coordinates when it was the lowest. Not detected across
// processes, besides what the
// in-process detector does not see: a job in which a process runs with
// the detector off ([WithoutDeadlockDetection]); and the notice that
// tells a synchronous or rendezvous sender its message was received,
// which the backend sends on its own, is assumed to arrive within the
// 250 ms between rounds.
//
// A job that hangs, ended with Ctrl-C (SIGINT, which mpiexec forwards to
// every process) or SIGQUIT: while [Main] or [Join] runs the ranks, each
// process prints its ranks' pending operations to stderr, one line a rank
// as in a deadlock report ("mpgo: process 0 of 4: interrupt: pending
// operations:" and "  rank 0: Recv(src=1, tag=0) on world at main.go:42";
// "running" for a rank in its own code), and then ends as the signal ends
// a process (SIGQUIT with Go's dump of every goroutine). [Run] leaves
// signals to its caller.
//
// Across processes, a rank that fails or panics aborts the job: its
// process tells the others the rank's original error (its message, or the
// panic's value and the function and line that panicked) before it breaks
// off, and their operations fail with errors wrapping a
// [comm.PeerFailure], which [Main] prints once in each process:
// "mpgo: process 0 of 4: rank 2 failed: panicked: … in main.main.func3
// at /src/prog/main.go:100". A process that dies, or whose host does,
// breaks its connections without a word: the others' operations fail with
// errors wrapping [comm.ErrPeerLost] (and [comm.ErrAborted]) that name it. A process that
// is stopped (SIGSTOP, a debugger) or hangs outside mpgo keeps its
// connections open, and its peers would wait for it forever; set
// MPGO_HEARTBEAT to a duration (10s, say: well above the longest pause a
// process may see) and, over TCP, a process from which nothing came for
// that long counts as lost in the same way. The heartbeat's frames are
// sent and read by mpgo's own goroutines, so a rank that computes for a
// long time without calling mpgo is not lost. Process 0's setting is the
// job's; it is off by default.
//
// # Observing a run
//
// Three recorders, off by default and then free (each hook tests one
// pointer), each switched on by an option or an environment variable:
//
//   - MPGO_TRACE=file ([WithTrace]) writes, when the run ends, a timeline
//     of every rank's communication as Chrome trace-event JSON, which
//     ui.perfetto.dev (and chrome://tracing) opens: one track per rank, a
//     slice per blocking call (Send, Recv, each collective, named with the
//     algorithm it ran: "Allreduce (recursive-doubling)"), an async slice
//     per request from Isend or Irecv to its completion, and a flow arrow
//     from each send to the receive that matched it. The arrows need no
//     identifier on the wire: messages of one sender to one receiver with
//     one tag on one communicator are received in order, so the nth send
//     of such a key pairs with its nth receive. Under a launcher each
//     process writes file with its number before the extension
//     (trace.0.json, …); `go run github.com/mpgo/mpgo/cmd/mptrace -o
//     trace.json trace.*.json` merges them, aligned by the wall clock,
//     with the arrows between processes. Each rank keeps about its most
//     recent MPGO_TRACE_EVENTS records (default 32768 of 64 bytes, 2 MiB,
//     in rings per P: see [comm.Observe]); a rank that lost some gets no
//     arrows (the file's otherData says how many).
//     Probes, and collectives' shared-memory steps (which send no
//     messages), are not in the timeline.
//   - MPGO_STATS=1 ([WithStats]) prints each rank's counters when the run
//     ends ([comm.RankStats]: messages and bytes sent and received, the
//     collective calls, time parked waiting in mpgo, the longest one
//     sender's unexpected queue got), and the RDMA device's counters
//     ([rdma.Stats]) in a job on that backend. [comm.Comm.Stats] reads a
//     rank's counters while it runs.
//   - MPGO_RECORD=dir ([WithRecord]) logs the outcomes of wildcard
//     matching, and only those, one file per rank: the sender each
//     AnySource receive or probe matched, how many polls (Iprobe,
//     Improbe, Test, TestAll, TestAny) failed before each success, which
//     requests WaitAny, TestAny and WaitSome returned. MPGO_REPLAY=dir
//     ([WithReplay]) forces them on a later run of the same program on the
//     same ranks: a wildcard receive waits for the recorded sender, a poll
//     fails the recorded number of times and then waits for its success,
//     WaitAny waits for the recorded request, so a non-deterministic run
//     repeats exactly. Replay assumes one goroutine per rank makes those
//     calls, in program order; TestSome and Done channels are not logged
//     (select on Done is the program's own choice), nor is an Irecv from
//     AnySource whose completion no Wait or Test saw (replay runs it live).
//
// What they cost, measured as CPU time of a rank's 8-byte Send to itself
// and its Recv (BenchmarkObserveSelf, one goroutine, 2-core VM): off, no
// difference from a build without them within the noise (+1.4% on medians
// of 8 alternated runs, their ranges overlapping); the timeline +69 ns a
// send and receive (+35%; a third of it the records' memory, most of the
// rest two reads of the TSC, which this VM makes slow); the counters
// +29 ns (+15%); recording receives from AnySource +25 ns (+12%).
package mpgo
