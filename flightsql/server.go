package flightsql

import (
	"context"
	"errors"
	"fmt"
	"google.golang.org/protobuf/types/known/timestamppb"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/flightio"
	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/internal/resultcache"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/statement"
	"github.com/icefloe/icefloe/wire"
)

// Backend plans and runs client statements, each parsed once
// (internal/parse) by this package's entry points: the statement's kind
// (parse.Info.Runner) says which method runs it. *statement.Executor
// implements it. What a backend may do beyond these methods it declares in
// Capabilities.
type Backend interface {
	// Plan plans a statement that returns rows into a result schema and
	// worker endpoints. args bind its parameters (see params.go).
	Plan(ctx context.Context, s planner.Session, st *parse.Statement, args ...any) (*planner.Plan, error)
	// Bind returns the result schema of a statement that returns rows
	// without planning files.
	Bind(ctx context.Context, s planner.Session, st *parse.Statement, args ...any) (*arrow.Schema, error)
	// Exec runs a DDL or DML statement and returns its update count.
	Exec(ctx context.Context, s planner.Session, st *parse.Statement, args ...any) (int64, error)
	// ExecBatch runs an update for every row of the parameter batches
	// (ADBC's executemany, JDBC's executeBatch) and returns the total
	// count; an INSERT … VALUES commits all rows at once.
	ExecBatch(ctx context.Context, s planner.Session, st *parse.Statement, params []arrow.RecordBatch) (int64, error)
	// Use resolves a USE statement into the session it sets.
	Use(ctx context.Context, s planner.Session, st *parse.Statement) (next planner.Session, err error)
}

var _ Backend = (*statement.Executor)(nil)

// Capabilities are the optional parts of a Backend, each named: a nil field
// is a capability the server does not offer (bulk ingest is then refused as
// unsupported and not advertised in GetSqlInfo, RenewFlightEndpoint answers
// Unimplemented, prepared statements report an empty parameter schema).
type Capabilities struct {
	// Ingest runs bulk ingest (DoPut CommandStatementIngest).
	Ingest Ingester
	// Renew reseals tickets with fresh credentials (RenewFlightEndpoint).
	Renew Renewer
	// Parameters describes a prepared statement's placeholders.
	Parameters ParameterSchemer
}

// ExecutorCapabilities are the capabilities of a *statement.Executor: all of
// them.
func ExecutorCapabilities(ex *statement.Executor) Capabilities {
	return Capabilities{Ingest: ex, Renew: ex, Parameters: ex}
}

// Defaults for Options.
const (
	// DefaultPreparedTTL is how long a prepared-statement handle stays valid.
	DefaultPreparedTTL = 24 * time.Hour
	// DefaultMaxStatementBytes bounds a statement's text: DuckDB's
	// syntax tree of a statement takes some hundred times its text.
	DefaultMaxStatementBytes = 1 << 20
	// DefaultVersion is the server version GetSqlInfo reports when
	// Options.Version is empty.
	DefaultVersion = "dev"
	// ServerName is the FLIGHT_SQL_SERVER_NAME reported to clients.
	ServerName = "icefloe"
)

// countTTL is how long the ticket of an executed update stays valid.
const countTTL = time.Hour

