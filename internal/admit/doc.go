// Package admit bounds how much work runs at once: a Limiter admits up to
// a number of running units (statements on a coordinator, fragments on a
// worker), at most a number of them per principal, queues a bounded number
// beyond that for a bounded time, and refuses the rest with ErrQueueFull
// or ErrQueuedTooLong, whose messages name the limit's config key.
package admit
