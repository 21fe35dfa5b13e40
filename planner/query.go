package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"
	"go.opentelemetry.io/otel/attribute"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/catalog/tablecrypt"
	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/colmeta"
	"github.com/icefloe/icefloe/internal/directscan"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/internal/resultcache"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/planner/plan"
	"github.com/icefloe/icefloe/wire"
)

// input is one distinct table a query reads, pinned for the whole query.
type input struct {
	ref    catalog.TableRef
	pinned *catalog.Pinned
	view   string   // the temp table name fragments read
	cols   []string // projected columns; nil = all
	refs   int      // references to the table in the query
	// filter prunes files on the coordinator; filterJSON is its bound JSON,
	// printed by EXPLAIN.
	filter     iceberg.BooleanExpression
	filterJSON string
	tasks      []table.FileScanTask
	bytes      int64
	// filesBefore and bytesBefore describe the snapshot before pruning.
	filesBefore, bytesBefore int64
	groups                   [][]table.FileScanTask
	places                   []place // where each group runs (affinity.go)
	// encoded are the tasks encoded for tickets, memoised with the plan
	// (plancache.go); encodeScan encodes the others.
	encoded map[taskID]wire.Task

	// snapshot (time travel) and meta (metadata table): see pinnedInput.
	snapshot int64
	meta     string
	// restriction: the caller's grants filter or mask the table, and
	// every reference reads it through restrictedScan (restrict.go).
	restriction *authz.Restriction
}

// bound is a parsed, resolved and bound query.
type bound struct {
	ast     *parsed
	inputs  []*input
	aliases map[string]*input
	sql     string // the query rewritten over the inputs' views
	schema  *arrow.Schema
	// duckTypes are DuckDB's type names of the result columns, when DuckDB
	// could name them and the names are unique (the rewrites that cast to
	// them name the columns).
	duckTypes []string
	// ambiguous: one alias names different tables in different scopes.
	ambiguous bool
	// quoted are the names the statement wrote only in double quotes.
	quoted map[string]bool
	// names maps the views and CTEs the rewrite named to what the
	// statement called them, for messages.
	names map[string]string
	// paramTypes are the types of parameters bound without values (a
	// schema-only bind); see params.go.
	paramTypes paramKinds
	// standIns: the inputs' stand-in tables are on the connection.
	standIns bool
	// key is the bind key (bindKey) of a query bound with its values.
	key string
}

// Bind returns the result schema of a statement that returns rows, as
// every stream of its plan will carry it. args bind the statement's
// parameters (see params.go); without any, parameters bind as typed
// NULLs.
func (p *Planner) Bind(ctx context.Context, s Session, st *parse.Statement, args ...any) (*arrow.Schema, error) {
	r, err := queryRunnerOf(st, args)
	if err != nil {
		return nil, err
	}
	return r.bind(p, ctx, s, st, args)
}

// Plan plans a statement that returns rows over the live workers. args
// bind the statement's parameters, one per placeholder (see params.go).
func (p *Planner) Plan(ctx context.Context, s Session, st *parse.Statement, args ...any) (*Plan, error) {
	workers, err := p.LiveWorkers()
	if err != nil {
		return nil, err
	}
	r, err := queryRunnerOf(st, args)
	if err != nil {
		return nil, err
	}
	return r.plan(p, ctx, s, st, workers, args)
}

// queryRunner answers one kind of statement that returns rows (the kinds
// whose parse.Info.Runner is parse.RunPlanner): bind gives its result
// schema, plan its endpoints. Each registers itself (registerQuery) in
// the file that answers it: queries here, EXPLAIN in explain.go, SHOW and
// DESCRIBE in show.go. CALL has none: statement.Executor runs it and plans
// its rows (PlanRows).
type queryRunner struct {
	bind func(p *Planner, ctx context.Context, s Session, st *parse.Statement, args []any) (*arrow.Schema, error)
	plan func(p *Planner, ctx context.Context, s Session, st *parse.Statement, workers []Worker, args []any) (*Plan, error)
}

var queryRunners = map[parse.Kind]queryRunner{}

func registerQuery(k parse.Kind, r queryRunner) { queryRunners[k] = r }

// queryRunnerOf is the runner of st's kind, or why there is none.
func queryRunnerOf(st *parse.Statement, args []any) (queryRunner, error) {
	r, ok := queryRunners[st.Kind]
	if !ok && st.Info().Rows {
		return r, fmt.Errorf("%w: %s runs through statement.Executor", ErrUnsupported, st.Kind)
	}
	if !ok {
		return r, fmt.Errorf("%w: %s returns no rows; run it as an update", ErrUnsupported, st.Kind)
	}
	if len(args) > 0 && !st.Info().Params {
		return r, fmt.Errorf("%w: parameters in %s", ErrUnsupported, st.Kind)
	}
	return r, nil
}

func init() {
	q := queryRunner{bind: (*Planner).bindQuery, plan: (*Planner).planQuery}
	registerQuery(parse.KindSelect, q)
	registerQuery(parse.KindSummarize, q)
}

// bindQuery is Bind of a query DuckDB parses.
func (p *Planner) bindQuery(ctx context.Context, s Session, st *parse.Statement, args []any) (*arrow.Schema, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	b, err := p.bind(ctx, conn, s, st, false, args...)
	if err != nil {
		return nil, err
	}
	return b.schema, nil
}

