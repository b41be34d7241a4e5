//go:build rdma

package fabric

/*
#cgo LDFLAGS: -lfabric
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>

// mp_ctx is an operation's context: the fi_context2 scratch space that
// providers with FI_CONTEXT/FI_CONTEXT2 mode use, then the caller's id.
typedef struct {
	struct fi_context2 fc;
	uint64_t id;
} mp_ctx;

typedef struct {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	mp_ctx *ctx;
	uint32_t nctx;
	int waitable;
	int source; // FI_SOURCE: receive completions name their sender
} mp_ep;

// The memory registration modes mpgo handles; what the provider returns
// in domain_attr->mr_mode is what the program acts on.
#define MP_MR_MODES (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

static int mp_getinfo(const char *prov, const char *dom, int safe, int source, int atomic, size_t inject, struct fi_info **out) {
	struct fi_info *hints = fi_allocinfo();
	if (!hints) return -FI_ENOMEM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | (source ? FI_SOURCE : 0) | (atomic ? FI_ATOMIC : 0);
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = MP_MR_MODES;
	hints->domain_attr->threading = safe ? FI_THREAD_SAFE : FI_THREAD_UNSPEC;
	hints->tx_attr->inject_size = inject;
	if (prov && *prov) hints->fabric_attr->prov_name = strdup(prov);
	if (dom && *dom) hints->domain_attr->name = strdup(dom);
	int rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, out);
	fi_freeinfo(hints);
	return rc;
}

static void mp_close_fid(struct fid *f) { if (f) fi_close(f); }

static void mp_close(mp_ep *e) {
	if (!e) return;
	if (e->ep) fi_close(&e->ep->fid);
	if (e->av) fi_close(&e->av->fid);
	if (e->cq) fi_close(&e->cq->fid);
	if (e->domain) fi_close(&e->domain->fid);
	if (e->fabric) fi_close(&e->fabric->fid);
	if (e->info) fi_freeinfo(e->info);
	free(e->ctx);
	free(e);
}

// mp_open opens the endpoint described by info (which it takes over).
static int mp_open(struct fi_info *info, uint32_t nctx, mp_ep **out, const char **step) {
	int rc;
	mp_ep *e = calloc(1, sizeof *e);
	if (!e) { fi_freeinfo(info); return -FI_ENOMEM; }
	e->info = info;
	e->source = (info->caps & FI_SOURCE) != 0;
	e->ctx = calloc(nctx, sizeof(mp_ctx));
	e->nctx = nctx;
	if (!e->ctx) { rc = -FI_ENOMEM; *step = "contexts"; goto fail; }
	*step = "fi_fabric";
	if ((rc = fi_fabric(info->fabric_attr, &e->fabric, NULL))) goto fail;
	*step = "fi_domain";
	if ((rc = fi_domain(e->fabric, info, &e->domain, NULL))) goto fail;
	struct fi_cq_attr cq = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_UNSPEC, .size = 0 };
	*step = "fi_cq_open";
	if (fi_cq_open(e->domain, &cq, &e->cq, NULL) == 0) {
		// Block in fi_cq_sread only when the wait object is a file
		// descriptor or a set of them (net's): shm's (a yield loop) spins
		// on a core for as long as it waits; without one the caller
		// sleeps between polls. (Asking for FI_WAIT_FD instead is refused
		// by shm, and the failed open leaves its domain in a state that
		// crashes later. FI_GETWAIT would hand back the object itself,
		// whose size depends on its kind: a pollfd set overruns an int.)
		enum fi_wait_obj obj = FI_WAIT_NONE;
		e->waitable = fi_control(&e->cq->fid, FI_GETWAITOBJ, &obj) == 0 &&
			(obj == FI_WAIT_FD || obj == FI_WAIT_POLLFD);
	} else {
		cq.wait_obj = FI_WAIT_NONE;
		if ((rc = fi_cq_open(e->domain, &cq, &e->cq, NULL))) goto fail;
	}
	struct fi_av_attr av = { .type = info->domain_attr->av_type == FI_AV_UNSPEC ? FI_AV_TABLE : info->domain_attr->av_type };
	*step = "fi_av_open";
	if ((rc = fi_av_open(e->domain, &av, &e->av, NULL))) goto fail;
	*step = "fi_endpoint";
	if ((rc = fi_endpoint(e->domain, info, &e->ep, NULL))) goto fail;
	*step = "fi_ep_bind(cq)";
	if ((rc = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV))) goto fail;
	*step = "fi_ep_bind(av)";
	if ((rc = fi_ep_bind(e->ep, &e->av->fid, 0))) goto fail;
	*step = "fi_enable";
	if ((rc = fi_enable(e->ep))) goto fail;
	*out = e;
	return 0;
fail:
	mp_close(e);
	return rc;
}

static int mp_getname(mp_ep *e, void *buf, size_t *len) { return fi_getname(&e->ep->fid, buf, len); }

static int mp_av_insert(mp_ep *e, const void *addrs, size_t n, fi_addr_t *out) {
	return fi_av_insert(e->av, addrs, n, out, 0, NULL);
}

static void *mp_ctx_at(mp_ep *e, uint32_t slot, uint64_t id) {
	e->ctx[slot].id = id;
	return &e->ctx[slot];
}

static ssize_t mp_send(mp_ep *e, void *buf, size_t len, void *desc, fi_addr_t dest, uint32_t slot, uint64_t id) {
	return fi_send(e->ep, buf, len, desc, dest, mp_ctx_at(e, slot, id));
}

static ssize_t mp_sendv(mp_ep *e, void *hdr, size_t hlen, void *hdesc, void *body, size_t blen, void *bdesc,
		fi_addr_t dest, uint32_t slot, uint64_t id) {
	struct iovec iov[2] = { { .iov_base = hdr, .iov_len = hlen }, { .iov_base = body, .iov_len = blen } };
	void *desc[2] = { hdesc, bdesc };
	struct fi_msg msg = {
		.msg_iov = iov, .desc = desc, .iov_count = 2, .addr = dest, .context = mp_ctx_at(e, slot, id),
	};
	return fi_sendmsg(e->ep, &msg, FI_COMPLETION);
}

static ssize_t mp_inject_send(mp_ep *e, void *buf, size_t len, fi_addr_t dest) {
	return fi_inject(e->ep, buf, len, dest);
}

static ssize_t mp_recv(mp_ep *e, void *buf, size_t len, void *desc, uint32_t slot, uint64_t id) {
	return fi_recv(e->ep, buf, len, desc, FI_ADDR_UNSPEC, mp_ctx_at(e, slot, id));
}

static ssize_t mp_write(mp_ep *e, void *buf, size_t len, void *desc, fi_addr_t dest,
		uint64_t raddr, uint64_t key, uint64_t flags, uint32_t slot, uint64_t id) {
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = raddr, .len = len, .key = key };
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
		.rma_iov = &rma, .rma_iov_count = 1, .context = mp_ctx_at(e, slot, id),
	};
	return fi_writemsg(e->ep, &msg, FI_COMPLETION | flags);
}

static ssize_t mp_read(mp_ep *e, void *buf, size_t len, void *desc, fi_addr_t src,
		uint64_t raddr, uint64_t key, uint32_t slot, uint64_t id) {
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = raddr, .len = len, .key = key };
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = src,
		.rma_iov = &rma, .rma_iov_count = 1, .context = mp_ctx_at(e, slot, id),
	};
	return fi_readmsg(e->ep, &msg, FI_COMPLETION);
}

// The kinds of atomic operation: plain (fi_atomicmsg), fetching
// (fi_fetch_atomicmsg) and comparing (fi_compare_atomicmsg).
enum { MP_ATOMIC = 0, MP_FETCH = 1, MP_COMPARE = 2 };

// mp_atomic posts an atomic operation of kind on count elements of type
// dt at raddr: buf holds the operands, cmp the compare values
// (MP_COMPARE), res receives the old values (MP_FETCH, MP_COMPARE). All
// three lie in the region whose descriptor is desc.
static ssize_t mp_atomic(mp_ep *e, int kind, int dt, int op, void *buf, void *cmp, void *res, size_t count, void *desc,
		fi_addr_t dest, uint64_t raddr, uint64_t key, uint64_t flags, uint32_t slot, uint64_t id) {
	struct fi_ioc ioc = { .addr = buf, .count = count };
	struct fi_rma_ioc rma = { .addr = raddr, .count = count, .key = key };
	struct fi_msg_atomic msg = {
		.msg_iov = &ioc, .desc = &desc, .iov_count = 1, .addr = dest, .rma_iov = &rma, .rma_iov_count = 1,
		.datatype = (enum fi_datatype)dt, .op = (enum fi_op)op, .context = mp_ctx_at(e, slot, id),
	};
	struct fi_ioc r = { .addr = res, .count = count }, c = { .addr = cmp, .count = count };
	switch (kind) {
	case MP_FETCH:
		return fi_fetch_atomicmsg(e->ep, &msg, &r, &desc, 1, FI_COMPLETION | flags);
	case MP_COMPARE:
		return fi_compare_atomicmsg(e->ep, &msg, &c, &desc, 1, &r, &desc, 1, FI_COMPLETION | flags);
	}
	return fi_atomicmsg(e->ep, &msg, FI_COMPLETION | flags);
}

// mp_atomicvalid reports (0) whether the endpoint does op on dt as kind,
// and how many elements one operation takes.
static int mp_atomicvalid(mp_ep *e, int kind, int dt, int op, size_t *count) {
	if (!(e->info->caps & FI_ATOMIC)) return -FI_EOPNOTSUPP;
	switch (kind) {
	case MP_FETCH:
		return fi_fetch_atomicvalid(e->ep, (enum fi_datatype)dt, (enum fi_op)op, count);
	case MP_COMPARE:
		return fi_compare_atomicvalid(e->ep, (enum fi_datatype)dt, (enum fi_op)op, count);
	}
	return fi_atomicvalid(e->ep, (enum fi_datatype)dt, (enum fi_op)op, count);
}

// mp_poll reads up to max completions: their slots, lengths, flags and,
// with FI_SOURCE, senders (FI_ADDR_NOTAVAIL otherwise, and for a sender
// not in the address vector). On a completion with an error it returns
// -FI_EAVAIL after the good ones (n holds how many) and fills the error
// entry.
static ssize_t mp_poll(mp_ep *e, uint32_t *slots, uint64_t *ids, uint64_t *lens, uint64_t *flags, uint64_t *srcs,
		size_t max, int timeout_ms, uint32_t *eslot, uint64_t *eid, int *eerr, int *eprov, char *emsg, size_t emsglen) {
	struct fi_cq_data_entry ents[32];
	fi_addr_t from[32];
	if (max > 32) max = 32;
	ssize_t n;
	if (e->source)
		n = timeout_ms < 0 ? fi_cq_readfrom(e->cq, ents, max, from) : fi_cq_sreadfrom(e->cq, ents, max, from, NULL, timeout_ms);
	else
		n = timeout_ms < 0 ? fi_cq_read(e->cq, ents, max) : fi_cq_sread(e->cq, ents, max, NULL, timeout_ms);
	if (n > 0) {
		for (ssize_t i = 0; i < n; i++) {
			mp_ctx *c = ents[i].op_context;
			lens[i] = ents[i].len;
			flags[i] = ents[i].flags;
			srcs[i] = e->source ? from[i] : FI_ADDR_NOTAVAIL;
			if (c < e->ctx || c >= e->ctx + e->nctx) { // not one of ours (a provider's event)
				slots[i] = UINT32_MAX;
				ids[i] = 0;
				continue;
			}
			slots[i] = (uint32_t)(c - e->ctx);
			ids[i] = c->id;
		}
		return n;
	}
	if (n != -FI_EAVAIL) return n;
	struct fi_cq_err_entry err;
	memset(&err, 0, sizeof err);
	ssize_t rc = fi_cq_readerr(e->cq, &err, 0);
	if (rc < 0) return rc;
	mp_ctx *c = err.op_context;
	int ours = c >= e->ctx && c < e->ctx + e->nctx;
	*eslot = ours ? (uint32_t)(c - e->ctx) : UINT32_MAX;
	*eid = ours ? c->id : 0;
	*eerr = err.err;
	*eprov = err.prov_errno;
	const char *s = fi_cq_strerror(e->cq, err.prov_errno, err.err_data, NULL, 0);
	if (s) { strncpy(emsg, s, emsglen - 1); emsg[emsglen - 1] = 0; } else emsg[0] = 0;
	return -FI_EAVAIL;
}

static int mp_signal(mp_ep *e) { return fi_cq_signal(e->cq); }

static int mp_mr_reg(mp_ep *e, void *buf, size_t len, uint64_t access, uint64_t key, struct fid_mr **mr) {
	int rc = fi_mr_reg(e->domain, buf, len, access, 0, key, 0, mr, NULL);
	if (rc) return rc;
	if (e->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		if ((rc = fi_mr_bind(*mr, &e->ep->fid, 0)) || (rc = fi_mr_enable(*mr))) {
			fi_close(&(*mr)->fid);
			return rc;
		}
	}
	return 0;
}

static uint64_t mp_mr_key(struct fid_mr *mr) { return fi_mr_key(mr); }
static void *mp_mr_desc(struct fid_mr *mr) { return fi_mr_desc(mr); }
static int mp_mr_close(struct fid_mr *mr) { return fi_close(&mr->fid); }

static const char *mp_prov(struct fi_info *i) { return i->fabric_attr->prov_name; }
static const char *mp_fabric(struct fi_info *i) { return i->fabric_attr->name; }
static const char *mp_domain(struct fi_info *i) { return i->domain_attr->name; }
static uint64_t mp_mr_mode(struct fi_info *i) { return (uint64_t)i->domain_attr->mr_mode; }
static size_t mp_mr_key_size(struct fi_info *i) { return i->domain_attr->mr_key_size; }
static int mp_threading(struct fi_info *i) { return i->domain_attr->threading; }
static uint64_t mp_msg_order(struct fi_info *i) { return i->tx_attr->msg_order; }
static size_t mp_tx_size(struct fi_info *i) { return i->tx_attr->size; }
static size_t mp_rx_size(struct fi_info *i) { return i->rx_attr->size; }
static size_t mp_max_msg(struct fi_info *i) { return i->ep_attr->max_msg_size; }
static size_t mp_inject(struct fi_info *i) { return i->tx_attr->inject_size; }
static size_t mp_iov_limit(struct fi_info *i) { return i->tx_attr->iov_limit; }
static uint64_t mp_caps(struct fi_info *i) { return i->caps; }
static uint64_t mp_mode(struct fi_info *i) { return i->mode; }
static int mp_str_addr(struct fi_info *i) { return i->addr_format == FI_ADDR_STR; }
static int mp_progress(struct fi_info *i) { return i->domain_attr->data_progress; }
static struct fi_info *mp_next(struct fi_info *i) { return i->next; }
static struct fi_info *mp_dup(struct fi_info *i) { return fi_dupinfo(i); }

// mp_pick returns the entry of list to use when nobody named a provider:
// the first, except that libfabric 1.17 lists tcp;ofi_rxm before net, the
// rewrite of the tcp provider with native FI_EP_RDM that 1.18 renamed tcp
// (about 4x faster at 64 KiB on loopback): then net on the same domain.
static struct fi_info *mp_pick(struct fi_info *list) {
	if (!list || strcmp(list->fabric_attr->prov_name, "tcp;ofi_rxm") != 0) return list;
	for (struct fi_info *i = list->next; i; i = i->next) {
		if (strcmp(i->fabric_attr->prov_name, "net") == 0 && i->domain_attr->name && list->domain_attr->name &&
				strcmp(i->domain_attr->name, list->domain_attr->name) == 0) return i;
	}
	return list;
}
*/
import "C"

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Sentinel errors. Every error the package returns wraps one of them or
// is an [*Error] from the provider.
var (
	// ErrNoProvider reports that no provider offers what mpgo needs
	// (FI_EP_RDM with FI_MSG, FI_TAGGED and FI_RMA, under the given name).
	ErrNoProvider = errors.New("fabric: no suitable provider")
	// ErrAgain reports a transient lack of resources (the provider's queue
	// or the endpoint's contexts are full): progress, then retry.
	ErrAgain = errors.New("fabric: resources busy, try again")
	// ErrClosed reports an operation on a closed endpoint or region.
	ErrClosed = errors.New("fabric: endpoint closed")
	// ErrArg reports an invalid argument.
	ErrArg = errors.New("fabric: invalid argument")
)

