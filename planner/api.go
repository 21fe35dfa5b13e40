package planner

import (
	"errors"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/cachestats"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/resultcache"
	"github.com/icefloe/icefloe/planner/plan"
	"github.com/icefloe/icefloe/wire"
)

// Errors the planner returns, wrapped with detail. flightsql maps each to a
// gRPC code in one place. The front end's four (internal/parse) are the
// same values.
var (
	// ErrSyntax: DuckDB or the front end could not parse the statement
	// (InvalidArgument).
	ErrSyntax = parse.ErrSyntax
	// ErrInvalid: the statement is well formed but wrong, e.g. an unknown
	// column (InvalidArgument).
	ErrInvalid = parse.ErrInvalid
	// ErrNotFound: a named catalog, schema or table does not exist (NotFound).
	ErrNotFound = errors.New("planner: not found")
	// ErrExists: a created object exists already (AlreadyExists).
	ErrExists = errors.New("planner: already exists")
	// ErrUnsupported: a statement kind icefloe does not run (Unimplemented).
	ErrUnsupported = parse.ErrUnsupported
	// ErrRefused: the statement asks for something clients may not do, such
	// as a table function or a setting (PermissionDenied).
	ErrRefused = parse.ErrRefused
	// ErrNoWorkers: no live worker to plan over (Unavailable).
	ErrNoWorkers = errors.New("planner: no live worker")
	// ErrExhausted: a worker ran out of memory or spill disk, or hit a
	// limit, for the statement (the message names the limit).
	ErrExhausted = errors.New("planner: resources exhausted")
	// ErrDenied: the caller lacks a privilege on an object, or presents a
	// ticket planned for another principal (PermissionDenied).
	ErrDenied = authz.ErrDenied
)

// Defaults for Options.
const (
	// DefaultTicketTTL is how long a planned ticket stays valid: long
	// enough to start pulling every endpoint, short because a ticket is a
	// capability (RenewFlightEndpoint extends it).
	DefaultTicketTTL        = 5 * time.Minute
	DefaultTargetGroupBytes = 64 << 20
	DefaultSlotsPerWorker   = 2
	// DefaultBroadcastBytes is the largest table a join reads in full in
	// every fragment of its large side.
	DefaultBroadcastBytes = 32 << 20
	// DefaultMaxValueBytes is the largest value repeat, lpad, rpad or
	// list_resize may build.
	DefaultMaxValueBytes = 256 << 20
	// DefaultShuffleBytes is the size from which a join of two tables
	// above the broadcast size is shuffled rather than gathered: the
	// smaller of the two must be at least this large.
	DefaultShuffleBytes = 64 << 20
	// DefaultShufflePartitions caps the partitions of a shuffled join
	// (one per live worker).
	DefaultShufflePartitions = 16
)

// Session holds the defaults for unqualified names.
type Session struct {
	Catalog string
	Schema  string
	// WAPBranch, when set, is the branch that takes the session's writes
	// and reads of tables with 'write.wap.enabled' = 'true'
	// (write-audit-publish; Spark's spark.wap.branch).
	WAPBranch string
	// ResultCacheOff: the session does not use the result cache (SET
	// result_cache = off).
	ResultCacheOff bool
}

// Worker is one live worker a plan may put endpoints on.
type Worker struct {
	// Location is the Flight location URI, e.g. grpc://127.0.0.1:4001.
	Location string
	// Slots is how many groups the worker should get in parallel.
	Slots int
	// ID names the worker for affinity (affinity.go): it must stay the
	// same across restarts, so files keep going to the worker whose data
	// cache holds them (a configured address, or the worker's index in
	// one process whose workers listen on any free port). Empty means
	// Location.
	ID string
}

// Workers tells the planner which workers are live now.
type Workers interface {
	Live() []Worker
}

// UnreachableReporter is implemented by Workers that want to hear of a
// worker the planner's own calls could not reach, to take it out of
// planning before its next health check.
type UnreachableReporter interface {
	Unreachable(location string)
}

