package devicetest_test

import (
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The suite holds on goroutine ranks (the reference backend), so a
// failure on another backend is that backend's.
func TestSemanticsOnGoroutines(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		if err := mpgo.Run(n, devicetest.Semantics); err != nil {
			t.Errorf("%d ranks: %v", n, err)
		}
	}
}