// Error is a failure that libfabric reported.
type Error struct {
	Op   string // the libfabric call, or "completion"
	Code int    // the positive FI_E* code
	Prov int    // the provider's own error number (completions only)
	Msg  string // the provider's text, when it gave one
}

func (e *Error) Error() string {
	s := fmt.Sprintf("fabric: %s: %s (%d)", e.Op, C.GoString(C.fi_strerror(C.int(e.Code))), e.Code)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Is makes an FI_EAGAIN error match [ErrAgain].
func (e *Error) Is(target error) bool { return target == ErrAgain && e.Code == C.FI_EAGAIN }

// errOf converts a negative libfabric return code into an error.
func errOf(op string, rc C.ssize_t) error {
	if rc >= 0 {
		return nil
	}
	return &Error{Op: op, Code: int(-rc)}
}

// MRMode is the provider's memory registration mode (FI_MR_* bits).
type MRMode uint64

// The registration modes the package acts on.
const (
	// MRLocal: local buffers of data transfers need a registration (desc).
	MRLocal MRMode = C.FI_MR_LOCAL
	// MRVirtAddr: remote addresses are virtual addresses, not offsets
	// into the region.
	MRVirtAddr MRMode = C.FI_MR_VIRT_ADDR
	// MRAllocated: only allocated (backed) memory can be registered.
	MRAllocated MRMode = C.FI_MR_ALLOCATED
	// MRProvKey: the provider chooses the keys (fi_mr_key).
	MRProvKey MRMode = C.FI_MR_PROV_KEY
	// MREndpoint: a region is bound to the endpoint and enabled.
	MREndpoint MRMode = C.FI_MR_ENDPOINT
)

func (m MRMode) String() string {
	var s []string
	for _, b := range []struct {
		m MRMode
		n string
	}{{MRLocal, "local"}, {MRVirtAddr, "virt_addr"}, {MRAllocated, "allocated"}, {MRProvKey, "prov_key"}, {MREndpoint, "endpoint"}} {
		if m&b.m != 0 {
			s = append(s, b.n)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "|")
}

// The bits of fi_tx_attr.msg_order the device cares about.
const (
	orderWAS = uint64(C.FI_ORDER_WAS) // write after send
	orderSAW = uint64(C.FI_ORDER_SAW) // send after write
)

// sendsAfterWrites reports whether a provider with message order order
// transmits a send after the writes posted before it: FI_ORDER_SAW, not
// its converse FI_ORDER_WAS (a write after the sends before it).
func sendsAfterWrites(order uint64) bool { return order&orderSAW != 0 }

// Info describes the endpoint the provider gave.
type Info struct {
	Provider, Fabric, Domain string
	MRMode                   MRMode // as returned by the provider, not as asked
	KeySize                  int    // bytes of a registration key
	ThreadSafe               bool   // FI_THREAD_SAFE: no lock around calls
	WriteOrdered             bool   // FI_ORDER_SAW: a send posted after a write is transmitted after it
	ManualProgress           bool   // data moves only while the application calls in
	Waitable                 bool   // Poll can block on the completion queue
	TxSize, RxSize           int
	MaxMsgSize, InjectSize   int
	IOVLimit                 int // pieces one send may gather ([Endpoint.SendV] needs 2)
	// File is the file through which peers find the endpoint, when its
	// provider makes one: shm's region, /dev/shm/<name>. It outlives the
	// process unless Close or [Endpoint.Unlink] removes it (shm removes it
	// itself on SIGINT, SIGTERM, SIGSEGV and SIGBUS too, but nothing can
	// when the process exits otherwise or is killed). Empty for other
	// providers.
	File string
	// Source: a received message's completion names its sender
	// (FI_SOURCE, [Completion.Src]). The provider learns the sender from
	// the connection or shared region the message came through, as the
	// sender announced itself: it identifies peers, it does not
	// authenticate them.
	Source bool
}

// Config selects the provider.
type Config struct {
	// Provider names the provider ("tcp", "shm", "verbs", "efa", "cxi";
	// a layered one as "tcp;ofi_rxm"). Empty: the first libfabric offers,
	// within FI_PROVIDER when that is set; with neither, net rather than
	// tcp;ofi_rxm where libfabric (1.17) lists both: net is the tcp
	// provider's successor, named tcp from libfabric 1.18 on.
	Provider string
	// Domain names the domain (a NIC or interface, e.g. "lo", "mlx5_0").
	// Empty: the provider's first.
	Domain string
	// Contexts bounds the operations in flight (0: the provider's
	// transmit plus receive queue sizes).
	Contexts int
	// InjectSize asks for at least this many bytes of [Endpoint.Inject]
	// (tx_attr->inject_size in the hints); a provider that cannot offer
	// it is taken with its own (0: the provider's default, which for
	// tcp;ofi_rxm is 64 bytes although it can inject up to its buffer
	// size, FI_OFI_RXM_BUFFER_SIZE). Where a utility provider layered
	// over the one named could offer more, libfabric would hand that one
	// out (net injects 128 bytes; asked for 256 it offers net;ofi_rxm,
	// which cuts every message above 16 KiB into segments): Open keeps
	// the provider named, with its own inject size.
	InjectSize int
}

// Addr is a peer's address in the endpoint's address vector.
type Addr uint64

// Access says what a registered region is used for.
type Access uint64

// Access flags.
const (
	AccessSend        Access = C.FI_SEND
	AccessRecv        Access = C.FI_RECV
	AccessWrite       Access = C.FI_WRITE
	AccessRemoteWrite Access = C.FI_REMOTE_WRITE
	AccessRead        Access = C.FI_READ
	AccessRemoteRead  Access = C.FI_REMOTE_READ
)

// Op is the kind of a completed operation.
type Op uint8

// Operation kinds.
const (
	OpSend Op = iota + 1
	OpRecv
	OpWrite
	OpRead
	OpAtomic
)

// Completion is one completed operation.
type Completion struct {
	ID  uint64 // the id the operation was posted with
	Len int    // received bytes (OpRecv)
	Op  Op     // OpSend, OpRecv, OpWrite, OpRead, OpAtomic; zero for an error with no context
	Err error  // non-nil: the operation failed (an *Error)
	// Src is the sender of a received message (OpRecv, no Err) when the
	// endpoint has [Info.Source]: its address in the address vector, or
	// [AddrUnknown] for a sender that is not in it (libfabric 1.17's shm
	// reports a stale address instead: that of the completion which last
	// used the queue's entry). Otherwise AddrUnknown.
	Src Addr
}

// AddrUnknown is the source of a message from a sender that is not in
// the address vector, or from any sender on an endpoint without
// [Info.Source] (FI_ADDR_NOTAVAIL).
const AddrUnknown = ^Addr(0)

// Endpoint is one FI_EP_RDM endpoint with its fabric, domain, address
// vector and completion queue. Safe for concurrent use: calls into a
// provider that is not FI_THREAD_SAFE are serialized.
type Endpoint struct {
	c    *C.mp_ep
	info Info

	life    sync.RWMutex // held (read) across every call into the provider; Close takes it
	serial  sync.Mutex   // serializes calls when the provider is not thread safe
	closing atomic.Bool

	slotMu sync.Mutex
	free   []uint32 // free context slots
	ops    []Op     // per slot: the kind of operation using it

	strAddr bool // FI_ADDR_STR: names are NUL-terminated strings
	nameLen int  // otherwise: the length of every name
}

// Open opens an endpoint on the provider cfg names.
func Open(cfg Config) (*Endpoint, error) {
	if cfg.Contexts < 0 {
		return nil, fmt.Errorf("fabric: %d contexts: %w", cfg.Contexts, ErrArg)
	}
	prov, dom := C.CString(cfg.Provider), C.CString(cfg.Domain)
	defer C.free(unsafe.Pointer(prov))
	defer C.free(unsafe.Pointer(dom))
	if cfg.InjectSize < 0 {
		return nil, fmt.Errorf("fabric: inject size %d: %w", cfg.InjectSize, ErrArg)
	}
	// With FI_SOURCE where the provider has it, and thread safe where it
	// is (otherwise the package serializes calls itself).
	// With FI_ATOMIC where the provider offers it, which net (libfabric
	// 1.17) accepts and then validates no operation of ([Endpoint.Atomics]).
	getinfo := func(inject int) (list *C.struct_fi_info, rc C.int) {
		for _, atomic := range [...]C.int{1, 0} {
			for _, source := range [...]C.int{1, 0} {
				for _, safe := range [...]C.int{1, 0} {
					if rc = C.mp_getinfo(prov, dom, safe, source, atomic, C.size_t(inject), &list); rc != -C.FI_ENODATA {
						return list, rc
					}
				}
			}
		}
		return list, rc
	}
	list, rc := getinfo(cfg.InjectSize) // as asked, then with the provider's own
	if rc == -C.FI_ENODATA && cfg.InjectSize > 0 {
		list, rc = getinfo(0)
	} else if rc == 0 && cfg.InjectSize > 0 && layered(list, cfg.Provider) {
		// The inject size brought in a utility provider over the one
		// named: take the one named, with its own inject size.
		if own, orc := getinfo(0); orc == 0 && own != nil && C.GoString(C.mp_prov(own)) == named(cfg.Provider) {
			C.fi_freeinfo(list)
			list = own
		} else if orc == 0 {
			C.fi_freeinfo(own)
		}
	}
	if rc == -C.FI_ENODATA || (rc == 0 && list == nil) {
		return nil, fmt.Errorf("%w: provider %q domain %q: none offers FI_EP_RDM with FI_MSG|FI_TAGGED|FI_RMA", ErrNoProvider, cfg.Provider, cfg.Domain)
	}
	if rc != 0 {
		return nil, errOf("fi_getinfo", C.ssize_t(rc))
	}
	pick := list // the first: libfabric lists the best first
	if cfg.Provider == "" && os.Getenv("FI_PROVIDER") == "" {
		pick = C.mp_pick(list)
	}
	info := C.mp_dup(pick)
	C.fi_freeinfo(list)
	if info == nil {
		return nil, errOf("fi_dupinfo", -C.FI_ENOMEM)
	}
	in := Info{
		Provider:       C.GoString(C.mp_prov(info)),
		Fabric:         C.GoString(C.mp_fabric(info)),
		Domain:         C.GoString(C.mp_domain(info)),
		MRMode:         MRMode(C.mp_mr_mode(info)),
		KeySize:        int(C.mp_mr_key_size(info)),
		ThreadSafe:     C.mp_threading(info) == C.FI_THREAD_SAFE,
		WriteOrdered:   sendsAfterWrites(uint64(C.mp_msg_order(info))),
		ManualProgress: C.mp_progress(info) == C.FI_PROGRESS_MANUAL,
		TxSize:         int(C.mp_tx_size(info)),
		RxSize:         int(C.mp_rx_size(info)),
		MaxMsgSize:     int(min(uint64(C.mp_max_msg(info)), 1<<62)),
		InjectSize:     int(C.mp_inject(info)),
		IOVLimit:       int(C.mp_iov_limit(info)),
		Source:         C.mp_caps(info)&C.FI_SOURCE != 0,
	}
	if extra := in.MRMode &^ (MRLocal | MRVirtAddr | MRAllocated | MRProvKey | MREndpoint); extra != 0 {
		C.fi_freeinfo(info)
		return nil, fmt.Errorf("%w: provider %s asks for memory registration mode %#x", ErrNoProvider, in.Provider, uint64(extra))
	}
	if in.Provider == "shm" {
		staleRegions.Do(removeStaleRegions)
	}
	n := cfg.Contexts
	if n == 0 {
		n = min(max(in.TxSize, 64)+max(in.RxSize, 64), 1<<16)
	}
	var c *C.mp_ep
	var step *C.char
	if rc := C.mp_open(info, C.uint32_t(n), &c, &step); rc != 0 {
		return nil, errOf(C.GoString(step), C.ssize_t(rc))
	}
	in.Waitable = c.waitable != 0
	e := &Endpoint{c: c, info: in, free: make([]uint32, n), ops: make([]Op, n)}
	for i := range e.free {
		e.free[i] = uint32(n - 1 - i)
	}
	e.strAddr = C.mp_str_addr(c.info) != 0
	name, err := e.Name()
	if err != nil {
		e.Close()
		return nil, err
	}
	e.nameLen = len(name)
	e.info.File = regionFile(e.info.Provider, name)
	return e, nil
}

// shmDir is where shm_open puts its files (glibc's, on Linux).
const shmDir = "/dev/shm/"

// staleRegions removes, before the first shm endpoint of the process,
// the regions named after it (removeStaleRegions).
var staleRegions sync.Once

// removeStaleRegions removes the files in shmDir named after this
// process: shm names an endpoint's region <pid>:<uid>:<n>. Before the
// process's first shm endpoint none is its own: each was left by an
// earlier process that had the same pid and never closed its endpoint
// (killed, say), and libfabric 1.17 refuses to make an endpoint over it
// ("shm file in use", fi_enable failing with EBUSY: it finds the pid the
// region records alive, being this process's). Where processes died
// that way, pids wrap around onto their files sooner or later.
func removeStaleRegions() {
	prefix := fmt.Sprintf("%d:%d:", os.Getpid(), os.Getuid())
	entries, _ := os.ReadDir(shmDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			os.Remove(shmDir + e.Name())
		}
	}
}

// regionFile returns the file of the endpoint of provider named name
// ([Info.File]): for shm, the name ("fi_shm://<pid>:<uid>:<n>") without
// its scheme is the name of the region's shm_open file, when that exists.
func regionFile(provider string, name []byte) string {
	if provider != "shm" {
		return ""
	}
	s, _, _ := strings.Cut(string(name), "\x00")
	if _, after, ok := strings.Cut(s, "://"); ok {
		s = after
	}
	f := shmDir + s
	if s == "" || strings.Contains(s, "/") {
		return ""
	}
	if _, err := os.Stat(f); err != nil {
		return ""
	}
	return f
}

// Unlink removes the endpoint's file ([Info.File]), if it has one, so
// that it does not outlive the process. The endpoint goes on working
// with the peers that opened the file already (shm maps its peers'
// regions); no other can reach it any more. Unlinking what is gone
// already is no error.
func (e *Endpoint) Unlink() error {
	if e.info.File == "" {
		return nil
	}
	if err := os.Remove(e.info.File); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fabric: %w", err)
	}
	return nil
}

