package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// The typed result every "FROM t" query returns: rows 1-2 from worker A,
// row 3 from worker B, row 4 from the coordinator itself.
var typedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
}, nil)

type typedRow struct {
	id     int64
	name   *string
	amount *int64 // unscaled, scale 2
	ts     *int64 // microseconds
	d      *int32
	ok     *bool
	tags   []*int32 // nil: NULL list
}

func ptr[T any](v T) *T { return &v }

var typedRows = map[string][]typedRow{
	"A": {
		{1, ptr("plain"), ptr[int64](1250), ptr[int64](1704164645123456), ptr[int32](19724), ptr(true), []*int32{ptr[int32](1), ptr[int32](2)}},
		{2, ptr(`a, "quoted"`), ptr[int64](-7), ptr[int64](1709251199000000), ptr[int32](19782), ptr(false), []*int32{}},
	},
	"B": {
		{3, nil, ptr[int64](123456789000), ptr[int64](-500000), ptr[int32](-1), nil, []*int32{ptr[int32](3), nil}},
	},
	"C": {
		{4, ptr("ünï"), nil, nil, nil, ptr(true), nil},
	},
}

func typedBatch(mem memory.Allocator, rows []typedRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, typedSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.name != nil {
			b.Field(1).(*array.StringBuilder).Append(*r.name)
		} else {
			b.Field(1).AppendNull()
		}
		if r.amount != nil {
			b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(*r.amount))
		} else {
			b.Field(2).AppendNull()
		}
		if r.ts != nil {
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(*r.ts))
		} else {
			b.Field(3).AppendNull()
		}
		if r.d != nil {
			b.Field(4).(*array.Date32Builder).Append(arrow.Date32(*r.d))
		} else {
			b.Field(4).AppendNull()
		}
		if r.ok != nil {
			b.Field(5).(*array.BooleanBuilder).Append(*r.ok)
		} else {
			b.Field(5).AppendNull()
		}
		lb := b.Field(6).(*array.ListBuilder)
		if r.tags == nil {
			lb.AppendNull()
		} else {
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.Int32Builder)
			for _, v := range r.tags {
				if v == nil {
					vb.AppendNull()
				} else {
					vb.Append(*v)
				}
			}
		}
	}
	return b.NewRecordBatch()
}

var oneSchema = arrow.NewSchema([]arrow.Field{{Name: "one", Type: arrow.PrimitiveTypes.Int32}}, nil)

func oneBatch(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, oneSchema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).Append(1)
	return b.NewRecordBatch()
}

// writeBatches streams batches (releasing them) as a DoGet answer.
func writeBatches(s flight.FlightService_DoGetServer, schema *arrow.Schema, recs ...arrow.RecordBatch) error {
	wr := flight.NewRecordWriter(s, ipc.WithSchema(schema))
	defer wr.Close()
	var err error
	for _, rec := range recs {
		if err == nil {
			err = wr.Write(rec)
		}
		rec.Release()
	}
	return err
}

// worker is a plain Flight server that answers DoGet by ticket name.
type worker struct {
	flight.BaseFlightServer
	name string
	f    *fixture
	auth *recorder
}

