package admit

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors of Acquire; both are ResourceExhausted at the Flight boundary.
var (
	// ErrQueueFull: every running slot and every queue place is taken.
	ErrQueueFull = errors.New("queue full")
	// ErrQueuedTooLong: a queued unit waited QueueTimeout without a slot.
	ErrQueuedTooLong = errors.New("queued too long")
)

// Defaults for Options.
const (
	DefaultQueueTimeout = 30 * time.Second
)

// Options configure a Limiter. A zero MaxRunning means no limit.
type Options struct {
	// Noun names what is limited in messages ("statements", "fragments").
	Noun string
	// Key is the config key of MaxRunning, named in messages.
	Key string
	// PrincipalKey is the config key of MaxPerPrincipal.
	PrincipalKey string
	// MaxRunning is how many units run at once; 0 means unlimited.
	MaxRunning int
	// MaxPerPrincipal is how many units of one principal run at once; 0
	// means no per-principal limit. The empty principal is not limited.
	MaxPerPrincipal int
	// MaxQueued is how many units wait for a slot; beyond it Acquire
	// fails at once with ErrQueueFull.
	MaxQueued int
	// QueueTimeout is how long a unit waits; 0 means DefaultQueueTimeout.
	QueueTimeout time.Duration
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.MaxRunning < 0 || o.MaxPerPrincipal < 0 || o.MaxQueued < 0 || o.QueueTimeout < 0 {
		errs = append(errs, fmt.Errorf("admit: %s limits must be >= 0", o.Key))
	}
	return errors.Join(errs...)
}

// Limiter admits units of work. It is safe for concurrent use; a nil
// *Limiter admits everything.
type Limiter struct {
	o        Options
	mu       sync.Mutex
	running  int
	perKey   map[string]int
	queue    list.List // of *waiter, oldest first
	queued   int
	admitted int64
	refused  int64
	timedOut int64
}

type waiter struct {
	principal string
	ready     chan struct{} // closed once the waiter holds a slot
}

// New returns a Limiter for o.
func New(o Options) (*Limiter, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.QueueTimeout == 0 {
		o.QueueTimeout = DefaultQueueTimeout
	}
	return &Limiter{o: o, perKey: map[string]int{}}, nil
}

// Acquire waits for a slot for principal and returns the function that
// gives it back (call it exactly once). It fails with ErrQueueFull when
// the queue is full, ErrQueuedTooLong after QueueTimeout, or ctx's error.
func (l *Limiter) Acquire(ctx context.Context, principal string) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	// A free slot never sits beside a waiter that fits (give admits it at
	// once), so a unit that fits now passes no one.
	if l.fits(principal) {
		l.take(principal)
		l.mu.Unlock()
		return l.releaser(principal), nil
	}
	if l.queued >= l.o.MaxQueued {
		err := l.fullError(principal)
		l.refused++
		l.mu.Unlock()
		return nil, err
	}
	w := &waiter{principal: principal, ready: make(chan struct{})}
	el := l.queue.PushBack(w)
	l.queued++
	l.mu.Unlock()
	return l.wait(ctx, w, el)
}

func (l *Limiter) wait(ctx context.Context, w *waiter, el *list.Element) (func(), error) {
	timer := time.NewTimer(l.o.QueueTimeout)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		return l.releaser(w.principal), nil
	case <-timer.C:
		err = fmt.Errorf("%w after %s waiting for one of %d running %s (limit key %s)",
			ErrQueuedTooLong, l.o.QueueTimeout, l.o.MaxRunning, l.o.Noun, l.o.Key)
	case <-ctx.Done():
		err = ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w.ready: // admitted meanwhile: give the slot back
		l.give(w.principal)
	default:
		l.queue.Remove(el)
		l.queued--
	}
	if errors.Is(err, ErrQueuedTooLong) {
		l.timedOut++
	}
	return nil, err
}

// fits says whether principal may start now; l.mu is held.
func (l *Limiter) fits(principal string) bool {
	if l.o.MaxRunning > 0 && l.running >= l.o.MaxRunning {
		return false
	}
	return principal == "" || l.o.MaxPerPrincipal == 0 || l.perKey[principal] < l.o.MaxPerPrincipal
}

func (l *Limiter) take(principal string) {
	l.running++
	l.admitted++
	if principal != "" {
		l.perKey[principal]++
	}
}

func (l *Limiter) fullError(principal string) error {
	if l.o.MaxRunning == 0 || l.running < l.o.MaxRunning {
		return fmt.Errorf("%w: principal %s has %d %s running, %d queued (limit key %s)",
			ErrQueueFull, principal, l.perKey[principal], l.o.Noun, l.queued, l.o.PrincipalKey)
	}
	return fmt.Errorf("%w: %d %s running, %d queued (limit key %s)", ErrQueueFull, l.running, l.o.Noun, l.queued, l.o.Key)
}

func (l *Limiter) releaser(principal string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.give(principal)
		})
	}
}

// give returns a slot and admits the oldest waiters that now fit; l.mu is
// held.
func (l *Limiter) give(principal string) {
	l.running--
	if principal != "" {
		if l.perKey[principal]--; l.perKey[principal] <= 0 {
			delete(l.perKey, principal)
		}
	}
	for el := l.queue.Front(); el != nil; {
		next := el.Next()
		w := el.Value.(*waiter)
		if l.fits(w.principal) {
			l.queue.Remove(el)
			l.queued--
			l.take(w.principal)
			close(w.ready)
		}
		if l.o.MaxRunning > 0 && l.running >= l.o.MaxRunning {
			return
		}
		el = next
	}
}

// Stats are a Limiter's counts.
type Stats struct {
	Running, Queued             int
	Admitted, Refused, TimedOut int64
}

// Stats returns the current counts.
func (l *Limiter) Stats() Stats {
	if l == nil {
		return Stats{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Running: l.running, Queued: l.queued, Admitted: l.admitted, Refused: l.refused, TimedOut: l.timedOut}
}