// named is the one provider that provider (or else FI_PROVIDER) names,
// or "" when it names none or several.
func named(provider string) string {
	if provider == "" {
		provider = os.Getenv("FI_PROVIDER")
	}
	if strings.ContainsAny(provider, ";,^") {
		return ""
	}
	return provider
}

// layered reports whether the first entry of list is a utility provider
// layered over the one provider names ("net;ofi_rxm" for "net").
func layered(list *C.struct_fi_info, provider string) bool {
	want := named(provider)
	return list != nil && want != "" && strings.HasPrefix(C.GoString(C.mp_prov(list)), want+";")
}

// Info describes the endpoint.
func (e *Endpoint) Info() Info { return e.info }

// enter starts a call into the provider; leave must follow.
func (e *Endpoint) enter() error {
	e.life.RLock()
	if e.c == nil {
		e.life.RUnlock()
		return ErrClosed
	}
	if !e.info.ThreadSafe {
		e.serial.Lock()
	}
	return nil
}

func (e *Endpoint) leave() {
	if !e.info.ThreadSafe {
		e.serial.Unlock()
	}
	e.life.RUnlock()
}

// Name returns the endpoint's address (fi_getname), to publish to peers.
func (e *Endpoint) Name() ([]byte, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	buf := make([]byte, 256)
	for {
		n := C.size_t(len(buf))
		rc := C.mp_getname(e.c, unsafe.Pointer(&buf[0]), &n)
		if rc == -C.FI_ETOOSMALL && int(n) > len(buf) {
			buf = make([]byte, n)
			continue
		}
		if rc != 0 {
			return nil, errOf("fi_getname", C.ssize_t(rc))
		}
		return buf[:n], nil
	}
}