// Options configure a Planner.
type Options struct {
	Mounts  *catalog.Mounts
	Engine  *engine.Engine
	Key     *wire.Key
	Workers Workers
	// Policy decides what each principal may do; nil allows everything
	// (authentication is off).
	Policy *authz.Policy
	// Flight dials the workers for write fragments and ingest, with the
	// cluster's TLS roots and credentials. Required; the caller closes it.
	Flight *flightclient.Pool
	// TicketTTL is how long tickets stay valid; 0 means DefaultTicketTTL.
	TicketTTL time.Duration
	// TargetGroupBytes is the size a task group aims for.
	TargetGroupBytes int64
	// DirectDirs are local directories every worker reads data files
	// from with DuckDB's Parquet reader (engine.Options.ReadDirs; in one
	// process, the local warehouses). A query gathered onto one worker
	// then reads its inputs there itself when they all qualify, instead
	// of pulling scan fragments from the other workers: DuckDB's reader
	// on all of the worker's threads beats decoding in Go on each worker
	// and shipping the rows.
	DirectDirs []string
	// DataCache says every worker keeps local copies of object-store data
	// files and reads them with DuckDB's Parquet reader (a data cache with
	// direct scans): gathers over object-store tables then read in place
	// too, on the worker the largest input's files hash to.
	DataCache bool
	// BroadcastBytes is the size up to which a joined table is read in
	// full by every fragment of the large side; 0 means the default.
	BroadcastBytes int64
	// MaxValueBytes bounds the one value a function such as repeat or
	// lpad may build from a count (valuesize.go); 0 means
	// DefaultMaxValueBytes.
	MaxValueBytes int64
	// ShuffleBytes is the size from which a join of two tables larger
	// than BroadcastBytes runs as hash-partitioned fragments on every
	// worker instead of on one (shuffle.go): the smaller table must be at
	// least this large. 0 means DefaultShuffleBytes; negative shuffles
	// every join that can be.
	ShuffleBytes int64
	// ShufflePartitions caps a shuffled join's partitions, one per live
	// worker; 0 means DefaultShufflePartitions.
	ShufflePartitions int
	// WorkerMemory is the memory one query may take on a worker (its
	// share of the worker's budget), in bytes: a join whose smaller side
	// is estimated above it decoded shuffles even below ShuffleBytes
	// (cost.go). 0: unknown, the size thresholds alone decide.
	WorkerMemory int64
	// Runtime, when set, serves the system.runtime tables (runtime.go)
	// and statement's CALL system.cancel_query.
	Runtime Runtime
	// ResultCache, when set, keeps the results of queries under exact
	// keys (resultcache.go); the flightsql server fills it.
	ResultCache *resultcache.Cache
	// Caches are the coordinator's caches, which system.runtime.caches
	// lists before the workers' (nil: none).
	Caches *cachestats.Registry
	Logger *zap.Logger
}

// Strategy is how a query is spread over the workers.
type Strategy = plan.Strategy

const (
	Scatter  = plan.Scatter
	TwoPhase = plan.TwoPhase
	Gather   = plan.Gather
	// Shuffle runs a join or an aggregate as hash-partitioned fragments (shuffle.go).
	Shuffle = plan.Shuffle
)

// Plan is a planned query: its result schema and one endpoint per ticket.
type Plan struct {
	QueryID   string
	Strategy  Strategy
	Schema    *arrow.Schema
	Endpoints []Endpoint
	// Explain is the printable distributed plan, one "key<TAB>value" line
	// per item.
	Explain string
	// Redacted is Explain without the client's values (literals in
	// fragment SQL and pushed filters are ?), for others to see
	// (redact.go).
	Redacted *RedactedPlan
	// Ordered says the result order is meaningful (ORDER BY).
	Ordered bool
	// ExpiresAt is when the plan's tickets expire.
	ExpiresAt time.Time

	// tree is the physical plan the endpoints were lowered from, and
	// streams what each endpoint runs (lower.go); nil for statements
	// that are not planned queries.
	tree    *plan.Result
	streams []stream
	// restricted refuses EXPLAIN: the plan reads a table under the
	// caller's row filter or column masks, and its files, bytes and row
	// estimates describe the hidden rows too (restrict.go).
	restricted error
	// shapes are what each ticket the plan sealed holds, by its sealed
	// bytes: EXPLAIN ANALYZE's figures per fragment.
	shapes map[string]ticketShape

	// Answer, when set, is the whole result, answered on the coordinator
	// (answer.go): the plan has no endpoints.
	Answer *Answer
	// Fill, when set, says the result of the plan's one endpoint may be
	// kept in the result cache.
	Fill *Fill
}

// ticketShape is what a sealed ticket of a plan holds: how many scans,
// and its children.
type ticketShape struct {
	scans    int
	children []wire.Child
}

// Endpoint is one ticket and the locations that can serve it, owner first.
type Endpoint struct {
	Ticket    []byte
	Locations []string
}