// planQuery is Plan of a query DuckDB parses.
func (p *Planner) planQuery(ctx context.Context, s Session, st *parse.Statement, workers []Worker, args []any) (*Plan, error) {
	return p.planQueryInto(ctx, s, st, workers, args, nil)
}

// planQueryInto plans a query DuckDB parses; with sink, its endpoints
// are the fragments of that write (PlanWrite): lowering seals each
// endpoint's ticket with the write spec.
func (p *Planner) planQueryInto(ctx context.Context, s Session, st *parse.Statement, workers []Worker, args []any, sink *wire.Write) (plan *Plan, err error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Strategies that bind fragments load the stand-ins they need.
	b, err := p.bind(ctx, conn, s, st, false, args...)
	if err != nil {
		return nil, err
	}
	if len(b.paramTypes) > 0 {
		return nil, fmt.Errorf("%w: the statement has %d parameters, no values were bound", ErrInvalid, len(b.paramTypes))
	}
	var notes []string
	var fill *resultcache.Key
	if answering(ctx) {
		var answered *Plan
		if answered, notes, fill, err = p.answerFirst(ctx, conn, s, b, args); err != nil || answered != nil {
			if answered != nil {
				audit.From(ctx).QueryID(answered.QueryID)
			}
			return answered, err
		}
	}
	// The tickets carry the statement's span, not the plan's: the
	// fragments run after planning, under the statement.
	stamp := stampOf(ctx)
	ctx, span := tracing.Span(ctx, "plan")
	defer func() {
		if plan != nil {
			span.SetAttributes(attribute.String("icefloe.query_id", plan.QueryID),
				attribute.String("icefloe.strategy", string(plan.Strategy)), attribute.Int("icefloe.endpoints", len(plan.Endpoints)))
		}
		tracing.End(span, err)
	}()
	for _, in := range b.inputs {
		if err := p.planFiles(ctx, in); err != nil {
			return nil, err
		}
		in.groups, in.places = assignGroups(in.tasks, workers, p.opts.TargetGroupBytes)
	}
	pb := &planBuilder{p: p, b: b, conn: conn, workers: workers, stamp: stamp, write: sink,
		plan:    &Plan{QueryID: newQueryID(ctx), Schema: b.schema},
		expires: ticketExpiry(time.Now().Add(p.opts.TicketTTL), b.inputs)}
	pb.plan.ExpiresAt = pb.expires
	audit.From(ctx).QueryID(pb.plan.QueryID)
	root, _ := b.ast.root["node"].(node)
	if order, _, _, _ := modifiersOf(root); order != nil && str(root, "type") == "SELECT_NODE" {
		pb.plan.Ordered = true
	}
	res, err := pb.choose(ctx, root)
	if err != nil {
		return nil, err
	}
	if err := pb.lower(res); err != nil {
		return nil, err
	}
	pb.explain = append(pb.explain, explainLines(res, pb.scans)...)
	pb.redacted = append(pb.redacted, redactedLines(res, pb.scans, &pb.rplan)...)
	for _, l := range notes {
		k, v, _ := strings.Cut(l, "\t")
		pb.note(k, "%s", v)
	}
	if fill != nil {
		if len(pb.tickets) == 1 {
			pb.plan.Fill = &Fill{Key: *fill}
			pb.note("result cache", "the result will be kept: its one endpoint is read through the coordinator")
		} else {
			pb.note("result cache", "the result will not be kept: %d endpoints", len(pb.tickets))
		}
	}
	_, seal := tracing.Span(ctx, "seal")
	plan, err = pb.finish()
	tracing.End(seal, err)
	return plan, err
}

// boundInputs are the inputs of the plan's query; none for plans of no
// query (LinesPlan).
func (pb *planBuilder) boundInputs() []*input {
	if pb.b == nil {
		return nil
	}
	return pb.b.inputs
}

// LiveWorkers returns the workers a plan may use now, or ErrNoWorkers
// when none is serving.
func (p *Planner) LiveWorkers() ([]Worker, error) {
	workers := p.opts.Workers.Live()
	if len(workers) == 0 {
		return nil, fmt.Errorf("%w: no worker is serving; check the workers' health", ErrNoWorkers)
	}
	return workers, nil
}

// planBuilder collects one plan's tickets.
type planBuilder struct {
	p *Planner
	// stamp is who plans, the statement's deadline and trace: every
	// ticket carries it.
	stamp stamp
	// write, when set, is the write spec every endpoint's ticket carries
	// (a write's fragments: sink.go), endpoint i writing with
	// FragmentUUID(write.WriteUUID, i).
	write   *wire.Write
	b       *bound
	conn    *engine.Conn
	workers []Worker
	plan    *Plan
	expires time.Time
	explain []string // lines "key\tvalue"
	// redacted are the lines of Plan.Redacted: notes as they are (they
	// hold names and figures), the plan without the client's values.
	redacted []string
	// rplan holds the fragments' SQL of Plan.Redacted.
	rplan RedactedPlan
	// scans describe the inputs for the plan (rules.go).
	scans   []*plan.Scan
	tickets []*wire.Ticket
	places  []place
	next    int
	// exchanges number the hash exchanges lowered, producers are where
	// each producer instance runs (lower.go).
	exchanges map[*plan.Exchange]int
	producers map[string]place
}