// Insert adds the peers' names (as [Endpoint.Name] returned them) to the
// address vector and returns their addresses, in order. Names may differ
// in length (string formats, as shm's): each is inserted on its own.
func (e *Endpoint) Insert(names [][]byte) ([]Addr, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	addrs := make([]Addr, len(names))
	for i, n := range names {
		if len(n) == 0 || (!e.strAddr && len(n) != e.nameLen) {
			return nil, fmt.Errorf("fabric: address %d is %d bytes, want %d: %w", i, len(n), e.nameLen, ErrArg)
		}
		// A trailing NUL ends a string address (FI_ADDR_STR); binary
		// formats have a fixed length and ignore it.
		name := C.CBytes(append(n[:len(n):len(n)], 0))
		var out C.fi_addr_t
		rc := C.mp_av_insert(e.c, name, 1, &out)
		C.free(name)
		if rc != 1 {
			if rc >= 0 {
				return nil, fmt.Errorf("fabric: fi_av_insert: address %d not inserted: %w", i, ErrArg)
			}
			return nil, errOf("fi_av_insert", C.ssize_t(rc))
		}
		addrs[i] = Addr(out)
	}
	return addrs, nil
}

// takeSlot reserves a context for an operation of kind op.
func (e *Endpoint) takeSlot(op Op) (uint32, error) {
	e.slotMu.Lock()
	defer e.slotMu.Unlock()
	n := len(e.free)
	if n == 0 {
		return 0, ErrAgain
	}
	s := e.free[n-1]
	e.free = e.free[:n-1]
	e.ops[s] = op
	return s, nil
}

