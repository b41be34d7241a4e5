package am

import (
	"fmt"
	"hash/fnv"
	"runtime/debug"

	"github.com/mpgo/mpgo/comm"
)

// Handler is a handler registered on an endpoint: its name, its function
// and the types of its requests and responses. Post and Call send it
// requests; they are safe for concurrent use, from the rank's goroutines
// and from handlers alike.
type Handler[Req, Resp any] struct {
	ep   *Endpoint
	name string
	key  uint64
	fn   func(from int, req Req) (Resp, error)
	req  codec[Req]
	resp codec[Resp]
}

// entry is a registered handler as the dispatcher sees it.
type entry interface {
	handlerName() string
	// serve runs the handler on in, a request of the given kind from
	// rank from, and replies to a Call or reports a failed Post.
	serve(ep *Endpoint, from, kind int, in *inbound)
}

// keyOf is the key a handler's name travels as (FNV-1a, 64 bits).
func keyOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// Register registers h under name on ep and returns the [Handler] that
// sends it requests. Every rank registers the same names with the same
// types; the order does not matter, nor whether traffic has started: a
// request for a name its destination has not registered yet waits there
// until it is (later requests from the same sender wait behind it, to keep
// their order), and fails with [ErrNoHandler], at its caller or poster,
// if the destination reaches Quiesce or Close without registering it
// (a Quiesce that the request's sender had not completed when it sent it).
// (Requests held so are outside the flow-control window: the destination
// has taken them.)
//
// h runs on the destination rank, on its endpoint's dispatcher, with the
// requester's rank (in the endpoint's communicator) and the request; see
// the package documentation for how handlers run. Its error, or its panic,
// goes back to a Call's caller (and a Post's poster) as a
// [*HandlerError]. A name registered twice on one endpoint fails with an
// error wrapping [comm.ErrArg], as do an empty name and a nil h.
func Register[Req, Resp any](ep *Endpoint, name string, h func(from int, req Req) (Resp, error)) (*Handler[Req, Resp], error) {
	switch {
	case ep == nil:
		return nil, fmt.Errorf("am: register %q on a nil endpoint: %w", name, comm.ErrArg)
	case name == "":
		return nil, fmt.Errorf("am: register of an empty name: %w", comm.ErrArg)
	case h == nil:
		return nil, fmt.Errorf("am: register %q with a nil func: %w", name, comm.ErrArg)
	}
	hd := &Handler[Req, Resp]{ep: ep, name: name, key: keyOf(name), fn: h, req: newCodec[Req](), resp: newCodec[Resp]()}
	if err := ep.register(hd.key, hd); err != nil {
		return nil, err
	}
	return hd, nil
}

// Name returns the name h was registered under.
func (h *Handler[Req, Resp]) Name() string { return h.name }

func (h *Handler[Req, Resp]) handlerName() string { return h.name }

// Post sends req to h on rank dst and returns once it is on its way: no
// reply comes back. The handler's error, if any, comes back to this rank
// later and is returned by its next [Endpoint.Quiesce] (or Close). Post
// blocks while this rank has too many requests not yet taken by dst's
// dispatcher (see [WithWindow]).
//
// req is handed over: to a rank of this process the handler receives the
// value itself, so neither it nor anything it refers to (a slice's
// elements) may be changed by the sender afterwards.
func (h *Handler[Req, Resp]) Post(dst int, req Req) error {
	ep := h.ep
	if err := ep.usable("post to", h.name, dst); err != nil {
		return err
	}
	epoch := ep.quiesced.Load()
	if ep.ac.IsLocal(dst) {
		return ep.send(dst, kindPost, &post[Req, Resp]{h: h, req: req, epoch: epoch}, nil)
	}
	buf, err := h.req.encode(requestHead(kindPost, h.key, epoch, 0), &req)
	if err != nil {
		return fmt.Errorf("am: post to %q on rank %d: %w", h.name, dst, err)
	}
	return ep.send(dst, kindPost, nil, buf)
}

