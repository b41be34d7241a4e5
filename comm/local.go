package comm

// IsLocal reports whether rank r of c runs in the caller's process, so
// that the two share memory: a [Source] sent to it with [Comm.SendFrom]
// reaches its [Sink] as itself, by reference, and a slice sent with
// [Comm.SendOwned] is handed over without a copy. Ranks of other
// processes, which only a device reaches, and ranks outside [0, Size)
// (or a nil c) give false.
func (c *Comm) IsLocal(r int) bool {
	if c == nil || c.ep == nil || r < 0 || r >= c.size {
		return false
	}
	return c.ep.IsLocal(c.worldOf(r))
}