func (e *Endpoint) putSlot(s uint32) {
	e.slotMu.Lock()
	e.free = append(e.free, s)
	e.slotMu.Unlock()
}

// ptr returns the address of b's first byte (nil when b is empty).
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// post runs a data transfer call with a fresh context.
func (e *Endpoint) post(op Op, name string, call func(slot C.uint32_t) C.ssize_t) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	s, err := e.takeSlot(op)
	if err != nil {
		return err
	}
	if rc := call(C.uint32_t(s)); rc != 0 {
		e.putSlot(s)
		return errOf(name, rc)
	}
	return nil
}

// Send posts a send of b to dst (fi_send). b must be off the Go heap or
// pinned until the completion with id is polled; desc is its region's
// (needed when the mode has [MRLocal]). Fails with an error matching
// [ErrAgain] when the queue is full.
func (e *Endpoint) Send(dst Addr, b []byte, desc *MR, id uint64) error {
	return e.post(OpSend, "fi_send", func(s C.uint32_t) C.ssize_t {
		return C.mp_send(e.c, ptr(b), C.size_t(len(b)), desc.descPtr(), C.fi_addr_t(dst), s, C.uint64_t(id))
	})
}

// SendV posts a send to dst of hdr followed by body, as one message
// (fi_sendmsg with two iovecs): body goes out of the caller's buffer
// without being copied next to hdr first. Both must stay valid (off the
// Go heap, or pinned) until the completion with id is polled; hdesc and
// bdesc are their regions' (needed when the mode has [MRLocal]). Needs
// [Info.IOVLimit] of 2 or more. Fails with an error matching [ErrAgain]
// when the queue is full.
func (e *Endpoint) SendV(dst Addr, hdr []byte, hdesc *MR, body []byte, bdesc *MR, id uint64) error {
	if e.info.IOVLimit < 2 {
		return fmt.Errorf("fabric: a send of two pieces, the provider takes %d: %w", e.info.IOVLimit, ErrArg)
	}
	return e.post(OpSend, "fi_sendmsg", func(s C.uint32_t) C.ssize_t {
		return C.mp_sendv(e.c, ptr(hdr), C.size_t(len(hdr)), hdesc.descPtr(), ptr(body), C.size_t(len(body)),
			bdesc.descPtr(), C.fi_addr_t(dst), s, C.uint64_t(id))
	})
}