// note adds a line of icefloe's own text — names, figures, SQL it built
// of names — to the plan's Explain and Redacted alike.
func (pb *planBuilder) note(key, format string, args ...any) {
	l := key + "\t" + fmt.Sprintf(format, args...)
	pb.explain, pb.redacted = append(pb.explain, l), append(pb.redacted, l)
}

// rotate returns the next worker, round robin, with the one after it as
// fallback: for tickets that read no files of their own.
func (pb *planBuilder) rotate() place {
	i := pb.next % len(pb.workers)
	pb.next++
	pl := place{owner: i, fallback: -1}
	if len(pb.workers) > 1 {
		pl.fallback = (i + 1) % len(pb.workers)
	}
	return pl
}

func (pb *planBuilder) locations(pl place) []string {
	locs := []string{pb.workers[pl.owner].Location}
	if pl.fallback >= 0 && pl.fallback != pl.owner {
		locs = append(locs, pb.workers[pl.fallback].Location)
	}
	return locs
}

func (pb *planBuilder) ticket(scans []wire.Scan, sql string, schema *arrow.Schema) *wire.Ticket {
	return &wire.Ticket{QueryID: pb.plan.QueryID, ExpiresAt: pb.expires, Scans: scans, SQL: sql,
		Schema: flight.SerializeSchema(schema, memory.DefaultAllocator)}
}

// endpoint adds a ticket as one endpoint of the plan, on the next worker.
func (pb *planBuilder) endpoint(t *wire.Ticket) { pb.endpointAt(t, pb.rotate()) }

// endpointAt adds a ticket as one endpoint of the plan, run at pl.
func (pb *planBuilder) endpointAt(t *wire.Ticket, pl place) {
	pb.tickets = append(pb.tickets, t)
	pb.places = append(pb.places, pl)
}

// child seals t as a child fragment run at pl.
func (pb *planBuilder) child(view string, t *wire.Ticket, pl place) (wire.Child, error) {
	t.Child = true
	sealed, err := pb.seal(t)
	if err != nil {
		return wire.Child{}, err
	}
	return wire.Child{View: view, Ticket: sealed, Locations: pb.locations(pl)}, nil
}

// seal seals one ticket of the plan (Planner.seal) and keeps its shape,
// so that EXPLAIN ANALYZE reads the plan's tickets without opening them.
func (pb *planBuilder) seal(t *wire.Ticket) ([]byte, error) {
	sealed, err := pb.p.seal(pb.stamp, t)
	if err != nil {
		return nil, err
	}
	if pb.plan.shapes == nil {
		pb.plan.shapes = map[string]ticketShape{}
	}
	pb.plan.shapes[string(sealed)] = ticketShape{scans: len(t.Scans), children: t.Children}
	return sealed, nil
}

