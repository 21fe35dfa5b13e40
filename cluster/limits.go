package cluster

import (
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/internal/streamidle"
)

// Config keys of the limits, named in the errors a client sees when one
// is hit (docs/operations.md).
const (
	KeyMaxRunningStatements   = "limits.max_running_statements"
	KeyStatementsPerPrincipal = "limits.max_running_statements_per_principal"
	KeyMaxRunningFragments    = "limits.max_running_fragments"
	KeyFragmentsPerPrincipal  = "limits.max_running_fragments_per_principal"
)

// Limits bound what a cluster runs at once and for how long. The zero
// value limits nothing; the binary starts from DefaultLimits.
type Limits struct {
	// Statements admits the coordinator's statements.
	Statements admit.Options
	// Fragments admits each worker's fragments.
	Fragments admit.Options
	// StatementTimeout ends every statement that runs longer; 0 is none.
	StatementTimeout time.Duration
	// StagingGrace is how old a staging table (of a CREATE TABLE … AS or
	// ingest that did not finish) must be before a starting coordinator
	// drops it; 0 is DefaultStagingGrace.
	StagingGrace time.Duration
	// Memory, when set, is the process's budget of Go-side Arrow buffers,
	// shared by its workers (worker.Options.Budget).
	Memory *membudget.Budget
	// MaxStatementBytes bounds a statement's text (flightsql.Options);
	// MaxValueBytes a value built from a count (planner.Options). 0 means
	// their defaults.
	MaxStatementBytes int
	MaxValueBytes     int64
	// StreamIdleTimeout cuts a stream whose client stopped reading (or an
	// upload that stopped sending) for that long (package streamidle); 0
	// cuts nothing. The binary starts from streamidle.DefaultTimeout.
	StreamIdleTimeout time.Duration
}

// Defaults of the binary's limits.
const (
	DefaultMaxRunningStatements = 32
	DefaultMaxQueuedStatements  = 128
	DefaultMaxRunningFragments  = 8
	DefaultMaxQueuedFragments   = 64
	DefaultQueueTimeout         = time.Minute
	// DefaultStatementTimeout ends a statement that runs longer: the
	// bound on a statement stuck on a worker that answers keepalive
	// pings but never its call (a hung fragment); a stopped or cut-off
	// worker fails its calls within flightclient.StoppedAnsweringAfter.
	DefaultStatementTimeout = time.Hour
	// DefaultStagingGrace outlasts any create whose staging table's
	// metadata was written that long ago on another live coordinator.
	DefaultStagingGrace = time.Hour
)

// DefaultLimits are the binary's limits when its config sets none.
func DefaultLimits() Limits {
	l := NewLimits(DefaultMaxRunningStatements, 0, DefaultMaxQueuedStatements,
		DefaultMaxRunningFragments, 0, DefaultMaxQueuedFragments, DefaultQueueTimeout, DefaultStatementTimeout)
	l.StreamIdleTimeout = streamidle.DefaultTimeout
	return l
}

// idleCut is the server option that cuts the role's idle streams, logging
// each cut.
func (l Limits) idleCut(log *zap.Logger) grpc.ServerOption {
	return grpc.ChainStreamInterceptor(streamidle.Interceptor(streamidle.Options{
		Timeout: l.StreamIdleTimeout,
		OnCut: func(method string, sending bool) {
			log.Info("cut an idle stream", zap.String("method", method), zap.Bool("client_stopped_reading", sending),
				zap.Duration("stream_idle_timeout", l.StreamIdleTimeout))
		},
	}))
}

// NewLimits names the limits' keys and nouns around the given counts.
func NewLimits(statements, statementsPerPrincipal, queuedStatements, fragments, fragmentsPerPrincipal, queuedFragments int, queueTimeout, statementTimeout time.Duration) Limits {
	return Limits{
		Statements: admit.Options{Noun: "statements", Key: KeyMaxRunningStatements, PrincipalKey: KeyStatementsPerPrincipal,
			MaxRunning: statements, MaxPerPrincipal: statementsPerPrincipal, MaxQueued: queuedStatements, QueueTimeout: queueTimeout},
		Fragments: admit.Options{Noun: "fragments", Key: KeyMaxRunningFragments, PrincipalKey: KeyFragmentsPerPrincipal,
			MaxRunning: fragments, MaxPerPrincipal: fragmentsPerPrincipal, MaxQueued: queuedFragments, QueueTimeout: queueTimeout},
		StatementTimeout: statementTimeout,
	}
}

// Admission returns the counts of the coordinator's statement limiter.
func (c *Coordinator) Admission() admit.Stats { return c.srv.AdmissionStats() }

// Admission returns the counts of the worker's fragment limiter.
func (w *Worker) Admission() admit.Stats { return w.srv.Admission() }
