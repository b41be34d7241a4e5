package memcopy_test

import (
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/comm/internal/memcopy"
)

// BenchmarkCopy: copy(), Copy, and a Shared copy with one helper
// goroutine (which the scheduler starts on an idle P), for sizes around
// the runtime's non-temporal threshold (1 MiB) and the cached limit. The copy goes there and
// back, as a ping-pong's two messages do, so that each reads what the
// previous one wrote.
func BenchmarkCopy(b *testing.B) {
	for _, size := range []int{512 << 10, 1 << 20, 4 << 20, 8 << 20, 32 << 20} {
		x, y := make([]byte, size), make([]byte, size)
		for _, kind := range []string{"copy", "Copy", "Shared"} {
			b.Run(fmt.Sprintf("%s/%d", kind, size), func(b *testing.B) {
				b.SetBytes(int64(2 * size))
				for range b.N {
					switch kind {
					case "copy":
						copy(y, x)
						copy(x, y)
					case "Copy":
						memcopy.Copy(y, x)
						memcopy.Copy(x, y)
					default:
						for _, s := range []*memcopy.Shared{memcopy.NewShared(y, x), memcopy.NewShared(x, y)} {
							go s.Help()
							s.Run()
						}
					}
				}
			})
		}
	}
}
