// Package am is active messages over mpgo: handlers that run where a
// message arrives, instead of a receive that waits for it — the actor
// style of Berkeley's AM-II and Jam, GASNet, UPC++'s rpc, Charm++'s entry
// methods and HPX's actions, with typed requests and responses, futures,
// and progress that needs no calls to make it.
//
// # Usage
//
// Every rank makes an [Endpoint] over a communicator, registers the same
// handlers by name, and sends requests to them: [Handler.Post] (fire and
// forget) or [Handler.Call] (a [Future] of the response).
//
//	ep, err := am.New(world)
//	incr, err := am.Register(ep, "incr", func(from int, n int64) (int64, error) {
//		count += n // handlers of one endpoint run one at a time: no lock
//		return count, nil
//	})
//	incr.Post(0, 1)                   // to rank 0, no reply
//	v, err := incr.Call(0, 2).Wait()  // to rank 0, its response
//	err = ep.Quiesce()                // every request sent, and all they caused, handled
//	err = ep.Close()
//
// # Handlers
//
// A handler runs on its destination rank, on the endpoint's dispatcher: a
// goroutine of the endpoint's own that receives requests from any rank
// and runs their handlers by itself, with no call needed to make it
// progress. Handlers of one endpoint run one at a time, and each sender's
// requests start in the order it sent them, as in an actor's mailbox. A
// handler may Post and Call, to any rank and to its own: while it waits
// for a Future (or for the flow-control window) its endpoint's dispatch
// goes on without it, on another goroutine, as a Charm++ threaded entry
// method's does, and it resumes once the wait is over and the handler
// running then has finished or waits too. So handlers calling handlers,
// nested and cyclic calls included, progress. Any other blocking call in
// a handler (a receive of its own, a channel, a lock, a select on a
// Future's Done) keeps the dispatch waiting with it, and so does a wait on
// a Future of another endpoint.
//
// A handler's error goes back to its caller as a [*HandlerError] ([ErrRemote]),
// with the handler's message; its panic too ([ErrPanic], with the value and
// the stack), and the dispatcher carries on. The errors of Posted requests
// go back to their poster, whose next [Endpoint.Quiesce] (or Close)
// returns them.
//
// Handlers are registered by name, the same on every rank (closures cannot
// travel, names can). A request for a name its destination has not
// registered waits there until the name is registered, so ranks need not
// synchronise after registering, and fails with [ErrNoHandler] if the
// destination reaches Quiesce or Close without it (see [Register]). A
// handler may run as
// soon as it is registered, though: one that refers to a variable set
// after Register returns (a Handler it calls, its own included) must not
// run before it is set, so ranks register such handlers, set the
// variables, and then synchronise (a Barrier) before sending any request.
//
// # Payloads
//
// Requests and responses are any Go values. To a rank of this process
// nothing is serialised: the value itself is handed over, so a slice (or
// anything else the value points to) becomes the receiver's and must not
// be touched by its sender afterwards. Between processes, numbers and
// fixed-size values without pointers (arrays and structs of numbers),
// slices of them and strings travel as their memory, and any other type
// through encoding/gob.
//
// # Flow control and termination
//
// A rank may have [DefaultWindow] requests (see [WithWindow]) to one
// destination that its dispatcher has not taken yet; the next Post or Call
// waits for room, so a slow handler makes its senders wait and memory in
// flight stays bounded per pair, with nothing dropped or reordered
// (requests held for a name not registered yet are outside the window).
// [Endpoint.Quiesce] is collective termination detection, by counting
// requests sent and handled on every rank, not by waiting a while.
//
// # Under the hood
//
// An endpoint's traffic goes on two communicators of its own (duplicates
// of the one it was made on), so it never matches a user's receive, and it
// works on every backend: goroutine ranks, TCP, RDMA. Waits in package am
// are waits in mpgo, seen by the deadlock detector (of goroutine ranks):
// a rank blocked in a Call while its handlers still run is not
// deadlocked, and ranks blocked in calls that cannot progress (a cycle of
// Calls, a request for a name never registered) fail with
// [comm.ErrDeadlock]; the report lists the ranks' own pending operations,
// not those of handlers waiting on their Futures. A handler blocked in
// anything else, or in WaitContext, counts as running, so a deadlock
// through it is not reported. An abort fails every wait with
// [comm.ErrAborted].
package am