// finish seals the plan's endpoint tickets, a write's each with its
// fragment of the write spec, and completes the plan.
func (pb *planBuilder) finish() (*Plan, error) {
	for i, t := range pb.tickets {
		pb.withWrite(t, i)
		sealed, err := pb.seal(t)
		if err != nil {
			return nil, err
		}
		locs := pb.locations(pb.places[i])
		pb.plan.Endpoints = append(pb.plan.Endpoints, Endpoint{Ticket: sealed, Locations: locs})
		pb.note("endpoint "+strconv.Itoa(i), "%s (fallback %s), %d scans, %d children", locs[0], strings.Join(locs[1:], ","), len(t.Scans), len(t.Children))
	}
	pb.plan.Explain = strings.Join(pb.explain, "\n") + "\n"
	pb.plan.Redacted = &RedactedPlan{lines: pb.redacted, sql: pb.rplan.sql}
	for _, in := range pb.boundInputs() {
		if in.restriction != nil {
			pb.plan.restricted = restrictedError(in.ref, in.restriction, pb.stamp.principal,
				"EXPLAIN would describe the files and rows hidden from "+pb.stamp.principal+", so it is refused")
			pb.plan.Explain = "plan\t" + pb.plan.restricted.Error() + "\n"
			pb.plan.Redacted = &RedactedPlan{lines: strings.Split(strings.TrimSuffix(pb.plan.Explain, "\n"), "\n")}
			break
		}
	}
	return pb.plan, nil
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

func fieldNames(s *arrow.Schema) []string {
	out := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}

// passthrough tells whether the query is a bare projection of in — SELECT *
// or plain columns, no WHERE — whose bound schema equals the schema
// iceberg-go reads, so workers may stream the scan without DuckDB.
func (pb *planBuilder) passthrough(in *input) bool {
	root, _ := pb.b.ast.root["node"].(node)
	if root == nil || root["where_clause"] != nil || in.meta != "" || in.restriction != nil || len(pb.b.inputs) != 1 {
		return false
	}
	list, _ := root["select_list"].([]any)
	for _, it := range list {
		n, _ := it.(node)
		switch str(n, "class") {
		case "STAR":
			if str(n, "relation_name") != "" || n["columns"] == true || n["expr"] != nil ||
				len(anyList(n["exclude_list"])) > 0 || len(anyList(n["qualified_exclude_list"])) > 0 ||
				len(anyList(n["replace_list"])) > 0 || len(anyList(n["rename_list"])) > 0 {
				return false
			}
		case "COLUMN_REF":
		default:
			return false
		}
	}
	read, err := inputSchema(context.Background(), in)
	if err != nil || read.NumFields() != pb.b.schema.NumFields() {
		return false
	}
	for i := range read.Fields() {
		r, b := read.Field(i), pb.b.schema.Field(i)
		if r.Name != b.Name || !arrow.TypeEqual(r.Type, b.Type) {
			return false
		}
	}
	return true
}

// broadcastable finds the input a join can be split on, with every other
// input small enough to be read whole by each fragment (broadcast): the
// leftmost table, or, when every join is an inner or cross join (which
// distributes over a split of any of its sides), the largest. The split
// input must appear once in the join; ok is false when no input fits.
func (pb *planBuilder) broadcastable(from node) (*input, []*input, bool) {
	leaves, ok := joinLeaves(from)
	if !ok || len(leaves) < 2 {
		return nil, nil, false
	}
	big, small, ok := pb.splitInput(from, leaves)
	if !ok || len(small)+1 != len(pb.b.inputs) {
		return nil, nil, false
	}
	return big, small, true
}

// splitInput is broadcastable over leaves, the base tables of from (one
// or more), without asking that they be all the query's inputs.
func (pb *planBuilder) splitInput(from node, leaves []node) (*input, []*input, bool) {
	byView := map[string]*input{}
	for _, in := range pb.b.inputs {
		byView[in.view] = in
	}
	big := byView[str(leaves[0], "table_name")]
	if big == nil {
		return nil, nil, false
	}
	if innerJoins(from) {
		for _, l := range leaves[1:] {
			if in := byView[str(l, "table_name")]; in != nil && in.bytes > big.bytes {
				big = in
			}
		}
	}
	var small []*input
	seen := map[*input]bool{}
	bigSeen := false
	for _, l := range leaves {
		in := byView[str(l, "table_name")]
		switch {
		case in == big && !bigSeen:
			bigSeen = true
			continue
		case in == nil || in == big || in.bytes > pb.p.opts.BroadcastBytes:
			return nil, nil, false
		}
		if !seen[in] {
			seen[in] = true
			small = append(small, in)
		}
	}
	return big, small, true
}

// innerJoins tells whether every join of the FROM tree n is an inner or
// cross join.
func innerJoins(n node) bool {
	if str(n, "type") != "JOIN" {
		return true
	}
	if jt := str(n, "join_type"); jt != "INNER" {
		return false
	}
	l, _ := n["left"].(node)
	r, _ := n["right"].(node)
	return innerJoins(l) && innerJoins(r)
}

func (pb *planBuilder) deparse(p *parsed) (string, error) {
	doc, err := p.document()
	if err != nil {
		return "", err
	}
	return pb.conn.DeserializeSQL(context.Background(), doc)
}

// phases is a two-phase split bound over the query's inputs: the partial
// SQL, the schema its rows have and the final SQL over them.
type phases struct {
	kind          string
	partialSQL    string
	partialSchema *arrow.Schema
	final         string
	childLimit    int64
}

// phases binds tp's partial step and checks its final step binds over the
// partials to exactly the query's schema; nil when it does not.
func (pb *planBuilder) phases(ctx context.Context, tp *twoPhase) (*phases, error) {
	partialSQL, err := pb.deparse(statement(tp.partial))
	if err != nil {
		return nil, nil
	}
	if err := pb.b.loadStandIns(ctx, pb.conn); err != nil {
		return nil, err
	}
	rdr, err := pb.conn.Query(ctx, partialSQL, engine.QueryOptions{})
	if err != nil {
		return nil, nil
	}
	partialSchema := rdr.Schema()
	rdr.Release()
	final := tp.final
	if tp.finalAST != nil {
		if final, err = pb.deparse(statement(tp.finalAST)); err != nil {
			return nil, nil
		}
	}
	if tp.wrap {
		if pb.b.duckTypes == nil {
			return nil, nil
		}
		final = castWrap(final, fieldNames(pb.b.schema), pb.b.duckTypes)
	}
	// The final must bind over the partials to exactly the bound schema.
	if err := pb.conn.Exec(ctx, "DROP TABLE IF EXISTS "+partialsView); err != nil {
		return nil, err
	}
	empty, err := array.NewRecordReader(partialSchema, nil)
	if err != nil {
		return nil, err
	}
	err = pb.conn.LoadTable(ctx, partialsView, empty)
	empty.Release()
	if err != nil {
		return nil, nil
	}
	frdr, err := pb.conn.Query(ctx, final, engine.QueryOptions{})
	if err != nil {
		return nil, nil
	}
	ok := sameSchema(frdr.Schema(), pb.b.schema)
	frdr.Release()
	if !ok {
		return nil, nil
	}
	return &phases{kind: tp.kind, partialSQL: partialSQL, partialSchema: partialSchema, final: final, childLimit: tp.childLimit}, nil
}

// gatherPlace is where a gather that reads its inputs itself runs: where
// its largest input's files are, so that worker's data cache holds them
// across queries (the group's place when the input is one group, else the
// rendezvous place of the table's location).
func (pb *planBuilder) gatherPlace() place {
	var big *input
	for _, in := range pb.b.inputs {
		if big == nil || in.bytes > big.bytes {
			big = in
		}
	}
	if big == nil {
		return pb.rotate()
	}
	if len(big.places) == 1 {
		return big.places[0]
	}
	return placeKey(pb.workers, big.pinned.Table.Location())
}

// readsDirect tells whether every input is a scan a worker reads with
// DuckDB's Parquet reader (Options.DirectDirs and internal/directscan, or
// object-store files with Options.DataCache); the worker checks the
// files' footers as well and falls back to iceberg-go on its own.
func (p *Planner) readsDirect(inputs []*input) bool {
	if (len(p.opts.DirectDirs) == 0 && !p.opts.DataCache) || len(inputs) == 0 {
		return false
	}
	canRead := func(path string) bool { return engine.Under(path, p.opts.DirectDirs) }
	for _, in := range inputs {
		if in.meta != "" {
			return false
		}
		schema := in.pinned.Table.Schema()
		if in.snapshot != 0 {
			snap := in.pinned.Table.SnapshotByID(in.snapshot)
			if snap == nil || snap.SchemaID == nil {
				return false
			}
			s, ok := in.pinned.Table.Schemas()[*snap.SchemaID]
			if !ok {
				return false
			}
			schema = s
		}
		if _, ok := directscan.Fields(schema, in.cols); !ok {
			return false
		}
		if _, ok := directscan.Files(in.tasks, canRead); !ok && !(p.opts.DataCache && cachedFiles(in.tasks) && !encryptedInput(in)) {
			return false
		}
	}
	return true
}

// cachedFiles tells whether every task is a whole object-store Parquet
// file without deletes: what a worker's data cache lets DuckDB read.
func cachedFiles(tasks []table.FileScanTask) bool {
	if len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		if _, local := catalog.LocalPath(t.File.FilePath()); local || !directscan.Whole(t) {
			return false
		}
	}
	return true
}

