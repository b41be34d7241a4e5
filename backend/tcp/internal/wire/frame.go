package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Kind is a frame's type.
type Kind uint8

// The frame kinds.
const (
	KindEager  Kind = 1 + iota // a message with its payload
	KindRTS                    // request to send: a message whose payload waits for a CTS
	KindData                   // a chunk of a rendezvous payload
	KindCTS                    // clear to send: the receive matched the RTS Seq
	KindCredit                 // Size bytes of credit returned to the sender
	KindFin                    // the last frame this side sends on the connection
	KindPing                   // nothing but a sign of life (Config.Heartbeat)
)

func (k Kind) String() string {
	switch k {
	case KindEager:
		return "eager"
	case KindRTS:
		return "rts"
	case KindData:
		return "data"
	case KindCTS:
		return "cts"
	case KindCredit:
		return "credit"
	case KindFin:
		return "fin"
	case KindPing:
		return "ping"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Flags.
const (
	FlagSync    uint8 = 1 << 0 // RTS: a synchronous send
	FlagDiscard uint8 = 1 << 1 // CTS: the message was consumed without its payload
)

// HeaderLen is the size of an encoded header. Every frame is a fixed
// 56-byte little-endian header, then Len payload bytes:
//
//	off size field
//	  0   1  kind      Eager, RTS, Data (dialer → acceptor); CTS, Credit (back); Fin, Ping (both)
//	  1   1  flags     Sync on an RTS, Discard on a CTS
//	  2   1  type      the message's element type (opaque here)
//	  3   1  reserved  zero
//	  4   4  len       payload bytes after the header
//	  8   4  src       sender's world rank
//	 12   4  dst       receiver's world rank
//	 16   4  source    sender's rank in the communicator
//	 20   4  layout    a struct element type's fingerprint beside type (opaque here)
//	 24   8  tag
//	 32   8  context   the communicator's context
//	 40   8  seq       message number on the connection (Eager, RTS); the RTS's for Data and CTS
//	 48   8  size      message bytes (Eager, RTS); offset (Data); credit bytes (Credit)
//
// Decode rejects any header that breaks these rules (unknown kind,
// non-zero reserved or unused fields, ranks out of range, a length over
// the limit for its kind); the connection that sent it is closed and the
// frame delivers nothing.
const HeaderLen = 56

// Sentinel errors of the decoder.
var (
	// ErrFrame reports a malformed frame.
	ErrFrame = errors.New("wire: malformed frame")
	// ErrOversize reports a frame longer than its kind allows; it wraps
	// ErrFrame.
	ErrOversize = fmt.Errorf("%w: length over the limit", ErrFrame)
)

// Header is a frame's header. Fields a kind does not use are zero.
type Header struct {
	Kind    Kind
	Flags   uint8
	Type    uint8
	Len     uint32 // payload bytes following the header
	Src     int    // sender's world rank
	Dst     int    // receiver's world rank
	Source  int    // sender's rank in the communicator
	Tag     int
	Context uint64
	Seq     uint64
	Size    uint64

	// Fingerprint identifies a struct element type's layout beside Type
	// (device.Envelope.Fingerprint).
	Fingerprint uint32
}

// Limits bound what [Decode] accepts.
type Limits struct {
	Ranks   int    // Src and Dst are below it
	Eager   int    // the largest Eager payload
	Chunk   int    // the largest Data payload
	Message uint64 // the largest RTS Size
}

// Encode writes h into b[:HeaderLen].
func (h *Header) Encode(b []byte) {
	_ = b[HeaderLen-1]
	b[0], b[1], b[2], b[3] = byte(h.Kind), h.Flags, h.Type, 0
	le := binary.LittleEndian
	le.PutUint32(b[4:], h.Len)
	le.PutUint32(b[8:], uint32(h.Src))
	le.PutUint32(b[12:], uint32(h.Dst))
	le.PutUint32(b[16:], uint32(int32(h.Source)))
	le.PutUint32(b[20:], h.Fingerprint)
	le.PutUint64(b[24:], uint64(int64(h.Tag)))
	le.PutUint64(b[32:], h.Context)
	le.PutUint64(b[40:], h.Seq)
	le.PutUint64(b[48:], h.Size)
}

// Decode parses and checks a header. It never panics; a header that
// breaks the rules (see the package comment) fails with an error wrapping
// ErrFrame, one whose length is over its kind's limit with ErrOversize.
func Decode(b []byte, lim *Limits) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("%w: header of %d bytes", ErrFrame, len(b))
	}
	le := binary.LittleEndian
	src, dst := le.Uint32(b[8:]), le.Uint32(b[12:])
	h := Header{
		Kind: Kind(b[0]), Flags: b[1], Type: b[2], Fingerprint: le.Uint32(b[20:]), Len: le.Uint32(b[4:]),
		Src: int(src), Dst: int(dst), Source: int(int32(le.Uint32(b[16:]))),
		Tag: int(int64(le.Uint64(b[24:]))), Context: le.Uint64(b[32:]),
		Seq: le.Uint64(b[40:]), Size: le.Uint64(b[48:]),
	}
	if b[3] != 0 {
		return Header{}, fmt.Errorf("%w: reserved byte set", ErrFrame)
	}
	var maxLen int
	switch h.Kind {
	case KindEager, KindRTS:
		if src >= uint32(lim.Ranks) || dst >= uint32(lim.Ranks) || h.Source < 0 {
			return Header{}, fmt.Errorf("%w: %s from rank %d to %d (source %d) in a job of %d", ErrFrame, h.Kind, src, dst, h.Source, lim.Ranks)
		}
		if h.Kind == KindEager {
			if h.Flags != 0 {
				return Header{}, fmt.Errorf("%w: eager flags %#x", ErrFrame, h.Flags)
			}
			maxLen = lim.Eager
			if uint64(h.Len) != h.Size {
				return Header{}, fmt.Errorf("%w: eager payload %d, size %d", ErrFrame, h.Len, h.Size)
			}
		} else {
			if h.Flags&^FlagSync != 0 {
				return Header{}, fmt.Errorf("%w: rts flags %#x", ErrFrame, h.Flags)
			}
			if h.Size > lim.Message || h.Size > math.MaxInt {
				return Header{}, fmt.Errorf("%w: rts of %d bytes, limit %d", ErrOversize, h.Size, lim.Message)
			}
		}
	default:
		// Control and data frames carry no envelope.
		if h.Type != 0 || h.Fingerprint != 0 || h.Src != 0 || h.Dst != 0 || h.Source != 0 || h.Tag != 0 || h.Context != 0 {
			return Header{}, fmt.Errorf("%w: %s with an envelope", ErrFrame, h.Kind)
		}
		switch h.Kind {
		case KindData:
			if h.Flags != 0 || h.Len == 0 || h.Size > math.MaxInt {
				return Header{}, fmt.Errorf("%w: data flags %#x len %d offset %d", ErrFrame, h.Flags, h.Len, h.Size)
			}
			maxLen = lim.Chunk
		case KindCTS:
			if h.Flags&^FlagDiscard != 0 || h.Size != 0 {
				return Header{}, fmt.Errorf("%w: cts flags %#x size %d", ErrFrame, h.Flags, h.Size)
			}
		case KindCredit:
			if h.Flags != 0 || h.Seq != 0 || h.Size == 0 || h.Size > math.MaxInt32 {
				return Header{}, fmt.Errorf("%w: credit of %d", ErrFrame, h.Size)
			}
		case KindFin, KindPing:
			if h.Flags != 0 || h.Seq != 0 || h.Size != 0 {
				return Header{}, fmt.Errorf("%w: %s with fields set", ErrFrame, h.Kind)
			}
		default:
			return Header{}, fmt.Errorf("%w: unknown kind %d", ErrFrame, b[0])
		}
	}
	if int64(h.Len) > int64(maxLen) {
		return Header{}, fmt.Errorf("%w: %s frame of %d bytes, limit %d", ErrOversize, h.Kind, h.Len, maxLen)
	}
	return h, nil
}
