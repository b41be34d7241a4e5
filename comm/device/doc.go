// Package device is the boundary between mpgo's matching engine and the
// backends that carry messages between processes, in the shape of
// database/sql/driver: user code talks to package comm (concrete types),
// comm's engine talks to a [Device] (small interfaces over bytes), and a
// backend implements those interfaces in a package of its own, importing
// this one and nothing of the engine.
//
// Every rank's matching (posted receives, unexpected messages, probes)
// lives in the process that runs the rank. A sender in the same process
// matches directly against the receiver's queues: that is the whole
// shared-memory backend, and it needs no Device. A Device carries messages
// to ranks in other processes: the engine hands it each message for a
// remote rank ([Device.Send]), and the device feeds what arrives into the
// local engine ([Engine.Arrive]), where it is matched exactly as a local
// message would be. Semantics are therefore the same on every backend: the
// engine decides matching, the device only moves bytes.
//
// Large messages are not pushed blindly: the device hands over an
// [Incoming] whose payload is still with its sender (a rendezvous), and
// the engine pulls it only once a receive matched it, straight into the
// receive buffer (clear-to-send, then the data; an RDMA write where the
// fabric allows).
//
// # Opening a backend
//
// A backend opens from the launcher's key-value store ([KV]), in which
// its processes publish their addresses, the job's [Layout], and a
// configuration of its own (backend/tcp.Open, backend/rdma.Open). The root
// package mpgo wires launcher → key-value store → backend → world; package
// comm knows no backend by name.
//
// # Optional interfaces
//
// Fast paths and capabilities beyond moving messages are small extra
// interfaces that a device may implement and the engine finds by type
// assertion, once, when the world is made, with a generic fallback where
// they are missing (as database/sql does with driver.ExecerContext):
//
//   - [Progressor]: a device that moves only while polled lets a waiting
//     rank drive it before parking.
//   - [Segments]: a device whose processes can map memory together (the
//     shared-memory backend) hands segments between them, for windows
//     whose parts every rank loads and stores directly.
//   - [OneSided]: one-sided operations (write, read, atomics on memory a
//     rank exposes in a window). A device that can reach registered
//     memory directly (the RDMA backend) offers them, and windows then
//     progress without the target; a window over a device without it
//     runs on messages through Send and Arrive.
//   - Handler messages (active messages) need no interface of their own:
//     they travel as ordinary messages on a context of their own, and
//     the engine runs the handler where they arrive.
//
// # Conformance
//
// Package devicetest holds the conformance suite every backend must pass,
// as testing/fstest does for file systems: devicetest.TestBackend runs the
// semantics suite and the failure semantics (a process that finishes
// early, one that dies) over jobs a backend's harness plays. Its Loopback
// is an in-memory device written against this package alone: the model of
// a new backend, and the engine's test double.
package device