func (w *worker) DoGet(t *flight.Ticket, s flight.FlightService_DoGetServer) error {
	w.auth.add(authOf(s.Context()))
	mem := memory.DefaultAllocator
	switch name := string(t.GetTicket()); name {
	case "A":
		// Endpoint 0 answers only once endpoint 1 has been asked for: the
		// client must pull endpoints in parallel.
		select {
		case <-w.f.bStarted:
		case <-time.After(5 * time.Second):
			return status.Error(codes.FailedPrecondition, "endpoints were not pulled in parallel")
		}
		return writeBatches(s, typedSchema, typedBatch(mem, typedRows["A"][:1]), typedBatch(mem, typedRows["A"][1:]))
	case "B":
		w.f.bOnce.Do(func() { close(w.f.bStarted) })
		return writeBatches(s, typedSchema, typedBatch(mem, typedRows["B"]))
	case "mismatch":
		other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
		return writeBatches(s, other)
	case "broken":
		return status.Error(codes.Internal, "disk on fire")
	case "onlyB":
		if w.name != "B" {
			return status.Error(codes.Unavailable, "worker draining")
		}
		w.f.bOnce.Do(func() { close(w.f.bStarted) })
		return writeBatches(s, typedSchema, typedBatch(mem, typedRows["B"]))
	case "partial":
		if w.name != "A" {
			return writeBatches(s, typedSchema, typedBatch(mem, typedRows["B"]))
		}
		// Rows, then an error: the client must not retry elsewhere.
		wr := flight.NewRecordWriter(s, ipc.WithSchema(typedSchema))
		rec := typedBatch(mem, typedRows["A"])
		defer rec.Release()
		if err := wr.Write(rec); err != nil {
			return err
		}
		return status.Error(codes.DataLoss, "lost a file mid-stream")
	case "hang":
		<-s.Context().Done()
		return s.Context().Err()
	default:
		return status.Errorf(codes.NotFound, "no ticket %q", name)
	}
}

// recorder keeps strings seen by the servers.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func authOf(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	return strings.Join(md.Get("authorization"), ",")
}

// coordinator is a tiny Flight SQL server. A statement's handle is its text.
type coordinator struct {
	flightsql.BaseServer
	f *fixture

	prepared *recorder // statements prepared
	cookies  *recorder // cookie header of each CreatePreparedStatement
	auth     *recorder
	closed   *recorder // handles closed

	mu      sync.Mutex
	session map[string]string
}

func (c *coordinator) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	q := req.GetQuery()
	c.prepared.add(q)
	md, _ := metadata.FromIncomingContext(ctx)
	c.cookies.add(strings.Join(md.Get("cookie"), ";"))
	c.auth.add(authOf(ctx))
	res := flightsql.ActionCreatePreparedStatementResult{Handle: []byte(q)}
	switch {
	case strings.Contains(q, "boom"):
		return res, status.Error(codes.InvalidArgument, `Binder Error: Referenced column "boom" not found`)
	case strings.Contains(q, "INSERT"):
		// An update: no dataset schema.
	case strings.Contains(q, "FROM t"), strings.Contains(q, "FROM single"):
		res.DatasetSchema = typedSchema
	case strings.Contains(q, "SELECT 1"):
		res.DatasetSchema = oneSchema
	default:
		// Every other test query reads the typed schema.
		res.DatasetSchema = typedSchema
	}
	return res, nil
}

func (c *coordinator) ClosePreparedStatement(_ context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	c.closed.add(string(req.GetPreparedStatementHandle()))
	return nil
}

func (c *coordinator) DoPutPreparedStatementUpdate(_ context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	for rdr.Next() {
	}
	if strings.Contains(string(cmd.GetPreparedStatementHandle()), "nothing") {
		return 0, nil
	}
	return 3, nil
}

func ep(ticket string, locs ...string) *flight.FlightEndpoint {
	e := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: []byte(ticket)}}
	for _, l := range locs {
		e.Location = append(e.Location, &flight.Location{Uri: l})
	}
	return e
}

