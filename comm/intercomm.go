package comm

import (
	"fmt"
	"slices"
	"sync/atomic"
)

// Intercomm is an inter-communicator (MPI 3.1 §6.6): two disjoint groups,
// local and remote, whose point-to-point calls name ranks of the other
// group. It is made by [Comm.CreateIntercomm] and turned into an ordinary
// communicator of both groups by [Intercomm.Merge].
//
// # How it rides on the matching engine
//
// The engine matches a receive on (context, sending world rank or
// AnySource, tag): its per-receiver queues are keyed by the sender's world
// rank, and a message's envelope carries the sender's rank in its own
// communicator (msg.src), which becomes Status.Source. An Intercomm holds
// an internal communicator, remote, with
//
//   - rank: the caller's rank in its local group,
//   - size and world ranks: those of the remote group,
//   - a context that both groups derive identically from the two leaders'
//     contexts (interContext).
//
// So a send to remote rank r goes to world rank remote.ranks[r] with the
// sender's local rank as envelope source; a receive from remote rank r
// waits in the queue of world rank remote.ranks[r]; and Status.Source is
// the sender's rank in its group, which is what MPI reports: the rank in
// the remote group. The engine runs unchanged, so per-pair non-overtaking,
// posting-order matching, probes, cancellation, abort and deadlock
// reports all work as on any communicator. AnySource matches any message
// on the context, and only the remote group sends to the caller on it:
// the groups are disjoint (CreateIntercomm checks), so no local member can
// reach the caller through this context.
//
// A second internal communicator, local, has the local group on a private
// context: the intercomm's own collectives (Merge) broadcast within the
// group on it, and the two leaders talk on remote's collective context.
//
// An Intercomm may be used by several goroutines of its rank at once for
// point-to-point calls; its collectives and Merge are made by one
// goroutine of the rank at a time (a call made while another is in
// progress fails with [ErrConcurrent]), and Free once the others are
// done.
type Intercomm struct {
	local  *Comm       // the local group, on a context private to this intercomm
	remote *Comm       // local rank, remote group, shared context: see above
	kids   uint32      // communicators made from this one (Merge)
	busy   atomic.Bool // set while a collective call of this rank runs on ic (guard.go)
}

// interContext derives an intercommunicator's context from the two
// groups' local contexts, the same on both sides whichever side computes
// it (min and max make it symmetric). Bit 0 is kept clear for the
// collective context.
func interContext(a, b uint64) uint64 {
	lo, hi := min(a, b), max(a, b)
	x := mix64(lo^mix64(hi^0x6a09e667f3bcc909)) &^ 1
	if x < reservedContexts { // the world's, and the engine's control messages'
		x += reservedContexts
	}
	return x
}

// CreateIntercomm builds an intercommunicator between c's group and
// another, disjoint group (MPI_Intercomm_create). Every member of c calls
// it with the same localLeader, a rank of c; so does every member of the
// other group, with its own communicator and leader. The two leaders
// exchange their groups over peer, a communicator that holds both of them,
// in which remoteLeader is the other leader's rank, with messages of the
// given tag on peer's point-to-point context (peer, remoteLeader and tag
// matter only at the leader; the others may pass nil, 0, 0); then each
// leader broadcasts the result to its group.
//
// A localLeader outside c fails with [ErrRank] and leaders that differ
// between members with [ErrArg], on every member; the leader's bad peer,
// remoteLeader or tag fail with ErrArg, ErrRank or [ErrTag] there and with
// an error wrapping the same sentinel on the rest of its group. Groups
// that overlap fail with ErrArg in both.
func (c *Comm) CreateIntercomm(localLeader int, peer *Comm, remoteLeader, tag int) (*Intercomm, error) {
	if err := c.begin("intercomm create"); err != nil {
		return nil, err
	}
	defer c.leave()
	c.kids++
	seq := c.kids
	var bad error
	if localLeader < 0 || localLeader >= c.size {
		bad = fmt.Errorf("comm: intercomm create: local leader %d of %d: %w", localLeader, c.size, ErrRank)
	}
	var fp fingerprint
	fp.add(localLeader)
	if err := c.agreeOn("intercomm create", bad, fp); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s.intercomm%d", c, seq)
	localCtx := childContext(c.ctx, seq, colorIntercommLocal)
	local := newComm(c.ep, localCtx, c.rank, c.size, c.ranks, name+".local")
	var blob []byte
	var leaderErr error
	if c.rank == localLeader {
		var info []int64
		info, leaderErr = c.leaderExchange(localCtx, peer, remoteLeader, tag)
		blob = putWords(append([]int64{errCode(leaderErr)}, info...))
	}
	blob, err := local.coll().bcastBlob(blob, localLeader, tagIntercommBcast)
	if err != nil {
		return nil, fmt.Errorf("comm: intercomm create: %w", err)
	}
	if leaderErr != nil {
		return nil, leaderErr
	}
	words := getWords(blob)
	if len(words) < 1 {
		return nil, fmt.Errorf("comm: intercomm create: empty answer from the leader: %w", ErrArg)
	}
	if words[0] != 0 {
		return nil, fmt.Errorf("comm: intercomm create: the local leader (rank %d) failed: %w", localLeader, codeErr(words[0]))
	}
	remoteCtx, rranks, err := parseGroupMsg(words[1:])
	if err != nil {
		return nil, fmt.Errorf("comm: intercomm create: %w", err)
	}
	mine := c.Group().index()
	for _, w := range rranks {
		if _, ok := mine[w]; ok {
			return nil, fmt.Errorf("comm: intercomm create: world rank %d is in both groups: %w", w, ErrArg)
		}
	}
	remote := newComm(c.ep, interContext(localCtx, remoteCtx), c.rank, len(rranks), rranks, name)
	remote.shareLife(local)
	return &Intercomm{local: local, remote: remote}, nil
}

