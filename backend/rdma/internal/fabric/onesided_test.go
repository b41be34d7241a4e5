//go:build rdma

package fabric_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/mpgo/mpgo/backend/rdma/internal/fabric"
)

// One-sided operations between two endpoints: a read returns what the
// target's memory holds, a fetching sum adds and returns the old value, a
// compare-and-swap swaps only on a match, a plain atomic with delivery
// completion is applied when it completes; the target never polls for
// anything of its own (its progress is driven only as the provider needs
// it, by reap).
func TestReadAtomic(t *testing.T) {
	for _, prov := range providers() {
		t.Run(prov, func(t *testing.T) {
			a, b, ab, _ := pair(t, prov)
			if _, ok := a.Atomics(fabric.AtomicFetch, fabric.Int64, fabric.AtomicSum); !ok {
				t.Skipf("provider %s does no 64-bit fetching sum", a.Info().Provider)
			}
			mem := offHeap(t, 1<<16)
			local, remote := mem[:1<<15], mem[1<<15:]
			ra, err := a.Register(local, fabric.AccessRead|fabric.AccessWrite)
			if err != nil {
				t.Fatal(err)
			}
			defer ra.Close()
			rb, err := b.Register(remote, fabric.AccessRemoteRead|fabric.AccessRemoteWrite)
			if err != nil {
				t.Fatal(err)
			}
			defer rb.Close()
			le := binary.LittleEndian
			for i := range 64 {
				le.PutUint64(remote[8*i:], uint64(100+i))
			}
			// Read 64 words.
			retry(t, a, b, func() error { return a.Read(ab, local[:512], ra, rb.RemoteAddr(remote[:512]), rb.Key(), 10) })
			if c := reap(t, a, b, 10); c.Err != nil || c.Op != fabric.OpRead {
				t.Fatalf("read completion %+v", c)
			}
			if !bytes.Equal(local[:512], remote[:512]) {
				t.Fatal("read bytes differ")
			}
			// Fetching sum of 5 into word 3.
			op, res := local[1024:1032], local[1032:1040]
			le.PutUint64(op, 5)
			retry(t, a, b, func() error {
				return a.Atomic(fabric.AtomicFetch, ab, fabric.Int64, fabric.AtomicSum, op, nil, res, 1, ra,
					rb.RemoteAddr(remote[24:32]), rb.Key(), false, 11)
			})
			if c := reap(t, a, b, 11); c.Err != nil || c.Op != fabric.OpAtomic {
				t.Fatalf("fetch completion %+v", c)
			}
			if got, now := le.Uint64(res), le.Uint64(remote[24:]); got != 103 || now != 108 {
				t.Fatalf("fetching sum: old %d, now %d; want 103, 108", got, now)
			}
			// Compare-and-swap: a miss, then a hit.
			cmp := local[1040:1048]
			for i, want := range []struct{ cmp, old, now uint64 }{{1, 108, 108}, {108, 108, 7}} {
				le.PutUint64(cmp, want.cmp)
				le.PutUint64(op, 7)
				id := uint64(12 + i)
				retry(t, a, b, func() error {
					return a.Atomic(fabric.AtomicCompare, ab, fabric.Int64, fabric.AtomicCSwap, op, cmp, res, 1, ra,
						rb.RemoteAddr(remote[24:32]), rb.Key(), false, id)
				})
				if c := reap(t, a, b, id); c.Err != nil {
					t.Fatalf("compare completion %+v", c)
				}
				if got, now := le.Uint64(res), le.Uint64(remote[24:]); got != want.old || now != want.now {
					t.Fatalf("compare with %d: old %d, now %d; want %d, %d", want.cmp, got, now, want.old, want.now)
				}
			}
			// A plain max of four words, complete at delivery.
			for i := range 4 {
				le.PutUint64(local[2048+8*i:], uint64(100+2*i))
			}
			retry(t, a, b, func() error {
				return a.Atomic(fabric.AtomicPlain, ab, fabric.Uint64, fabric.AtomicMax, local[2048:2080], nil, nil, 4, ra,
					rb.RemoteAddr(remote[:32]), rb.Key(), true, 14)
			})
			if c := reap(t, a, b, 14); c.Err != nil {
				t.Fatalf("atomic completion %+v", c)
			}
			for i, want := range []uint64{100, 102, 104, 106} { // word 3 was 7
				if got := le.Uint64(remote[8*i:]); got != want {
					t.Fatalf("max: word %d is %d, want %d", i, got, want)
				}
			}
		})
	}
}

// The providers without atomics say so: net (libfabric 1.17) grants
// FI_ATOMIC and validates no operation; tcp;ofi_rxm and shm validate the
// integer sums, and neither validates a bitwise op on floats.
func TestAtomics(t *testing.T) {
	for _, tc := range []struct {
		prov     string
		int64Sum bool
	}{{"net", false}, {"tcp", true}, {"shm", true}} {
		t.Run(tc.prov, func(t *testing.T) {
			e := open(t, tc.prov)
			_, ok := e.Atomics(fabric.AtomicFetch, fabric.Int64, fabric.AtomicSum)
			if ok != tc.int64Sum {
				t.Errorf("%s: fetching 64-bit sum valid %v, want %v", e.Info().Provider, ok, tc.int64Sum)
			}
			if _, ok := e.Atomics(fabric.AtomicPlain, fabric.Float64, fabric.AtomicBAnd); ok {
				t.Errorf("%s: bitwise and of doubles valid", e.Info().Provider)
			}
			if n, ok := e.Atomics(fabric.AtomicCompare, fabric.Int32, fabric.AtomicCSwap); ok != tc.int64Sum || (ok && n < 1) {
				t.Errorf("%s: 32-bit compare-and-swap valid %v (count %d), want %v", e.Info().Provider, ok, n, tc.int64Sum)
			}
		})
	}
}