// Inject sends b to dst (fi_inject): the provider copies it before
// returning, so b may be reused at once, needs no registration, and no
// completion follows. len(b) must not exceed [Info.InjectSize]. Fails
// with an error matching [ErrAgain] when the queue is full.
func (e *Endpoint) Inject(dst Addr, b []byte) error {
	if len(b) > e.info.InjectSize {
		return fmt.Errorf("fabric: injecting %d bytes, at most %d: %w", len(b), e.info.InjectSize, ErrArg)
	}
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	return errOf("fi_inject", C.mp_inject_send(e.c, ptr(b), C.size_t(len(b)), C.fi_addr_t(dst)))
}

// Recv posts a receive into b (fi_recv), from any peer; as for Send, b
// must stay valid until its completion.
func (e *Endpoint) Recv(b []byte, desc *MR, id uint64) error {
	return e.post(OpRecv, "fi_recv", func(s C.uint32_t) C.ssize_t {
		return C.mp_recv(e.c, ptr(b), C.size_t(len(b)), desc.descPtr(), s, C.uint64_t(id))
	})
}

// Write posts an RMA write of b into dst's registered memory at raddr
// with key (fi_writemsg). With delivery set, the completion means the
// data is in the target's memory (FI_DELIVERY_COMPLETE); otherwise only
// that b may be reused.
func (e *Endpoint) Write(dst Addr, b []byte, desc *MR, raddr, key uint64, delivery bool, id uint64) error {
	var flags C.uint64_t
	if delivery {
		flags = C.FI_DELIVERY_COMPLETE
	}
	return e.post(OpWrite, "fi_writemsg", func(s C.uint32_t) C.ssize_t {
		return C.mp_write(e.c, ptr(b), C.size_t(len(b)), desc.descPtr(), C.fi_addr_t(dst),
			C.uint64_t(raddr), C.uint64_t(key), flags, s, C.uint64_t(id))
	})
}

