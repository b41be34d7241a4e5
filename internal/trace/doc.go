// Package trace is what a world records of its run when asked to
// (comm.Observe): a timeline of every communication call of each rank
// (MPGO_TRACE), per-rank counters (MPGO_STATS), and the log of wildcard
// matching outcomes that record/replay keeps (MPGO_RECORD, MPGO_REPLAY).
//
// Nothing here runs unless a world was configured with a [Set]: the engine
// and package comm hold a *[Rank] per rank, nil when observation is off,
// and test it before every hook, so that the cost when off is that one nil
// test. When on, a hook takes a slot in its rank's ring by one atomic add
// and writes a fixed-size [Record] there: no lock, no allocation.
//
// The files, one concept each: clock.go (the clock: the invariant TSC or
// nanotime, tsc_*.go), record.go (one record and the operations it
// names), ring.go (a rank's ring of records), counters.go (a rank's
// counters), rank.go (what one rank records), set.go (a world's ranks,
// names and options), chrome.go (the Chrome trace-event JSON a set
// exports), flows.go (pairing each send with the receive that matched
// it), merge.go (one trace from the files of several processes),
// replay.go (the record/replay log), stream.go (a log's stream, appended
// without a lock).
package trace
