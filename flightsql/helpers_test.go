package flightsql

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// planSchema is the result schema the fake planner plans and binds.
var planSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// failures are the errors the fake planner returns for statements marked
// "-- FAIL <name>" (failure).
var failures = map[string]error{
	"syntax":          fmt.Errorf("%w: at or near \"SELEC\"", planner.ErrSyntax),
	"invalid":         fmt.Errorf("%w: column x not found", planner.ErrInvalid),
	"notfound":        fmt.Errorf("%w: table t", planner.ErrNotFound),
	"catalog":         fmt.Errorf("resolve: %w: nope", catalog.ErrCatalogNotFound),
	"schema":          fmt.Errorf("resolve: %w: nope", catalog.ErrSchemaNotFound),
	"table":           fmt.Errorf("resolve: %w: local.default.t", catalog.ErrTableNotFound),
	"nosuchtable":     fmt.Errorf("load: %w", icecat.ErrNoSuchTable),
	"nosuchnamespace": fmt.Errorf("load: %w", icecat.ErrNoSuchNamespace),
	"exists":          fmt.Errorf("%w: table t", planner.ErrExists),
	"tableexists":     fmt.Errorf("create: %w", icecat.ErrTableAlreadyExists),
	"nsexists":        fmt.Errorf("create: %w", icecat.ErrNamespaceAlreadyExists),
	"unsupported":     fmt.Errorf("%w: MERGE", planner.ErrUnsupported),
	"refused":         fmt.Errorf("%w: read_csv", planner.ErrRefused),
	"noworkers":       planner.ErrNoWorkers,
	"canceled":        fmt.Errorf("plan: %w", context.Canceled),
	"other":           fmt.Errorf("disk on fire"),
}

type call struct {
	method  string
	session planner.Session
	query   string
	args    []any
}

// fakePlanner plans every SELECT/WITH into two endpoints of planSchema and
// runs every other statement as an update of 7 rows, recording each call.
type fakePlanner struct {
	mu    sync.Mutex
	calls []call
	// endpoints, when set, replace the two planned endpoints.
	endpoints []planner.Endpoint
	// expires, when set, is when the plans' tickets expire.
	expires time.Time
	// block, when set, holds every Exec and Plan until it is closed or
	// the statement's context ends.
	block chan struct{}
}

func (f *fakePlanner) record(method string, s planner.Session, q string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{method, s, q, args})
}

// last returns the latest call of method.
func (f *fakePlanner) last(t *testing.T, method string) call {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].method == method {
			return f.calls[i]
		}
	}
	t.Fatalf("planner: no %s call", method)
	return call{}
}

func (f *fakePlanner) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.method == method {
			n++
		}
	}
	return n
}

// failure is the error a statement marked "FAIL <name>" (in a comment at
// its end) fails with in every call of the fake planner.
func failure(st *parse.Statement) error {
	if _, name, ok := strings.Cut(st.Text, "-- FAIL "); ok {
		return failures[name]
	}
	return nil
}

func (f *fakePlanner) Plan(ctx context.Context, s planner.Session, st *parse.Statement, args ...any) (*planner.Plan, error) {
	f.record("Plan", s, st.Text, args...)
	if err := failure(st); err != nil {
		return nil, err
	}
	f.mu.Lock()
	eps, expires, block := f.endpoints, f.expires, f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	if eps != nil {
		return &planner.Plan{QueryID: "q-1", Strategy: planner.Scatter, Schema: planSchema, Endpoints: eps, ExpiresAt: expires}, nil
	}
	return &planner.Plan{
		QueryID:   "q-1",
		Strategy:  planner.Scatter,
		Schema:    planSchema,
		ExpiresAt: expires,
		Endpoints: []planner.Endpoint{
			{Ticket: []byte("ticket-1"), Locations: []string{"grpc://10.0.0.1:4001", "grpc://10.0.0.2:4001"}},
			{Ticket: []byte("ticket-2"), Locations: []string{"grpc://10.0.0.2:4001"}},
		},
	}, nil
}

// Use takes "USE cat.schema" (both parts) as the planner does.
func (f *fakePlanner) Use(_ context.Context, s planner.Session, st *parse.Statement) (planner.Session, error) {
	name := st.Body.(*parse.Use).Name
	if len(name) != 2 {
		return s, fmt.Errorf("%w: USE takes catalog.schema here", planner.ErrInvalid)
	}
	return planner.Session{Catalog: name[0], Schema: name[1]}, nil
}

func (f *fakePlanner) Bind(_ context.Context, s planner.Session, st *parse.Statement, _ ...any) (*arrow.Schema, error) {
	f.record("Bind", s, st.Text)
	if err := failure(st); err != nil {
		return nil, err
	}
	return planSchema, nil
}

func (f *fakePlanner) Exec(ctx context.Context, s planner.Session, st *parse.Statement, args ...any) (int64, error) {
	f.record("Exec", s, st.Text, args...)
	if err := failure(st); err != nil {
		return 0, err
	}
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
	return 7, nil
}

// ExecBatch records one call whose args are the rows; it counts 7 per row.
func (f *fakePlanner) ExecBatch(_ context.Context, s planner.Session, st *parse.Statement, params []arrow.RecordBatch) (int64, error) {
	rows, err := planner.ParamRows(params)
	if err != nil {
		return 0, err
	}
	args := make([]any, len(rows))
	for i, r := range rows {
		args[i] = r
	}
	f.record("ExecBatch", s, st.Text, args...)
	return 7 * int64(len(rows)), nil
}