// encryptedInput tells whether the input's files are encrypted
// (catalog/tablecrypt): the workers' data caches do not keep them, so
// DuckDB cannot read them from copies.
func encryptedInput(in *input) bool {
	return in.pinned.Table.Properties()[tablecrypt.KeyIDProp] != ""
}

// sameSchema compares names and types; nullability and metadata come from
// the bound schema anyway.
func sameSchema(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		if a.Field(i).Name != b.Field(i).Name || !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

func snapshotID(in *input) int64 {
	if s := in.pinned.Table.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}

// stamp is what every ticket of a statement carries about it: the
// principal it is bound to, the statement's deadline and its trace; and
// the statement's registry entry, which counts the files its tickets
// will read.
type stamp struct {
	principal string
	deadline  admit.Deadline
	trace     string
	query     *queryreg.Query
}

// stampOf is the stamp of ctx's statement.
func stampOf(ctx context.Context) stamp {
	return stamp{principal: auth.Name(ctx), deadline: admit.DeadlineOf(ctx), trace: tracing.Traceparent(ctx), query: queryreg.From(ctx)}
}

// seal stamps a ticket with st and the time it was planned, and seals it:
// every ticket the planner makes goes through here — the endpoints and
// children of queries and writes (planBuilder.seal), ingest's write
// tickets and renewed tickets (with the stamp they were planned with) —
// so that each carries its principal, deadline, trace and issue time, and so the files and
// bytes its scans name are the statement's planned work, which its
// progress is measured against (the workers count the same of each
// ticket they served).
func (p *Planner) seal(st stamp, t *wire.Ticket) ([]byte, error) {
	t.Principal, t.Trace = st.principal, st.trace
	t.Deadline, t.Timeout = st.deadline.At, st.deadline.Timeout
	if t.IssuedAt.IsZero() {
		t.IssuedAt = time.Now()
	}
	sealed, err := p.opts.Key.Seal(t)
	if err == nil {
		var files, bytes int64
		for _, sc := range t.Scans {
			files, bytes = files+int64(len(sc.Tasks)), bytes+sc.Bytes
		}
		st.query.Plans(files, bytes)
	}
	return sealed, err
}

// newQueryID is the id of the statement ctx runs (the coordinator's query
// registry gave it one), else a fresh one: every ticket of a statement
// carries the same id, by which the workers report and cancel it.
func newQueryID(ctx context.Context) string {
	if id := queryreg.IDFrom(ctx); id != "" {
		return id
	}
	return queryreg.NewID()
}

// bind parses, resolves, rewrites and binds a query on conn, leaving the
// stand-in tables there for the strategies.
//
// Without standIns (a schema-only bind), a query bound before over the
// same table versions is answered from the bind memo (bindcache.go)
// without DuckDB.
func (p *Planner) bind(ctx context.Context, conn *engine.Conn, s Session, query *parse.Statement, standIns bool, args ...any) (b *bound, err error) {
	ast, err := p.parse(ctx, conn, query)
	if err != nil {
		return nil, err
	}
	ctx, span := tracing.Span(ctx, "bind")
	defer func() { tracing.End(span, err) }()
	if hasParams(ast) {
		// Before anything changes the select lists' expressions.
		if err := nameParamColumns(ctx, conn, ast); err != nil {
			return nil, err
		}
	}
	substituteSession(ast, s)
	if err := refuseEscapes(ast); err != nil {
		return nil, err
	}
	unbound := len(args) == 0 && hasParams(ast)
	if !unbound {
		if err := substituteParams(ast, args); err != nil {
			return nil, err
		}
	}
	b = &bound{ast: ast, aliases: map[string]*input{}, quoted: query.QuotedNames(), names: map[string]string{}}
	if err := p.resolve(ctx, conn, s, b); err != nil {
		return nil, err
	}
	// After resolve, which inlines views: their calls are guarded too.
	if err := boundValueSizes(ctx, conn, ast, p.opts.MaxValueBytes); err != nil {
		return nil, err
	}
	root, _ := ast.root["node"].(node)
	if !b.ambiguous {
		pruneColumns(root, b.inputs, b.aliases)
		refCount := map[*input]int{}
		for _, in := range b.inputs {
			refCount[in] = in.refs
		}
		pushFilters(root, b.inputs, b.aliases, refCount)
	}
	doc, err := ast.document()
	if err != nil {
		return nil, err
	}
	key := planCacheKey{principal: auth.Name(ctx), grants: p.GrantsVersion(ctx), session: s,
		params: args, doc: doc, inputs: b.inputs}.String()
	if !unbound {
		b.key = key
	}
	if !unbound && p.recallBind(key, b) {
		if standIns {
			return b, b.loadStandIns(ctx, conn)
		}
		return b, nil
	}
	if b.sql, err = conn.DeserializeSQL(ctx, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := b.loadStandIns(ctx, conn); err != nil {
		return nil, err
	}
	if unbound {
		if b.paramTypes, err = b.bindTypedNulls(ctx, conn); err != nil {
			return nil, err
		}
	}
	if err := b.resultSchema(ctx, conn); err != nil {
		return nil, err
	}
	if !unbound {
		p.rememberBind(key, b)
	}
	return b, nil
}

// parse has DuckDB's parser check query and returns its syntax tree; the
// parse is memoised by the query's text (bindcache.go).
func (p *Planner) parse(ctx context.Context, conn *engine.Conn, query *parse.Statement) (_ *parsed, err error) {
	ctx, span := tracing.Span(ctx, "parse")
	defer func() { tracing.End(span, err) }()
	q := query.Query()
	if q == nil {
		return nil, fmt.Errorf("%w: %s is not a query", ErrUnsupported, query.Kind)
	}
	text, err := p.serialize(ctx, conn, q.Duck)
	if err != nil {
		return nil, err
	}
	return parseAST(text)
}

// standInWait bounds how long a stand-in that failed for memory waits
// for other statements to release it before it fails too.
const standInWait = 5 * time.Second

// loadStandIns makes each input's view an empty temp table with the exact
// Arrow schema the workers will load, once: what queries and fragments
// bind against on the coordinator.
func (b *bound) loadStandIns(ctx context.Context, conn *engine.Conn) error {
	if b.standIns {
		return nil
	}
	b.standIns = true
	for _, in := range b.inputs {
		sch, err := inputSchema(ctx, in)
		if err != nil {
			return fmt.Errorf("schema of %s: %w", in.ref, err)
		}
		err = loadEmpty(ctx, conn, in.view, sch)
		if engine.IsOutOfMemory(err) && conn.WaitForMemory(ctx, standInWait) {
			// A table of no rows needs next to no memory: another
			// statement held it. Once that one let go, load it again.
			err = loadEmpty(ctx, conn, in.view, sch)
		}
		if err != nil {
			return fmt.Errorf("stand-in for %s: %w", in.ref, err)
		}
	}
	return nil
}

// loadEmpty makes name a temp table of no rows with schema sch.
func loadEmpty(ctx context.Context, conn *engine.Conn, name string, sch *arrow.Schema) error {
	empty, err := array.NewRecordReader(sch, nil)
	if err != nil {
		return err
	}
	defer empty.Release()
	return conn.LoadTable(ctx, name, empty)
}

// resultSchema sets b.schema, the bound query's result schema, and
// b.duckTypes, DuckDB's type names of its columns.
func (b *bound) resultSchema(ctx context.Context, conn *engine.Conn) error {
	rdr, err := conn.Query(ctx, b.sql, engine.QueryOptions{})
	if err != nil {
		return bindError(err, b)
	}
	schema := rdr.Schema()
	rdr.Release()
	names := typeNames(ctx, conn, b.sql, schema.NumFields())
	// Every stream, the FlightInfo and the prepared statement's dataset
	// schema carry the same Flight SQL column metadata (JDBC's
	// ResultSetMetaData reads precision and scale there).
	b.schema = colmeta.Schema(schema, names)
	if !duplicateNames(schema) {
		b.duckTypes = names
	}
	return nil
}

func duplicateNames(s *arrow.Schema) bool {
	seen := map[string]bool{}
	for _, f := range s.Fields() {
		if seen[f.Name] {
			return true
		}
		seen[f.Name] = true
	}
	return false
}

// typeNames names the result's DuckDB types, or nil when DuckDB cannot
// say.
func typeNames(ctx context.Context, conn *engine.Conn, sql string, n int) []string {
	cols := make([]string, n)
	for i := range cols {
		cols[i] = fmt.Sprintf("__c%d", i)
	}
	// The columns are renamed so that duplicate names can be materialised.
	if err := conn.Exec(ctx, "CREATE TEMP TABLE __icefloe_shape AS SELECT * FROM ("+sql+") AS __q("+strings.Join(cols, ", ")+") LIMIT 0"); err != nil {
		return nil
	}
	defer conn.Exec(ctx, "DROP TABLE IF EXISTS __icefloe_shape")
	rows, err := conn.DB().QueryContext(ctx, "SELECT data_type FROM duckdb_columns() WHERE table_name = '__icefloe_shape' AND database_name = 'temp' ORDER BY column_index")
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if rows.Scan(&t) != nil {
			return nil
		}
		out = append(out, t)
	}
	if len(out) != n {
		return nil
	}
	return out
}

// bindError classifies a DuckDB error from binding a client query. b,
// when given, names the query's tables back in the message (userText).
func bindError(err error, b ...*bound) error {
	msg := err.Error()
	if len(b) > 0 {
		msg = b[0].userText(msg)
	}
	switch {
	case strings.Contains(msg, "Parser Error"):
		return &UserError{Kind: ErrSyntax, Msg: msg}
	case strings.Contains(msg, "Permission Error"):
		return &UserError{Kind: ErrRefused, Msg: msg}
	default:
		return &UserError{Kind: ErrInvalid, Msg: msg}
	}
}

// resolve points every table reference at what it names: a CTE in scope,
// or a table of a mounted catalog, pinned once per distinct table. Both
// are renamed, the CTEs to __icefloe_cN and the tables to their views
// __icefloe_tN (the original name stays as the alias), so no name a
// client wrote is left for DuckDB to look up in its own catalog — neither
// DuckDB's views (pg_settings, duckdb_columns, information_schema.*) nor
// anything else. A CTE is in scope in the rest of its query and in the
// CTEs defined after it (a recursive one also in itself), as in DuckDB; a
// reference the scoping takes for a CTE that DuckDB would not see there
// finds nothing under the new name, and fails.
func (p *Planner) resolve(ctx context.Context, conn *engine.Conn, s Session, b *bound) error {
	r := &resolver{p: p, conn: conn, s: s, b: b, byRef: map[catalog.TableRef]*input{}}
	r.visit(ctx, b.ast.root, nil)
	for k, v := range b.aliases {
		if v == nil {
			// Read every column and push no filter.
			delete(b.aliases, k)
			b.ambiguous = true
		}
	}
	return r.err
}

// resolver carries one query's resolution.
type resolver struct {
	p     *Planner
	conn  *engine.Conn
	s     Session
	b     *bound
	byRef map[catalog.TableRef]*input
	ctes  int
	err   error
	// viewPath are the views being expanded, outermost first.
	viewPath []catalog.TableRef
}

// viewNamesKey carries, in a bind's context, the views tables must be read
// as (withViewNames).
type viewNamesKey struct{}

// withViewNames makes the binds under ctx read the tables of views (of
// their current version) under those names, so that two statements bound
// apart read the same tables as the same views (a rewrite's fragment runs
// both over one set of loaded tables).
func withViewNames(ctx context.Context, views map[catalog.TableRef]string) context.Context {
	return context.WithValue(ctx, viewNamesKey{}, views)
}

// viewName names the view of the next new input, ref.
func (r *resolver) viewName(ctx context.Context, ref catalog.TableRef, at node) string {
	views, _ := ctx.Value(viewNamesKey{}).(map[catalog.TableRef]string)
	if v, ok := views[ref]; ok && at == nil {
		return v
	}
	name := fmt.Sprintf("__icefloe_t%d", len(r.b.inputs))
	for slices.Contains(slices.Collect(maps.Values(views)), name) {
		name += "x"
	}
	return name
}

// cteScope maps the lower-cased names of the CTEs in scope to their new
// names; inner scopes shadow outer ones.
type cteScope map[string]string

func (sc cteScope) with(name, renamed string) cteScope {
	out := make(cteScope, len(sc)+1)
	for k, v := range sc {
		out[k] = v
	}
	out[strings.ToLower(name)] = renamed
	return out
}

func (r *resolver) visit(ctx context.Context, v any, scope cteScope) {
	if r.err != nil {
		return
	}
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			r.visit(ctx, c, scope)
		}
	case node:
		if isTableRef(x) && str(x, "type") == "BASE_TABLE" {
			r.table(ctx, x, scope)
			return
		}
		if m, ok := x["cte_map"].(node); ok {
			scope = r.withCTEs(ctx, m, scope)
		}
		// In key order, so that tables get the same views in every run.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if k != "cte_map" {
				r.visit(ctx, x[k], scope)
			}
		}
	}
}