// Options configure a Server.
type Options struct {
	// Backend plans queries and runs updates. Required.
	Backend Backend
	// Capabilities are what Backend offers beyond Backend's methods.
	Capabilities Capabilities
	// Mounts are the catalogs the metadata commands list. Required.
	Mounts *catalog.Mounts
	// DefaultCatalog and DefaultSchema resolve unqualified names when a
	// session sets none; they default to the embedded catalog's
	// catalog.LocalCatalogName and catalog.DefaultSchema.
	DefaultCatalog string
	DefaultSchema  string
	// Key seals prepared-statement handles and update tickets. Required.
	Key *wire.Key
	// Flight dials the workers in single-endpoint mode. Required; the
	// caller closes it.
	Flight *flightclient.Pool
	// Auth, when set, says authentication is on: the single-endpoint
	// proxy pulls from the workers as the caller (a short-lived token of
	// the caller's principal).
	Auth *auth.Authenticator
	// Policy, when set, limits what browsing shows (GetCatalogs,
	// GetDbSchemas, GetTables) to what the caller may see.
	Policy *authz.Policy
	// Audit, when set, gets one line per statement (audit.go).
	Audit *audit.Log
	// Budget, when set, accounts the Arrow buffers the single-endpoint
	// proxy holds to each query and the process (internal/membudget).
	Budget *membudget.Budget
	// MaxStatementBytes bounds the text of one statement; 0 means
	// DefaultMaxStatementBytes, -1 none.
	MaxStatementBytes int
	// Admission bounds the statements running at once (admission.go);
	// its zero value admits everything.
	Admission admit.Options
	// StatementTimeout ends every statement that runs longer, on the
	// coordinator and on every worker; 0 means none. A session may set a
	// shorter one (OptionStatementTimeout).
	StatementTimeout time.Duration
	// PreparedTTL is how long prepared-statement handles stay valid;
	// 0 means DefaultPreparedTTL.
	PreparedTTL time.Duration
	// Version is FLIGHT_SQL_SERVER_VERSION; empty means DefaultVersion.
	Version   string
	Logger    *zap.Logger
	Allocator memory.Allocator
	// Membership, when set, takes the workers' announcements and hears of
	// workers the coordinator's own calls could not reach.
	Membership Membership
	// Queries registers every statement (internal/queryreg); nil means a
	// registry of the coordinator's own that follows no worker.
	Queries *queryreg.Registry
	// ResultCache, when set, is the planner's result cache
	// (planner.Options.ResultCache), which the server fills with the
	// results it proxies for plans that ask (answer.go).
	ResultCache *resultcache.Cache
}

// Membership is the worker pool as the Flight service sees it;
// *WorkerPool implements it.
type Membership interface {
	// Announce handles a worker's sealed announcement from the peer
	// address from and returns the sealed acknowledgement.
	Announce(ctx context.Context, body []byte, from string) ([]byte, error)
	// Unreachable reports a worker a call could not reach.
	Unreachable(location string)
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Backend == nil {
		errs = append(errs, errors.New("flightsql: Backend is required"))
	}
	if o.Mounts == nil {
		errs = append(errs, errors.New("flightsql: Mounts is required"))
	}
	if o.Key == nil {
		errs = append(errs, errors.New("flightsql: Key is required"))
	}
	if o.Flight == nil {
		errs = append(errs, errors.New("flightsql: Flight is required"))
	}
	if err := o.Admission.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.StatementTimeout < 0 {
		errs = append(errs, errors.New("flightsql: StatementTimeout must be >= 0"))
	}
	if o.PreparedTTL < 0 {
		errs = append(errs, errors.New("flightsql: PreparedTTL must be >= 0"))
	}
	if o.PreparedTTL > time.Duration(1<<31-1)*time.Millisecond {
		errs = append(errs, errors.New("flightsql: PreparedTTL must fit in an int32 of milliseconds"))
	}
	return errors.Join(errs...)
}

// String describes the options without the key.
func (o Options) String() string {
	return fmt.Sprintf("flightsql.Options{DefaultCatalog: %q, DefaultSchema: %q, PreparedTTL: %s, Key: redacted}",
		o.DefaultCatalog, o.DefaultSchema, o.PreparedTTL)
}

// Server is the coordinator's Flight SQL service. It is safe for
// concurrent use and keeps no per-client state.
type Server struct {
	flightsql.BaseServer
	opts    Options
	log     *zap.Logger
	alloc   memory.Allocator
	session *sessionMiddleware
	gate    *drainGate
	// statements admits statements (admission.go).
	statements *admit.Limiter
	queries    *queryreg.Registry
	// polls are the statements started by PollFlightInfo (poll.go).
	polls pollTable
}

var _ flightsql.Server = (*Server)(nil)