func (c *coordinator) GetFlightInfoPreparedStatement(_ context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	q := string(cmd.GetPreparedStatementHandle())
	schema := typedSchema
	coordTicket := func(name string) string {
		t, err := flightsql.CreateStatementQueryTicket([]byte(name))
		if err != nil {
			panic(err)
		}
		return string(t)
	}
	var eps []*flight.FlightEndpoint
	f := c.f
	switch {
	case strings.Contains(q, "SELECT 1"):
		schema = oneSchema
		eps = []*flight.FlightEndpoint{ep(coordTicket("one"))}
	case strings.Contains(q, "FROM t"):
		eps = []*flight.FlightEndpoint{
			ep("A", f.workerA),
			ep("B", f.workerB),
			ep(coordTicket("C")),
		}
	case strings.Contains(q, "FROM single"):
		f.bOnce.Do(func() { close(f.bStarted) })
		eps = []*flight.FlightEndpoint{ep("A", f.workerA)}
	case strings.Contains(q, "FROM fallbackfail"):
		eps = []*flight.FlightEndpoint{
			ep(coordTicket("C")),
			ep("onlyB", f.workerA, flight.LocationReuseConnection),
		}
	case strings.Contains(q, "FROM fallback"):
		eps = []*flight.FlightEndpoint{
			ep("A", f.dead, f.workerA),                                      // dial error first
			ep("onlyB", f.workerA, f.workerB),                               // status error first
			ep(coordTicket("C"), f.workerA, flight.LocationReuseConnection), // unknown ticket first
		}
	case strings.Contains(q, "FROM partial"):
		eps = []*flight.FlightEndpoint{ep("partial", f.workerA, f.workerB)}
	case strings.Contains(q, "FROM mismatch"):
		eps = []*flight.FlightEndpoint{ep("mismatch", f.workerA)}
	case strings.Contains(q, "FROM broken"):
		eps = []*flight.FlightEndpoint{ep(coordTicket("C")), ep("broken", f.workerB)}
	case strings.Contains(q, "FROM hang"):
		eps = []*flight.FlightEndpoint{ep("hang", f.workerA)}
	case strings.Contains(q, "FROM empty"):
		eps = nil
	default:
		return nil, status.Errorf(codes.NotFound, "no plan for %q", q)
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, memory.DefaultAllocator),
		FlightDescriptor: desc,
		Endpoint:         eps,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

func (c *coordinator) DoGetStatement(_ context.Context, t flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ch := make(chan flight.StreamChunk, 1)
	switch name := string(t.GetStatementHandle()); name {
	case "C":
		ch <- flight.StreamChunk{Data: typedBatch(memory.DefaultAllocator, typedRows["C"])}
		close(ch)
		return typedSchema, ch, nil
	case "one":
		ch <- flight.StreamChunk{Data: oneBatch(memory.DefaultAllocator)}
		close(ch)
		return oneSchema, ch, nil
	default:
		return nil, nil, status.Errorf(codes.NotFound, "no statement %q", name)
	}
}

func (c *coordinator) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := &flight.SetSessionOptionsResult{}
	for name, v := range req.GetSessionOptions() {
		val := v.GetStringValue()
		if name == "catalog" && val == "nope" {
			if res.Errors == nil {
				res.Errors = map[string]*flight.SetSessionOptionsResultError{}
			}
			res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
			continue
		}
		c.session[name] = val
	}
	// One cookie in the header, one in the trailer (where arrow-go's
	// stateless sessions put the options they encode).
	if err := grpc.SetHeader(ctx, metadata.Pairs("set-cookie", "icefloe_h=h1")); err != nil {
		return nil, err
	}
	if err := grpc.SetTrailer(ctx, metadata.Pairs("set-cookie", "icefloe_session=s1")); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *coordinator) CloseSession(context.Context, *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}

type fixture struct {
	coord   *coordinator
	addr    string // coordinator host:port
	workerA string // location URIs
	workerB string
	dead    string
	authA   *recorder
	authB   *recorder

	bOnce    sync.Once
	bStarted chan struct{}
}

func serveFlight(t *testing.T, svc flight.FlightServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	flight.RegisterFlightServiceServer(gs, svc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
	})
	return lis.Addr().String()
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	// Registered first, so it runs after the servers have stopped.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })

	f := &fixture{authA: &recorder{}, authB: &recorder{}, bStarted: make(chan struct{})}
	f.workerA = "grpc://" + serveFlight(t, &worker{name: "A", f: f, auth: f.authA})
	f.workerB = "grpc+tcp://" + serveFlight(t, &worker{name: "B", f: f, auth: f.authB})

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.dead = "grpc://" + lis.Addr().String()
	lis.Close()

	f.coord = &coordinator{
		f:        f,
		prepared: &recorder{},
		cookies:  &recorder{},
		auth:     &recorder{},
		closed:   &recorder{},
		session:  map[string]string{},
	}
	f.addr = serveFlight(t, flightsql.NewFlightServer(f.coord))
	return f
}

