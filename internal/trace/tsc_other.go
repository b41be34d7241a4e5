//go:build !amd64

package trace

// tickIsTSC is false: ticks are nanotime's nanoseconds.
const tickIsTSC = false

// ticks reads the clock of Clock.
func ticks() int64 { return nanotime() }