// New returns a Server for o.
func New(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.DefaultCatalog == "" {
		o.DefaultCatalog = catalog.LocalCatalogName
	}
	if o.DefaultSchema == "" {
		o.DefaultSchema = catalog.DefaultSchema
	}
	if o.MaxStatementBytes == 0 {
		o.MaxStatementBytes = DefaultMaxStatementBytes
	}
	if o.PreparedTTL == 0 {
		o.PreparedTTL = DefaultPreparedTTL
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	statements, err := admit.New(o.Admission)
	if err != nil {
		return nil, err
	}
	if o.Queries == nil {
		if o.Queries, err = queryreg.New(queryreg.Options{}); err != nil {
			return nil, err
		}
	}
	s := &Server{opts: o, log: o.Logger, alloc: o.Allocator, session: newSessionMiddleware(), gate: newDrainGate(), statements: statements,
		queries: o.Queries}
	if o.Budget != nil {
		// What clients stream in (bulk ingest, parameters) and the
		// metadata results count toward the process's budget.
		s.alloc = o.Budget.Process("client stream")
	}
	s.Alloc = o.Allocator
	for id, v := range sqlInfo(o) {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return nil, fmt.Errorf("flightsql: sql info %s: %w", id, err)
		}
	}
	return s, nil
}

// FlightService returns the Flight service to register on a gRPC server.
// Its calls need the interceptors of ServerOptions for sessions.
func (s *Server) FlightService() flight.FlightServer {
	return &flightService{FlightServer: flightsql.NewFlightServerWithAllocator(s, s.alloc), key: s.opts.Key, members: s.opts.Membership,
		authenticated: s.opts.Auth != nil}
}

// Register registers the Flight service on g, which must have been created
// with ServerOptions among its options.
func (s *Server) Register(g *grpc.Server) {
	flight.RegisterFlightServiceServer(g, s.FlightService())
}

// ServerOptions returns the interceptors the Flight service needs (the
// drain gate and the session cookie middleware), to pass to
// grpc.NewServer. They touch only Flight calls, so other services on the
// same server are unaffected.
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.gate.unary, s.session.unary),
		grpc.ChainStreamInterceptor(s.gate.stream, s.session.stream),
	}
}

// flightService refuses worker tickets with a clear error instead of a
// parse failure.
type flightService struct {
	flight.FlightServer
	key     *wire.Key
	members Membership
	// authenticated: the auth interceptors run, and only the cluster
	// (a worker with the cluster token) may announce.
	authenticated bool
}

func (f *flightService) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	if _, err := f.key.Open(t.GetTicket(), time.Now()); !errors.Is(err, wire.ErrMalformed) {
		return ToStatus(ErrWorkerTicket)
	}
	s := &schemaFirstStream{FlightService_DoGetServer: stream}
	s.ctx = context.WithValue(stream.Context(), schemaFirstKey{}, s)
	return f.FlightServer.DoGet(t, s)
}

// schemaFirstStream is a DoGet stream whose handler may send the schema
// before the first batch (sendSchemaNow): arrow-go's Flight SQL server
// writes it only with the first batch.
type schemaFirstStream struct {
	flight.FlightService_DoGetServer
	ctx context.Context
	out flight.DataStreamWriter // set once the schema went out
}

type schemaFirstKey struct{}

func (s *schemaFirstStream) Context() context.Context { return s.ctx }

func (s *schemaFirstStream) Send(fd *flight.FlightData) error {
	if s.out != nil {
		return s.out.Send(fd)
	}
	return s.FlightService_DoGetServer.Send(fd)
}

// sendSchemaNow sends schema on the DoGet stream of ctx now; the stream
// then leaves out the schema message the server writes with the first
// batch.
func sendSchemaNow(ctx context.Context, schema *arrow.Schema, mem memory.Allocator) error {
	s, ok := ctx.Value(schemaFirstKey{}).(*schemaFirstStream)
	if !ok || s.out != nil {
		return nil
	}
	out, err := flightio.SendSchema(s.FlightService_DoGetServer, schema, mem)
	if err != nil {
		return err
	}
	s.out = out
	return nil
}

