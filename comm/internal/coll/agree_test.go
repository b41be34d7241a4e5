package coll

import (
	"errors"
	"fmt"
	"testing"
)

// Agree leaves on every rank the combination of every rank's bytes (here
// the minimum and maximum of a byte per rank, and the lowest failed rank),
// a failed call's included; once every rank knows of the failure, Abandon
// keeps them all from communicating: an algorithm run after it is a no-op
// that returns the mismatch, and none waits for another.
func TestAgree(t *testing.T) {
	const none = 255
	combine := func(acc, in []byte) {
		acc[0], acc[1], acc[2] = min(acc[0], in[0]), max(acc[1], in[1]), min(acc[2], in[2])
	}
	for _, n := range testRanks {
		for _, failed := range []int{none, n / 2} {
			t.Run(fmt.Sprint(n, "/", failed), func(t *testing.T) {
				got := make([][]byte, n)
				errs := run(n, nil, func(x *Call) {
					acc := []byte{byte(10 + x.rank), byte(10 + x.rank), none}
					if x.rank == failed {
						x.Fail(errArg) // it still agrees
						acc[2] = byte(x.rank)
					}
					x.Agree(acc, combine)
					got[x.rank] = acc
					if acc[2] != none {
						x.Fail(fmt.Errorf("rank %d failed: %w", acc[2], errArg))
					}
					x.Abandon()
					x.Bcast(make([]byte, 8), 0, Binomial)
				})
				for r := range n {
					if want := []byte{10, byte(10 + n - 1), byte(failed)}; string(got[r]) != string(want) {
						t.Errorf("rank %d: %v, want %v", r, got[r], want)
					}
					if (failed != none) != errors.Is(errs[r], errArg) || failed == none && errs[r] != nil {
						t.Errorf("rank %d: %v", r, errs[r])
					}
				}
			})
		}
	}
}