// withCTEs renames the CTEs of one WITH, resolves their bodies each in the
// scope of the CTEs before it, and returns the scope of the query.
func (r *resolver) withCTEs(ctx context.Context, m node, scope cteScope) cteScope {
	list, _ := m["map"].([]any)
	for _, e := range list {
		en, ok := e.(node)
		if !ok {
			continue
		}
		name := str(en, "key")
		r.ctes++
		renamed := fmt.Sprintf("__icefloe_c%d", r.ctes)
		en["key"] = renamed
		r.b.names[renamed] = name
		body, _ := en["value"].(node)
		q, _ := body["query"].(node)
		inner := scope
		if qn, _ := q["node"].(node); str(qn, "type") == "RECURSIVE_CTE_NODE" {
			qn["cte_name"] = renamed
			inner = scope.with(name, renamed)
		}
		r.visit(ctx, body, inner)
		scope = scope.with(name, renamed)
	}
	return scope
}

// table resolves one BASE_TABLE reference.
func (r *resolver) table(ctx context.Context, n node, scope cteScope) {
	b := r.b
	cat, sch, name := str(n, "catalog_name"), str(n, "schema_name"), str(n, "table_name")
	if renamed, ok := scope[strings.ToLower(name)]; ok && cat == "" && sch == "" {
		if str(n, "alias") == "" {
			n["alias"] = name
		}
		n["table_name"] = renamed
		return
	}
	if r.infoSchemaTable(ctx, n) || r.runtimeTable(ctx, n) {
		return
	}
	if err := refuseDuckDBCatalog(cat, sch, name); err != nil {
		r.err = err
		return
	}
	at, _ := n["at_clause"].(node)
	if at != nil {
		n["at_clause"] = nil // the view is that version already
	}
	ref := catalog.TableRef{Catalog: cat, Schema: sch, Table: name}
	if ref.Catalog == "" {
		ref.Catalog = r.s.Catalog
	}
	if ref.Schema == "" {
		ref.Schema = r.s.Schema
	}
	key := inputKey(ref, at)
	in, ok := r.byRef[key]
	if !ok {
		ref, at, pinned, err := r.pin(ctx, ref, []string{cat, sch, name}, at)
		if err != nil {
			if !errors.Is(err, ErrNotFound) || at != nil || !r.expandView(ctx, n, ref) {
				r.err = err
			}
			return
		}
		if in, ok = r.byRef[inputKey(ref, at)]; !ok {
			in = &input{ref: ref, pinned: pinned.Pinned, view: r.viewName(ctx, ref, at), snapshot: pinned.snapshot, meta: pinned.meta}
			r.byRef[inputKey(ref, at)] = in
			b.inputs = append(b.inputs, in)
			b.names[in.view] = ref.String()
			snap := in.snapshot
			if snap == 0 {
				snap = snapshotID(in)
			}
			audit.From(ctx).Read(ref.String(), snap)
		}
		r.byRef[key] = in
	}
	in.refs++
	alias := str(n, "alias")
	if alias == "" {
		alias = name
		n["alias"] = name
	}
	n["catalog_name"], n["schema_name"], n["table_name"] = "", "", in.view
	if wrapped, err := r.restrict(ctx, n, in); err != nil || wrapped {
		// A restricted table's alias names the subquery: no column
		// reference through it reaches the table's pruning.
		r.err = err
		return
	}
	if prev, dup := b.aliases[strings.ToLower(alias)]; dup && prev != in {
		// The same alias names two tables in different scopes: column
		// references cannot be told apart, so read everything.
		b.aliases[strings.ToLower(alias)] = nil
	} else {
		b.aliases[strings.ToLower(alias)] = in
	}
}