// emptySchema is the dataset schema of updates and the parameter schema of
// every prepared statement.
var emptySchema = arrow.NewSchema([]arrow.Field{}, nil)

func noTransaction(id []byte) error {
	if len(id) > 0 {
		return fmt.Errorf("%w: transactions", planner.ErrUnsupported)
	}
	return nil
}

// GetFlightInfoStatement parses the statement: a statement that returns
// rows is planned into one endpoint per worker ticket; an update runs now
// (see updateInfo).
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return nil, ToStatus(err)
	}
	sess := s.sessionOf(ctx)
	info, err := s.run(ctx, sess, cmd.GetQuery(), desc)
	return info, ToStatus(err)
}

func (s *Server) run(ctx context.Context, sess planner.Session, query string, desc *flight.FlightDescriptor) (info *flight.FlightInfo, err error) {
	err = s.auditedStatement(ctx, "", query, func(ctx context.Context, st *parse.Statement, _ *audit.Entry) (int64, error) {
		if !st.Info().Rows {
			queryreg.From(ctx).Run()
			if info, err = s.updateInfo(ctx, sess, st, desc); err != nil {
				return 0, err
			}
			return info.TotalRecords, nil
		}
		info, err = s.queryInfo(ctx, sess, st, desc)
		return -1, err
	})
	return info, err
}

// queryInfo plans st and answers with its endpoints.
func (s *Server) queryInfo(ctx context.Context, sess planner.Session, st *parse.Statement, desc *flight.FlightDescriptor, args ...any) (*flight.FlightInfo, error) {
	sess.ResultCacheOff = resultCacheOff(ctx)
	plan, err := s.opts.Backend.Plan(planner.WithAnswers(ctx), sess, st, args...)
	if err != nil {
		return nil, err
	}
	if plan.Schema == nil {
		return nil, errors.New("flightsql: plan has no schema")
	}
	if plan.Answer != nil {
		queryreg.From(ctx).Planned(string(plan.Strategy), plan.Redacted, 1, plan.ExpiresAt)
		return s.answerInfo(ctx, plan, desc)
	}
	eps := make([]*flight.FlightEndpoint, len(plan.Endpoints))
	for i, e := range plan.Endpoints {
		locs := make([]*flight.Location, len(e.Locations))
		for j, l := range e.Locations {
			locs[j] = &flight.Location{Uri: l}
		}
		eps[i] = &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: e.Ticket}, Location: locs}
		if !plan.ExpiresAt.IsZero() {
			eps[i].ExpirationTime = timestamppb.New(plan.ExpiresAt)
		}
	}
	queryreg.From(ctx).Planned(string(plan.Strategy), plan.Redacted, len(eps), plan.ExpiresAt)
	tracing.Logger(ctx, s.log).Debug("planned query", zap.String("query_id", plan.QueryID),
		zap.String("strategy", string(plan.Strategy)), zap.Int("endpoints", len(eps)))
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(plan.Schema, s.alloc),
		FlightDescriptor: desc,
		Endpoint:         eps,
		TotalRecords:     -1,
		TotalBytes:       -1,
		Ordered:          plan.Ordered,
	}
	if plan.Fill != nil && s.opts.ResultCache != nil {
		return s.proxied(ctx, info, plan.QueryID, plan.Fill.Key.Full())
	}
	return s.singleEndpoint(ctx, info, plan.QueryID)
}

// updateInfo runs an update that arrived as a query (Python ADBC sends
// every statement through GetFlightInfo) and answers with an empty schema,
// the update count as TotalRecords (what ADBC reports as rows affected) and
// one endpoint the coordinator serves itself with no rows, for clients that
// read endpoint 0 unconditionally.
func (s *Server) updateInfo(ctx context.Context, sess planner.Session, st *parse.Statement, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	n, err := s.execute(ctx, sess, st)
	if err != nil {
		return nil, err
	}
	return s.countInfo(n, desc)
}

