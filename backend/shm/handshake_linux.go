//go:build linux && (amd64 || arm64)

package shm

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/mpgo/mpgo/internal/pmi"
)

// How the processes of a host attach each other's segments: each listens
// on a Unix socket in the abstract namespace (no file: nothing to clean
// up) under a random name it publishes in the launcher's key-value store;
// the host's process i dials every process j < i. Over the connection:
//
//	acceptor → dialer: nonce A (32 bytes), acceptor's process (4)
//	dialer → acceptor: dialer's process (4), nonce B (32), MAC("dial")
//	acceptor → dialer: MAC("accept"), segment size (8) + its memfd and bell (SCM_RIGHTS)
//	dialer → acceptor: segment size (8) + its memfd and bell (SCM_RIGHTS)
//
// MAC(role) is HMAC-SHA256 under the job secret of the role, the rings'
// layout version (ringVersion), both nonces and both process numbers:
// each side proves it knows the secret before the other hands it a
// descriptor, and the fresh nonces keep a recorded exchange from being
// replayed. A process of another build, whose rings are laid out
// otherwise, fails the handshake too, instead of misreading the records.
// Each side also checks with SO_PEERCRED that its peer runs as the same
// user, and takes the peer's process id from it (for process_vm_readv),
// not from the peer's word.
// A connection that fails any check is closed and never attaches
// anything; the acceptor goes on waiting for its genuine peers.
//
// The connection stays open for the job's life: its end of file tells a
// process at once that its peer died (the kernel closes a dead process's
// sockets), without a heartbeat.

// ErrHandshake is wrapped by the errors of a connection that failed the
// handshake: a peer without the job secret, of another user, or that
// spoke out of turn.
var ErrHandshake = errors.New("shm: handshake failed")

const nonceSize = 32

// attached is a peer's end of a handshake that succeeded.
type attached struct {
	proc int
	pid  int
	conn *net.UnixConn
	mem  []byte // the peer's segment, mapped
	bell int    // the peer's eventfd (segment.go)
}

// mac is the MAC of role over the handshake's nonces and processes.
func mac(secret []byte, role string, a, b []byte, dialer, acceptor int) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(fmt.Sprintf("mpgo-shm-%d-%s", ringVersion, role)))
	m.Write(a)
	m.Write(b)
	binary.Write(m, binary.LittleEndian, [2]uint32{uint32(dialer), uint32(acceptor)}) //nolint:errcheck // a hash does not fail
	return m.Sum(nil)
}

// sameUser checks that c's peer runs as this process's user, and returns
// its pid.
func sameUser(c *net.UnixConn) (int, error) {
	uid, pid, err := pmi.PeerCred(c)
	if err != nil {
		return 0, fmt.Errorf("%w: SO_PEERCRED: %w", ErrHandshake, err)
	}
	if uid != uint32(os.Geteuid()) {
		return 0, fmt.Errorf("%w: the peer runs as uid %d, this process as %d", ErrHandshake, uid, os.Geteuid())
	}
	return pid, nil
}

// sendSegment sends the segment's size, its descriptor and the bell's
// after prefix.
func sendSegment(c *net.UnixConn, prefix []byte, fd, bell, size int) error {
	msg := binary.LittleEndian.AppendUint64(append([]byte(nil), prefix...), uint64(size))
	_, _, err := c.WriteMsgUnix(msg, syscall.UnixRights(fd, bell), nil)
	return err
}

// recvSegment reads n bytes and a segment (size, descriptor and bell)
// after them, maps the segment (which must be of size want), closes its
// descriptor and returns the bell's, which the caller closes.
func recvSegment(c *net.UnixConn, n, want int) ([]byte, []byte, int, error) {
	buf := make([]byte, n+8)
	oob := make([]byte, syscall.CmsgSpace(8))
	got, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, nil, -1, err
	}
	var fds []int
	if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if f, err := syscall.ParseUnixRights(&m); err == nil {
				fds = append(fds, f...)
			}
		}
	}
	bell := -1 // kept when all went well
	defer func() {
		for _, fd := range fds {
			if fd != bell {
				syscall.Close(fd)
			}
		}
	}()
	if _, err := io.ReadFull(c, buf[got:]); err != nil {
		return nil, nil, -1, err
	}
	if len(fds) != 2 {
		return nil, nil, -1, fmt.Errorf("%w: %d descriptors with the segment, want 2", ErrHandshake, len(fds))
	}
	if size := binary.LittleEndian.Uint64(buf[n:]); size != uint64(want) {
		return nil, nil, -1, fmt.Errorf("%w: a segment of %d bytes, want %d", ErrHandshake, size, want)
	}
	mem, err := mapShared(fds[0], want)
	if err != nil {
		return nil, nil, -1, err
	}
	bell = fds[1]
	return buf[:n], mem, bell, nil
}

