// Package rdma is mpgo's RDMA backend: a [device.Device] over libfabric
// (verbs, efa, cxi in production; tcp, net and shm on any machine), with
// ibvdev's protocols: eager messages through pre-registered slots (bursts
// of small ones batched into one send), large ones by rendezvous with an
// RMA write straight into the receive buffer, and a cache of registered
// regions. Waiting ranks drive the endpoint's progress themselves
// ([device.Progressor]).
//
// It needs cgo and Debian's libfabric-dev, so it is built only with the
// tag rdma; without it the same names exist and [Open] fails with
// device.ErrNotSupported. Programs select it under a launcher with
// MPGO_BACKEND=rdma or mpgo.WithFabric.
//
// # One-sided operations
//
// The device offers [device.OneSided]: windows of package typed across
// processes expose their parts to it when they are made (registered for
// remote reads and writes under random keys), and an origin's Put is an
// fi_writemsg into the target's part, a Get an fi_readmsg, and, where the
// provider applies every accumulate typed defines on the element type
// atomically, Accumulate, GetAccumulate, FetchAndOp and CompareAndSwap
// are fi_atomicmsg, fi_fetch_atomicmsg and fi_compare_atomicmsg. No
// handler and no rank of the target runs for them: its provider does the
// work (in hardware on verbs, efa or cxi; over tcp, net and shm, in the
// target's progress goroutine). Writes and plain atomics ask for delivery
// completion, so a Flush that waits for their completions completes them
// at the target, as MPI_Win_flush must. Origin buffers go through a
// registered staging slab (64 slots of 64 KiB; larger operations in
// chunks), so a Put's source may be reused when it returns and user
// buffers are never registered.
//
// Which path a window takes: Lock, Unlock, Fence and PSCW are always the
// window's active messages (package am). Put and Get are one-sided over
// every provider. The accumulates are one-sided over tcp;ofi_rxm (and
// verbs, efa, cxi where fi_atomicvalid says so); over net (libfabric
// 1.17), which validates no atomic, over libfabric 1.17's shm, whose
// atomics lose and duplicate concurrent updates from several processes
// (see atomicsSound), and for element types with no libfabric datatype
// (structs, arrays), a window's accumulates all stay on the handlers:
// accumulates to one element must be atomic with respect to each other,
// so the path is chosen per window and element type, never per call.
// MPGO_WINDOW_PATH=am keeps every window on the handlers.
//
// # Strangers
//
// Over net and tcp an endpoint is an ordinary listening socket: anyone
// who can reach it can open an endpoint of their own and send to it. The
// device therefore accepts a frame only from the job's own processes.
// Process 0 draws a job secret at start-up and shares it through the
// launcher's key-value store, as the TCP backend does; every frame
// carries a token made from it for its pair of processes (an HMAC of
// the pair, computed once at start-up, so the hot path writes and
// compares 8 bytes and hashes nothing), and where the provider names the
// sender of what arrives (FI_SOURCE: net, tcp and shm all do) the frame
// must also come from the address of the process its header names. A
// frame that fails (too short, no token, another address) is dropped
// unread and counted ([Stats].Rejected); it never reaches the matching
// engine and never aborts the job, and neither does a receive the
// provider fails, such as a frame longer than a receive slot. Only a
// frame that proves it comes from a process of the job and is malformed
// aborts it, as a broken peer. A stranger can post RMA writes too, but
// not guess where: the keys of registered memory are random (64 bits on
// net, tcp and shm). Like the TCP backend's handshake, the tokens
// authenticate the ends against anyone off the path; they neither
// encrypt the traffic nor protect it from someone who can read it (who
// could replay a token, though not from another address where the
// provider names senders).
//
// Over shm an endpoint is a file in /dev/shm that only processes of the
// same user can open, and such a process can read and signal the job's
// processes anyway: the file's permissions are shm's protection. The
// token keeps its frames out of the job there too, but libfabric 1.17's
// shm is no barrier to such a process: it reports a stale source for a
// sender it does not know, and it spins for ever copying a message
// longer than the receive buffer through CMA.
//
// That file (16 MiB, named after the process) would outlive a process
// that does not close its endpoint: one that exits in a rank, crashes or
// is killed, and every other process of a failing job, which the
// launcher kills. So each process removes it as soon as it heard from
// every other (they say hello at start), when all have mapped the
// region and none needs the file; one whose job aborts sooner removes it
// then.
package rdma
