// Package shm is mpgo's shared-memory backend between processes: a
// [device.Device] that carries messages between the processes of a job
// that run on one host (mpiexec -n 16 on a node) through memory they
// share, as MPICH's nemesis and Open MPI's vader do, instead of TCP
// loopback. It is pure Go (package syscall, no cgo) and Linux only.
//
// Each process creates one segment (an anonymous memory file,
// memfd_create: nothing is ever named in /dev/shm, so a process killed
// with SIGKILL leaves nothing behind) holding a ring per other process
// of its host, and hands it to them over a Unix socket in the abstract
// namespace, once they proved they know the job secret (an HMAC
// handshake) and run as the same user (SO_PEERCRED). Messages below the
// eager limit are copied through the rings; larger ones are read by the
// receiver straight from the sender's buffer (process_vm_readv, one
// copy), or pipelined through the rings where the kernel forbids that
// and above DefaultPipeLimit bytes (two copies at once on two cores beat
// the kernel's one).
// An idle process sleeps on an eventfd that its peers ring. A process that dies
// is known to its peers at once, by the end of its socket: they fail with
// errors wrapping [device.ErrPeerLost].
//
// The same connections carry the segments of shared windows
// ([device.Segments]: typed.AllocSharedWindow across processes): one
// process creates an anonymous memory file and passes its descriptor to
// the others (SCM_RIGHTS), which map it.
//
// Programs do not use it directly: under a launcher mpgo.Main and
// mpgo.Join open it beside the TCP (or RDMA) backend and route the
// messages between processes of one host through it (MPGO_SHM=0 turns
// that off). It implements package device's boundary and nothing of the
// engine.
//
// Environment, read by [Open]: MPGO_SHM_CMA=0 (send large messages
// through the rings, not by process_vm_readv), MPGO_SHM_EAGER (bytes:
// the protocol switch, default DefaultEagerLimit), MPGO_SHM_PIPE (bytes:
// the size above which large messages come through the rings in chunks
// anyway, default DefaultPipeLimit, 0 never; ignored where the host is
// oversubscribed), MPGO_SHM_SPLIT=0 (a large message that the receiver
// reads is read whole, instead of half of it written by its sender
// meanwhile: split_linux.go) and MPGO_SHM_SPIN (a
// duration: how long a waiting rank polls the rings before it parks, the
// receiver loop twice that before it sleeps; default 50µs, and nothing
// where the host's ranks outnumber its cores: the CPUs that the host's
// processes of the job may run on, all together, so that processes bound
// to a core each are not taken for oversubscribed).
package shm
