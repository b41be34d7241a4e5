//go:build linux && (amd64 || arm64)

package shm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// pairListener listens on a fresh abstract Unix socket.
func pairListener(t *testing.T) (*net.UnixListener, string) {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	name := "@mpgo-shm-test-" + hex.EncodeToString(b[:])
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, name
}

// testHello is process self's side of handshakes with secret, handing
// over a fresh segment of size bytes.
func testHello(t *testing.T, self int, secret string, size int) *hello {
	t.Helper()
	fd, err := memfd("mpgo-shm", size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return &hello{self: self, secret: []byte(secret), fd: fd, segSize: size}
}

// handshake runs acceptor a and dialer d (process 1 dialing process 0)
// on one connection and returns both ends' results.
func handshake(t *testing.T, a, d *hello) (acc, dial *attached, accErr, dialErr error) {
	t.Helper()
	ln, name := pairListener(t)
	deadline := time.Now().Add(10 * time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.AcceptUnix()
		if err != nil {
			accErr = err
			return
		}
		if acc, accErr = a.accept(c, func(p int) bool { return p == 1 }, deadline); accErr != nil {
			c.Close()
		}
	}()
	dial, dialErr = d.dial(name, 0, deadline)
	<-done
	for _, at := range []*attached{acc, dial} {
		if at != nil {
			at.conn.Close()
			syscall.Munmap(at.mem)
		}
	}
	return
}

// Two processes of the job (same secret, same user) attach each other's
// segments.
func TestHandshake(t *testing.T) {
	const size = 8192
	acc, dial, aerr, derr := handshake(t, testHello(t, 0, "job secret 123456", size), testHello(t, 1, "job secret 123456", size))
	if aerr != nil || derr != nil || acc == nil || dial == nil {
		t.Fatalf("accept: %v, dial: %v", aerr, derr)
	}
	if acc.proc != 1 || dial.proc != 0 || len(acc.mem) != size || len(dial.mem) != size {
		t.Errorf("attached %d (%d bytes) and %d (%d bytes)", acc.proc, len(acc.mem), dial.proc, len(dial.mem))
	}
}

// A process without the job secret attaches nothing: dialing, the
// acceptor drops it before it hands over its segment; accepting (at an
// address a genuine process dials), it cannot check the dialer's proof,
// and the dialer hands over nothing before it checked the acceptor's.
func TestHandshakeWithoutSecret(t *testing.T) {
	const size = 8192
	acc, dial, aerr, derr := handshake(t, testHello(t, 0, "job secret 123456", size), testHello(t, 1, "a guess 12345678", size))
	if !errors.Is(aerr, ErrHandshake) || acc != nil {
		t.Errorf("the acceptor took a dialer without the secret: %v", aerr)
	}
	if derr == nil || dial != nil {
		t.Errorf("a dialer without the secret got a segment")
	}
	acc, dial, aerr, derr = handshake(t, testHello(t, 0, "a guess 12345678", size), testHello(t, 1, "job secret 123456", size))
	if derr == nil || dial != nil {
		t.Errorf("the dialer took an acceptor without the secret")
	}
	if aerr == nil || acc != nil {
		t.Errorf("an acceptor without the secret got a segment")
	}
}

// A process of the job that is not expected (not of this host, or
// attached already) is dropped.
func TestHandshakeUnexpected(t *testing.T) {
	const size = 8192
	acc, _, aerr, _ := handshake(t, testHello(t, 0, "job secret 123456", size), testHello(t, 2, "job secret 123456", size))
	if !errors.Is(aerr, ErrHandshake) || acc != nil {
		t.Errorf("the acceptor took process 2, which it did not expect: %v", aerr)
	}
}
