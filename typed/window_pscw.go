package typed

import (
	"fmt"

	"github.com/mpgo/mpgo/comm"
)

// Generalized active target (MPI 4.1 §12.5.2): a target opens an exposure
// epoch to a group of origins with Post and closes it with Wait; an
// origin opens an access epoch to a group of targets with Start and
// closes it with Complete. Start waits for each target's Post, Wait for
// each origin's Complete: zero-length messages on the window's
// communicator, so each is a happens-before edge (the target's writes
// before Post to the origin's operations; those to the target's reads
// after Wait), and a missing partner is a wait the deadlock detector
// sees, not a hang.

// Post opens an exposure epoch of this rank's part to the ranks of
// origins, a group of the window's ranks (MPI_Win_post): each may access
// it between its [Window.Start] and [Window.Complete]. It does not wait.
func (w *Window[T]) Post(origins comm.Group) error {
	w.edge()
	rs, err := w.groupRanks("Post", origins)
	if err != nil {
		return err
	}
	if err := w.ep.post(rs); err != nil {
		return fmt.Errorf("typed: Window.Post: %w", err)
	}
	for _, r := range rs {
		if err := w.wc.Send(nil, comm.Byte, r, tagWinPost); err != nil {
			return fmt.Errorf("typed: Window.Post: %w", err)
		}
	}
	return nil
}

// Wait ends the exposure epoch of [Window.Post] (MPI_Win_wait): it returns
// once every origin of the group has called Complete, and their
// operations are then visible here.
func (w *Window[T]) Wait() error {
	rs, err := w.ep.wait()
	if err != nil {
		return fmt.Errorf("typed: Window.Wait: %w", err)
	}
	for _, r := range rs {
		if _, err := w.wc.Recv(nil, comm.Byte, r, tagWinComplete); err != nil {
			return fmt.Errorf("typed: Window.Wait for rank %d: %w", r, err)
		}
	}
	w.edge()
	return nil
}

// Start opens an access epoch to the ranks of targets, a group of the
// window's ranks (MPI_Win_start), once each of them has posted an
// exposure epoch that includes this rank.
func (w *Window[T]) Start(targets comm.Group) error {
	rs, err := w.groupRanks("Start", targets)
	if err != nil {
		return err
	}
	if err := w.ep.start(rs); err != nil {
		return fmt.Errorf("typed: Window.Start: %w", err)
	}
	for _, r := range rs {
		if _, err := w.wc.Recv(nil, comm.Byte, r, tagWinPost); err != nil {
			_, _ = w.ep.complete()
			return fmt.Errorf("typed: Window.Start waiting for rank %d's Post: %w", r, err)
		}
	}
	return nil
}

// Complete ends the access epoch of [Window.Start] (MPI_Win_complete):
// this rank's operations in it are complete, and each target's
// [Window.Wait] may return.
func (w *Window[T]) Complete() error {
	rs, err := w.ep.complete()
	if err != nil {
		return fmt.Errorf("typed: Window.Complete: %w", err)
	}
	for _, r := range rs {
		if w.rm != nil {
			if err := w.rm.flush(r); err != nil {
				return fmt.Errorf("typed: Window.Complete: %w", err)
			}
		}
		if err := w.wc.Send(nil, comm.Byte, r, tagWinComplete); err != nil {
			return fmt.Errorf("typed: Window.Complete: %w", err)
		}
	}
	return nil
}

// groupRanks translates g's members to the window's ranks.
func (w *Window[T]) groupRanks(op string, g comm.Group) ([]int, error) {
	idx := make([]int, g.Size())
	for i := range idx {
		idx[i] = i
	}
	rs, err := g.TranslateRanks(idx, w.wc.Group())
	if err != nil {
		return nil, fmt.Errorf("typed: Window.%s: %w", op, err)
	}
	for i, r := range rs {
		if r == comm.Undefined {
			return nil, fmt.Errorf("typed: Window.%s: member %d of the group is not a rank of the window: %w", op, i, comm.ErrRank)
		}
	}
	return rs, nil
}