// countInfo answers an executed update (see updateInfo).
func (s *Server) countInfo(n int64, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	handle, err := seal(s.opts.Key, countQueryID, updateCount{Rows: n}, countTTL)
	if err != nil {
		return nil, err
	}
	tkt, err := flightsql.CreateStatementQueryTicket(handle)
	if err != nil {
		return nil, fmt.Errorf("flightsql: ticket: %w", err)
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(emptySchema, s.alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		TotalRecords:     n,
		TotalBytes:       -1,
	}, nil
}

// DoGetStatement serves the tickets the coordinator issued itself: the
// result of an executed update, an empty stream, or a single-endpoint
// ticket (proxy.go).
func (s *Server) DoGetStatement(ctx context.Context, t flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if sc, ch, ok, err := s.doGetAnswer(ctx, t.GetStatementHandle()); ok {
		return sc, ch, ToStatus(err)
	}
	if sc, ch, ok, err := s.doGetProxy(ctx, t.GetStatementHandle()); ok {
		return sc, ch, ToStatus(err)
	}
	var c updateCount
	if err := unseal(s.opts.Key, countQueryID, t.GetStatementHandle(), &c); err != nil {
		return nil, nil, ToStatus(err)
	}
	ch := make(chan flight.StreamChunk)
	close(ch)
	return emptySchema, ch, nil
}

// GetSchemaStatement returns the schema GetFlightInfoStatement would.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return nil, ToStatus(err)
	}
	sc, err := s.schemaOf(ctx, s.sessionOf(ctx), cmd.GetQuery())
	if err != nil {
		return nil, ToStatus(err)
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(sc, s.alloc)}, nil
}

// schemaOf parses query and returns its result schema: Bind's for a
// statement that returns rows, empty for an update.
func (s *Server) schemaOf(ctx context.Context, sess planner.Session, query string) (*arrow.Schema, error) {
	st, err := parse.Parse(query)
	if err != nil {
		return nil, err
	}
	if !st.Info().Rows {
		return emptySchema, nil
	}
	return s.opts.Backend.Bind(ctx, sess, st)
}

// DoPutCommandStatementUpdate runs an update and returns its count.
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd flightsql.StatementUpdate) (int64, error) {
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return 0, ToStatus(err)
	}
	var n int64
	err := s.auditedStatement(ctx, kindUpdate, cmd.GetQuery(), func(ctx context.Context, st *parse.Statement, _ *audit.Entry) (int64, error) {
		if st.Info().Rows {
			return 0, ErrNotQuery
		}
		queryreg.From(ctx).Run()
		var err error
		n, err = s.execute(ctx, s.sessionOf(ctx), st)
		return n, err
	})
	return n, ToStatus(err)
}

// CreatePreparedStatement seals the statement and the session's defaults
// into the handle. Queries get their real dataset schema (Bind); updates an
// empty one, which is how the JDBC driver knows to run them as updates.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	if err := noTransaction(req.GetTransactionId()); err != nil {
		return res, ToStatus(err)
	}
	err := s.auditedStatement(ctx, kindPrepare, req.GetQuery(), func(ctx context.Context, st *parse.Statement, _ *audit.Entry) (int64, error) {
		var err error
		res, err = s.prepare(ctx, st)
		return 0, err
	})
	return res, ToStatus(err)
}

// prepare seals st's text into a handle: a prepared statement is parsed
// once when it is prepared and once each time it runs (the handle keeps
// the text, not the parse).
func (s *Server) prepare(ctx context.Context, st *parse.Statement) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	sess := s.sessionOf(ctx)
	h := preparedHandle{SQL: st.Text, Catalog: sess.Catalog, Schema: sess.Schema, WAPBranch: sess.WAPBranch, Update: !st.Info().Rows}
	dataset := emptySchema
	if !h.Update {
		var err error
		if dataset, err = s.opts.Backend.Bind(ctx, sess, st); err != nil {
			return res, err
		}
	}
	params, err := s.parameterSchema(ctx, sess, st)
	if err != nil {
		return res, err
	}
	handle, err := seal(s.opts.Key, preparedQueryID, h, s.opts.PreparedTTL)
	if err != nil {
		return res, err
	}
	isUpdate := h.Update
	return flightsql.ActionCreatePreparedStatementResult{
		Handle:          handle,
		DatasetSchema:   dataset,
		ParameterSchema: params,
		IsUpdate:        &isUpdate,
	}, nil
}

