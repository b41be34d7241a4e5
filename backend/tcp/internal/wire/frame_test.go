package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/mpgo/mpgo/backend/tcp/internal/wire"
)

var testLimits = wire.Limits{Ranks: 8, Eager: 1024, Chunk: 4096, Message: 1 << 40}

func encode(h wire.Header) []byte {
	b := make([]byte, wire.HeaderLen)
	h.Encode(b)
	return b
}

func validHeaders() []wire.Header {
	return []wire.Header{
		{Kind: wire.KindEager, Type: 12, Len: 16, Src: 1, Dst: 7, Source: 3, Tag: 99, Context: 1 << 40, Seq: 1, Size: 16},
		{Kind: wire.KindEager, Type: 16, Fingerprint: 0xdeadbeef, Len: 24, Src: 1, Dst: 2, Seq: 4, Size: 24},
		{Kind: wire.KindRTS, Type: 16, Fingerprint: 0x80000001, Src: 3, Dst: 1, Seq: 5, Size: 1 << 20},
		{Kind: wire.KindEager, Src: 0, Dst: 0, Tag: -5, Seq: 2},
		{Kind: wire.KindRTS, Flags: wire.FlagSync, Src: 2, Dst: 3, Tag: 1 << 40, Seq: 3, Size: 1 << 30},
		{Kind: wire.KindData, Len: 4096, Seq: 3, Size: 1 << 20},
		{Kind: wire.KindCTS, Flags: wire.FlagDiscard, Seq: 3},
		{Kind: wire.KindCredit, Size: 1 << 20},
		{Kind: wire.KindFin},
		{Kind: wire.KindPing},
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range validHeaders() {
		got, err := wire.Decode(encode(h), &testLimits)
		if err != nil {
			t.Errorf("%+v: %v", h, err)
			continue
		}
		if got != h {
			t.Errorf("decoded %+v, want %+v", got, h)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name     string
		h        wire.Header
		oversize bool
	}{
		{"unknown kind", wire.Header{Kind: 9}, false},
		{"kind zero", wire.Header{}, false},
		{"eager over the limit", wire.Header{Kind: wire.KindEager, Len: 1025, Size: 1025}, true},
		{"eager len and size differ", wire.Header{Kind: wire.KindEager, Len: 10, Size: 11}, false},
		{"eager with flags", wire.Header{Kind: wire.KindEager, Flags: wire.FlagSync}, false},
		{"rank out of range", wire.Header{Kind: wire.KindEager, Src: 8}, false},
		{"negative rank", wire.Header{Kind: wire.KindRTS, Dst: -1}, false},
		{"negative source", wire.Header{Kind: wire.KindRTS, Source: -1}, false},
		{"rts with payload", wire.Header{Kind: wire.KindRTS, Len: 1}, true},
		{"rts too large", wire.Header{Kind: wire.KindRTS, Size: 1<<40 + 1}, true},
		{"rts with discard", wire.Header{Kind: wire.KindRTS, Flags: wire.FlagDiscard}, false},
		{"data over the chunk", wire.Header{Kind: wire.KindData, Len: 4097}, true},
		{"empty data", wire.Header{Kind: wire.KindData}, false},
		{"data with an envelope", wire.Header{Kind: wire.KindData, Len: 1, Tag: 1}, false},
		{"cts with a fingerprint", wire.Header{Kind: wire.KindCTS, Fingerprint: 1}, false},
		{"cts with payload", wire.Header{Kind: wire.KindCTS, Len: 1}, true},
		{"cts with size", wire.Header{Kind: wire.KindCTS, Size: 1}, false},
		{"credit of zero", wire.Header{Kind: wire.KindCredit}, false},
		{"huge credit", wire.Header{Kind: wire.KindCredit, Size: 1 << 40}, false},
		{"fin with seq", wire.Header{Kind: wire.KindFin, Seq: 1}, false},
		{"fin with payload", wire.Header{Kind: wire.KindFin, Len: 1 << 31}, true},
		{"ping with size", wire.Header{Kind: wire.KindPing, Size: 1}, false},
		{"ping with payload", wire.Header{Kind: wire.KindPing, Len: 1}, true},
		{"ping with an envelope", wire.Header{Kind: wire.KindPing, Tag: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wire.Decode(encode(tt.h), &testLimits)
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("got %v, want ErrFrame", err)
			}
			if got := errors.Is(err, wire.ErrOversize); got != tt.oversize {
				t.Errorf("ErrOversize: %v, want %v (%v)", got, tt.oversize, err)
			}
		})
	}
	if _, err := wire.Decode(make([]byte, wire.HeaderLen-1), &testLimits); !errors.Is(err, wire.ErrFrame) {
		t.Errorf("short header: %v", err)
	}
	b := encode(validHeaders()[0])
	b[3] = 1
	if _, err := wire.Decode(b, &testLimits); !errors.Is(err, wire.ErrFrame) {
		t.Errorf("reserved byte set: %v", err)
	}
}

// FuzzDecode: the decoder never panics, never accepts a length over its
// kind's limit, and what it accepts encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, h := range validHeaders() {
		f.Add(encode(h))
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, wire.HeaderLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := wire.Decode(b, &testLimits)
		if len(b) >= wire.HeaderLen {
			n := binary.LittleEndian.Uint32(b[4:])
			limit := uint32(0)
			switch wire.Kind(b[0]) {
			case wire.KindEager:
				limit = uint32(testLimits.Eager)
			case wire.KindData:
				limit = uint32(testLimits.Chunk)
			}
			if n > limit && err == nil {
				t.Fatalf("accepted a %v frame of %d bytes, limit %d", wire.Kind(b[0]), n, limit)
			}
		}
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("error %v does not wrap ErrFrame", err)
			}
			return
		}
		if !bytes.Equal(encode(h), b[:wire.HeaderLen]) {
			t.Fatalf("%x decodes to %+v, which encodes differently", b[:wire.HeaderLen], h)
		}
	})
}
