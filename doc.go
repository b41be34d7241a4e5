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
// [Main] is the SPMD entry point for a program's main function: it runs
// MPGO_NP goroutine ranks (default runtime.NumCPU()).
//
// # Choosing a backend
//
// Goroutine ranks (Run, the default) share the process's memory: a message
// is copied at most once, straight from the sender's slice into the
// receiver's, and SendOwned/RecvOwned hand the slice itself over. The TCP
// backend (processes started by mpiexec, srun or mpirun) and the RDMA
// backend (libfabric, build tag rdma) run the same code across processes
// and nodes; they are being built.
//
// # Failures
//
// A rank that returns an error or panics aborts the run: every blocked and
// later operation fails with [comm.ErrAborted] and Run returns a
// [RankError] naming the rank. When every live rank is blocked and none can
// progress, the blocked operations fail with [comm.ErrDeadlock] and Run
// returns a [comm.DeadlockError] that lists each rank's pending operation.
// Cancelling the context given with [WithContext] aborts the run.
package mpgo
