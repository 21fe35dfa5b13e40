package membudget

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Config keys of the limits, named in errors.
const (
	BudgetKey = "limits.memory_budget"
	QueryKey  = "limits.query_memory"
)

// ErrExhausted is a query's Go-side buffers passing their query's limit or
// the process's.
var ErrExhausted = errors.New("membudget: memory limit reached")

// Exhausted tells whether err is ErrExhausted.
func Exhausted(err error) bool { return errors.Is(err, ErrExhausted) }

// Budget is a process's limit on Go-side Arrow buffers, with a limit per
// query inside it. The zero limit means none.
type Budget struct {
	limit, queryLimit int64
	mem               memory.Allocator
	used, peak        atomic.Int64

	mu      sync.Mutex
	queries map[string]*query
}

// query is the use of one query id, shared by its accounts.
type query struct {
	used atomic.Int64
	refs int // guarded by Budget.mu
}

// New returns a budget of limit bytes for the process and queryLimit for
// each query (0: no limit), allocating from mem (nil means
// memory.DefaultAllocator).
func New(limit, queryLimit int64, mem memory.Allocator) *Budget {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &Budget{limit: limit, queryLimit: queryLimit, mem: mem, queries: map[string]*query{}}
}

// Limit is the process's limit in bytes; QueryLimit each query's.
func (b *Budget) Limit() int64      { return b.limit }
func (b *Budget) QueryLimit() int64 { return b.queryLimit }

// Used is what the process's accounts hold now; Peak the most they held.
func (b *Budget) Used() int64 { return b.used.Load() }
func (b *Budget) Peak() int64 { return b.peak.Load() }

// QueryUsed is what the accounts of queryID hold now.
func (b *Budget) QueryUsed(queryID string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.queries[queryID]; q != nil {
		return q.used.Load()
	}
	return 0
}

// Account opens an account for queryID; the caller closes it once the
// buffers allocated through it are released. Accounts of one query id
// share its total.
func (b *Budget) Account(queryID string) *Account {
	b.mu.Lock()
	q := b.queries[queryID]
	if q == nil {
		q = &query{}
		b.queries[queryID] = q
	}
	q.refs++
	b.mu.Unlock()
	return &Account{b: b, id: queryID, q: q}
}

// Process opens an account that counts toward the process's total only,
// named what in its errors: for buffers decoded before their query is
// known or shared by a server's streams (the Arrow messages of DoPut:
// a bulk ingest holds one batch per stream at a time). Its Err checks the
// process's limit.
func (b *Budget) Process(what string) *Account {
	return &Account{b: b, id: what, q: &query{}, process: true}
}

func (b *Budget) add(q *query, n int64) {
	q.used.Add(n)
	u := b.used.Add(n)
	for p := b.peak.Load(); u > p && !b.peak.CompareAndSwap(p, u); p = b.peak.Load() {
	}
}

// Account is one fragment's or statement's allocator, counting toward its
// query's total and the process's.
type Account struct {
	b       *Budget
	id      string
	q       *query
	process bool // Process: no query, no query limit
	closed  atomic.Bool
}

var _ memory.Allocator = (*Account)(nil)

// Allocate implements memory.Allocator.
func (a *Account) Allocate(size int) []byte {
	buf := a.b.mem.Allocate(size)
	a.b.add(a.q, int64(len(buf)))
	return buf
}

// Reallocate implements memory.Allocator.
func (a *Account) Reallocate(size int, b []byte) []byte {
	old := len(b)
	buf := a.b.mem.Reallocate(size, b)
	a.b.add(a.q, int64(len(buf)-old))
	return buf
}

// Free implements memory.Allocator.
func (a *Account) Free(b []byte) {
	a.b.add(a.q, -int64(len(b)))
	a.b.mem.Free(b)
}

// Hold counts n bytes the account did not allocate (buffers decoded in
// place from a gRPC message, which no allocator sees) until the returned
// function is called.
func (a *Account) Hold(n int64) (release func()) {
	a.b.add(a.q, n)
	var once atomic.Bool
	return func() {
		if !once.Swap(true) {
			a.b.add(a.q, -n)
		}
	}
}

// QueryID is the query the account counts for.
func (a *Account) QueryID() string { return a.id }

// Err is ErrExhausted, naming the limit and the query, when the query's
// buffers are past its limit or the process's past the budget; nil
// otherwise.
func (a *Account) Err() error {
	b := a.b
	if a.process {
		if u := b.used.Load(); b.limit > 0 && u > b.limit {
			return fmt.Errorf("%w: %s: the process holds %s of Arrow buffers, over its share of the memory budget, %s (limit key %s)",
				ErrExhausted, a.id, Size(u), Size(b.limit), BudgetKey)
		}
		return nil
	}
	if q := a.q.used.Load(); b.queryLimit > 0 && q > b.queryLimit {
		return fmt.Errorf("%w: query %s holds %s of Arrow buffers, over its limit of %s (limit key %s)",
			ErrExhausted, a.id, Size(q), Size(b.queryLimit), QueryKey)
	}
	if u := b.used.Load(); b.limit > 0 && u > b.limit {
		return fmt.Errorf("%w: query %s: the process holds %s of Arrow buffers, over its share of the memory budget, %s (limit key %s)",
			ErrExhausted, a.id, Size(u), Size(b.limit), BudgetKey)
	}
	return nil
}

// Close ends the account: a query whose accounts are all closed leaves the
// budget's table (its buffers still count until they are freed).
func (a *Account) Close() {
	if a.closed.Swap(true) || a.process {
		return
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.q.refs--; a.q.refs == 0 && b.queries[a.id] == a.q {
		delete(b.queries, a.id)
	}
}

// Check is Err of mem when it is an Account, nil otherwise: code that
// gets its allocator from a context checks it without knowing whether a
// budget is set.
func Check(mem memory.Allocator) error {
	if a, ok := mem.(*Account); ok {
		return a.Err()
	}
	return nil
}

// Guard returns send preceded by Check(mem): a batch that arrives with
// its query or the process past its limit is released, and the limit's
// error returned instead (for the callbacks of flightclient.Pull).
func Guard(mem memory.Allocator, send func(arrow.RecordBatch) error) func(arrow.RecordBatch) error {
	return func(rec arrow.RecordBatch) error {
		if err := Check(mem); err != nil {
			rec.Release()
			return err
		}
		return send(rec)
	}
}

// Size prints n bytes in binary units, e.g. "1.5 GiB".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