// fixture mounts two local catalogs: "local" with schemas default, sales
// and sa_es and tables default.{orders, order_items, orderXitems} and
// sales.facts; "other" with default.remote.
func fixture(t *testing.T) *catalog.Mounts {
	t.Helper()
	ctx := context.Background()
	m := catalog.NewMounts()
	t.Cleanup(func() { m.Close() })
	local, props, err := catalog.OpenLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Mount("local", local, props); err != nil {
		t.Fatal(err)
	}
	other, props2, err := catalog.OpenLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Mount("other", other, props2); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"sales", "sa_es"} {
		if err := local.CreateNamespace(ctx, icecat.ToIdentifier(ns), nil); err != nil {
			t.Fatal(err)
		}
	}
	small := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "k", Type: iceberg.PrimitiveTypes.Int32})
	for _, c := range []struct {
		cat   icecat.Catalog
		ident table.Identifier
		sc    *iceberg.Schema
	}{
		{local, table.Identifier{"default", "orders"}, ordersSchema},
		{local, table.Identifier{"default", "order_items"}, small},
		{local, table.Identifier{"default", "orderXitems"}, small},
		{local, table.Identifier{"sales", "facts"}, small},
		{other, table.Identifier{"default", "remote"}, small},
	} {
		if _, err := c.cat.CreateTable(ctx, c.ident, c.sc); err != nil {
			t.Fatalf("create %v: %v", c.ident, err)
		}
	}
	return m
}

var ordersSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "order id"},
	iceberg.NestedField{ID: 2, Name: "amount", Type: iceberg.DecimalTypeOf(12, 2), Doc: "order amount"},
	iceberg.NestedField{ID: 3, Name: "note", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 4, Name: "placed_at", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 5, Name: "tags", Type: &iceberg.ListType{ElementID: 7, Element: iceberg.PrimitiveTypes.String}},
	iceberg.NestedField{ID: 6, Name: "ship to", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 8, Name: "city", Type: iceberg.PrimitiveTypes.String},
	}}},
)

// env is a running Server on 127.0.0.1:0 with a client that keeps cookies.
type env struct {
	srv     *Server
	planner *fakePlanner
	key     *wire.Key
	addr    string
	client  *flightsql.Client
	mem     *memory.CheckedAllocator
}

// start starts a server of the fake planner; each opt may change its
// Options first.
func start(t *testing.T, opts ...func(*Options)) *env {
	t.Helper()
	e := &env{planner: &fakePlanner{}}
	mounts := fixture(t)
	srvMem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	e.mem = memory.NewCheckedAllocator(memory.DefaultAllocator)
	var err error
	if e.key, err = wire.RandomKey(); err != nil {
		t.Fatal(err)
	}
	pool := flightclient.NewPool(flightclient.Options{}, 0)
	t.Cleanup(func() { pool.Close() })
	o := Options{Backend: e.planner, Mounts: mounts, Key: e.key, Flight: pool, Allocator: srvMem, Version: "test"}
	for _, opt := range opts {
		opt(&o)
	}
	e.srv, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(e.srv.ServerOptions()...)
	e.srv.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = lis.Addr().String()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	t.Cleanup(func() {
		g.GracefulStop()
		<-served
		srvMem.AssertSize(t, 0)
		e.mem.AssertSize(t, 0)
	})
	e.client = e.dial(t, true)
	return e
}

// dial returns a new client of e's server, with or without a cookie jar.
func (e *env) dial(t *testing.T, cookies bool) *flightsql.Client {
	t.Helper()
	var mw []flight.ClientMiddleware
	if cookies {
		mw = append(mw, flight.NewClientCookieMiddleware())
	}
	cl, err := flightsql.NewClient(e.addr, nil, mw, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	cl.Alloc = e.mem
	t.Cleanup(func() { cl.Close() })
	return cl
}

// fetch reads every endpoint of info from the coordinator and returns the
// stream schema (of the last endpoint) and all batches, released at cleanup.
func fetch(t *testing.T, cl *flightsql.Client, info *flight.FlightInfo) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	ctx := context.Background()
	var sc *arrow.Schema
	var out []arrow.RecordBatch
	for _, ep := range info.GetEndpoint() {
		rdr, err := cl.DoGet(ctx, ep.GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		sc = rdr.Schema()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			out = append(out, rec)
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
	}
	t.Cleanup(func() {
		for _, r := range out {
			r.Release()
		}
	})
	return sc, out
}

// infoSchema decodes the schema of a FlightInfo.
func infoSchema(t *testing.T, info *flight.FlightInfo) *arrow.Schema {
	t.Helper()
	sc, err := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// strings0 returns column col of all batches as strings.
func column(recs []arrow.RecordBatch, col int) []string {
	var out []string
	for _, r := range recs {
		a := r.Column(col)
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				out = append(out, "<null>")
			} else {
				out = append(out, a.ValueStr(i))
			}
		}
	}
	return out
}

func rows(recs []arrow.RecordBatch) int {
	n := 0
	for _, r := range recs {
		n += int(r.NumRows())
	}
	return n
}
