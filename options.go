package mpgo

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/mpgo/mpgo/comm"
)

// Option configures a run (see [Run] and [Main]).
type Option func(*config) error

type config struct {
	ctx         context.Context
	eagerLimit  int
	eagerBuffer int // 0: MPGO_EAGER_BUFFER, or the default
	noDeadlock  bool
	ranks       int         // Main without a launcher: goroutine ranks (WithRanks, comm_tcp.go)
	backend     string      // under a launcher: "tcp" or "rdma" (WithFabric, comm_rdma.go); "": MPGO_BACKEND
	provider    string      // the RDMA backend's libfabric provider (WithFabric)
	obs         observation // what the run records of itself (observe.go)
	noSHM       bool        // under a launcher: processes of one host talk over the backend too (WithoutSharedMemory)
	signals     bool        // Main: report pending operations on SIGINT/SIGQUIT (signal_report.go)
}

// WithContext ties the run to ctx: when ctx is cancelled every rank's
// blocked and later operations fail with [comm.ErrAborted] and Run returns
// an error wrapping both ErrAborted and ctx.Err().
func WithContext(ctx context.Context) Option {
	return func(c *config) error {
		if ctx == nil {
			return fmt.Errorf("mpgo: WithContext(nil): %w", comm.ErrArg)
		}
		c.ctx = ctx
		return nil
	}
}

// WithEagerLimit sets the protocol switch: messages shorter than bytes are
// copied eagerly and the sender goes on at once; longer ones wait for their
// receive and are copied once, straight from the sender's buffer
// (rendezvous). Default [comm.DefaultEagerLimit] (64 KiB).
func WithEagerLimit(bytes int) Option {
	return func(c *config) error {
		if bytes < 0 {
			return fmt.Errorf("mpgo: WithEagerLimit(%d): %w", bytes, comm.ErrArg)
		}
		c.eagerLimit = bytes
		return nil
	}
}

// WithEagerBuffer bounds the memory of the eager messages one rank has
// sent another and that are not received yet, per pair of goroutine ranks
// (default [comm.DefaultEagerBuffer], 64 MiB, or the environment variable
// MPGO_EAGER_BUFFER in bytes): a message that finds no room waits with its
// sender for its receive instead, a Send returning only then (see
// package comm, Protocols). Between processes the backend's own flow
// control bounds them.
func WithEagerBuffer(bytes int) Option {
	return func(c *config) error {
		if bytes <= 0 {
			return fmt.Errorf("mpgo: WithEagerBuffer(%d): want a positive number of bytes: %w", bytes, comm.ErrArg)
		}
		c.eagerBuffer = bytes
		return nil
	}
}

// WithoutDeadlockDetection turns the deadlock detector off. The detector
// treats a rank as blocked when a goroutine of it is parked in mpgo; a
// program whose ranks run extra goroutines that call mpgo later, after the
// rank's own goroutine blocked, may want it off.
func WithoutDeadlockDetection() Option {
	return func(c *config) error {
		c.noDeadlock = true
		return nil
	}
}

func newConfig(opts []Option) (*config, error) {
	c := &config{ctx: context.Background()}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if err := c.obs.fromEnv(os.Getenv); err != nil {
		return nil, err
	}
	if c.eagerBuffer == 0 {
		if s := os.Getenv("MPGO_EAGER_BUFFER"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("mpgo: MPGO_EAGER_BUFFER=%q: want a positive number of bytes: %w", s, comm.ErrArg)
			}
			c.eagerBuffer = n
		}
	}
	return c, nil
}

// WithoutSharedMemory makes [Join] and [Main], under a launcher, carry
// the messages between processes of one host over the job's backend (TCP
// or RDMA) too, instead of through shared memory (package backend/shm),
// as MPGO_SHM=0 does. Without a launcher it changes nothing.
func WithoutSharedMemory() Option {
	return func(c *config) error {
		c.noSHM = true
		return nil
	}
}
