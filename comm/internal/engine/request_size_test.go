package engine

import (
	"testing"
	"unsafe"
)

// TestRequestSize pins Request to the 208-byte size class of Go's
// allocator: the next class is 224 bytes, and every non-blocking call
// allocates one (a receive window of osu_bw spends its time allocating
// and collecting them: at 288 bytes, 64 bytes more per request cost
// 6-10% of the 8-byte rate). What only some requests need lives in
// reqExt. Two branches that each took the last spare bytes once pushed
// it past its class when merged; this test says so at once.
func TestRequestSize(t *testing.T) {
	if n := unsafe.Sizeof(Request{}); n > 208 {
		t.Fatalf("Request is %d bytes, beyond the 208-byte size class", n)
	}
}
