package rdma

import "github.com/mpgo/mpgo/comm/device"

// Config configures [Open] (the RDMA backend, built with the tag rdma).
type Config struct {
	// Layout says which process runs each world rank (required).
	Layout device.Layout
	// EagerLimit is the protocol switch between processes: zero means the
	// provider's default (DefaultEagerLimit, or DefaultSocketEagerLimit
	// over net and tcp), and more than MaxEagerLimit means MaxEagerLimit.
	EagerLimit int
	// Provider names the libfabric provider: "verbs", "efa", "cxi",
	// "tcp", "shm" (or a layered name such as "tcp;ofi_rxm"). Empty: the
	// one FI_PROVIDER names, or the best the machine offers: libfabric's
	// first choice, except that where libfabric 1.17 offers both
	// tcp;ofi_rxm and net, net (the tcp provider's successor, named tcp
	// from libfabric 1.18 on, about 4x faster at 64 KiB on loopback).
	//
	// net reads ahead into a small buffer (FI_NET_PREFETCH_RBUF_SIZE,
	// 9000 bytes), which saves a system call per small message and costs
	// large ones: on loopback, with it set to 0, 8 B osu_latency rose
	// from 11.9 to 13.7 us while 4 MiB fell from 1385 to 1227 us and
	// 1 MiB osu_bw rose from 3810 to 4390 MB/s. mpgo leaves it to the
	// environment; a job that moves mostly large messages may set it.
	Provider string
	// Domain names the provider's domain (a NIC or an interface such as
	// "lo"); empty: the provider's first.
	Domain string
}

// Stats counts what the RDMA device did, for tests and benchmarks.
type Stats struct {
	EagerMessages  int64 // eager messages sent
	EagerCopied    int64 // payload bytes the device copied for eager messages (both ends)
	EagerLent      int64 // eager messages sent from the caller's buffer, not copied (too large for a batch)
	RndzMessages   int64 // rendezvous sent
	RndzWritten    int64 // payload bytes RMA-written straight from sender to receiver
	RndzCopied     int64 // payload bytes the device copied on the rendezvous path (zero by design)
	Registrations  int64 // fi_mr_reg of user buffers
	RegCacheHits   int64 // user buffers found registered already
	ReorderedHolds int64 // messages the provider completed out of order
	Injected       int64 // frames sent by fi_inject (no send completion)
	Batched        int64 // eager messages sent in a batch with others (a burst to one process)
	RankReaped     int64 // completions reaped by a waiting rank (rather than the progress goroutine)
	OneSided       int64 // one-sided operations (chunks of writes, reads, atomics) posted for windows
	LoopReaped     int64 // completions reaped by the progress goroutine
	// Rejected counts the frames dropped unread because they do not come
	// from a process of the job: without its token, from an address that
	// is not the one of the process the header names, too short for a
	// header, or a receive the provider failed (a frame longer than a
	// receive slot, one cut off), whose sender it does not name.
	Rejected int64
}
