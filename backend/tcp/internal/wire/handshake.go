package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The handshake: a challenge-response in each direction, keyed with the
// job's secret (HMAC-SHA256), before any frame is read.
//
//	acceptor → dialer: magic, nonceA                                  (40 bytes)
//	dialer → acceptor: magic, from, to, eager, nonceD, MAC("dial", …)  (84 bytes)
//	acceptor → dialer: window, chunk, MAC("accept", …)                 (40 bytes)
//
// Each MAC covers both nonces and every field sent so far, so neither side
// can be replayed, and both learn the other holds the secret: a stranger
// who connects to a listening port cannot pass, and a process that dialed
// a stale address cannot be fooled into sending to whoever holds it now.
// The acceptor closes a connection that fails without answering.

// ErrHandshake reports a connection that failed the handshake.
var ErrHandshake = errors.New("wire: handshake failed")

// MaxEagerLimit is the largest eager limit a transport uses (and a
// dialer may offer).
const MaxEagerLimit = 64 << 20

const (
	magic      = "MPGOTCP1"
	nonceLen   = 32
	macLen     = sha256.Size
	challenge  = len(magic) + nonceLen               // acceptor's first message
	helloLen   = len(magic) + 12 + nonceLen + macLen // dialer's answer
	welcomeLen = 8 + macLen                          // acceptor's terms
	minSecret  = 16                                  // bytes of job secret at least
	maxChunk   = 16 << 20                            // the largest chunk an acceptor may grant
	maxWindow  = 1 << 30                             // the largest credit window
)

// Terms are what the acceptor grants the dialer: the credit window (bytes
// of eager payload and queued messages the dialer may have outstanding)
// and the largest data chunk.
type Terms struct {
	Window int
	Chunk  int
}

func mac(secret []byte, label string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// DialHandshake runs the dialer's side on nc: process from introduces
// itself to process to, offering its eager limit. It returns the
// acceptor's terms, or an error wrapping ErrHandshake.
func DialHandshake(nc net.Conn, secret []byte, from, to, eager int, timeout time.Duration) (Terms, error) {
	nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	var ch [challenge]byte
	if _, err := io.ReadFull(nc, ch[:]); err != nil {
		return Terms{}, fmt.Errorf("%w: reading the challenge: %w", ErrHandshake, err)
	}
	if string(ch[:len(magic)]) != magic {
		return Terms{}, fmt.Errorf("%w: not an mpgo process", ErrHandshake)
	}
	nonceA := ch[len(magic):]
	var hello [helloLen]byte
	b := hello[:0]
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(from))
	b = binary.LittleEndian.AppendUint32(b, uint32(to))
	b = binary.LittleEndian.AppendUint32(b, uint32(eager))
	fields := b[len(magic):]
	nonceD := make([]byte, nonceLen)
	rand.Read(nonceD)
	b = append(b, nonceD...)
	b = append(b, mac(secret, "dial", nonceA, nonceD, fields)...)
	if _, err := nc.Write(b); err != nil {
		return Terms{}, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	var w [welcomeLen]byte
	if _, err := io.ReadFull(nc, w[:]); err != nil {
		return Terms{}, fmt.Errorf("%w: process %d refused the connection: %w", ErrHandshake, to, err)
	}
	if !hmac.Equal(w[8:], mac(secret, "accept", nonceA, nonceD, fields, w[:8])) {
		return Terms{}, fmt.Errorf("%w: process %d does not hold the job secret", ErrHandshake, to)
	}
	t := Terms{Window: int(binary.LittleEndian.Uint32(w[0:])), Chunk: int(binary.LittleEndian.Uint32(w[4:]))}
	if t.Window < 1 || t.Window > maxWindow || t.Chunk < 1 || t.Chunk > maxChunk {
		return Terms{}, fmt.Errorf("%w: terms %+v", ErrHandshake, t)
	}
	return t, nil
}

// Hello is what an acceptor learned of a dialer.
type Hello struct {
	From  int // the dialer's process
	Eager int // its eager limit
}

// AcceptHandshake runs the acceptor's side on nc for process self of a
// job of procs processes. terms decides what to grant a dialer that proved
// it holds the secret (an error refuses it). On failure the caller closes
// nc; nothing was read from it but the handshake.
func AcceptHandshake(nc net.Conn, secret []byte, self, procs int, timeout time.Duration, terms func(Hello) (Terms, error)) (Hello, Terms, error) {
	nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	var ch [challenge]byte
	copy(ch[:], magic)
	nonceA := ch[len(magic):]
	rand.Read(nonceA)
	if _, err := nc.Write(ch[:]); err != nil {
		return Hello{}, Terms{}, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	var hello [helloLen]byte
	if _, err := io.ReadFull(nc, hello[:]); err != nil {
		return Hello{}, Terms{}, fmt.Errorf("%w: reading the hello: %w", ErrHandshake, err)
	}
	if string(hello[:len(magic)]) != magic {
		return Hello{}, Terms{}, fmt.Errorf("%w: not an mpgo process", ErrHandshake)
	}
	fields := hello[len(magic) : len(magic)+12]
	nonceD := hello[len(magic)+12 : len(magic)+12+nonceLen]
	if !hmac.Equal(hello[len(hello)-macLen:], mac(secret, "dial", nonceA, nonceD, fields)) {
		return Hello{}, Terms{}, fmt.Errorf("%w: the dialer does not hold the job secret", ErrHandshake)
	}
	from := binary.LittleEndian.Uint32(fields[0:])
	to := binary.LittleEndian.Uint32(fields[4:])
	eager := binary.LittleEndian.Uint32(fields[8:])
	if int64(from) >= int64(procs) || int(from) == self || int64(to) != int64(self) || eager > MaxEagerLimit {
		return Hello{}, Terms{}, fmt.Errorf("%w: process %d dialing %d with eager limit %d (this is %d of %d)", ErrHandshake, from, to, eager, self, procs)
	}
	h := Hello{From: int(from), Eager: int(eager)}
	t, err := terms(h)
	if err != nil {
		return Hello{}, Terms{}, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	var w [welcomeLen]byte
	binary.LittleEndian.PutUint32(w[0:], uint32(t.Window))
	binary.LittleEndian.PutUint32(w[4:], uint32(t.Chunk))
	copy(w[8:], mac(secret, "accept", nonceA, nonceD, fields, w[:8]))
	if _, err := nc.Write(w[:]); err != nil {
		return Hello{}, Terms{}, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	return h, t, nil
}