// encodeScan encodes one group of the input's tasks.
func encodeScan(in *input, tasks []table.FileScanTask) (wire.Scan, error) {
	md := in.pinned.Table.Metadata()
	scan := wire.Scan{
		View:             in.view,
		Table:            in.ref.String(),
		TableUUID:        md.TableUUID().String(),
		MetadataLocation: in.pinned.MetadataLocation,
		SnapshotID:       in.snapshot,
		MetadataTable:    in.meta,
		Columns:          in.cols,
		Props:            in.pinned.StorageProps,
	}
	schema := md.CurrentSchema()
	for _, t := range tasks {
		scan.Bytes += t.Length
		if enc, ok := in.encoded[taskKey(t)]; ok {
			scan.Tasks = append(scan.Tasks, enc)
			continue
		}
		// The pruning filter only skips files: the full WHERE runs in
		// DuckDB. Workers get no row filter and every residual is
		// AlwaysTrue, because iceberg-go v0.7.0's record-level filter fails
		// on some predicates (starts_with is not implemented; decimal
		// comparisons panic in its reader's goroutine). A non-nil residual
		// also keeps the nil-Residual trap shut.
		t.Residual = iceberg.AlwaysTrue{}
		specID := int(t.File.SpecID())
		spec := md.PartitionSpecByID(specID)
		if spec == nil {
			return scan, fmt.Errorf("plan %s: partition spec %d missing", in.ref, specID)
		}
		data, err := codec.EncodeFileScanTask(t, *spec, schema, md.Version())
		if err != nil {
			return scan, fmt.Errorf("encode task of %s: %w", in.ref, err)
		}
		scan.Tasks = append(scan.Tasks, wire.Task{SpecID: specID, Data: data})
	}
	return scan, nil
}

// targetGroups is how many groups a scan of total bytes is split into: at
// least one per worker slot, more when groups would exceed the target size.
func targetGroups(workers []Worker, total, target int64) int {
	slots := 0
	for _, w := range workers {
		slots += max(w.Slots, 1)
	}
	n := slots
	if target > 0 {
		n = max(n, int((total+target-1)/target))
	}
	return max(n, 1)
}

// groupTasks bin-packs tasks by bytes into at most n groups, largest first
// onto the lightest group. Each task lands in exactly one group; no task
// gives one empty group.
func groupTasks(tasks []table.FileScanTask, n int) [][]table.FileScanTask {
	if len(tasks) == 0 {
		return [][]table.FileScanTask{nil}
	}
	n = min(n, len(tasks))
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch la, lb := tasks[a].Length, tasks[b].Length; {
		case la > lb:
			return -1
		case la < lb:
			return 1
		}
		return 0
	})
	groups := make([][]table.FileScanTask, n)
	sizes := make([]int64, n)
	for _, i := range order {
		g := lightest(sizes)
		groups[g] = append(groups[g], tasks[i])
		sizes[g] += tasks[i].Length
	}
	return groups
}