func (s *Server) prepared(handle []byte) (preparedHandle, error) {
	var h preparedHandle
	err := unseal(s.opts.Key, preparedQueryID, handle, &h)
	return h, err
}

// ClosePreparedStatement does nothing: handles are sealed, not stored.
func (s *Server) ClosePreparedStatement(context.Context, flightsql.ActionClosePreparedStatementRequest) error {
	return nil
}

// GetFlightInfoPreparedStatement plans a prepared query, or runs a prepared
// update as GetFlightInfoStatement does.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	h, err := s.prepared(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, ToStatus(err)
	}
	info, err := s.runPrepared(ctx, h, desc)
	return info, ToStatus(err)
}

// runPrepared plans a prepared query, or runs a prepared update.
func (s *Server) runPrepared(ctx context.Context, h preparedHandle, desc *flight.FlightDescriptor) (info *flight.FlightInfo, err error) {
	kind := kindQuery
	if h.Update {
		kind = kindUpdate
	}
	err = s.auditedStatement(ctx, kind, h.SQL, func(ctx context.Context, st *parse.Statement, _ *audit.Entry) (int64, error) {
		var err error
		if info, err = s.preparedInfo(ctx, h, st, desc); err != nil || !h.Update {
			return -1, err
		}
		return info.TotalRecords, nil
	})
	return info, err
}

// GetSchemaPreparedStatement returns the schema GetFlightInfoPreparedStatement would.
func (s *Server) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	h, err := s.prepared(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, ToStatus(err)
	}
	sc := emptySchema
	if !h.Update {
		if sc, err = s.schemaOf(ctx, h.session(), h.SQL); err != nil {
			return nil, ToStatus(err)
		}
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(sc, s.alloc)}, nil
}

// DoPutPreparedStatementQuery binds parameters: the returned handle
// carries the bound rows (see params.go).
func (s *Server) DoPutPreparedStatementQuery(_ context.Context, cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	handle, err := s.bindParameters(cmd, rdr)
	return handle, ToStatus(err)
}

// DoPutPreparedStatementUpdate runs a prepared update, once per row of
// parameters, and returns the total count.
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	h, err := s.prepared(cmd.GetPreparedStatementHandle())
	if err != nil {
		err = s.audited(ctx, kindUpdate, func(context.Context, *audit.Entry) (int64, error) { return 0, err })
		return 0, ToStatus(err)
	}
	var n int64
	err = s.auditedStatement(ctx, kindUpdate, h.SQL, func(ctx context.Context, st *parse.Statement, _ *audit.Entry) (int64, error) {
		var err error
		n, err = s.updateWithParameters(ctx, h, st, rdr)
		return n, err
	})
	return n, ToStatus(err)
}

// DoAction serves the workers' announcements itself and passes every
// other action to the Flight SQL server.
func (f *flightService) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	if a.GetType() != membership.AnnounceAction {
		return f.FlightServer.DoAction(a, stream)
	}
	if f.authenticated && !auth.FromContext(stream.Context()).Cluster() {
		return ToStatus(fmt.Errorf("%w: only the cluster may announce a worker", planner.ErrDenied))
	}
	if f.members == nil {
		return ToStatus(fmt.Errorf("%w: this coordinator's workers are fixed; it takes no announcements", planner.ErrUnsupported))
	}
	from := "unknown"
	if p, ok := peer.FromContext(stream.Context()); ok {
		from = p.Addr.String()
	}
	ack, err := f.members.Announce(stream.Context(), a.GetBody(), from)
	if err != nil {
		return ToStatus(err)
	}
	return stream.Send(&flight.Result{Body: ack})
}
