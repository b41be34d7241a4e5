package comm

// FabricConfig configures [JoinFabricJob] (the RDMA backend, built with
// the tag rdma).
type FabricConfig struct {
	JobConfig
	// Provider names the libfabric provider: "verbs", "efa", "cxi",
	// "tcp", "shm" (or a layered name such as "tcp;ofi_rxm"). Empty: the
	// one FI_PROVIDER names, or the best the machine offers: libfabric's
	// first choice, except that where libfabric 1.17 offers both
	// tcp;ofi_rxm and net, net (the tcp provider's successor, named tcp
	// from libfabric 1.18 on, about 4x faster at 64 KiB on loopback).
	Provider string
	// Domain names the provider's domain (a NIC or an interface such as
	// "lo"); empty: the provider's first.
	Domain string
}

// FabricStats counts what the RDMA device did, for tests and benchmarks.
type FabricStats struct {
	EagerMessages  int64 // eager messages sent
	EagerCopied    int64 // payload bytes the device copied for eager messages (both ends)
	RndzMessages   int64 // rendezvous sent
	RndzWritten    int64 // payload bytes RMA-written straight from sender to receiver
	RndzCopied     int64 // payload bytes the device copied on the rendezvous path (zero by design)
	Registrations  int64 // fi_mr_reg of user buffers
	RegCacheHits   int64 // user buffers found registered already
	ReorderedHolds int64 // messages the provider completed out of order
	Injected       int64 // frames sent by fi_inject (no send completion)
	Batched        int64 // eager messages sent in a batch with others (a burst to one process)
	RankReaped     int64 // completions reaped by a waiting rank (rather than the progress goroutine)
	LoopReaped     int64 // completions reaped by the progress goroutine
}
