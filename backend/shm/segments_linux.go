//go:build linux && (amd64 || arm64)

package shm

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"time"

	"github.com/mpgo/mpgo/comm/device"
)

// Segments a program shares between the processes of the host
// ([device.Segments]: the windows of MPI_Win_allocate_shared). The
// creator makes an anonymous memory file (memfd_create, mode 0600,
// named nowhere: a job killed with SIGKILL leaves nothing behind), maps
// it, and sends its descriptor to each other process over the Unix
// connection the two attached their rings through (SCM_RIGHTS): that
// connection proved at Open that its peer knows the job secret and runs
// as the same user, so no stranger receives a segment, and nothing
// depends on the ptrace rights that opening /proc/<pid>/fd/<n> of the
// creator would need (which a hardened kernel or a container may deny).
// A record on the connection is the key and the size (8 bytes each, in
// this machine's byte order) with the descriptor; the peer's watcher
// (watch) files it in segs until a rank attaches it. Each process maps
// a segment once, however many of its ranks attach it, and unmaps it at
// its last release.

// segRecord is the size of a segment record on a peer connection.
const segRecord = 16

// segmentWithin bounds an attach's wait for its segment's descriptor,
// which the creator sent before it told the ranks so.
const segmentWithin = 60 * time.Second

// segKey names a segment: its creator's process and the creator's key.
type segKey struct {
	proc int
	key  uint64
}

// sharedSeg is a segment as this process knows it.
type sharedSeg struct {
	ready chan struct{} // closed once fd or mem is set
	fd    int           // the descriptor received, until mapped (-1: none)
	size  int
	mem   []byte // the mapping, once mapped
	uses  int
}

var _ device.Segments = (*Device)(nil)

// SharesMemory implements [device.Segments]: the processes of this host
// that attached at Open and are not gone.
func (d *Device) SharesMemory(proc int) bool {
	if proc == d.self {
		return true
	}
	p := d.byProc[proc]
	return p != nil && !p.gone.Load() && !p.eof.Load()
}

// segment returns the entry of k, made (waiting for its descriptor) if
// there is none; d.segMu must be held.
func (d *Device) segment(k segKey) *sharedSeg {
	s := d.segs[k]
	if s == nil {
		s = &sharedSeg{ready: make(chan struct{}), fd: -1}
		if d.segs == nil {
			d.segs = map[segKey]*sharedSeg{}
		}
		d.segs[k] = s
	}
	return s
}

// CreateSegment implements [device.Segments].
func (d *Device) CreateSegment(key uint64, size int, procs []int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shm: a segment of %d bytes: %w", size, device.ErrArg)
	}
	for _, proc := range procs {
		if proc == d.self || !d.SharesMemory(proc) {
			return nil, fmt.Errorf("shm: a segment for process %d, which shares no memory with this one: %w", proc, device.ErrArg)
		}
	}
	fd, err := memfd("mpgo-shm-win", size)
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	defer syscall.Close(fd) // the mappings and the records in flight hold it
	mem, err := mapShared(fd, size)
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	rec := make([]byte, segRecord)
	binary.NativeEndian.PutUint64(rec, key)
	binary.NativeEndian.PutUint64(rec[8:], uint64(size))
	for _, proc := range procs {
		if err := d.sendSegment(d.byProc[proc], rec, fd); err != nil {
			syscall.Munmap(mem)
			return nil, err
		}
	}
	d.segMu.Lock()
	defer d.segMu.Unlock()
	s := d.segment(segKey{d.self, key})
	if s.mem != nil || s.fd >= 0 {
		syscall.Munmap(mem)
		return nil, fmt.Errorf("shm: a second segment under key %#x: %w", key, device.ErrArg)
	}
	s.mem, s.size, s.uses = mem, size, 1
	close(s.ready)
	return mem, nil
}

// sendSegment writes a segment record with fd to p.
func (d *Device) sendSegment(p *peer, rec []byte, fd int) error {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	n, _, err := p.conn.WriteMsgUnix(rec, syscall.UnixRights(fd), nil)
	if err == nil && n != len(rec) {
		err = fmt.Errorf("a record of %d bytes written short (%d)", len(rec), n)
	}
	if err != nil {
		if p.gone.Load() || p.eof.Load() {
			return d.lostErr(p)
		}
		return fmt.Errorf("shm: handing a segment to process %d: %w", p.proc, err)
	}
	return nil
}

