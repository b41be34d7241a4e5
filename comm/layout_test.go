package comm

import (
	"testing"
	"unsafe"
)

// TestHotLayout checks what collState's and Comm's comments promise: each
// is a size the allocator places at cache-line boundaries (a multiple of
// 64 bytes that is one of its size classes, so that no object of another
// rank shares its lines), with the fields every collective call reads in
// its first lines. A field added to either moves these sizes: change the
// pad (collStatePad, commPad) to match.
func TestHotLayout(t *testing.T) {
	// Size classes of the Go allocator that are multiples of 64 bytes,
	// whose objects therefore start on a line (runtime/sizeclasses.go).
	aligned := map[uintptr]bool{64: true, 128: true, 192: true, 256: true, 320: true, 384: true, 448: true, 512: true}
	var st collState
	var c Comm
	if n := unsafe.Sizeof(st); !aligned[n] {
		t.Errorf("collState is %d bytes, not a line-aligned size class: change collStatePad", n)
	}
	if n := unsafe.Sizeof(c); !aligned[n] {
		t.Errorf("Comm is %d bytes, not a line-aligned size class: change commPad", n)
	}
	// A shared-memory call reads these once through its gate.
	x := &st.call
	if end := unsafe.Offsetof(st.call) + unsafe.Offsetof(x.err) + unsafe.Sizeof(x.err); end > 128 {
		t.Errorf("collState's hot fields end at byte %d, past its first two lines", end)
	}
	if end := unsafe.Offsetof(c.ct) + unsafe.Sizeof(c.ct); end > 64 {
		t.Errorf("Comm's hot fields end at byte %d, past its first line", end)
	}
}
