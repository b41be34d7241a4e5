//go:build linux && (amd64 || arm64)

package shm

import (
	"errors"
	"syscall"
	"testing"

	"github.com/mpgo/mpgo/comm/device"
)

// TestPutAfterClose: once Close marked a peer's ring closed it unmaps the
// peer's segment, so a producer that comes later (a rank's send, the
// deadlock detector's control message racing the job's end) must fail
// with ErrClosed without touching the ring, even where the ring has room.
// Before the check it wrote there and faulted: CI saw a SIGSEGV in
// tryPut under mpiexec -n 4, the detector sending while Close unmapped.
func TestPutAfterClose(t *testing.T) {
	mem, err := syscall.Mmap(-1, 0, ringHeader+4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	d := &Device{}
	p := &peer{proc: 1, out: newRing(mem)}
	p.outMu.Lock()
	p.outClosed = true
	p.outMu.Unlock()
	if err := syscall.Munmap(mem); err != nil {
		t.Fatal(err)
	}
	h := header{kind: kindEager, len: 8}
	if err := d.put(p, &h, make([]byte, 8)); !errors.Is(err, device.ErrClosed) {
		t.Errorf("put after close: %v, want ErrClosed", err)
	}
	if d.putNow(p, &h, make([]byte, 8)) {
		t.Errorf("putNow after close wrote a record")
	}
}
