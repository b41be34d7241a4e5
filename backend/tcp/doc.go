// Package tcp is mpgo's TCP backend: a [device.Device] that carries
// messages between the processes of a job over one authenticated TCP
// connection per ordered pair of processes (package wire under
// internal/), opened from the launcher's key-value store with [Open].
//
// Programs do not use it directly: mpgo.Main and mpgo.Join open it under
// a launcher (MPICH's mpiexec, Slurm's srun --mpi=pmi2, Open MPI's mpirun)
// unless MPGO_BACKEND names another backend. It implements package
// device's boundary and nothing of the engine, as any new backend would.
//
// Environment, read by [Open]: MPGO_HOST (the address to listen on),
// MPGO_HEARTBEAT (a duration: how long a process may stay silent before
// the others count it lost; see [Config.Heartbeat]) and MPGO_TCP_SPIN (a
// duration: how long the connections' readers poll their sockets after a
// rank began to wait; 0: never; see [Config.Spin]).
package tcp
