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
package rdma
