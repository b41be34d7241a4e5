package comm

import "fmt"

// SetName names c, as MPI_Comm_set_name does: errors and deadlock reports
// call it by this name from now on. The name is local to the calling
// rank (other ranks keep theirs), and shared by c's collective operations;
// communicators created from c later (Dup, Split) derive their names from
// it. Safe for concurrent use with c's operations.
func (c *Comm) SetName(name string) error {
	if c == nil || c.label == nil {
		return fmt.Errorf("comm: SetName on a nil communicator: %w", ErrArg)
	}
	c.label.Store(&name)
	return nil
}

// Name returns c's name: the one SetName gave it, else the one mpgo
// derived ("world", "world.dup1", …), as MPI_Comm_get_name does. Empty
// for a nil communicator.
func (c *Comm) Name() string {
	if c == nil {
		return ""
	}
	return c.String()
}