// Poll reaps completed operations into out and returns how many. With
// wait > 0 milliseconds it blocks up to that long for the first (when the
// endpoint is [Info.Waitable] and thread safe; otherwise it only polls).
// It drives the provider's progress, so with manual progress someone must
// call it for data to move.
func (e *Endpoint) Poll(out []Completion, waitMS int) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	if !e.info.Waitable || !e.info.ThreadSafe || e.closing.Load() {
		waitMS = -1
	} else if waitMS <= 0 {
		waitMS = -1
	}
	if err := e.enter(); err != nil {
		return 0, err
	}
	defer e.leave()
	ps := pollScratches.Get().(*pollScratch)
	defer pollScratches.Put(ps)
	slots, ids, lens, flags, srcs := &ps.slots, &ps.ids, &ps.lens, &ps.flags, &ps.srcs
	n := C.mp_poll(e.c, &slots[0], &ids[0], &lens[0], &flags[0], &srcs[0], C.size_t(min(len(out), pollBatch)), C.int(waitMS),
		&ps.eslot, &ps.eid, &ps.eerr, &ps.eprov, &ps.emsg[0], C.size_t(len(ps.emsg)))
	eslot, eid, eerr, eprov, emsg := ps.eslot, ps.eid, ps.eerr, ps.eprov, &ps.emsg
	switch {
	case n > 0:
		e.slotMu.Lock()
		k := 0
		for i := range int(n) {
			if slots[i] == C.UINT32_MAX {
				continue // no context of ours: nothing to report
			}
			out[k] = Completion{ID: uint64(ids[i]), Len: int(lens[i]), Op: e.ops[slots[i]], Src: Addr(srcs[i])}
			e.free = append(e.free, uint32(slots[i]))
			k++
		}
		e.slotMu.Unlock()
		return k, nil
	case n == -C.FI_EAGAIN || n == 0 || n == -C.FI_EINTR || n == -C.FI_ETIMEDOUT:
		// Nothing yet; a wait cut short by a signal (Go preempts threads
		// with SIGURG) or by its timeout is no failure.
		return 0, nil
	case n == -C.FI_EAVAIL:
		c := Completion{Err: &Error{Op: "completion", Code: int(eerr), Prov: int(eprov), Msg: C.GoString(&emsg[0])}, Src: AddrUnknown}
		if eslot != C.UINT32_MAX {
			e.slotMu.Lock()
			c.ID, c.Op = uint64(eid), e.ops[eslot]
			e.free = append(e.free, uint32(eslot))
			e.slotMu.Unlock()
		}
		out[0] = c
		return 1, nil
	}
	return 0, errOf("fi_cq_read", n)
}

// pollBatch is the most completions one Poll reads.
const pollBatch = 32

// pollScratch is what mp_poll fills in. The arrays a Poll passes to C
// escape to the heap; taken from a pool they are not allocated (and
// cleared) anew on every poll, which a rank polling in a loop would do
// some hundred thousand times a second.
type pollScratch struct {
	slots            [pollBatch]C.uint32_t
	ids, lens, flags [pollBatch]C.uint64_t
	srcs             [pollBatch]C.uint64_t
	eslot            C.uint32_t
	eid              C.uint64_t
	eerr, eprov      C.int
	emsg             [256]C.char
}

var pollScratches = sync.Pool{New: func() any { return new(pollScratch) }}

// Wake makes a Poll blocked on the completion queue return.
func (e *Endpoint) Wake() {
	if e.enter() == nil {
		C.mp_signal(e.c)
		e.leave()
	}
}

// Close closes the endpoint and its fabric objects. Operations still in
// flight are abandoned (their buffers are no longer used once Close
// returns). Regions must be closed first. Close is idempotent.
func (e *Endpoint) Close() error {
	if e.closing.Swap(true) {
		return nil
	}
	e.Wake()
	e.life.Lock()
	defer e.life.Unlock()
	C.mp_close(e.c)
	e.c = nil
	return nil
}

// MR is a registered memory region.
type MR struct {
	e    *Endpoint
	mr   *C.struct_fid_mr
	desc unsafe.Pointer // fi_mr_desc: C memory
	key  uint64
	base uintptr
	size int
}

// Register registers b for the given uses (fi_mr_reg, then fi_mr_bind and
// fi_mr_enable when the mode has [MREndpoint]). The key is the
// provider's when the mode has [MRProvKey], otherwise a random one of
// the provider's key size (randomKey). b must stay valid, and pinned if
// it is Go memory, until the MR is closed.
func (e *Endpoint) Register(b []byte, access Access) (*MR, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("fabric: registering an empty region: %w", ErrArg)
	}
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	provKey := e.info.MRMode&MRProvKey != 0
	var mr *C.struct_fid_mr
	for tries := 0; ; tries++ {
		var req uint64
		if !provKey {
			req = randomKey(e.info.KeySize)
		}
		rc := C.mp_mr_reg(e.c, ptr(b), C.size_t(len(b)), C.uint64_t(access), C.uint64_t(req), &mr)
		if rc == 0 {
			break
		}
		if rc != -C.FI_ENOKEY || provKey || tries == 3 { // ENOKEY: a key in use, draw another
			return nil, errOf("fi_mr_reg", C.ssize_t(rc))
		}
	}
	m := &MR{e: e, mr: mr, desc: C.mp_mr_desc(mr), key: uint64(C.mp_mr_key(mr)), base: uintptr(ptr(b)), size: len(b)}
	if m.key == ^uint64(0) { // FI_KEY_NOTAVAIL: the key is too long for 64 bits (FI_MR_RAW)
		C.mp_mr_close(mr)
		return nil, fmt.Errorf("fabric: provider %s uses raw keys: %w", e.info.Provider, ErrNoProvider)
	}
	runtime.KeepAlive(b)
	return m, nil
}

// randomKey draws a key of size bytes (at most 8) for a registration
// whose key the package chooses. Over net and tcp (no FI_MR_PROV_KEY,
// offsets for addresses) anyone who reaches the endpoint can post RMA
// writes to it: with keys counted up from 1, one who tried the first few
// at offset 0 wrote into the receive buffers that the registration cache
// keeps registered. A random 64-bit key cannot be guessed.
func randomKey(size int) uint64 {
	var b [8]byte
	rand.Read(b[:])
	k := binary.LittleEndian.Uint64(b[:])
	if size > 0 && size < 8 {
		k &= 1<<(8*size) - 1
	}
	return k
}

