package queryreg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"
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

// Defaults of Options.
const (
	// DefaultRecent is how many ended statements a Registry keeps.
	DefaultRecent = 200
	// DefaultMaxSQLBytes bounds the SQL (and the error) kept of one
	// statement.
	DefaultMaxSQLBytes = 16 << 10
	// DefaultMaxPlanBytes bounds the plan kept of one statement.
	DefaultMaxPlanBytes = 64 << 10
	// DefaultMaxBytes bounds the SQL, plans and errors the registry
	// keeps in all; past it the oldest ended statements are forgotten.
	DefaultMaxBytes = 8 << 20
)

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
	// Plan is the distributed plan (EXPLAIN's text), made from Planned's
	// PlanText when the statement is first read (List, Get, Cancel).
	Plan string
	// pending makes Plan; nil once it has.
	pending        PlanText
	Rows, Bytes    int64
	EndpointsDone  int
	EndpointsTotal int
	// PlannedFiles and PlannedBytes are the data files (and their bytes)
	// the tickets planned for the statement read, counted once per
	// ticket that reads them; ReadFiles and ReadBytes what the workers
	// reported of them as read (a ticket's files count once it ended).
	PlannedFiles, PlannedBytes int64
	ReadFiles, ReadBytes       int64
	// Served says a worker began serving one of its tickets.
	Served bool
	Error  string
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

// MaxRunningProgress is the most Info.Progress says of a statement that
// has not ended: its last step (an update's commit, a final fragment
// streaming what it computed) still runs when every file was read.
const MaxRunningProgress = 0.99

// Progress is the fraction of its work a statement has done, in [0, 1]:
// 1 once it finished; while it runs, the bytes its tickets read of those
// planned (the files read when no byte was planned, else the endpoints
// read), at most MaxRunningProgress. A statement that failed or was
// cancelled keeps what it had done.
func (i Info) Progress() float64 {
	if i.State == Finished {
		return 1
	}
	var f float64
	switch {
	case i.PlannedBytes > 0:
		f = float64(i.ReadBytes) / float64(i.PlannedBytes)
	case i.PlannedFiles > 0:
		f = float64(i.ReadFiles) / float64(i.PlannedFiles)
	case i.EndpointsTotal > 0:
		f = float64(i.EndpointsDone) / float64(i.EndpointsTotal)
	}
	return min(f, MaxRunningProgress)
}

// Progress is what the workers report of a statement: the rows and
// bytes its endpoints streamed, the endpoints read, and the files (and
// their bytes) its tickets read.
type Progress struct {
	Rows, Bytes          int64
	EndpointsDone        int
	ReadFiles, ReadBytes int64
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
	recent  []Info // oldest first
	// bytes is the text (textSize) of the running and recent statements.
	bytes   int64
	o       Options
	workers Workers
	ended   func(Info)
}

// Options configure a Registry.
type Options struct {
	// Recent is how many ended statements are kept; 0 means DefaultRecent.
	Recent int
	// MaxSQLBytes, MaxPlanBytes and MaxBytes bound the text kept
	// (DefaultMaxSQLBytes, …, for 0): a statement's SQL and error, its
	// plan, and all of it. Longer text is cut, saying how much was.
	MaxSQLBytes, MaxPlanBytes int
	MaxBytes                  int64
	// Workers, when set, reports progress and cancels on the workers.
	Workers Workers
	// Ended, when set, is called once with each statement that ends.
	Ended func(Info)
}

// Validate reports every problem with o.
func (o Options) Validate() error {
	var errs []error
	if o.Recent < 0 {
		errs = append(errs, errors.New("queries: Recent must be >= 0"))
	}
	if o.MaxSQLBytes < 0 || o.MaxPlanBytes < 0 || o.MaxBytes < 0 {
		errs = append(errs, errors.New("queries: MaxSQLBytes, MaxPlanBytes and MaxBytes must be >= 0"))
	}
	return errors.Join(errs...)
}

// New returns an empty Registry.
func New(o Options) (*Registry, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Recent == 0 {
		o.Recent = DefaultRecent
	}
	if o.MaxSQLBytes == 0 {
		o.MaxSQLBytes = DefaultMaxSQLBytes
	}
	if o.MaxPlanBytes == 0 {
		o.MaxPlanBytes = DefaultMaxPlanBytes
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	return &Registry{running: map[string]*Query{}, o: o, workers: o.Workers, ended: o.Ended}, nil
}

// truncate cuts s to at most limit bytes (on a UTF-8 boundary), saying
// how much was cut.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := max(limit-32, 0) // room for the note
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes more)", len(s)-cut)
}

// textSize is what the registry counts of i against MaxBytes: its text,
// and what a plan not made yet holds.
func textSize(i *Info) int64 {
	n := len(i.SQL) + len(i.Plan) + len(i.Error)
	if i.pending != nil {
		n += i.pending.Len()
	}
	return int64(n)
}

