package device

// Progressor is an optional interface of a [Device] whose transfers move
// only while somebody polls it (libfabric providers with manual progress,
// such as tcp and shm). A rank about to park on an incomplete operation
// lets the device drive its progress first: the rank that waits for an
// arrival then reaps it itself, instead of a progress goroutine reaping it
// and waking the rank, which costs two goroutine handoffs per round trip.
// The engine finds it by type assertion, once, when the world is made; a
// device without it pays nothing.
type Progressor interface {
	// Drive polls the device for at most a short window (about a round
	// trip), returning as soon as w is ready, and reports whether it is.
	// It returns at once when another rank polls the device already (at
	// most one does: a waiting rank must not burn a core for nothing);
	// the caller then parks, and whoever polls wakes it through the
	// engine. Safe for concurrent use. Drive is called with no engine
	// lock held.
	Drive(w Waiter) bool
}

// Waiter is what a rank waits for: one operation, or any of several.
type Waiter interface {
	// Ready reports whether the wait is over. It never blocks.
	Ready() bool
}
