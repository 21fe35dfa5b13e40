package commit

import (
	"context"
	"strings"
	"sync"
)

// The commit queue: commits to one table from one process take turns.
//
// Each attempt of a commit loads the table, checks what concurrent
// commits did, builds its snapshot on the table as loaded and sends it,
// all while it holds its table's turn. Two statements of this process
// racing for one table therefore never lose to each other: the second
// builds on what the first committed. Only writers elsewhere (another
// coordinator, another engine) can still make an attempt lose its
// compare-and-swap, and those losses are retried optimistically (Run).

// queues holds the turn of every table with a commit under way.
var queues = &tableQueues{m: map[string]*tableQueue{}}

type tableQueues struct {
	mu sync.Mutex
	m  map[string]*tableQueue
}

// tableQueue is one table's turn: a token whoever holds the turn has
// taken, and how many commits hold or wait for it (the entry goes when
// none does).
type tableQueue struct {
	turn  chan struct{}
	users int
}

// queueKey names r's table in the queue: its name in messages (which
// names the mount) and its identifier in the catalog (a statement's
// staging table has its own).
func (r Request) queueKey() string {
	return r.Name + "\x00" + strings.Join(r.Ident, "\x00")
}

// inTurn runs f while r's table is this process's commit to make; if
// ctx ends while it waits, nothing was sent (an unsentError wrapping
// ctx's error).
func (r Request) inTurn(ctx context.Context, f func() error) error {
	q := queues.join(r.queueKey())
	defer queues.leave(r.queueKey(), q)
	select {
	case q.turn <- struct{}{}:
	case <-ctx.Done():
		return unsent("commit to %s: nothing was committed: waiting for its turn to commit: %w", r.Name, context.Cause(ctx))
	}
	defer func() { <-q.turn }()
	return f()
}

func (qs *tableQueues) join(key string) *tableQueue {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	q := qs.m[key]
	if q == nil {
		q = &tableQueue{turn: make(chan struct{}, 1)}
		qs.m[key] = q
	}
	q.users++
	return q
}

func (qs *tableQueues) leave(key string, q *tableQueue) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if q.users--; q.users == 0 {
		delete(qs.m, key)
	}
}

// queued is how many tables have a commit under way or waiting (for
// tests: the queue holds nothing once commits are done).
func (qs *tableQueues) queued() int {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	return len(qs.m)
}