// Key returns the region's remote key.
func (m *MR) Key() uint64 { return m.key }

// Contains reports whether b lies inside the region.
func (m *MR) Contains(b []byte) bool {
	p := uintptr(ptr(b))
	return len(b) > 0 && p >= m.base && p+uintptr(len(b)) <= m.base+uintptr(m.size)
}

// RemoteAddr returns the address a peer writes to to reach b (inside the
// region): b's virtual address with [MRVirtAddr], its offset in the
// region otherwise.
func (m *MR) RemoteAddr(b []byte) uint64 {
	p := uintptr(ptr(b))
	if m.e.info.MRMode&MRVirtAddr != 0 {
		return uint64(p)
	}
	return uint64(p - m.base)
}

func (m *MR) descPtr() unsafe.Pointer {
	if m == nil {
		return nil
	}
	return m.desc
}

// Close deregisters the region.
func (m *MR) Close() error {
	if m == nil || m.mr == nil {
		return nil
	}
	if err := m.e.enter(); err != nil {
		m.mr = nil
		return err
	}
	defer m.e.leave()
	rc := C.mp_mr_close(m.mr)
	m.mr = nil
	return errOf("fi_close(mr)", C.ssize_t(rc))
}

// Read posts an RMA read of len(b) bytes from src's registered memory at
// raddr with key into b (fi_readmsg); b must stay valid (off the Go heap,
// or pinned) until the completion with id is polled, after which it holds
// the data.
func (e *Endpoint) Read(src Addr, b []byte, desc *MR, raddr, key uint64, id uint64) error {
	return e.post(OpRead, "fi_readmsg", func(s C.uint32_t) C.ssize_t {
		return C.mp_read(e.c, ptr(b), C.size_t(len(b)), desc.descPtr(), C.fi_addr_t(src),
			C.uint64_t(raddr), C.uint64_t(key), s, C.uint64_t(id))
	})
}

// AtomicKind is the kind of an atomic operation.
type AtomicKind int

// Atomic kinds.
const (
	AtomicPlain   AtomicKind = C.MP_ATOMIC  // fi_atomic: target = op(target, operand)
	AtomicFetch   AtomicKind = C.MP_FETCH   // fi_fetch_atomic: and the old value back
	AtomicCompare AtomicKind = C.MP_COMPARE // fi_compare_atomic: op is a comparison
)

// Datatype is an element type of atomic operations (enum fi_datatype).
type Datatype int

// Datatypes.
const (
	Int8       Datatype = C.FI_INT8
	Uint8      Datatype = C.FI_UINT8
	Int16      Datatype = C.FI_INT16
	Uint16     Datatype = C.FI_UINT16
	Int32      Datatype = C.FI_INT32
	Uint32     Datatype = C.FI_UINT32
	Int64      Datatype = C.FI_INT64
	Uint64     Datatype = C.FI_UINT64
	Float32    Datatype = C.FI_FLOAT
	Float64    Datatype = C.FI_DOUBLE
	Complex64  Datatype = C.FI_FLOAT_COMPLEX
	Complex128 Datatype = C.FI_DOUBLE_COMPLEX
)

// AtomicOp is an operation of atomics (enum fi_op).
type AtomicOp int

// Atomic operations.
const (
	AtomicMin   AtomicOp = C.FI_MIN
	AtomicMax   AtomicOp = C.FI_MAX
	AtomicSum   AtomicOp = C.FI_SUM
	AtomicProd  AtomicOp = C.FI_PROD
	AtomicLOr   AtomicOp = C.FI_LOR
	AtomicLAnd  AtomicOp = C.FI_LAND
	AtomicBOr   AtomicOp = C.FI_BOR
	AtomicBAnd  AtomicOp = C.FI_BAND
	AtomicLXor  AtomicOp = C.FI_LXOR
	AtomicBXor  AtomicOp = C.FI_BXOR
	AtomicRead  AtomicOp = C.FI_ATOMIC_READ
	AtomicWrite AtomicOp = C.FI_ATOMIC_WRITE
	AtomicCSwap AtomicOp = C.FI_CSWAP
)

// Atomics reports whether the endpoint does op on elements of dt as an
// atomic operation of kind (fi_atomicvalid, fi_fetch_atomicvalid,
// fi_compare_atomicvalid), and how many elements one operation may take
// at most. An endpoint whose provider did not grant FI_ATOMIC does none.
func (e *Endpoint) Atomics(kind AtomicKind, dt Datatype, op AtomicOp) (count int, ok bool) {
	if e.enter() != nil {
		return 0, false
	}
	defer e.leave()
	var n C.size_t
	if C.mp_atomicvalid(e.c, C.int(kind), C.int(dt), C.int(op), &n) != 0 || n == 0 {
		return 0, false
	}
	return int(n), true
}

// Atomic posts an atomic operation of kind with op on count elements of
// dt in dst's registered memory at raddr with key: operand holds the
// operands (ignored by [AtomicRead]), compare the values to compare with
// ([AtomicCompare]), result receives the elements as they were
// ([AtomicFetch], [AtomicCompare]); each holds count elements, all lie in
// region desc (needed when the mode has [MRLocal]) and must stay valid
// until the completion with id is polled. With delivery set, the
// completion of a plain operation means it was applied at the target
// (FI_DELIVERY_COMPLETE). The caller checks the operation with
// [Endpoint.Atomics] first.
func (e *Endpoint) Atomic(kind AtomicKind, dst Addr, dt Datatype, op AtomicOp, operand, compare, result []byte, count int,
	desc *MR, raddr, key uint64, delivery bool, id uint64) error {
	if count <= 0 || (kind != AtomicPlain && len(result) == 0) || (kind == AtomicCompare && len(compare) == 0) {
		return fmt.Errorf("fabric: atomic of kind %d on %d elements: %w", kind, count, ErrArg)
	}
	var flags C.uint64_t
	if delivery && kind == AtomicPlain {
		flags = C.FI_DELIVERY_COMPLETE
	}
	return e.post(OpAtomic, "fi_atomicmsg", func(s C.uint32_t) C.ssize_t {
		return C.mp_atomic(e.c, C.int(kind), C.int(dt), C.int(op), ptr(operand), ptr(compare), ptr(result), C.size_t(count),
			desc.descPtr(), C.fi_addr_t(dst), C.uint64_t(raddr), C.uint64_t(key), flags, s, C.uint64_t(id))
	})
}
