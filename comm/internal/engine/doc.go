// Package engine is mpgo's matching engine: the ranks of a world that run
// in this process, each with an inbox of posted receives, unexpected
// messages and blocked probes; the protocols that move a payload from a
// sender to a receive (eager copy, rendezvous, handoff, produced on
// demand); how a rank waits (spin, yield, park, or drive a device's
// progress); abort, and the deadlock detector; and the engine's side of
// the backend boundary (device.Engine).
//
// Package comm is its only user: comm validates arguments and speaks in
// communicators' ranks, and the engine matches and moves bytes between
// world ranks. comm's Request and World are defined types over this
// package's (the same memory: comm converts a pointer, never copies), so
// that none of the methods here shows in comm's documentation; comm's
// Status and Type have the same representation as this package's; its
// Remote is this package's, and its sentinel errors are these.
//
// The files, one concept each: world.go (World, Endpoint, abort, the
// deadlock detector), match.go (the inbox and its invariants), index.go
// (the matching queues, linear or indexed by context and tag), queue.go
// (the FIFO they are made of), event.go (the one-shot completion a
// rank waits on), request.go (a request and how it completes), protocol.go
// (from a send to a receive), lane.go (small messages through a ring of
// the pair, matched by the receiver, while it is active), copyin.go (a large payload's copy, shared
// with a helper), api.go (what comm calls), remote.go (the
// device boundary), payload.go and types.go (the vocabulary comm
// re-exports), structs.go (struct element types: the process's table of
// their layouts, and how they travel), observe.go (the hooks of what a
// world records of its run: package internal/trace).
package engine