// hello is one process's part in the handshakes: who it is and what it
// hands over.
type hello struct {
	self    int
	secret  []byte
	fd      int // its segment
	bell    int // its eventfd
	segSize int // every segment's size
}

// dial connects to process proc listening at name and attaches its
// segment.
func (h *hello) dial(name string, proc int, deadline time.Time) (*attached, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		return nil, err
	}
	a, err := h.dialed(c, proc, deadline)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("process %d: %w", proc, err)
	}
	return a, nil
}

func (h *hello) dialed(c *net.UnixConn, proc int, deadline time.Time) (*attached, error) {
	c.SetDeadline(deadline)
	pid, err := sameUser(c)
	if err != nil {
		return nil, err
	}
	in := make([]byte, nonceSize+4)
	if _, err := io.ReadFull(c, in); err != nil {
		return nil, err
	}
	na := in[:nonceSize]
	if got := int(binary.LittleEndian.Uint32(in[nonceSize:])); got != proc {
		return nil, fmt.Errorf("%w: process %d answered at process %d's address", ErrHandshake, got, proc)
	}
	nb := make([]byte, nonceSize)
	rand.Read(nb)
	out := binary.LittleEndian.AppendUint32(nil, uint32(h.self))
	out = append(append(out, nb...), mac(h.secret, "dial", na, nb, h.self, proc)...)
	if _, err := c.Write(out); err != nil {
		return nil, err
	}
	proof, mem, bell, err := recvSegment(c, sha256.Size, h.segSize)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(proof, mac(h.secret, "accept", na, nb, h.self, proc)) {
		syscall.Munmap(mem)
		syscall.Close(bell)
		return nil, fmt.Errorf("%w: process %d does not know the job secret", ErrHandshake, proc)
	}
	if err := sendSegment(c, nil, h.fd, h.bell, h.segSize); err != nil {
		syscall.Munmap(mem)
		syscall.Close(bell)
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return &attached{proc: proc, pid: pid, conn: c, mem: mem, bell: bell}, nil
}

// accept runs the acceptor's side of a handshake on c; want reports
// whether a process may still attach (one of the host's that has not).
func (h *hello) accept(c *net.UnixConn, want func(proc int) bool, deadline time.Time) (*attached, error) {
	c.SetDeadline(deadline)
	pid, err := sameUser(c)
	if err != nil {
		return nil, err
	}
	na := make([]byte, nonceSize)
	rand.Read(na)
	if _, err := c.Write(binary.LittleEndian.AppendUint32(append([]byte(nil), na...), uint32(h.self))); err != nil {
		return nil, err
	}
	in := make([]byte, 4+nonceSize+sha256.Size)
	if _, err := io.ReadFull(c, in); err != nil {
		return nil, err
	}
	proc := int(binary.LittleEndian.Uint32(in))
	nb := in[4 : 4+nonceSize]
	if !hmac.Equal(in[4+nonceSize:], mac(h.secret, "dial", na, nb, proc, h.self)) {
		return nil, fmt.Errorf("%w: a peer that does not know the job secret", ErrHandshake)
	}
	if !want(proc) {
		return nil, fmt.Errorf("%w: process %d is not expected here", ErrHandshake, proc)
	}
	if err := sendSegment(c, mac(h.secret, "accept", na, nb, proc, h.self), h.fd, h.bell, h.segSize); err != nil {
		return nil, err
	}
	_, mem, bell, err := recvSegment(c, 0, h.segSize)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return &attached{proc: proc, pid: pid, conn: c, mem: mem, bell: bell}, nil
}
