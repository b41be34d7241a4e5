//go:build race

package engine

import "sync/atomic"

// storeWord is word_norace.go's, atomic: the race detector sees every
// access to a stamp word as synchronised.
func storeWord(w *atomic.Uint64, v uint64) { w.Store(v) }

// plainWords is false: lane.write stores each continuation cell's stamp
// word by storeWord.
const plainWords = false
