package devicetest_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
)

// The conformance suite over the in-memory loopback device: a backend
// written against package device alone carries every semantic the engine
// has, with one rank per process, several, and a small eager limit that
// sends most messages by rendezvous.
func TestSemanticsOverLoopback(t *testing.T) {
	for _, tt := range []struct{ procs, k, eager int }{
		{4, 1, 64 << 10},
		{2, 2, 64 << 10},
		{3, 1, 1024},
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

// A process that finishes while another still waits for it: the waiting
// receive fails with ErrPeerLost, not a hang.
func TestLoopbackPeerFinished(t *testing.T) {
	layout := devicetest.Blocks(2, 1)
	devs, _ := devicetest.Loopbacks(2, layout, 1024)
	errs, err := devicetest.Run(devs, layout, 0, func(w *comm.Comm) error {
		if w.Rank() == 1 { // returns once rank 0's receive is posted
			_, err := w.Recv(nil, comm.Byte, 0, 1)
			return err
		}
		r, err := w.Irecv(make([]byte, 8), comm.Byte, 1, 0)
		if err != nil {
			return err
		}
		if err := w.Send(nil, comm.Byte, 1, 1); err != nil {
			return err
		}
		_, err = r.Wait()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[0], comm.ErrPeerLost) || errors.Is(errs[0], comm.ErrAborted) {
		t.Errorf("receive from a finished process: %v, want ErrPeerLost alone", errs[0])
	}
}
