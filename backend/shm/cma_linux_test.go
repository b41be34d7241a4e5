//go:build linux && (amd64 || arm64)

package shm

import (
	"bytes"
	"os"
	"testing"
	"unsafe"
)

// process_vm_readv works here (on this process's own memory, as the
// conformance suite's processes, goroutines of one process, use it):
// TestSHMBackend's rendezvous go by it, not by the fallback.
func TestReadFrom(t *testing.T) {
	src := bytes.Repeat([]byte("mpgo"), 300000)
	dst := make([]byte, len(src))
	if err := readFrom(os.Getpid(), dst, uintptr(unsafe.Pointer(&src[0]))); err != nil {
		t.Fatalf("process_vm_readv: %v", err)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("process_vm_readv read other bytes")
	}
}