// run runs `icefloe sql` against the fixture with a checked allocator.
func (f *fixture) run(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args = append([]string{"--addr", f.addr}, args...)
	err = runSQLAlloc(ctx, mem, args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

const wantTable = ` id | name        |        amount | ts                         | d          | ok    | tags
----+-------------+---------------+----------------------------+------------+-------+----------
  1 | plain       |         12.50 | 2024-01-02T03:04:05.123456 | 2024-01-02 | true  | [1,2]
  2 | a, "quoted" |         -0.07 | 2024-02-29T23:59:59        | 2024-02-29 | false | []
  3 | NULL        | 1234567890.00 | 1969-12-31T23:59:59.5      | 1969-12-31 | NULL  | [3,null]
  4 | ünï         |          NULL | NULL                       | NULL       | true  | NULL
(4 rows)
`

const wantCSV = `id,name,amount,ts,d,ok,tags
1,plain,12.50,2024-01-02T03:04:05.123456,2024-01-02,true,"[1,2]"
2,"a, ""quoted""",-0.07,2024-02-29T23:59:59,2024-02-29,false,[]
3,,1234567890.00,1969-12-31T23:59:59.5,1969-12-31,,"[3,null]"
4,ünï,,,,true,
`

const wantJSON = `{"id":1,"name":"plain","amount":12.50,"ts":"2024-01-02T03:04:05.123456","d":"2024-01-02","ok":true,"tags":[1,2]}
{"id":2,"name":"a, \"quoted\"","amount":-0.07,"ts":"2024-02-29T23:59:59","d":"2024-02-29","ok":false,"tags":[]}
{"id":3,"name":null,"amount":1234567890.00,"ts":"1969-12-31T23:59:59.5","d":"1969-12-31","ok":null,"tags":[3,null]}
{"id":4,"name":"ünï","amount":null,"ts":null,"d":null,"ok":true,"tags":null}
`

func TestSQLFormatsAllEndpointsInOrder(t *testing.T) {
	for _, tc := range []struct {
		format, want string
	}{
		{"table", wantTable},
		{"csv", wantCSV},
		{"json", wantJSON},
	} {
		t.Run(tc.format, func(t *testing.T) {
			f := newFixture(t)
			out, _, err := f.run(t, "", "--format", tc.format, "SELECT * FROM t")
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if out != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", out, tc.want)
			}
			// The client followed each endpoint's location.
			if got := len(f.authA.all()); got != 1 {
				t.Errorf("worker A served %d DoGets, want 1", got)
			}
			if got := len(f.authB.all()); got != 1 {
				t.Errorf("worker B served %d DoGets, want 1", got)
			}
			if got, want := f.coord.closed.all(), []string{"SELECT * FROM t"}; !reflect.DeepEqual(got, want) {
				t.Errorf("closed statements %q, want %q", got, want)
			}
		})
	}
}

func TestSQLJSONLinesParse(t *testing.T) {
	for i, line := range strings.Split(strings.TrimSuffix(wantJSON, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("line %d is not JSON: %v", i, err)
		}
	}
}

func TestSQLFlagsAfterStatement(t *testing.T) {
	f := newFixture(t)
	out, _, err := f.run(t, "", "SELECT * FROM t", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if out != wantCSV {
		t.Errorf("output:\n%s\nwant:\n%s", out, wantCSV)
	}
}

func TestSQLStatementsFromStdin(t *testing.T) {
	f := newFixture(t)
	script := "SELECT 1 AS one; -- a comment; not a statement\n" +
		"INSERT INTO x VALUES ('a;b', \"c;d\"); /* ; */ ;\n" +
		"-- only a comment at the end;\n"
	out, _, err := f.run(t, script)
	if err != nil {
		t.Fatal(err)
	}
	want := " one\n-----\n   1\n(1 row)\n\n3 rows affected\n"
	if out != want {
		t.Errorf("output:\n%q\nwant:\n%q", out, want)
	}
	wantPrepared := []string{
		"SELECT 1 AS one",
		"-- a comment; not a statement\nINSERT INTO x VALUES ('a;b', \"c;d\")",
	}
	if got := f.coord.prepared.all(); !reflect.DeepEqual(got, wantPrepared) {
		t.Errorf("prepared %q, want %q", got, wantPrepared)
	}
}

func TestSQLUpdate(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		format, stmt, out, err string
	}{
		{"table", "INSERT INTO x SELECT * FROM y", "3 rows affected\n", ""},
		{"table", "INSERT nothing", "0 rows affected\n", ""},
		{"csv", "INSERT INTO x SELECT * FROM y", "", "3 rows affected\n"},
		{"json", "INSERT INTO x SELECT * FROM y", "{\"rows_affected\":3}\n", ""},
	} {
		out, errOut, err := f.run(t, "", "--format", tc.format, tc.stmt)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.format, tc.stmt, err)
		}
		if out != tc.out || errOut != tc.err {
			t.Errorf("%s %s: stdout %q stderr %q, want %q %q", tc.format, tc.stmt, out, errOut, tc.out, tc.err)
		}
	}
}