// AttachSegment implements [device.Segments].
func (d *Device) AttachSegment(key uint64, creator, size int) ([]byte, error) {
	var gone <-chan struct{}
	if creator != d.self {
		p := d.byProc[creator]
		if p == nil {
			return nil, fmt.Errorf("shm: a segment of process %d, which shares no memory with this one: %w", creator, device.ErrArg)
		}
		gone = p.done
	}
	k := segKey{creator, key}
	d.segMu.Lock()
	s := d.segment(k)
	d.segMu.Unlock()
	t := time.NewTimer(segmentWithin)
	defer t.Stop()
	select {
	case <-s.ready:
	case <-gone:
		return nil, d.lostErr(d.byProc[creator])
	case <-t.C:
		return nil, fmt.Errorf("shm: no segment %#x from process %d within %v: %w", key, creator, segmentWithin, device.ErrArg)
	}
	d.segMu.Lock()
	defer d.segMu.Unlock()
	if s.size != size {
		return nil, fmt.Errorf("shm: segment %#x of process %d has %d bytes, not %d: %w", key, creator, s.size, size, device.ErrArg)
	}
	if s.mem == nil {
		mem, err := mapShared(s.fd, size)
		if err != nil {
			return nil, fmt.Errorf("shm: %w", err)
		}
		syscall.Close(s.fd)
		s.mem, s.fd = mem, -1
	}
	s.uses++
	return s.mem, nil
}

// ReleaseSegment implements [device.Segments].
func (d *Device) ReleaseSegment(key uint64, creator int) error {
	d.segMu.Lock()
	defer d.segMu.Unlock()
	k := segKey{creator, key}
	s := d.segs[k]
	if s == nil || s.uses == 0 {
		return fmt.Errorf("shm: release of segment %#x of process %d, which is not attached: %w", key, creator, device.ErrArg)
	}
	if s.uses--; s.uses > 0 {
		return nil
	}
	delete(d.segs, k)
	if err := syscall.Munmap(s.mem); err != nil {
		return fmt.Errorf("shm: unmapping a segment: %w", err)
	}
	return nil
}

// watch reads p's connection until it ends (the peer died or closed):
// segment records, which it files for AttachSegment, and nothing else.
// Then it lets the poller find out whether p said goodbye first.
func (d *Device) watch(p *peer) {
	defer d.readers.Done()
	defer close(p.done)
	buf := make([]byte, segRecord)
	oob := make([]byte, syscall.CmsgSpace(4))
	have, fd := 0, -1
	for {
		n, oobn, _, _, err := p.conn.ReadMsgUnix(buf[have:], oob)
		for _, f := range rights(oob[:oobn]) {
			if fd < 0 {
				fd = f
			} else {
				syscall.Close(f) // one descriptor a record
			}
		}
		if err != nil {
			break
		}
		if have += n; have < segRecord {
			continue
		}
		d.received(p, buf, fd)
		have, fd = 0, -1
	}
	if fd >= 0 {
		syscall.Close(fd)
	}
	p.eof.Store(true)
	d.wake()
}

// rights returns the descriptors of control messages oob.
func rights(oob []byte) []int {
	if len(oob) == 0 {
		return nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if f, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

// received files a segment record of p's with its descriptor fd (< 0:
// none came, and the record is dropped).
func (d *Device) received(p *peer, rec []byte, fd int) {
	if fd < 0 {
		return
	}
	k := segKey{p.proc, binary.NativeEndian.Uint64(rec)}
	size := binary.NativeEndian.Uint64(rec[8:])
	d.segMu.Lock()
	defer d.segMu.Unlock()
	s := d.segment(k)
	if s.fd >= 0 || s.mem != nil || size == 0 || size > 1<<48 {
		syscall.Close(fd) // a key twice, or no size: not the job's way
		return
	}
	s.fd, s.size = fd, int(size)
	close(s.ready)
}

// closeSegments closes the descriptors that arrived and were never
// attached; mappings still in use stay (the program frees its windows
// before its world ends, or they go with the process).
func (d *Device) closeSegments() {
	d.segMu.Lock()
	defer d.segMu.Unlock()
	for k, s := range d.segs {
		if s.fd >= 0 {
			syscall.Close(s.fd)
			s.fd = -1
		}
		if s.uses == 0 {
			delete(d.segs, k)
		}
	}
}
