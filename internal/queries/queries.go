package queries

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// State is where a statement is in its life.
type State string

// States. A query whose plan succeeded is running until all its
// endpoints were read, its tickets expired, or it was cancelled.
const (
	Queued    State = "queued"
	Planning  State = "planning"
	Running   State = "running"
	Finished  State = "finished"
	Failed    State = "failed"
	Cancelled State = "cancelled"
)

// Ended says whether s is a final state.
func (s State) Ended() bool { return s == Finished || s == Failed || s == Cancelled }

// Errors of Cancel.
var (
	// ErrNotFound: no running statement has the id.
	ErrNotFound = errors.New("no running query has this id")
	// ErrNotYours: the statement is another principal's.
	ErrNotYours = errors.New("only an admin may cancel another principal's query")
	// ErrCancelled is the cause a cancelled statement's context ends with.
	ErrCancelled = errors.New("query cancelled")
)

// DefaultRecent is how many ended statements a Registry keeps.
const DefaultRecent = 200

// Info is what the registry knows of one statement.
type Info struct {
	ID        string
	Principal string
	// Kind is query, update, ingest or prepare.
	Kind string
	// SQL is the statement with its literals redacted.
	SQL      string
	State    State
	Start    time.Time
	End      time.Time // zero while it runs
	Strategy string
	// Plan is the distributed plan (EXPLAIN's text), as Planned's plan
	// gives it when the statement is first read (List, Get, Cancel).
	Plan string
	// plan gives Plan; nil once it has.
	plan           func() string
	Rows, Bytes    int64
	EndpointsDone  int
	EndpointsTotal int
	Error          string
	// Code is the gRPC code the statement ended with ("OK" while it runs).
	Code string
	// QueueWait is how long it waited for a slot; PlanTime how long it
	// was planned (or, for an update, run) on the coordinator.
	QueueWait, PlanTime time.Duration
}

// Elapsed is how long the statement ran (until now while it runs).
func (i Info) Elapsed() time.Duration {
	if i.End.IsZero() {
		return time.Since(i.Start)
	}
	return i.End.Sub(i.Start)
}

// Progress is what the workers report of a query's endpoints.
type Progress struct {
	Rows, Bytes   int64
	EndpointsDone int
}

// Workers is how the registry reaches the workers: it asks them for the
// progress of running queries and tells them to cancel one.
type Workers interface {
	Progress(ctx context.Context, ids []string) (map[string]Progress, error)
	Cancel(ctx context.Context, id string, until time.Time) error
}

// Registry is the set of running and recently ended statements. It is
// safe for concurrent use; a nil *Registry records nothing.
type Registry struct {
	mu      sync.Mutex
	running map[string]*Query
	recent  []Info // ring, oldest overwritten first
	next    int
	max     int
	workers Workers
	ended   func(Info)
}

// Options configure a Registry.
type Options struct {
	// Recent is how many ended statements are kept; 0 means DefaultRecent.
	Recent int
	// Workers, when set, reports progress and cancels on the workers.
	Workers Workers
	// Ended, when set, is called once with each statement that ends.
	Ended func(Info)
}

// Validate reports every problem with o.
func (o Options) Validate() error {
	if o.Recent < 0 {
		return errors.New("queries: Recent must be >= 0")
	}
	return nil
}

// New returns an empty Registry.
func New(o Options) (*Registry, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Recent == 0 {
		o.Recent = DefaultRecent
	}
	return &Registry{running: map[string]*Query{}, max: o.Recent, workers: o.Workers, ended: o.Ended}, nil
}

// Query is one registered statement.
type Query struct {
	r       *Registry
	cancel  context.CancelCauseFunc
	expires time.Time
	reading bool // its endpoints are being read; guarded by r.mu
	info    Info // guarded by r.mu
}

type idKey struct{}

type queryKey struct{}

// From returns the Query ctx runs, nil outside one (a nil *Query's
// methods do nothing).
func From(ctx context.Context) *Query {
	q, _ := ctx.Value(queryKey{}).(*Query)
	return q
}

