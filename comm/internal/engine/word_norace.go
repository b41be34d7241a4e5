//go:build !race

package engine

import (
	"sync/atomic"
	"unsafe"
)

// storeWord stores v in a lane cell's stamp word that holds payload (a
// continuation cell's first bytes, or the zero that frees one) with a
// plain store, not the atomic exchange that atomic.Uint64.Store compiles
// to on amd64: one exchange per continuation cell made the producer wait
// for each cell's line in turn (a 256-byte ping-pong took 0.21-0.217 us
// one way, 0.183-0.184 so). Nothing reads such a word as a stamp before
// the store that publishes it (the header's stamp, or the consumer's
// tail, both atomic, after it in program order); the unlocked hint
// ready may read one, and read it as anything (lane.go). The race
// detector would call that read a race: race builds store atomically
// (word_race.go).
func storeWord(w *atomic.Uint64, v uint64) { *(*uint64)(unsafe.Pointer(w)) = v }

// plainWords is true where storeWord is a plain store: the continuation
// cells of a lane record are then written with one copy (lane.write).
const plainWords = true
