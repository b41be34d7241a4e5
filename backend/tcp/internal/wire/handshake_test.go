package wire_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mpgo/mpgo/backend/tcp/internal/wire"
)

type shake struct {
	hello wire.Hello
	terms wire.Terms
	err   error
}

// handshake runs both sides over a pipe.
func handshake(dialSecret, acceptSecret []byte, from, to int) (dial, accept shake) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ch := make(chan shake, 1)
	go func() {
		h, t, err := wire.AcceptHandshake(b, acceptSecret, 1, 4, time.Second, func(h wire.Hello) (wire.Terms, error) {
			return wire.Terms{Window: 1 << 20, Chunk: 1 << 16}, nil
		})
		if err != nil {
			b.Close() // as the transport does
		}
		ch <- shake{h, t, err}
	}()
	dial.terms, dial.err = wire.DialHandshake(a, dialSecret, from, to, 4096, time.Second)
	if dial.err != nil {
		a.Close()
	}
	return dial, <-ch
}

func TestHandshake(t *testing.T) {
	dial, accept := handshake(testSecret, testSecret, 2, 1)
	if dial.err != nil || accept.err != nil {
		t.Fatalf("dial %v, accept %v", dial.err, accept.err)
	}
	if accept.hello != (wire.Hello{From: 2, Eager: 4096}) {
		t.Errorf("acceptor learned %+v", accept.hello)
	}
	if dial.terms != (wire.Terms{Window: 1 << 20, Chunk: 1 << 16}) {
		t.Errorf("dialer got terms %+v", dial.terms)
	}
}

func TestHandshakeRefusals(t *testing.T) {
	other := []byte("fedcba9876543210fedcba9876543210")
	tests := []struct {
		name            string
		dialS, acceptS  []byte
		from, to        int
		dialErr, accErr bool
	}{
		{"wrong secret", other, testSecret, 2, 1, true, true},
		{"impostor acceptor", testSecret, other, 2, 1, true, true},
		{"wrong destination", testSecret, testSecret, 2, 3, true, true},
		{"process out of range", testSecret, testSecret, 9, 1, true, true},
		{"dialing itself", testSecret, testSecret, 1, 1, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dial, accept := handshake(tt.dialS, tt.acceptS, tt.from, tt.to)
			if !errors.Is(dial.err, wire.ErrHandshake) || !errors.Is(accept.err, wire.ErrHandshake) {
				t.Errorf("dial %v, accept %v: want both ErrHandshake", dial.err, accept.err)
			}
		})
	}
}

// An acceptor that does not hold the secret cannot fake its answer.
func TestHandshakeForgedWelcome(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		defer b.Close()
		b.Write(append([]byte("MPGOTCP1"), make([]byte, 32)...))
		io.ReadFull(b, make([]byte, 84))
		b.Write(make([]byte, 40))
	}()
	if _, err := wire.DialHandshake(a, testSecret, 0, 1, 4096, time.Second); !errors.Is(err, wire.ErrHandshake) {
		t.Errorf("forged welcome: %v", err)
	}
}

// Strangers at the listening port: silent, speaking frames without a
// handshake, or failing the handshake. None delivers anything, and each
// connection is closed.
func TestTransportStrangers(t *testing.T) {
	nodes := cluster(t, 2, func(i int, c *wire.Config) { c.HandshakeTimeout = 200 * time.Millisecond })
	defer closeAll(nodes)
	addr := nodes[0].t.Addr().String()
	frame := encode(wire.Header{Kind: wire.KindEager, Src: 1, Dst: 0, Len: 5, Size: 5, Seq: 1})
	frame = append(frame, "hello"...)
	strangers := map[string]func(net.Conn){
		"silent": func(net.Conn) {},
		"frames without a handshake": func(c net.Conn) {
			c.Write(frame)
		},
		"frames after a wrong secret": func(c net.Conn) {
			wire.DialHandshake(c, []byte("not-the-job-secret-at-all"), 1, 0, 4096, time.Second)
			c.Write(frame)
		},
		"a replayed hello": func(c net.Conn) {
			io.ReadFull(c, make([]byte, 40))
			c.Write(append([]byte("MPGOTCP1"), make([]byte, 76)...))
			c.Write(frame)
		},
	}
	for name, act := range strangers {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			act(c)
			expectClosed(t, c)
		})
	}
	if got := nodes[0].arrivals(); len(got) != 0 {
		t.Errorf("strangers delivered %d messages", len(got))
	}
	if len(nodes[0].lost) != 0 {
		t.Errorf("strangers made processes count as lost: %v", nodes[0].lost)
	}
	// The job still works.
	if err := wait(t, send(t, nodes[1], 0, wire.Header{Src: 1}, []byte("real"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the real message", func() bool { return len(nodes[0].arrivals()) == 1 })
}

// A process that passed the handshake and then sends a bad frame: its
// connection is closed, the frame delivers nothing, and it counts as lost.
func TestTransportMalformedFrames(t *testing.T) {
	bad := map[string]wire.Header{
		"oversized eager":      {Kind: wire.KindEager, Src: 1, Len: 1 << 30, Size: 1 << 30, Seq: 1},
		"another process rank": {Kind: wire.KindEager, Src: 2, Seq: 1},
		"for a rank elsewhere": {Kind: wire.KindEager, Src: 1, Dst: 2, Seq: 1},
		"out of sequence":      {Kind: wire.KindEager, Src: 1, Seq: 7},
		"unknown kind":         {Kind: 42},
		"data never pulled":    {Kind: wire.KindData, Len: 1, Seq: 1},
		"cts to the acceptor":  {Kind: wire.KindCTS, Seq: 1},
	}
	for name, h := range bad {
		t.Run(name, func(t *testing.T) {
			nodes := cluster(t, 3, nil)
			defer closeAll(nodes)
			c, err := net.Dial("tcp", nodes[0].t.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := wire.DialHandshake(c, testSecret, 1, 0, 64<<10, time.Second); err != nil {
				t.Fatal(err)
			}
			c.Write(append(encode(h), make([]byte, 64)...))
			expectClosed(t, c)
			if got := nodes[0].arrivals(); len(got) != 0 {
				t.Errorf("a bad frame delivered %d messages", len(got))
			}
			waitFor(t, "process 1 counted lost", func() bool { return nodes[0].lostErr(1) != nil })
		})
	}
}

// expectClosed checks that the other side closes c (EOF or a reset), not
// that c merely stays silent.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the connection was not closed: %v", err)
	}
}