// IDFrom returns the id of the statement ctx runs, "" outside one.
func IDFrom(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

// NewID returns a fresh statement id.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Begin registers a statement, queued, and returns its context (which
// carries its id, and ends when it is cancelled) and the Query to report
// on. The caller calls Query.Done.
func (r *Registry) Begin(ctx context.Context, principal, kind, sql string) (context.Context, *Query) {
	id := NewID()
	ctx = context.WithValue(ctx, idKey{}, id)
	ctx, cancel := context.WithCancelCause(ctx)
	q := &Query{r: r, cancel: cancel, info: Info{ID: id, Principal: principal, Kind: kind, SQL: sql, State: Queued, Start: time.Now()}}
	ctx = context.WithValue(ctx, queryKey{}, q)
	if r == nil {
		return ctx, q
	}
	r.mu.Lock()
	r.running[id] = q
	r.mu.Unlock()
	return ctx, q
}

func (q *Query) update(f func(*Info)) {
	if q == nil {
		return
	}
	if q.r == nil {
		f(&q.info)
		return
	}
	q.r.mu.Lock()
	defer q.r.mu.Unlock()
	f(&q.info)
}

// Planning says the statement holds its slot and is being planned (or,
// for an update, run).
func (q *Query) Planning() {
	q.update(func(i *Info) {
		if i.State == Queued {
			i.State, i.QueueWait = Planning, time.Since(i.Start)
		}
	})
}

// SetCode records the gRPC code the statement's coordinator part ended
// with.
func (q *Query) SetCode(code string) { q.update(func(i *Info) { i.Code = code }) }

// Run says an update is running (holding its slot).
func (q *Query) Run() {
	q.update(func(i *Info) {
		if !i.State.Ended() {
			i.State = Running
		}
	})
}

// Planned records a query's plan: its endpoints are read from the workers
// from now on, until expires. plan gives the plan's text as the registry
// shows it (its literals redacted); it is called when the statement is
// first read, off the statement's path, not by Planned.
func (q *Query) Planned(strategy string, plan func() string, endpoints int, expires time.Time) {
	q.update(func(i *Info) {
		i.Strategy, i.plan, i.EndpointsTotal = strategy, plan, endpoints
		i.PlanTime = time.Since(i.Start) - i.QueueWait
		q.expires = expires
	})
}

// SetKind corrects the statement's kind (a query that was an update).
func (q *Query) SetKind(kind string) { q.update(func(i *Info) { i.Kind = kind }) }

// Cause is the error a statement cancelled from the registry ended with,
// nil otherwise.
func Cause(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, ErrCancelled) {
		return err
	}
	return nil
}

// Done ends the statement's coordinator part. A query planned without
// error goes on running until its endpoints have been read; anything else
// ends now, failed when err is not nil (cancelled when it was cancelled).
func (q *Query) Done(err error, rows int64) {
	if q == nil {
		return
	}
	var ended *Info
	q.update(func(i *Info) {
		if i.State.Ended() {
			return
		}
		if err == nil && i.EndpointsTotal > 0 {
			i.State, q.reading = Running, true
			return
		}
		if i.PlanTime == 0 && i.State != Queued {
			i.PlanTime = time.Since(i.Start) - i.QueueWait
		}
		if err == nil && rows > 0 {
			i.Rows = rows
		}
		q.endLocked(i, err)
		c := *i
		ended = &c
	})
	if ended != nil {
		q.cancel(nil)
		q.r.report(*ended)
	}
}

// endLocked moves i to its final state; r.mu is held.
func (q *Query) endLocked(i *Info, err error) {
	i.End = time.Now()
	if i.Code == "" {
		i.Code = "OK"
	}
	switch {
	case err == nil:
		i.State = Finished
	case errors.Is(err, ErrCancelled) || errors.Is(err, context.Canceled) && i.State == Cancelled:
		i.State, i.Error, i.Code = Cancelled, err.Error(), "Canceled"
	default:
		i.State, i.Error = Failed, err.Error()
	}
	if q.r == nil {
		return
	}
	delete(q.r.running, i.ID)
	if len(q.r.recent) < q.r.max {
		q.r.recent = append(q.r.recent, *i)
	} else {
		q.r.recent[q.r.next] = *i
		q.r.next = (q.r.next + 1) % q.r.max
	}
}

