package statement

import (
	"context"
	"errors"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// Options configure an Executor. Every field but Planner defaults to the
// planner's own (planner.Options), which is what a coordinator wants: its
// statements run against the catalogs, workers and keys its queries are
// planned with.
type Options struct {
	// Planner plans the queries of the executor's statements and the
	// queries it is asked to plan. Required.
	Planner *planner.Planner
	// Mounts are the catalogs statements change.
	Mounts *catalog.Mounts
	// Engine is the coordinator's DuckDB (binding VALUES, stand-ins).
	Engine *engine.Engine
	// Key seals the write tickets.
	Key *wire.Key
	// Workers are where write fragments run.
	Workers planner.Workers
	// Policy decides what each principal may do; nil allows everything.
	Policy *authz.Policy
	// Flight dials the workers for write fragments and ingest.
	Flight *flightclient.Pool
	// TicketTTL is how long write tickets stay valid.
	TicketTTL time.Duration
	// MaxValueBytes bounds one value a statement builds.
	MaxValueBytes int64
	// Runtime serves CALL system.cancel_query.
	Runtime planner.Runtime
	// Logger gets what statements log; nil logs nothing.
	Logger *zap.Logger
}

// withDefaults fills the unset fields from the planner's options.
func (o Options) withDefaults() Options {
	if o.Planner == nil {
		return o
	}
	p := o.Planner.Options()
	orDefault(&o.Mounts, p.Mounts)
	orDefault(&o.Engine, p.Engine)
	orDefault(&o.Key, p.Key)
	orDefault(&o.Workers, p.Workers)
	orDefault(&o.Policy, p.Policy)
	orDefault(&o.Flight, p.Flight)
	orDefault(&o.TicketTTL, p.TicketTTL)
	orDefault(&o.MaxValueBytes, p.MaxValueBytes)
	orDefault(&o.Runtime, p.Runtime)
	orDefault(&o.Logger, p.Logger)
	orDefault(&o.Logger, zap.NewNop())
	return o
}

// orDefault sets *v to d when *v is its type's zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Planner == nil {
		errs = append(errs, errors.New("statement: Planner is required"))
	}
	if o.TicketTTL < 0 {
		errs = append(errs, errors.New("statement: TicketTTL must be >= 0"))
	}
	if o.MaxValueBytes < 0 {
		errs = append(errs, errors.New("statement: MaxValueBytes must be >= 0"))
	}
	return errors.Join(errs...)
}

// Executor runs statements on the coordinator. It plans queries with its
// planner (Plan, Bind, Use, Parameters and Renew go to it) and runs every
// statement that changes something itself. It is safe for concurrent use.
type Executor struct {
	planner *planner.Planner
	opts    Options
	log     *zap.Logger
}

// NewExecutor returns an executor with o.
func NewExecutor(o Options) (*Executor, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	return &Executor{planner: o.Planner, opts: o, log: o.Logger}, nil
}

// New returns an executor over pl with pl's options (NewExecutor with
// only Options.Planner set).
func New(pl *planner.Planner) *Executor {
	e, err := NewExecutor(Options{Planner: pl})
	if err != nil {
		panic(err) // only a nil planner fails, a programming error
	}
	return e
}

// Planner is the planner the executor plans with.
func (e *Executor) Planner() *planner.Planner { return e.planner }

// Bind returns the result schema of a statement that returns rows: a
// CALL's from its procedure's columns, without running it; any other's
// from the planner (planner.Planner.Bind).
func (e *Executor) Bind(ctx context.Context, s planner.Session, st *parse.Statement, args ...any) (*arrow.Schema, error) {
	if st.Kind == parse.KindCall {
		return e.callSchema(ctx, s, st.Body.(*parse.Call))
	}
	return e.planner.Bind(ctx, s, st, args...)
}

// Use resolves a USE statement into the session it sets
// (planner.Planner.Use).
func (e *Executor) Use(ctx context.Context, s planner.Session, st *parse.Statement) (planner.Session, error) {
	return e.planner.Use(ctx, s, st)
}

// Parameters describes a statement's placeholders
// (planner.Planner.Parameters).
func (e *Executor) Parameters(ctx context.Context, s planner.Session, st *parse.Statement) (*arrow.Schema, error) {
	return e.planner.Parameters(ctx, s, st)
}

// Renew reseals a ticket with freshly vended storage credentials
// (planner.Planner.Renew).
func (e *Executor) Renew(ctx context.Context, sealed []byte) ([]byte, time.Time, error) {
	return e.planner.Renew(ctx, sealed)
}