func TestSQLServerErrors(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		stmt, want string
	}{
		{"SELECT boom", `Binder Error: Referenced column "boom" not found`},
		{"SELECT * FROM broken", "endpoint 1: " + f.workerB + ": disk on fire"},
		{"SELECT * FROM nowhere", `no plan for "SELECT * FROM nowhere"`},
	} {
		out, _, err := f.run(t, "", tc.stmt)
		if err == nil {
			t.Errorf("%s: no error, output %q", tc.stmt, out)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s: error %q, want %q", tc.stmt, err, tc.want)
		}
		if out != "" {
			t.Errorf("%s: printed %q on error", tc.stmt, out)
		}
	}
}

func TestSQLStopsAtFirstError(t *testing.T) {
	f := newFixture(t)
	out, _, err := f.run(t, "SELECT 1; SELECT boom; SELECT 1 AS again")
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("error %v, want the boom error", err)
	}
	if got := f.coord.prepared.all(); len(got) != 2 {
		t.Errorf("prepared %q: the statement after the error ran", got)
	}
	if !strings.HasPrefix(out, " one\n") {
		t.Errorf("first result not printed: %q", out)
	}
}

func TestSQLSchemaMismatch(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.run(t, "", "SELECT * FROM mismatch")
	if !errors.Is(err, errSchemaMismatch) {
		t.Fatalf("error %v, want schema mismatch", err)
	}
	if !strings.Contains(err.Error(), "stream has (id int32 not null)") {
		t.Errorf("error %q does not show the stream's schema", err)
	}
}

func TestSQLLocationFallback(t *testing.T) {
	f := newFixture(t)
	// Endpoint 0 falls back from a dead address to worker A, endpoint 1
	// from worker A's error to worker B, endpoint 2 from worker A (which
	// does not know the ticket) to the coordinator's own connection.
	out, _, err := f.run(t, "", "--format", "csv", "SELECT * FROM fallback")
	if err != nil {
		t.Fatal(err)
	}
	if out != wantCSV {
		t.Errorf("output:\n%s\nwant:\n%s", out, wantCSV)
	}
	if got := len(f.authA.all()); got != 3 {
		t.Errorf("worker A served %d DoGets, want 3", got)
	}
}

func TestSQLFallbackErrorsNameEveryAttempt(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.run(t, "", "SELECT * FROM fallbackfail")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	want := "endpoint 1: " + f.workerA + ": worker draining; coordinator: "
	if !strings.HasPrefix(msg, want) {
		t.Errorf("error %q, want it to start with %q", msg, want)
	}
}

func TestSQLNoFallbackAfterRows(t *testing.T) {
	f := newFixture(t)
	out, _, err := f.run(t, "", "--format", "csv", "SELECT * FROM partial")
	if err == nil {
		t.Fatalf("no error, output %q", out)
	}
	if want := "endpoint 0: " + f.workerA + ": lost a file mid-stream"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if got := len(f.authB.all()); got != 0 {
		t.Errorf("retried on worker B after rows had arrived (%d DoGets)", got)
	}
}

