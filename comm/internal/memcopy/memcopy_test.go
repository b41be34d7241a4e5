package memcopy_test

import (
	"fmt"
	"runtime"
	"sync"
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

// A shared copy delivers every byte exactly once written, whoever helps:
// nobody, one helper, or several racing helpers that start before, during
// or after the owner's Run.
func TestSharedDeliversExactly(t *testing.T) {
	for _, helpers := range []int{0, 1, 3} {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("helpers%d/%d", helpers, n), func(t *testing.T) {
				src := pattern(n, byte(helpers))
				dst := make([]byte, n)
				j := memcopy.NewShared(dst, src)
				var wg sync.WaitGroup
				for range helpers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						j.Help()
					}()
				}
				if got := j.Run(); got != n {
					t.Fatalf("Run returned %d, want %d", got, n)
				}
				// Run returned: every chunk is written, and nothing is
				// written later (the helpers find no chunk left).
				equal(t, dst, src)
				for i := range src {
					src[i] = ^src[i]
				}
				wg.Wait()
				equal(t, dst, pattern(n, byte(helpers)))
			})
		}
	}
}

// Under -race: the owner's reads after Run see the helper's writes, and
// the helper's reads of src happen before the owner's writes to it after
// Run (a sender reusing its buffer), across GOMAXPROCS 1, 2 and 4.
func TestSharedHappensBefore(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 20
	}
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			n := 4*memcopy.Chunk + 100
			src, dst := make([]byte, n), make([]byte, n)
			var wg sync.WaitGroup
			for r := range rounds {
				for i := range src {
					src[i] = byte(r + i)
				}
				j := memcopy.NewShared(dst, src)
				wg.Add(1)
				go func() {
					defer wg.Done()
					j.Help()
				}()
				j.Run()
				for i := range dst {
					if dst[i] != byte(r+i) {
						t.Fatalf("round %d byte %d: %d", r, i, dst[i])
					}
				}
			}
			wg.Wait()
		})
	}
}