// leaderExchange sends the local group (context, size, world ranks) to the
// remote leader over peer and returns the remote group in the same form.
func (c *Comm) leaderExchange(localCtx uint64, peer *Comm, remoteLeader, tag int) ([]int64, error) {
	if peer == nil {
		return nil, fmt.Errorf("comm: intercomm create: nil peer communicator: %w", ErrArg)
	}
	msg := []int64{int64(localCtx), int64(c.size)}
	for r := 0; r < c.size; r++ {
		msg = append(msg, int64(c.worldOf(r)))
	}
	req, err := peer.Isend(putWords(msg), Byte, remoteLeader, tag)
	if err != nil {
		return nil, fmt.Errorf("comm: intercomm create: leaders' exchange: %w", err)
	}
	got, _, err := peer.RecvOwned(Byte, remoteLeader, tag)
	if err != nil {
		return nil, fmt.Errorf("comm: intercomm create: leaders' exchange: %w", err)
	}
	if _, err := req.Wait(); err != nil {
		return nil, fmt.Errorf("comm: intercomm create: leaders' exchange: %w", err)
	}
	words := getWords(got)
	if _, _, err := parseGroupMsg(words); err != nil {
		return nil, fmt.Errorf("comm: intercomm create: from the remote leader: %w", err)
	}
	return words, nil
}

// parseGroupMsg decodes a leader's message: context, size, world ranks.
func parseGroupMsg(words []int64) (uint64, []int, error) {
	if len(words) < 2 || words[1] < 0 || int64(len(words)-2) != words[1] {
		return 0, nil, fmt.Errorf("malformed group message of %d words: %w", len(words), ErrArg)
	}
	ranks := make([]int, words[1])
	for i := range ranks {
		ranks[i] = int(words[2+i])
	}
	return uint64(words[0]), ranks, nil
}

// Rank returns the caller's rank in the local group.
func (ic *Intercomm) Rank() int { return ic.local.rank }

// Size returns the size of the local group.
func (ic *Intercomm) Size() int { return ic.local.size }

// RemoteSize returns the size of the remote group.
func (ic *Intercomm) RemoteSize() int { return ic.remote.size }

// Group returns the local group.
func (ic *Intercomm) Group() Group { return ic.local.Group() }

// RemoteGroup returns the remote group; the caller is not a member, so its
// [Group.Rank] is [Undefined].
func (ic *Intercomm) RemoteGroup() Group {
	ranks := make([]int, ic.remote.size)
	for i := range ranks {
		ranks[i] = ic.remote.worldOf(i)
	}
	return Group{ranks: ranks, me: ic.local.worldOf(ic.local.rank) + 1}
}

// String names the intercommunicator.
func (ic *Intercomm) String() string { return ic.remote.String() }

// p2p returns the communicator that carries ic's point-to-point traffic;
// nil for a nil ic, whose calls then fail with ErrArg as a nil Comm's do.
func (ic *Intercomm) p2p() *Comm {
	if ic == nil {
		return nil
	}
	return ic.remote
}

// Send sends buf, elements of type t, to rank dst of the remote group (as
// [Comm.Send]).
func (ic *Intercomm) Send(buf []byte, t Type, dst, tag int) error {
	return ic.p2p().Send(buf, t, dst, tag)
}

// Ssend sends to rank dst of the remote group in synchronous mode.
func (ic *Intercomm) Ssend(buf []byte, t Type, dst, tag int) error {
	return ic.p2p().Ssend(buf, t, dst, tag)
}

// Isend starts a send to rank dst of the remote group.
func (ic *Intercomm) Isend(buf []byte, t Type, dst, tag int) (*Request, error) {
	return ic.p2p().Isend(buf, t, dst, tag)
}

// Issend starts a synchronous-mode send to rank dst of the remote group.
func (ic *Intercomm) Issend(buf []byte, t Type, dst, tag int) (*Request, error) {
	return ic.p2p().Issend(buf, t, dst, tag)
}

// Recv receives from rank src of the remote group (or [AnySource]: any of
// them); Status.Source is the sender's rank in the remote group.
func (ic *Intercomm) Recv(buf []byte, t Type, src, tag int) (Status, error) {
	return ic.p2p().Recv(buf, t, src, tag)
}

