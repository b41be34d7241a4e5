package comm_test

import (
	"encoding/gob"
	"reflect"
	"testing"
	"unsafe"

	"github.com/mpgo/mpgo/comm"
)

// record81 is an 81-byte struct without pointers (unsafe.Sizeof 81), the
// size of the report: a value SendValue can send as its memory.
type record81 struct {
	Kind  uint8
	Name  [16]byte
	Flags [64]uint8
}

// record88 mixes field kinds (with padding) in 88 bytes.
type record88 struct {
	ID   int32
	Kind uint8
	Pos  [3]float64
	Vel  [3]float64
	Mass float64
	Hits uint64
	Tag  [8]byte
}

// labelled has a string: not fixed-size, it travels by gob (its type
// descriptions cached).
type labelled struct {
	Label string
	Vals  [8]float64
}

// shaped holds an interface: a fresh gob stream per message.
type shaped struct {
	Label string
	Shape shape
}

var _ [81 - unsafe.Sizeof(record81{})]struct{}
var _ [unsafe.Sizeof(record81{}) - 81]struct{}

// BenchmarkValueRoundTrip: one round trip (rank 0 → 1 → 0) of a small
// value between two goroutine ranks, ns/op per round trip: by SendValue
// and RecvValue, beside the same bytes as a typed message (a struct Type
// from comm.TypeOf) and a plain Go channel's round trip of the value.
func BenchmarkValueRoundTrip(b *testing.B) {
	b.Run("chan/record81", func(b *testing.B) {
		ping, pong := make(chan record81), make(chan record81)
		go func() {
			for v := range ping {
				pong <- v
			}
		}()
		v := record81{Kind: 1}
		b.ReportAllocs()
		for range b.N {
			ping <- v
			v = <-pong
		}
		close(ping)
	})
	b.Run("typed/record81", func(b *testing.B) {
		t, err := comm.TypeOf(reflect.TypeFor[record81]())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		run(b, 2, func(w *comm.Comm) error {
			var v record81
			buf := unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))
			return pingPong(b, w, func(dst int) error {
				return w.Send(buf, t, dst, 0)
			}, func(src int) error {
				_, err := w.Recv(buf, t, src, 0)
				return err
			})
		})
	})
	valueRoundTrip(b, "value/record81", record81{Kind: 1, Name: [16]byte{'a'}})
	valueRoundTrip(b, "value/record88", record88{ID: 7, Pos: [3]float64{1, 2, 3}, Mass: 4})
	valueRoundTrip(b, "value/labelled", labelled{Label: "particle", Vals: [8]float64{1, 2}})
	valueRoundTrip(b, "value/int", 42)
	gob.Register(square{})
	valueRoundTrip(b, "value/interface", shaped{Label: "square", Shape: square{2}})
}

func valueRoundTrip[T any](b *testing.B, name string, v T) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		run(b, 2, func(w *comm.Comm) error {
			x := v
			return pingPong(b, w, func(dst int) error {
				return w.SendValue(x, dst, 0)
			}, func(src int) error {
				_, err := w.RecvValue(&x, src, 0)
				return err
			})
		})
	})
}

// pingPong runs b.N round trips between ranks 0 and 1 of w with send and
// recv, timing them on rank 0.
func pingPong(b *testing.B, w *comm.Comm, send func(dst int) error, recv func(src int) error) error {
	peer := 1 - w.Rank()
	if err := w.Barrier(); err != nil {
		return err
	}
	if w.Rank() == 0 {
		b.ResetTimer()
	}
	for range b.N {
		if w.Rank() == 0 {
			if err := send(peer); err != nil {
				return err
			}
			if err := recv(peer); err != nil {
				return err
			}
		} else {
			if err := recv(peer); err != nil {
				return err
			}
			if err := send(peer); err != nil {
				return err
			}
		}
	}
	return nil
}
