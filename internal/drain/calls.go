// Package drain tracks the calls a server has in flight, so that a
// drain can wait until they are done (and a quiet spell has passed for
// their follow-up calls) and cancel those still running at its deadline.
package drain

import (
	"context"
	"sync"
	"time"
)

// Calls is the set of calls in flight. It is safe for concurrent use.
type Calls struct {
	mu     sync.Mutex
	next   uint64
	active map[uint64]context.CancelCauseFunc
	last   time.Time
}

// New returns an empty set.
func New() *Calls { return &Calls{active: map[uint64]context.CancelCauseFunc{}} }

// Begin registers a call. The returned context is cancelled by CancelAll
// (with its cause) or by end, which the caller calls when the call is done.
func (c *Calls) Begin(parent context.Context) (ctx context.Context, end func()) {
	ctx, cancel := context.WithCancelCause(parent)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	id := c.next
	c.active[id] = cancel
	c.last = time.Now()
	return ctx, func() {
		c.mu.Lock()
		delete(c.active, id)
		c.last = time.Now()
		c.mu.Unlock()
		cancel(nil)
	}
}

// Idle returns how many calls are in flight and when one last began or
// ended.
func (c *Calls) Idle() (n int, since time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.active), c.last
}

// CancelAll cancels every call in flight with cause and returns how many.
func (c *Calls) CancelAll(cause error) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.active {
		cancel(cause)
	}
	return len(c.active)
}

// WaitIdle waits until no call has been in flight for quiet, or until
// deadline; it tells whether the calls went quiet. The quiet spell counts
// from the wait's start at the earliest: a server idle when its drain
// begins still waits quiet, so that the calls planned onto it before the
// others heard of the drain arrive and are served.
func (c *Calls) WaitIdle(deadline time.Time, quiet time.Duration) bool {
	start := time.Now()
	for {
		n, last := c.Idle()
		if n == 0 && time.Since(last) >= quiet && time.Since(start) >= quiet {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
