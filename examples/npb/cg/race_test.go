//go:build race

package main

// raceEnabled: the race detector slows 128 goroutine ranks down ~30x.
const raceEnabled = true
