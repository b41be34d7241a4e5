// Package trace is what a world records of its run when asked to
// (comm.Observe): a timeline of every communication call of each rank
// (MPGO_TRACE), per-rank counters (MPGO_STATS), and the log of wildcard
// matching outcomes that record/replay keeps (MPGO_RECORD, MPGO_REPLAY).
//
// Nothing here runs unless a world was configured with a [Set]: the engine
// and package comm hold a *[Rank] per rank, nil when observation is off,
// and test it before every hook, so that the cost when off is that one nil
// test. When on, a hook pins its goroutine to its P (the runtime's
// processor), takes the next slot of that P's ring by a plain store and
// writes a fixed-size [Record] there, one cache line, field by field: no
// atomic, no lock, no allocation, no name (collectives and communicators
// are numbers, named at export). A ring per P has one writer at a time
// and stays in the cache of the core that runs it, where a ring per rank
// moved between the cores of a ping-pong with every message; export
// gathers each rank's records from every ring onto the rank's track.
//
// # Timestamps
//
// A record's Start and End are ticks of the set's [Clock]: on amd64 with
// an invariant time-stamp counter, a plain RDTSC, the same on every core
// where the counters are synchronised (Linux checks that at boot before
// it makes the TSC its clock source, as on the test VM: see
// /sys/devices/system/clocksource); elsewhere the runtime's monotonic nanotime. Export converts ticks to
// nanoseconds once, by the ratio of nanotime to ticks over the clock's
// life (read at its creation and at export, at least a millisecond
// apart: an error of about 10⁻⁴), and shows microseconds with
// nanosecond digits. RDTSC does not wait for the instructions before it
// (RDTSCP or LFENCE;RDTSC would, at twice the cost): a stamp may be taken
// up to the processor's reorder window early or late, some tens of
// nanoseconds, which orders one goroutine's calls (they are that far
// apart at least) but not two cores' events closer than that.
//
// What the times of an operation are: a blocking call's slice starts when
// the call posts its operation (one clock read, at the post) and ends
// when the operation completed, not when the goroutine resumed: an eager
// send, and a send that found its receive posted, end at their start; a
// receive that a local send completed (payload up to 4 KiB) ends at the
// send's start, one whose message had arrived before it was posted at
// its post; a larger or remote one ends when its copy is done. A round trip
// of a ping-pong thus reads the clock 4 times, twice on its critical path
// (each send's start; the receives post while their rank waits anyway). A non-blocking request's async slice runs from its
// post to its completion the same way; a collective's slice from the
// call's entry to its return.
//
// The files, one concept each: clock.go (the clock: the invariant TSC or
// nanotime, tsc_*.go), record.go (one record and the operations it
// names), ring.go (a P's ring of records), pin.go (which ring a
// goroutine writes), slot*.go (taking a slot, plainly or for the race
// detector), counters.go (a rank's
// counters), rank.go (what one rank records), set.go (a world's ranks,
// names and options), chrome.go (the Chrome trace-event JSON a set
// exports), flows.go (pairing each send with the receive that matched
// it), merge.go (one trace from the files of several processes),
// replay.go (the record/replay log), stream.go (a log's stream, appended
// without a lock).
package trace
