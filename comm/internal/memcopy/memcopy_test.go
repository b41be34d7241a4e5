package memcopy_test

import (
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/comm/internal/memcopy"
)

// sizes around the chunk boundaries and the cached limit.
var sizes = []int{0, 1, 7, memcopy.Chunk - 1, memcopy.Chunk, memcopy.Chunk + 1,
	3*memcopy.Chunk + 12345, 16 * memcopy.Chunk, 1<<20 - 1, memcopy.CachedLimit, memcopy.CachedLimit + 1<<20 + 3}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i) + byte(i>>8)*31
	}
	return b
}

func equal(t *testing.T, got, want []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("byte %d of %d: %d, want %d", i, len(got), got[i], want[i])
		}
	}
}

// Copy and CopyPart are copy(): same count, same bytes, and the shorter
// slice bounds them.
func TestCopyIsCopy(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := pattern(n, 5)
			dst := make([]byte, n+9)
			if got := memcopy.Copy(dst, src); got != n {
				t.Fatalf("Copy returned %d, want %d", got, n)
			}
			equal(t, dst[:n], src)
			equal(t, dst[n:], make([]byte, 9))
			short := make([]byte, n/2)
			if got := memcopy.Copy(short, src); got != n/2 {
				t.Fatalf("Copy into %d bytes returned %d", n/2, got)
			}
			equal(t, short, src[:n/2])
			clear(dst)
			if got := memcopy.CopyPart(dst, src, memcopy.CachedLimit+1); got != n {
				t.Fatalf("CopyPart returned %d, want %d", got, n)
			}
			equal(t, dst[:n], src)
		})
	}
}
