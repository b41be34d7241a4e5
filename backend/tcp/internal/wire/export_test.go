package wire

import "math"

// PollAlways makes t's readers poll whenever they read, as if a rank
// waited all the time (t needs Config.Spin).
func (t *Transport) PollAlways() { t.hot.Store(math.MaxInt64) }

// Polled returns how many reads a poll returned bytes for.
func (t *Transport) Polled() uint64 { return t.polled.Load() }

// PollersMax returns the most readers of t seen polling at once.
func (t *Transport) PollersMax() int { return int(t.pollersMax.Load()) }

// MaxPollers is maxPollers.
const MaxPollers = maxPollers
