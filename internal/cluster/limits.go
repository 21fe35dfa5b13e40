package cluster

import (
	"time"

	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/membudget"
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
}

// Defaults of the binary's limits.
const (
	DefaultMaxRunningStatements = 32
	DefaultMaxQueuedStatements  = 128
	DefaultMaxRunningFragments  = 8
	DefaultMaxQueuedFragments   = 64
	DefaultQueueTimeout         = time.Minute
	// DefaultStagingGrace outlasts any create whose staging table's
	// metadata was written that long ago on another live coordinator.
	DefaultStagingGrace = time.Hour
)

// DefaultLimits are the binary's limits when its config sets none.
func DefaultLimits() Limits {
	return NewLimits(DefaultMaxRunningStatements, 0, DefaultMaxQueuedStatements,
		DefaultMaxRunningFragments, 0, DefaultMaxQueuedFragments, DefaultQueueTimeout, 0)
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