func TestSQLEmptyResult(t *testing.T) {
	f := newFixture(t)
	out, _, err := f.run(t, "", "SELECT * FROM empty")
	if err != nil {
		t.Fatal(err)
	}
	want := " id | name | amount | ts | d | ok | tags\n----+------+--------+----+---+----+------\n(0 rows)\n"
	if out != want {
		t.Errorf("output:\n%q\nwant:\n%q", out, want)
	}
}

func TestSQLTimeout(t *testing.T) {
	f := newFixture(t)
	start := time.Now()
	_, _, err := f.run(t, "", "--timeout", "300ms", "SELECT * FROM hang")
	if err == nil {
		t.Fatal("no error")
	}
	if st, ok := status.FromError(err); !ok || st.Code() != codes.DeadlineExceeded {
		t.Errorf("error %v, want DeadlineExceeded", err)
	}
	if want := "statement exceeded --timeout 300ms"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %s", d)
	}
}

func TestSQLSessionOptionsAndToken(t *testing.T) {
	f := newFixture(t)
	out, _, err := f.run(t, "", "--catalog", "demo", "--schema", "sales", "--token", "s3cret", "--format", "csv", "SELECT * FROM single")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "id,name") {
		t.Errorf("output %q", out)
	}
	f.coord.mu.Lock()
	got := f.coord.session
	f.coord.mu.Unlock()
	if want := map[string]string{"catalog": "demo", "schema": "sales"}; !reflect.DeepEqual(got, want) {
		t.Errorf("session %v, want %v", got, want)
	}
	// The session cookie is carried on the statements that follow.
	if got := f.coord.cookies.all(); len(got) != 1 || !strings.Contains(got[0], "icefloe_session=s1") || !strings.Contains(got[0], "icefloe_h=h1") {
		t.Errorf("cookies %q, want both session cookies", got)
	}
	if got := f.coord.auth.all(); len(got) != 1 || got[0] != "Bearer s3cret" {
		t.Errorf("coordinator saw authorization %q", got)
	}
	if got := f.authA.all(); len(got) != 1 || got[0] != "Bearer s3cret" {
		t.Errorf("worker saw authorization %q", got)
	}
}

func TestSQLSessionOptionRejected(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.run(t, "", "--catalog", "nope", "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "catalog=nope: INVALID_VALUE") {
		t.Fatalf("error %v, want the rejected catalog", err)
	}
	if got := f.coord.prepared.all(); len(got) != 0 {
		t.Errorf("ran %q after the session was rejected", got)
	}
}

func TestSQLBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--format", "xml", "SELECT 1"},
		{"SELECT 1", "SELECT 2"},
		{"--addr", "http://localhost:1", "SELECT 1"},
		{"--nope"},
	} {
		var out, errOut bytes.Buffer
		if err := runSQL(context.Background(), args, strings.NewReader(""), &out, &errOut); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" ; ;\n", nil},
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1;SELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"SELECT 'a;b'; SELECT 'it''s;'", []string{"SELECT 'a;b'", "SELECT 'it''s;'"}},
		{`SELECT "x;y" FROM "t""; u"; SELECT 2`, []string{`SELECT "x;y" FROM "t""; u"`, "SELECT 2"}},
		{"SELECT 1 -- ; not here\n; SELECT 2", []string{"SELECT 1 -- ; not here", "SELECT 2"}},
		{"SELECT 1 -- ; not here\r; SELECT 2", []string{"SELECT 1 -- ; not here", "SELECT 2"}},
		{"SELECT /* ; /* nested ; */ still ; */ 1; SELECT 2", []string{"SELECT /* ; /* nested ; */ still ; */ 1", "SELECT 2"}},
		{`SELECT E'\';'; SELECT 2`, []string{`SELECT E'\';'`, "SELECT 2"}},
		{`SELECT name'a\';x`, []string{`SELECT name'a\'`, "x"}},
		{"SELECT $$a;b$$; SELECT $tag$ ; $$ ; $tag$", []string{"SELECT $$a;b$$", "SELECT $tag$ ; $$ ; $tag$"}},
		{"SELECT $1; SELECT a$b;", []string{"SELECT $1", "SELECT a$b"}},
		{"-- only a comment", nil},
		{"/* c */ ; SELECT 'unterminated;", []string{"SELECT 'unterminated;"}},
	} {
		got := sqltok.Split(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCellText(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	build := func(dt arrow.DataType, fill func(array.Builder)) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		fill(b)
		return b.NewArray()
	}
	utc := &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	ny := &arrow.TimestampType{Unit: arrow.Second, TimeZone: "America/New_York"}
	structType := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	mapType := arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64)
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}

	for _, tc := range []struct {
		name      string
		arr       arrow.Array
		text      string
		jsonValue string
	}{
		{"decimal negative scale", build(&arrow.Decimal128Type{Precision: 5, Scale: -2}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(-42))
		}), "-4200", "-4200"},
		{"decimal small", build(&arrow.Decimal128Type{Precision: 10, Scale: 4}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(5))
		}), "0.0005", "0.0005"},
		{"decimal64", build(&arrow.Decimal64Type{Precision: 18, Scale: 3}, func(b array.Builder) {
			b.(*array.Decimal64Builder).Append(123456789012345678)
		}), "123456789012345.678", "123456789012345.678"},
		{"timestamp utc", build(utc, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(1704164645120)
		}), "2024-01-02T03:04:05.12Z", `"2024-01-02T03:04:05.12Z"`},
		{"timestamp zone", build(ny, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(1704164645)
		}), "2024-01-01T22:04:05-05:00", `"2024-01-01T22:04:05-05:00"`},
		{"time64", build(arrow.FixedWidthTypes.Time64us, func(b array.Builder) {
			b.(*array.Time64Builder).Append(arrow.Time64((13*3600+5)*1e6 + 250))
		}), "13:00:05.00025", `"13:00:05.00025"`},
		{"date64", build(arrow.FixedWidthTypes.Date64, func(b array.Builder) {
			b.(*array.Date64Builder).Append(arrow.Date64(86400000 * 365))
		}), "1971-01-01", `"1971-01-01"`},
		{"float nan", build(arrow.PrimitiveTypes.Float64, func(b array.Builder) {
			b.(*array.Float64Builder).Append(nan())
		}), "NaN", `"NaN"`},
		{"float", build(arrow.PrimitiveTypes.Float32, func(b array.Builder) {
			b.(*array.Float32Builder).Append(0.1)
		}), "0.1", "0.1"},
		{"binary", build(arrow.BinaryTypes.Binary, func(b array.Builder) {
			b.(*array.BinaryBuilder).Append([]byte{0xde, 0xad})
		}), `\xdead`, `"\\xdead"`},
		{"string html", build(arrow.BinaryTypes.String, func(b array.Builder) {
			b.(*array.StringBuilder).Append("<a&b>\n")
		}), "<a&b>\n", `"<a&b>\n"`},
		{"struct", build(structType, func(b array.Builder) {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(7)
			sb.FieldBuilder(1).AppendNull()
		}), `{"a":7,"b":null}`, `{"a":7,"b":null}`},
		{"map", build(mapType, func(b array.Builder) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.StringBuilder).Append("k")
			mb.ItemBuilder().(*array.Float64Builder).Append(1.5)
		}), `{"k":1.5}`, `{"k":1.5}`},
		{"dictionary", build(dictType, func(b array.Builder) {
			if err := b.(*array.BinaryDictionaryBuilder).AppendString("red"); err != nil {
				t.Fatal(err)
			}
		}), "red", `"red"`},
	} {
		if got := cellText(tc.arr, 0); got != tc.text {
			t.Errorf("%s: text %q, want %q", tc.name, got, tc.text)
		}
		if got := string(appendJSONValue(nil, tc.arr, 0)); got != tc.jsonValue {
			t.Errorf("%s: json %s, want %s", tc.name, got, tc.jsonValue)
		}
		tc.arr.Release()
	}
}

func nan() float64 {
	var zero float64
	return zero / zero
}

func TestTableEscapesControlCharacters(t *testing.T) {
	if got, want := escapeControl("a\tb\nc\\d\x01"), `a\tb\nc\\d\x01`; got != want {
		t.Errorf("escapeControl = %q, want %q", got, want)
	}
}