// Call sends req to h on rank dst and returns a [Future] of its response.
// It blocks, as Post does, only while too many requests to dst are
// waiting to be taken; errors of the call itself (a bad rank, a closed
// endpoint) come back through the Future. req is handed over as Post's is,
// and so, to the caller, is the response.
func (h *Handler[Req, Resp]) Call(dst int, req Req) *Future[Resp] {
	ep := h.ep
	m := &request[Req, Resp]{h: h, req: req}
	f := &m.Future
	f.ep, f.name, f.dst, f.codec = ep, h.name, dst, &h.resp
	if err := ep.usable("call of", h.name, dst); err != nil {
		return f.failed(err)
	}
	tag := ep.nextTag()
	m.tag, m.epoch = tag, ep.quiesced.Load()
	var (
		msg message
		buf []byte
	)
	if ep.ac.IsLocal(dst) {
		f.src, msg = m, m
	} else {
		var err error
		if buf, err = h.req.encode(requestHead(kindCall, h.key, m.epoch, tag), &req); err != nil {
			return f.failed(fmt.Errorf("am: call of %q on rank %d: %w", h.name, dst, err))
		}
		m.req = *new(Req) // sent as bytes: the Future need not keep it
	}
	r, err := ep.rc.IrecvInto((*replySink[Resp])(f), comm.Byte, dst, tag)
	if err != nil {
		return f.failed(fmt.Errorf("am: call of %q on rank %d: %w", h.name, dst, err))
	}
	f.r = r
	if err := ep.send(dst, kindCall, msg, buf); err != nil {
		r.Cancel() //nolint:errcheck // a receive: Cancel cannot fail
		return f.failed(err)
	}
	return f
}

// serve runs the handler on a request (see entry).
func (h *Handler[Req, Resp]) serve(ep *Endpoint, from, kind int, in *inbound) {
	var (
		req  Req
		m    *request[Req, Resp] // the request, when it came by reference
		fail *HandlerError
	)
	if in.local != nil {
		switch l := in.local.(type) {
		case *request[Req, Resp]:
			m, req = l, l.req
		case *post[Req, Resp]:
			req = l.req
		default:
			fail = &HandlerError{Rank: ep.rank, Handler: h.name, status: statusBadRequest,
				Msg: fmt.Sprintf("a request of another type than %v (registered differently on the two ranks)", h.req.typ)}
		}
	} else if err := h.req.decode(in.payload(kind), &req); err != nil {
		fail = &HandlerError{Rank: ep.rank, Handler: h.name, status: statusBadRequest, Msg: err.Error()}
	}
	var resp Resp
	if fail == nil {
		resp, fail = h.run(ep, from, req)
	}
	if kind == kindPost {
		if fail != nil {
			ep.report(from, h.key, fail)
		}
		return
	}
	switch {
	case m != nil:
		m.Future.val, m.Future.err = resp, nil
		if fail != nil {
			m.Future.err = fail
		}
		ep.reply(from, m.tag, m, nil)
	case in.local != nil:
		in.local.fail(fail)
		ep.reply(from, in.callTag(), in.local, nil)
	case fail != nil:
		ep.reply(from, in.callTag(), nil, statusBytes(nil, fail.status, fail.Msg))
	default:
		buf, err := h.resp.encode([]byte{statusOK}, &resp)
		if err != nil {
			buf = statusBytes(nil, statusError, "encoding the response: "+err.Error())
		}
		ep.reply(from, in.callTag(), nil, buf)
	}
}

// run calls the handler's function, turning its error or its panic into
// the HandlerError its requester gets.
func (h *Handler[Req, Resp]) run(ep *Endpoint, from int, req Req) (resp Resp, fail *HandlerError) {
	defer func() {
		if p := recover(); p != nil {
			fail = &HandlerError{Rank: ep.rank, Handler: h.name, status: statusPanic, Msg: fmt.Sprintf("%v\n%s", p, debug.Stack())}
		}
	}()
	resp, err := h.fn(from, req)
	if err != nil {
		return resp, &HandlerError{Rank: ep.rank, Handler: h.name, status: statusError, Msg: err.Error()}
	}
	return resp, nil
}
