package engine

import (
	"testing"
	"unsafe"
)

// TestRequestSize pins Request to the 288-byte size class of Go's
// allocator: the next class is 320 bytes, and every operation allocates
// or recycles one. Two branches that each took the last spare bytes
// (the trace's start time, the detector's send generation) pushed it to
// 296 when merged; this test says so at once.
func TestRequestSize(t *testing.T) {
	if n := unsafe.Sizeof(Request{}); n > 288 {
		t.Fatalf("Request is %d bytes, beyond the 288-byte size class", n)
	}
}
