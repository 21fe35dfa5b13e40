package exchange

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// space is a number of bytes shared by a process's exchanges: their
// memory, or their spill folder.
type space struct {
	limit int64
	used  atomic.Int64

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when bytes are freed
}

func newSpace(limit int64) space { return space{limit: limit, changed: make(chan struct{})} }

// Limit is the space's bound; Used what it holds now.
func (s *space) Limit() int64 { return s.limit }
func (s *space) Used() int64  { return s.used.Load() }

// reserve takes n bytes if they fit.
func (s *space) reserve(n int64) bool {
	for {
		u := s.used.Load()
		if u+n > s.limit {
			return false
		}
		if s.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// take takes n bytes, whether they fit or not.
func (s *space) take(n int64) { s.used.Add(n) }

// free gives n bytes back and wakes the waiters.
func (s *space) free(n int64) {
	if n == 0 {
		return
	}
	s.used.Add(-n)
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait returns a channel closed the next time bytes are freed.
func (s *space) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Memory is the bytes of batches a process's exchanges may hold in
// memory at once, for consumers that have not read them yet. It is safe
// for concurrent use.
type Memory struct{ space }

// NewMemory returns a memory bound of limit bytes (> 0).
func NewMemory(limit int64) (*Memory, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("exchange: memory limit must be > 0, got %d", limit)
	}
	return &Memory{newSpace(limit)}, nil
}

func (m *Memory) String() string {
	return fmt.Sprintf("exchange memory, %d of %d bytes", m.Used(), m.Limit())
}
