package typed_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// The one-pass move between two layouts agrees with the reference (gather
// through one, scatter through the other) for every pair of layouts, the
// same one on both sides included, whole and cut short.
func TestLayoutTransfer(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cases := layoutCases(t, rng)
	for _, a := range cases {
		for _, b := range cases {
			if overlaps(b.idx) {
				continue
			}
			for _, n := range []int{min(len(a.idx), len(b.idx)), min(len(a.idx), len(b.idx)) / 2} {
				checkTransfer(t, a, b, n, rng.Int64)
			}
		}
	}
}

func checkTransfer[T typed.Number](t *testing.T, a, b layoutCase, n int, gen func() T) {
	t.Helper()
	src := make([]T, a.extent)
	for i := range src {
		src[i] = gen()
	}
	fill := gen()
	dst, want := make([]T, b.extent), make([]T, b.extent)
	for i := range dst {
		dst[i], want[i] = fill, fill
	}
	for i := range n {
		want[b.idx[i]] = src[a.idx[i]]
	}
	typed.Transfer(dst, b.l, src, a.l, n)
	if !equal(dst, want) {
		t.Fatalf("%s → %s, %d elements: got %v, want %v", a.name, b.name, n, dst, want)
	}
}

// Layout messages at or above the eager limit go by rendezvous: the
// receiver reads the sender's slice itself. The MPI rules hold as for any
// message: the sender waits for the receive; a receive layout of another
// shape, a longer one (the first places filled), a shorter one
// (ErrTruncate, the message consumed, the sender unharmed), another
// element type (ErrType), raw bytes.
func TestLayoutRendezvous(t *testing.T) {
	tri := upperTriangle(t, 8)
	const count = 1024 // 36,864 elements, 288 KiB: above the default eager limit
	l := layoutOK(t)(tri.Repeat(count))
	n := l.Count()
	column := layoutOK(t)(typed.Vector(n, 1, 3))
	longer := layoutOK(t)(tri.Repeat(2 * count))
	shorter := layoutOK(t)(tri.Repeat(count / 2))
	src := make([]float64, l.Extent())
	for i := range src {
		src[i] = float64(i)
	}
	packed := make([]float64, n)
	typed.Pack(packed, src, l)
	posted := make(chan struct{})
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		if w.Rank() == 0 {
			r, err := c.IsendLayout(src, l, 1, 0)
			if err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
			if _, done, err := r.Test(); done || err != nil {
				return fmt.Errorf("rendezvous IsendLayout completed (%v) before the receive", err)
			}
			close(posted)
			if _, err := r.Wait(); err != nil {
				return err
			}
			for tag := 1; tag <= 5; tag++ {
				if err := c.SendLayout(src, l, 1, tag); err != nil {
					return fmt.Errorf("send %d: %w", tag, err)
				}
			}
			return nil
		}
		<-posted
		check := func(tag int, dst []float64, rl typed.Layout, k int) error {
			got := make([]float64, k)
			typed.Pack(got, dst, rl)
			if !equal(got, packed[:k]) {
				return fmt.Errorf("tag %d: the elements differ", tag)
			}
			return nil
		}
		for tag, rl := range []typed.Layout{l, column, longer} {
			dst := make([]float64, rl.Extent())
			st, err := c.RecvLayout(dst, rl, 0, tag)
			if err != nil || st.Count != n {
				return fmt.Errorf("tag %d: %+v %v", tag, st, err)
			}
			if err := check(tag, dst, rl, n); err != nil {
				return err
			}
			if rl.Count() > n { // the places past the message stay untouched
				rest := make([]float64, rl.Count())
				typed.Pack(rest, dst, rl)
				for _, v := range rest[n:] {
					if v != 0 {
						return fmt.Errorf("tag %d: places past the message written", tag)
					}
				}
			}
		}
		if _, err := c.RecvLayout(make([]float64, shorter.Extent()), shorter, 0, 3); !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("into a shorter layout: %v, want ErrTruncate", err)
		}
		if _, err := typed.Of[int64](w).RecvLayout(make([]int64, l.Extent()), l, 0, 4); !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("as int64: %v, want ErrType", err)
		}
		raw := make([]byte, 8*n)
		if st, err := typed.Of[byte](w).Recv(raw, 0, 5); err != nil || st.Count != 8*n {
			return fmt.Errorf("as bytes: %+v %v", st, err)
		}
		if !equal(unsafe.Slice((*float64)(unsafe.Pointer(&raw[0])), n), packed) {
			return errors.New("as bytes: the elements differ")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A layout send that no receive will match waits, like a plain send of its
// size, and is reported as a deadlock.
func TestLayoutDeadlock(t *testing.T) {
	l := layoutOK(t)(upperTriangle(t, 8).Repeat(1024))
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return typed.Of[float64](w).SendLayout(make([]float64, l.Extent()), l, 1, 3)
		}
		return nil
	})
	if !errors.Is(err, comm.ErrDeadlock) || !strings.Contains(err.Error(), "rank 0: SendLayout(dst=1, tag=3, ") ||
		!strings.Contains(err.Error(), "rank 1: returned") {
		t.Fatalf("Run = %v, want ErrDeadlock naming the send", err)
	}
}