// planned resolves i's plan text, once; r.mu is held.
func (i *Info) planned() Info {
	if i.plan != nil {
		i.Plan, i.plan = i.plan(), nil
	}
	return *i
}

func (r *Registry) report(i Info) {
	if r != nil && r.ended != nil {
		r.ended(i)
	}
}

// Get returns the statement with id, running or recent.
func (r *Registry) Get(ctx context.Context, id string) (Info, bool) {
	for _, i := range r.List(ctx) {
		if i.ID == id {
			return i, true
		}
	}
	return Info{}, false
}

// List refreshes the progress of the running queries from the workers
// and returns every running and recent statement, newest first.
func (r *Registry) List(ctx context.Context) []Info {
	if r == nil {
		return nil
	}
	r.Refresh(ctx)
	r.mu.Lock()
	out := make([]Info, 0, len(r.running)+len(r.recent))
	for _, q := range r.running {
		out = append(out, q.info.planned())
	}
	for k := range r.recent {
		out = append(out, r.recent[k].planned())
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Info) int { return b.Start.Compare(a.Start) })
	return out
}

// Running is how many statements are registered and not ended, by state.
func (r *Registry) Running() map[State]int {
	n := map[State]int{}
	if r == nil {
		return n
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.running {
		n[q.info.State]++
	}
	return n
}

// Refresh asks the workers for the progress of the queries reading their
// endpoints, and ends those all of whose endpoints were read or whose
// tickets expired.
func (r *Registry) Refresh(ctx context.Context) {
	if r == nil {
		return
	}
	r.mu.Lock()
	var ids []string
	for id, q := range r.running {
		if q.reading {
			ids = append(ids, id)
		}
	}
	r.mu.Unlock()
	var prog map[string]Progress
	if len(ids) > 0 && r.workers != nil {
		prog, _ = r.workers.Progress(ctx, ids) // what could not be asked stays as it was
	}
	var ended []Info
	r.mu.Lock()
	for _, id := range ids {
		q, ok := r.running[id]
		if !ok || !q.reading {
			continue
		}
		if p, ok := prog[id]; ok {
			q.info.Rows, q.info.Bytes, q.info.EndpointsDone = p.Rows, p.Bytes, min(p.EndpointsDone, q.info.EndpointsTotal)
		}
		if q.info.EndpointsDone >= q.info.EndpointsTotal || time.Now().After(q.expires) {
			q.endLocked(&q.info, nil)
			ended = append(ended, q.info)
		}
	}
	r.mu.Unlock()
	for _, i := range ended {
		r.report(i)
	}
}

// Cancel cancels the running statement id: its work on the coordinator
// ends with ErrCancelled, and every worker cancels the streams of its
// endpoints and refuses them from now on. may says whether the caller
// may cancel a statement of that principal.
func (r *Registry) Cancel(ctx context.Context, id string, may func(principal string) bool) (Info, error) {
	if r == nil {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	r.mu.Lock()
	q, ok := r.running[id]
	if !ok {
		r.mu.Unlock()
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if !may(q.info.Principal) {
		r.mu.Unlock()
		return Info{}, fmt.Errorf("%w: %s", ErrNotYours, id)
	}
	q.info.State = Cancelled
	q.endLocked(&q.info, fmt.Errorf("%w: %s", ErrCancelled, id))
	info, expires := q.info.planned(), q.expires
	r.mu.Unlock()
	q.cancel(fmt.Errorf("%w: %s", ErrCancelled, id))
	var err error
	if r.workers != nil && !expires.IsZero() {
		err = r.workers.Cancel(context.WithoutCancel(ctx), id, expires)
	}
	r.report(info)
	return info, err
}

// DefaultRefresh is how often Run refreshes the running queries.
const DefaultRefresh = time.Second

// Run refreshes the queries reading their endpoints every interval (0:
// DefaultRefresh) until ctx ends, so that they end (and are counted) when
// nobody reads the registry.
func (r *Registry) Run(ctx context.Context, interval time.Duration) {
	if r == nil {
		return
	}
	if interval <= 0 {
		interval = DefaultRefresh
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Refresh(ctx)
		}
	}
}
