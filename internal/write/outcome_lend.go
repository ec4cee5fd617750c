package write

// lend gives the slot of a statement whose outcome is being looked up to the
// next statement, and returns what takes it back. The lookup may wait for
// the server up to markerWait, and until now held the slot all along: with
// MaxInFlight 1 every other writer of the pool waited behind it. Lent, the
// queue goes on (a queued caller is promoted, or the next arrival writes at
// once), the lookup runs on a connection of its own. At most MaxInFlight
// lookups lend at once, so a pool runs at most 2*MaxInFlight statements and
// lookups: a further lookup, while the server is unreachable, keeps its slot
// as before.
func (c *coalescer) lend() (takeBack func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.settling >= c.p.cfg.MaxInFlight {
		return func() {}
	}
	c.settling++
	c.promote()
	return func() {
		c.mu.Lock()
		c.settling--
		c.mu.Unlock()
	}
}

// promote (under mu) makes the oldest queued caller not yet leading a leader
// of its own, when fewer than MaxInFlight statements run besides the lookups.
func (c *coalescer) promote() {
	if c.leaders-c.settling >= c.p.cfg.MaxInFlight {
		return
	}
	for _, next := range c.pending {
		if !next.lead {
			next.lead = true
			c.leaders++
			next.done <- errLead
			return
		}
	}
}

// overLent (under mu) reports whether an ending leader gives up its slot
// rather than hand it over: a lookup lent it a slot and has ended since, so
// MaxInFlight statements run without it.
func (c *coalescer) overLent() bool { return c.leaders-c.settling > c.p.cfg.MaxInFlight }
