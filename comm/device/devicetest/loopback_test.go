package devicetest_test

import (
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
)

// playLoopback is the Loopback device's [devicetest.Harness]: the
// processes are worlds of this one ([devicetest.Run]), and a shape's eager
// limit of zero is comm's default, over the device as in process.
func playLoopback(t testing.TB, s devicetest.Shape, fn func(w *comm.Comm) error) []error {
	t.Helper()
	eager := s.Eager
	if eager == 0 {
		eager = comm.DefaultEagerLimit
	}
	layout := devicetest.Blocks(s.Procs, s.Ranks)
	devs, _ := devicetest.Loopbacks(s.Procs, layout, eager)
	errs, err := devicetest.Run(devs, layout, s.Eager, fn)
	if err != nil {
		t.Fatal(err)
	}
	return errs
}

// The conformance suite over the in-memory loopback device: a backend
// written against package device alone carries every semantic the engine
// has, failures included.
func TestBackendOverLoopback(t *testing.T) {
	devicetest.TestBackend(t, playLoopback)
}

// The semantics suite crosses the devices (Run routes every message
// between processes through them) on both of their paths: eager copies
// and rendezvous pulled from the sender's buffer; with a device eager
// limit of zero, every message between processes goes by rendezvous.
func TestLoopbackCarriesSemantics(t *testing.T) {
	for _, tt := range []struct{ procs, k, eager int }{
		{2, 2, comm.DefaultEagerLimit},
		{2, 3, 0},
	} {
		t.Run(fmt.Sprintf("%dx%d/eager=%d", tt.procs, tt.k, tt.eager), func(t *testing.T) {
			layout := devicetest.Blocks(tt.procs, tt.k)
			devs, loops := devicetest.Loopbacks(tt.procs, layout, tt.eager)
			errs, err := devicetest.Run(devs, layout, 0, devicetest.Semantics)
			if err != nil {
				t.Fatal(err)
			}
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
			sent, pulled := 0, 0
			for _, l := range loops {
				s, p := l.Counts()
				sent, pulled = sent+s, pulled+p
			}
			if sent == 0 || pulled == 0 {
				t.Errorf("the devices sent %d messages and pulled %d rendezvous: the suite did not cross them", sent, pulled)
			}
		})
	}
}
