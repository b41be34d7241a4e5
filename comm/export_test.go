package comm

import (
	"reflect"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// ShareLimit is the smallest message whose copy into a receive goroutine
// ranks share between two goroutines (comm/internal/engine/copyin.go).
const ShareLimit = engine.ShareLimit

// WorldContext is the world communicator's point-to-point context, as
// a device's envelopes carry it.
const WorldContext = worldContext

// Buffered returns how many bytes of eager messages from rank src of c
// wait at c's rank, not received yet, as the pair's eager buffer counts
// them (comm/internal/engine/protocol.go).
func Buffered(c *Comm, src int) int { return c.ep.Buffered(c.worldOf(src)) }

// FingerprintOf is the fingerprint a message of struct type t carries
// between processes.
func FingerprintOf(t reflect.Type) uint32 {
	shape, err := appendShape(nil, t, "")
	if err != nil {
		panic(err)
	}
	return engine.Fingerprint(string(shape))
}

// EncodeValue and DecodeValue are the value path's encoding of a message
// and its decoding into *ptr.
var (
	EncodeValue = encodeValue
	DecodeValue = decodeValue
)

// Laned returns how many messages from rank src of c reached c's rank
// through their pair's lane (comm/internal/engine/lane.go).
func Laned(c *Comm, src int) uint64 { return c.ep.Laned(c.worldOf(src)) }

// NBTable reports whether c's non-blocking collectives meet in a table,
// and how many tables of children its table keeps that not every member
// of the child took yet (nbLink).
func NBTable(c *Comm) (has bool, kids int) {
	t := c.nbTable()
	if t == nil {
		return false, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return true, len(t.kids)
}