// Irecv starts a receive from rank src of the remote group.
func (ic *Intercomm) Irecv(buf []byte, t Type, src, tag int) (*Request, error) {
	return ic.p2p().Irecv(buf, t, src, tag)
}

// Sendrecv sends to dst and receives from src, both ranks of the remote
// group, at once.
func (ic *Intercomm) Sendrecv(send []byte, st Type, dst, stag int, recv []byte, rt Type, src, rtag int) (Status, error) {
	return ic.p2p().Sendrecv(send, st, dst, stag, recv, rt, src, rtag)
}

// Probe waits for a message from rank src of the remote group (Count in
// bytes), without receiving it.
func (ic *Intercomm) Probe(src, tag int) (Status, error) { return ic.p2p().Probe(src, tag) }

// Iprobe is Probe without blocking.
func (ic *Intercomm) Iprobe(src, tag int) (Status, bool, error) { return ic.p2p().Iprobe(src, tag) }

// Free releases the intercommunicator: later calls on it fail with an
// error wrapping [ErrClosed] (see [Comm.Free]).
func (ic *Intercomm) Free() error {
	if ic == nil {
		return fmt.Errorf("comm: free of a nil intercomm: %w", ErrArg)
	}
	return ic.remote.Free()
}

// Merge returns an ordinary communicator of both groups
// (MPI_Intercomm_merge): the group whose members pass high = false comes
// first, each group keeping its order; when both groups pass the same
// value, the group whose first member has the lower world rank comes
// first. Every member of both groups must call it, with the same high
// throughout a group: a group whose members disagree fails with [ErrArg],
// and so does the other group.
func (ic *Intercomm) Merge(high bool) (*Comm, error) {
	if ic == nil {
		return nil, fmt.Errorf("comm: merge of a nil intercomm: %w", ErrArg)
	}
	if err := ic.remote.usable(); err != nil {
		return nil, fmt.Errorf("comm: intercomm merge: %w", err)
	}
	if err := ic.enter("intercomm merge"); err != nil {
		return nil, err
	}
	defer ic.leave()
	ic.kids++
	seq := ic.kids
	h := int64(0)
	if high {
		h = 1
	}
	table, err := ic.local.agree([]int64{h})
	if err != nil {
		return nil, fmt.Errorf("comm: intercomm merge: %w", err)
	}
	var localErr error
	if slices.ContainsFunc(table, func(x int64) bool { return x != h }) {
		localErr = fmt.Errorf("comm: intercomm merge: the local group's members passed different high values: %w", ErrArg)
	}
	// The leaders (rank 0 of each group) swap (error code, high); each
	// broadcasts the remote answer and its own exchange error to its group.
	var blob []byte
	if ic.local.rank == 0 {
		remoteCode, remoteHigh, err := ic.leaderSwap(errCode(localErr), h)
		blob = putWords([]int64{errCode(err), remoteCode, remoteHigh})
	}
	blob, err = ic.local.coll().bcastBlob(blob, 0, tagMergeBcast)
	if err != nil {
		return nil, fmt.Errorf("comm: intercomm merge: %w", err)
	}
	words := getWords(blob)
	switch {
	case len(words) != 3:
		return nil, fmt.Errorf("comm: intercomm merge: malformed answer from the leader: %w", ErrArg)
	case words[0] != 0:
		return nil, fmt.Errorf("comm: intercomm merge: the leaders' exchange failed: %w", codeErr(words[0]))
	case localErr != nil:
		return nil, localErr
	case words[1] != 0:
		return nil, fmt.Errorf("comm: intercomm merge: the remote group failed: %w", codeErr(words[1]))
	}
	remoteHigh := words[2]
	localFirst := h < remoteHigh || h == remoteHigh && ic.local.worldOf(0) < ic.remote.worldOf(0)
	lg, rg := ic.Group().ranks, ic.RemoteGroup().ranks
	ranks, rank := append(lg, rg...), ic.local.rank
	if !localFirst {
		ranks, rank = append(rg, lg...), len(rg)+ic.local.rank
	}
	return newComm(ic.local.ep, childContext(ic.remote.ctx, seq, colorMerge), rank, len(ranks), ranks,
		fmt.Sprintf("%s.merge%d", ic, seq)), nil
}

// leaderSwap sends (code, high) to the remote leader and returns its pair,
// on the intercomm's collective context. Called by local rank 0 only.
func (ic *Intercomm) leaderSwap(code, high int64) (int64, int64, error) {
	rc := ic.remote.coll()
	req, err := rc.Isend(putWords([]int64{code, high}), Byte, 0, tagMergeLeaders)
	if err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 16)
	if _, err := rc.Recv(buf, Byte, 0, tagMergeLeaders); err != nil {
		return 0, 0, err
	}
	if _, err := req.Wait(); err != nil {
		return 0, 0, err
	}
	w := getWords(buf)
	return w[0], w[1], nil
}