// PlanText is a plan's text as the registry shows it (its literals
// redacted), made when the statement is first read rather than on the
// statement's path: Text makes it (and may be slow), Len is how many
// bytes it holds until then.
type PlanText interface {
	Text() string
	Len() int
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

type presetKey struct{}

// WithID returns ctx under which Begin registers the statement with id
// (from NewID) instead of a fresh one: for a caller that must name the
// statement before it starts.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, presetKey{}, id)
}

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
	id, _ := ctx.Value(presetKey{}).(string)
	if id == "" || id == IDFrom(ctx) {
		id = NewID()
	}
	ctx = context.WithValue(ctx, idKey{}, id)
	ctx, cancel := context.WithCancelCause(ctx)
	q := &Query{r: r, cancel: cancel, info: Info{ID: id, Principal: principal, Kind: kind, SQL: sql, State: Queued, Start: time.Now()}}
	ctx = context.WithValue(ctx, queryKey{}, q)
	if r == nil {
		return ctx, q
	}
	q.info.SQL = truncate(sql, r.o.MaxSQLBytes)
	r.mu.Lock()
	r.running[id] = q
	r.bytes += textSize(&q.info)
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
// from now on, until expires. Its text is made from plan when the
// statement is first read, off the statement's path; a plan too large to
// keep unmade is made now, and cut.
func (q *Query) Planned(strategy string, plan PlanText, endpoints int, expires time.Time) {
	q.update(func(i *Info) {
		before := textSize(i)
		i.Strategy, i.EndpointsTotal = strategy, endpoints
		i.Plan, i.pending = "", plan
		if q.r != nil {
			if plan.Len() > q.r.o.MaxPlanBytes {
				i.Plan, i.pending = truncate(plan.Text(), q.r.o.MaxPlanBytes), nil
			}
			q.r.bytes += textSize(i) - before
		}
		i.PlanTime = time.Since(i.Start) - i.QueueWait
		q.expires = expires
	})
}

// Plans adds a ticket's files and bytes to the statement's planned work
// (the planner calls it for every ticket it seals).
func (q *Query) Plans(files, bytes int64) {
	if files == 0 && bytes == 0 {
		return
	}
	q.update(func(i *Info) { i.PlannedFiles, i.PlannedBytes = i.PlannedFiles+files, i.PlannedBytes+bytes })
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
	settle := false
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
		settle = q.followed() && q.r != nil && q.r.workers != nil
		q.endLocked(i, err)
		c := *i
		ended = &c
	})
	if ended != nil {
		q.cancel(nil)
		q.r.report(*ended)
	}
	if settle {
		go q.r.settle(ended.ID)
	}
}

// settleTimeout bounds asking the workers what an ended statement read.
const settleTimeout = 10 * time.Second

// settle asks the workers what the ended statement id's tickets read
// since the registry last asked (its last fragments), for the recent
// statements it shows.
func (r *Registry) settle(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	prog, _ := r.workers.Progress(ctx, []string{id})
	p, ok := prog[id]
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.recent) - 1; i >= 0; i-- {
		if e := &r.recent[i]; e.ID == id {
			e.Served = true
			e.ReadFiles, e.ReadBytes = min(p.ReadFiles, e.PlannedFiles), min(p.ReadBytes, e.PlannedBytes)
			return
		}
	}
}

// endLocked moves i to its final state; r.mu is held.
func (q *Query) endLocked(i *Info, err error) {
	before := textSize(i)
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
	r := q.r
	i.Error = truncate(i.Error, r.o.MaxSQLBytes)
	r.bytes += textSize(i) - before
	delete(r.running, i.ID)
	r.recent = append(r.recent, *i)
	for len(r.recent) > 0 && (len(r.recent) > r.o.Recent || r.bytes > r.o.MaxBytes) {
		r.bytes -= textSize(&r.recent[0])
		r.recent = slices.Delete(r.recent, 0, 1)
	}
}

// planned makes i's plan text, once, and returns i; r.mu is held.
func (r *Registry) planned(i *Info) Info {
	if i.pending != nil {
		before := textSize(i)
		i.Plan, i.pending = truncate(i.pending.Text(), r.o.MaxPlanBytes), nil
		r.bytes += textSize(i) - before
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
		out = append(out, r.planned(&q.info))
	}
	for k := range r.recent {
		out = append(out, r.planned(&r.recent[k]))
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
// endpoints and of the other statements whose tickets they run (an
// INSERT … SELECT's write fragments), and ends the queries all of whose
// endpoints were read or whose tickets expired.
func (r *Registry) Refresh(ctx context.Context) {
	if r == nil {
		return
	}
	r.mu.Lock()
	var ids []string
	for id, q := range r.running {
		if q.followed() {
			ids = append(ids, id)
		}
	}
	r.mu.Unlock()
	r.refresh(ctx, ids)
}

// followed says whether the workers run q's tickets; r.mu is held.
func (q *Query) followed() bool { return q.reading || q.info.PlannedFiles > 0 }

// refresh asks the workers for the progress of the statements ids that
// are followed, and ends the queries done reading.
func (r *Registry) refresh(ctx context.Context, ids []string) {
	var prog map[string]Progress
	if len(ids) > 0 && r.workers != nil {
		prog, _ = r.workers.Progress(ctx, ids) // what could not be asked stays as it was
	}
	var ended []Info
	r.mu.Lock()
	for _, id := range ids {
		q, ok := r.running[id]
		if !ok || !q.followed() {
			continue
		}
		p, ok := prog[id]
		if ok {
			q.info.Served = true
			q.info.ReadFiles, q.info.ReadBytes = min(p.ReadFiles, q.info.PlannedFiles), min(p.ReadBytes, q.info.PlannedBytes)
		}
		if !q.reading {
			continue
		}
		if ok {
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

// Progress refreshes the statement id from the workers, when they run
// its tickets, and returns it, running or recent.
func (r *Registry) Progress(ctx context.Context, id string) (Info, bool) {
	if r == nil {
		return Info{}, false
	}
	r.mu.Lock()
	q, ok := r.running[id]
	follow := ok && q.followed()
	r.mu.Unlock()
	if follow {
		r.refresh(ctx, []string{id})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if q, ok := r.running[id]; ok {
		return q.info, true
	}
	for i := len(r.recent) - 1; i >= 0; i-- {
		if r.recent[i].ID == id {
			return r.recent[i], true
		}
	}
	return Info{}, false
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
	info, expires := r.planned(&q.info), q.expires
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
