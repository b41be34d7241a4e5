package am

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/mpgo/mpgo/comm"
)

// Messages.
//
// An endpoint talks on two private communicators of its own, duplicates
// of the one it was made on, so that its traffic never matches a user's
// receive: requests (a Post, a Call, the report of a failed Post) go on
// the request communicator, tagged with their kind, to the destination's
// dispatcher, which receives from any rank with any tag; a Call's reply
// goes on the reply communicator, tagged with the call's own tag, straight
// into the receive its caller posted when it called (future.go), without
// the caller's dispatcher.
//
// To a rank of this process a message travels by reference: it is a
// [comm.Source] sent with [comm.Comm.IsendFrom] at a length no eager limit
// reaches (localLen), so that the engine always hands it, the Source
// itself, to the receive's [comm.Sink] (rendezvous) and never pulls it into
// bytes; the receiver reads the Go value in it. Such a send completes when
// the destination's dispatcher takes the message, which is what flow
// control counts (flow.go). A reply comes back the same way, by the
// request itself: the handler's runner writes the outcome into the
// caller's Future and sends the request back as the reply.
//
// To a rank of another process a message is bytes (little-endian):
//
//	Post:        key[8] epoch[4] payload
//	Call:        key[8] epoch[4] tag[4] payload
//	post report: key[8] status[1] message
//	reply:       status[1] payload, or status[1] message when status is not statusOK
//
// where key is the handler's name hashed ([keyOf]), epoch the number of
// Quiesces the sender had completed when it sent the request (see
// Endpoint.failsUnknown), tag the reply's tag, status one of statusOK …
// statusBadRequest, and payload the request's or response's encoding
// (codec.go). A request by reference carries its key, epoch and tag as
// fields.

// Kinds of request messages: their tags on the request communicator
// (a message by reference tells its kind itself, and goes with tag
// kindLocal from a slot of flow.go).
const (
	kindPost   = 1 + iota // a Post
	kindCall              // a Call
	kindReport            // a failed Post's report, back to its poster
	kindLocal             // a request by reference, sent from a slot
)

// localLen is the length a message to a rank of this process declares:
// beyond any eager limit, so that it always goes by rendezvous, by
// reference.
const localLen = math.MaxInt

// Header sizes of requests between processes.
const (
	keyLen      = 8
	postHeadLen = keyLen + 4
	callHeadLen = postHeadLen + 4
)

// errByReference is what a message that travels by reference returns if
// the engine ever asks for its bytes.
var errByReference = errors.New("am: an in-process message has no bytes")

// message is a request or a report on its way to a rank of this process,
// read there by reference.
type message interface {
	comm.Source
	// kind returns the message's kind (kindPost, kindCall, kindReport).
	kind() int
	// head returns the handler's key, the sender's epoch and, for a
	// Call, the reply's tag.
	head() (key uint64, epoch uint32, tag int)
	// fail sets a Call's outcome to e, for a request that no handler of
	// its types took; the request then goes back as its reply.
	fail(e *HandlerError)
}

// request is a Call's message to a rank of this process. It embeds the
// Call's Future: the handler's runner writes the outcome there and sends
// the request back as the reply.
type request[Req, Resp any] struct {
	Future[Resp]
	h     *Handler[Req, Resp]
	req   Req
	epoch uint32
	tag   int
}

func (m *request[Req, Resp]) Pull(dst []byte) error {
	if dst == nil {
		return nil // dropped (an abort): nothing to release
	}
	return errByReference
}

func (m *request[Req, Resp]) kind() int { return kindCall }

func (m *request[Req, Resp]) head() (uint64, uint32, int) { return m.h.key, m.epoch, m.tag }

func (m *request[Req, Resp]) fail(e *HandlerError) {
	f := *e
	f.Handler = m.h.name // the caller's name for it: the receiver may not know it
	m.Future.err = &f
}

// post is a Post's message to a rank of this process.
type post[Req, Resp any] struct {
	h     *Handler[Req, Resp]
	req   Req
	epoch uint32
}

func (m *post[Req, Resp]) Pull(dst []byte) error {
	if dst == nil {
		return nil
	}
	return errByReference
}

func (m *post[Req, Resp]) kind() int { return kindPost }

func (m *post[Req, Resp]) head() (uint64, uint32, int) { return m.h.key, m.epoch, 0 }

func (m *post[Req, Resp]) fail(*HandlerError) {}

// report is a failed Post's error on its way back to its poster in this
// process.
type report struct {
	key    uint64
	status byte
	msg    string
}

func (r *report) Pull(dst []byte) error {
	if dst == nil {
		return nil
	}
	return errByReference
}

func (r *report) kind() int { return kindReport }

func (r *report) head() (uint64, uint32, int) { return r.key, 0, 0 }

func (r *report) fail(*HandlerError) {}

// inbound is a request as the dispatcher received it: a message by
// reference, or the bytes of one from another process. It is the
// dispatcher's [comm.Sink].
type inbound struct {
	local message
	data  []byte
}

func (in *inbound) Cap() int { return math.MaxInt }

// Take keeps the message: by reference when it is one of ours from this
// process (a slot's, which the sender reuses once this returns, or a
// message itself), otherwise a copy of its bytes (data is the engine's
// only during the call).
func (in *inbound) Take(data []byte, from comm.Remote, n int) error {
	switch m := from.(type) {
	case *slot:
		in.local = m.m
		return nil
	case message:
		in.local = m
		return nil
	}
	if from != nil {
		in.data = make([]byte, n)
		return from.Pull(in.data)
	}
	in.data = bytes.Clone(data)
	return nil
}

// key returns the handler key of in, a request of the given kind, and
// its sender's epoch.
func (in *inbound) key(kind int) (uint64, uint32, error) {
	if in.local != nil {
		k, e, _ := in.local.head()
		return k, e, nil
	}
	if kind == kindCall && len(in.data) < callHeadLen || len(in.data) < postHeadLen {
		return 0, 0, fmt.Errorf("am: request of %d bytes: %w", len(in.data), comm.ErrType)
	}
	return binary.LittleEndian.Uint64(in.data), binary.LittleEndian.Uint32(in.data[keyLen:]), nil
}

// callTag returns the reply tag of in, a Call (its key checked).
func (in *inbound) callTag() int {
	if in.local != nil {
		_, _, t := in.local.head()
		return t
	}
	return int(binary.LittleEndian.Uint32(in.data[postHeadLen:]))
}

// payload returns the request's payload bytes, in from another process.
func (in *inbound) payload(kind int) []byte {
	if kind == kindCall {
		return in.data[callHeadLen:]
	}
	return in.data[postHeadLen:]
}

// requestHead returns the header of a request between processes.
func requestHead(kind int, key uint64, epoch uint32, tag int) []byte {
	h := make([]byte, callHeadLen)
	binary.LittleEndian.PutUint64(h, key)
	binary.LittleEndian.PutUint32(h[keyLen:], epoch)
	if kind == kindCall {
		binary.LittleEndian.PutUint32(h[postHeadLen:], uint32(tag))
		return h
	}
	return h[:postHeadLen]
}

// statusBytes is the encoding of a failed outcome: the status and the
// message, after head.
func statusBytes(head []byte, status byte, msg string) []byte {
	b := make([]byte, 0, len(head)+1+len(msg))
	b = append(append(b, head...), status)
	return append(b, msg...)
}
