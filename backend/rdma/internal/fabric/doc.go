// Package fabric is a small cgo binding of libfabric (OpenFabrics
// Interfaces) for mpgo's RDMA backend: one reliable-datagram endpoint
// (FI_EP_RDM) with its fabric, domain, address vector and completion
// queue; two-sided sends and receives; memory registration; one-sided RMA
// writes and reads and atomics (where the provider grants FI_ATOMIC:
// [Endpoint.Atomics] says which op on which type); and completion polling.
//
// The same code runs over every provider libfabric offers with those
// capabilities: verbs (InfiniBand, RoCE, through ofi_rxm), efa, cxi, and,
// for tests on any machine, tcp and shm. On libfabric 1.17 (Debian 12)
// "tcp" is the old tcp provider layered under ofi_rxm, and "net" its
// rewrite with native FI_EP_RDM, which libfabric 1.18 renamed tcp; with
// no provider named, Open takes net over tcp;ofi_rxm (see Config).
//
// The binding is built only with the build tag rdma (it needs libfabric's
// headers and library: Debian's libfabric-dev); without the tag the
// package is empty.
//
// # Memory rules
//
// libfabric keeps the buffers and contexts of an operation after the call
// that posted it returns. Contexts therefore live in C memory owned by
// the [Endpoint]; a buffer passed to [Endpoint.Send], [Endpoint.Recv],
// [Endpoint.Write], [Endpoint.Read] or [Endpoint.Atomic] must be memory
// outside the Go heap (mmap) or a Go object the caller pinned with
// runtime.Pinner, and must stay so until
// the operation's completion is reaped by [Endpoint.Poll]. A region passed
// to [Endpoint.Register] must stay valid (and pinned, for Go memory) until
// the [MR] is closed.
package fabric
