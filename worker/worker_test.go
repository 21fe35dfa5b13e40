package worker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/wire"
)

func wantCode(t *testing.T, err error, code codes.Code, contains ...string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code {
		t.Fatalf("got %v, want code %s", err, code)
	}
	for _, c := range contains {
		if !strings.Contains(st.Message(), c) {
			t.Fatalf("message %q does not contain %q", st.Message(), c)
		}
	}
}

// wantRows renders ids as doGet does for "SELECT id, s".
func idRows(ids ...int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%d|%s", id, sValue(id))
	}
	return out
}

func TestDoGetScatterFragment(t *testing.T) {
	f := newFixture(t)
	sc := f.scanOf(f.tbl, "t0", []string{"id", "s"}, nil, false)
	if len(sc.Tasks) < filesOf {
		t.Fatalf("planned %d tasks, want >= %d", len(sc.Tasks), filesOf)
	}
	tk := f.ticket("SELECT id, s FROM t0 WHERE id % 2 = 0 ORDER BY id", sc)
	res := f.doGet(f.ctx, f.seal(tk))
	if res.err != nil {
		t.Fatal(res.err)
	}
	var want []int
	for id := 0; id < totalRows; id += 2 {
		want = append(want, id)
	}
	if !slices.Equal(res.rows, idRows(want...)) {
		t.Fatalf("rows:\n%v\nwant\n%v", res.rows, idRows(want...))
	}
	planned, err := flight.DeserializeSchema(tk.Schema, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if !res.schema.Equal(planned) {
		t.Fatalf("stream schema\n%s\nplanned\n%s", res.schema, planned)
	}
	if err := f.lastHandled(); err != nil {
		t.Fatalf("server: %v", err)
	}
	// The same ticket again is served from the metadata cache.
	if res := f.doGet(f.ctx, f.seal(tk)); res.err != nil || len(res.rows) != len(want) {
		t.Fatalf("again: %d rows, %v", len(res.rows), res.err)
	}
	if _, misses := f.cache.Stats(); misses != 1 {
		t.Fatalf("metadata read %d times, want once", misses)
	}
}

func TestDoGetAllColumnsAndAggregate(t *testing.T) {
	f := newFixture(t)
	sc := f.scanOf(f.tbl, "t0", nil, nil, false)
	res := f.doGet(f.ctx, f.seal(f.ticket("SELECT g, count(*) AS n, count(s) AS ns, sum(id) AS total FROM t0 GROUP BY g ORDER BY g", sc)))
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := make([]string, 3)
	for g := range 3 {
		var n, ns, total int
		for id := range totalRows {
			if id%3 == g {
				n++
				total += id
				if id%5 != 0 {
					ns++
				}
			}
		}
		want[g] = fmt.Sprintf("%d|%d|%d|%d", g, n, ns, total)
	}
	if !slices.Equal(res.rows, want) {
		t.Fatalf("rows %v, want %v", res.rows, want)
	}
}

func TestDoGetTwoScansSelfJoin(t *testing.T) {
	f := newFixture(t)
	a := f.scanOf(f.tbl, "a", []string{"id", "g"}, nil, false)
	b := f.scanOf(f.tbl, "b", []string{"id", "s"}, nil, false)
	res := f.doGet(f.ctx, f.seal(f.ticket("SELECT count(*) AS n FROM a JOIN b USING (id) WHERE b.s IS NOT NULL", a, b)))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if want := fmt.Sprint(totalRows - totalRows/5); len(res.rows) != 1 || res.rows[0] != want {
		t.Fatalf("rows %v, want [%s]", res.rows, want)
	}
}

func TestDoGetRowFilterWithNilResidual(t *testing.T) {
	f := newFixture(t)
	// id < 15 keeps the first file whole and half of the second; the third
	// is pruned at planning.
	filter := iceberg.LessThan(iceberg.Reference("id"), int64(15))
	sc := f.scanOf(f.tbl, "t0", []string{"id", "s"}, filter, true)
	if len(sc.Tasks) != 2 {
		t.Fatalf("planned %d tasks, want 2", len(sc.Tasks))
	}
	want := idRows(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)
	// The planner keeps the full WHERE in the fragment, so the worker
	// returns exactly what the SQL says.
	res := f.doGet(f.ctx, f.seal(f.ticket("SELECT id, s FROM t0 WHERE id < 15 ORDER BY id", sc)))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !slices.Equal(res.rows, want) {
		t.Fatalf("with WHERE: %v", res.rows)
	}
	// The row filter reaches the worker's scan: tasks without a residual are
	// still filtered by it, so the second file's ids >= 15 never enter DuckDB.
	res = f.doGet(f.ctx, f.seal(f.ticket("SELECT id, s FROM t0 ORDER BY id", sc)))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !slices.Equal(res.rows, want) {
		t.Fatalf("scan filter not applied: %v", res.rows)
	}
}

func TestDoGetEmptyTableAndNoTasks(t *testing.T) {
	f := newFixture(t)
	empty := f.createTable("empty", 0)
	if empty.CurrentSnapshot() != nil {
		t.Fatal("empty table has a snapshot")
	}
	sc := f.scanOf(empty, "t0", nil, nil, false)
	if len(sc.Tasks) != 0 || sc.SnapshotID != 0 {
		t.Fatalf("empty table: %d tasks, snapshot %d", len(sc.Tasks), sc.SnapshotID)
	}
	tk := f.ticket("SELECT * FROM t0", sc)
	res := f.doGet(f.ctx, f.seal(tk))
	if res.err != nil {
		t.Fatal(res.err)
	}
	planned, _ := flight.DeserializeSchema(tk.Schema, memory.DefaultAllocator)
	if len(res.rows) != 0 || !res.schema.Equal(planned) || res.schema.NumFields() != 3 {
		t.Fatalf("got %d rows with schema %s", len(res.rows), res.schema)
	}
	res = f.doGet(f.ctx, f.seal(f.ticket("SELECT count(*) AS n, max(id) AS m FROM t0", sc)))
	if res.err != nil || !slices.Equal(res.rows, []string{"0|(null)"}) {
		t.Fatalf("aggregate over no rows: %v %v", res.rows, res.err)
	}
	// A group with no task of a table that has data.
	sc = f.scanOf(f.tbl, "t0", []string{"s"}, nil, false)
	sc.Tasks = nil
	res = f.doGet(f.ctx, f.seal(f.ticket("SELECT s FROM t0", sc)))
	if res.err != nil || len(res.rows) != 0 || res.schema.Field(0).Name != "s" {
		t.Fatalf("no tasks: %v %v %v", res.rows, res.schema, res.err)
	}
}

func TestDoGetNoScans(t *testing.T) {
	f := newFixture(t)
	res := f.doGet(f.ctx, f.seal(f.ticket("SELECT 1 AS x")))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !slices.Equal(res.rows, []string{"1"}) || res.schema.Field(0).Name != "x" {
		t.Fatalf("SELECT 1 AS x: %v %s", res.rows, res.schema)
	}
}

func TestDoGetMergesSmallChunks(t *testing.T) {
	f := newFixture(t)
	const n = 150_000
	res := f.doGet(f.ctx, f.seal(f.ticket(fmt.Sprintf("SELECT range AS k FROM range(%d)", n))))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.rows) != n || res.rows[0] != "0" || res.rows[n-1] != fmt.Sprint(n-1) {
		t.Fatalf("got %d rows", len(res.rows))
	}
	// DuckDB hands out chunks of at most 2048 rows; they are merged toward
	// DefaultBatchRows.
	if want := []int64{DefaultBatchRows, DefaultBatchRows, n - 2*DefaultBatchRows}; !slices.Equal(res.batches, want) {
		t.Fatalf("batches %v, want %v", res.batches, want)
	}

	small := newFixture(t, func(o *Options) { o.BatchRows = 5000 })
	res = small.doGet(small.ctx, small.seal(small.ticket("SELECT range AS k FROM range(12000)")))
	if res.err != nil || len(res.rows) != 12000 {
		t.Fatalf("%d rows, %v", len(res.rows), res.err)
	}
	for _, b := range res.batches[:len(res.batches)-1] {
		if b < 5000 {
			t.Fatalf("batches %v: one below the target before the last", res.batches)
		}
	}
}

func TestDoGetKeepsPlannedSchema(t *testing.T) {
	f := newFixture(t)
	sc := f.scanOf(f.tbl, "t0", []string{"id", "s"}, nil, false)
	tk := f.ticket("SELECT id, s FROM t0", sc)
	planned, _ := flight.DeserializeSchema(tk.Schema, memory.DefaultAllocator)

	// Names, nullability and metadata come from the ticket.
	fields := slices.Clone(planned.Fields())
	fields[0].Name = "ID"
	fields[1].Nullable = true
	fields[1].Metadata = arrow.NewMetadata([]string{"ARROW:FLIGHT:SQL:TYPE_NAME"}, []string{"VARCHAR"})
	renamed := arrow.NewSchema(fields, nil)
	tk.Schema = flight.SerializeSchema(renamed, memory.DefaultAllocator)
	res := f.doGet(f.ctx, f.seal(tk))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !res.schema.Equal(renamed) || len(res.rows) != totalRows {
		t.Fatalf("schema %s, %d rows", res.schema, len(res.rows))
	}
	f.lastHandled()

	// Types must match: a mismatch fails, naming the column and both types.
	fields[1] = arrow.Field{Name: "s", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	tk.Schema = flight.SerializeSchema(arrow.NewSchema(fields, nil), memory.DefaultAllocator)
	res = f.doGet(f.ctx, f.seal(tk))
	wantCode(t, res.err, codes.Internal, `"s"`, "int32", "utf8")
}

func TestDoGetBadTickets(t *testing.T) {
	f := newFixture(t)
	good := f.ticket("SELECT 1 AS x")

	tampered := f.seal(good)
	tampered[len(tampered)-5] ^= 0x40
	wantCode(t, f.doGet(f.ctx, tampered).err, codes.Unauthenticated)

	other, _ := wire.RandomKey()
	foreign, err := other.Seal(good)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.doGet(f.ctx, foreign).err, codes.Unauthenticated)

	expired := *good
	expired.ExpiresAt = time.Now().Add(-time.Second)
	wantCode(t, f.doGet(f.ctx, f.seal(&expired)).err, codes.Unauthenticated, "expired")

	wantCode(t, f.doGet(f.ctx, []byte("garbage")).err, codes.InvalidArgument)
	wantCode(t, f.doGet(f.ctx, nil).err, codes.InvalidArgument)
	version := f.seal(good)
	version[3]++
	wantCode(t, f.doGet(f.ctx, version).err, codes.InvalidArgument)

	noSchema := *good
	noSchema.Schema = nil
	wantCode(t, f.doGet(f.ctx, f.seal(&noSchema)).err, codes.InvalidArgument, "schema")
}

func TestDoGetBadSQL(t *testing.T) {
	f := newFixture(t)
	tk := f.ticket("SELECT 1 AS x")
	tk.SQL = "SELECT nope FROM nowhere"
	wantCode(t, f.doGet(f.ctx, f.seal(tk)).err, codes.InvalidArgument, "nowhere")
}

func TestDoGetMissingDataFile(t *testing.T) {
	f := newFixture(t)
	sc := f.scanOf(f.tbl, "t0", []string{"id", "s"}, nil, false)
	tk := f.ticket("SELECT count(*) AS n FROM t0", sc)
	tasks, err := decodeTasks(f.tbl, f.tbl.Schema(), sc.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	victim := tasks[len(tasks)/2].File.FilePath()
	u, err := url.Parse(victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(u.Path); err != nil {
		t.Fatal(err)
	}
	res := f.doGet(f.ctx, f.seal(tk))
	if len(res.rows) != 0 {
		t.Fatalf("a failed read returned rows: %v", res.rows)
	}
	wantCode(t, res.err, codes.NotFound, path.Base(victim), "local.default.t")
	wantCode(t, f.lastHandled(), codes.NotFound, path.Base(victim))
}

func TestDoGetClientCancel(t *testing.T) {
	f := newFixture(t)
	sc := f.scanOf(f.tbl, "t0", []string{"id"}, nil, false)
	tk := f.ticket("SELECT t0.id, r.range AS k FROM t0, range(100000) r", sc)
	ctx, cancel := context.WithCancel(f.ctx)
	stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: f.seal(tk)})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream, ipcAlloc(f.cliMem))
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatal(rdr.Err())
	}
	cancel()
	for rdr.Next() {
	}
	rdr.Release()
	wantCode(t, f.lastHandled(), codes.Canceled)
}

// The schema leaves before the fragment has produced a row, and a cancel
// then interrupts DuckDB: a blocking aggregate that would run for minutes
// ends with Canceled. (With a materialised result the client would get
// nothing, not even the schema, until the aggregate was done.)
func TestDoGetSchemaFirstThenCancel(t *testing.T) {
	f := newFixture(t)
	tk := f.ticket("SELECT sum(hash(a.range * b.range)) AS h FROM range(1000000) a, range(1000000) b")
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: f.seal(tk)})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream, ipcAlloc(f.cliMem))
	if err != nil {
		t.Fatal(err)
	}
	if rdr.Schema().Field(0).Name != "h" {
		t.Fatalf("schema %s", rdr.Schema())
	}
	cancel()
	if rdr.Next() {
		t.Fatal("a row from the cancelled aggregate")
	}
	rdr.Release()
	wantCode(t, f.lastHandled(), codes.Canceled)
}

func TestShutdownEndsStreams(t *testing.T) {
	f := newFixture(t)
	sc := f.scanOf(f.tbl, "t0", []string{"id"}, nil, false)
	tk := f.ticket("SELECT t0.id, r.range AS k FROM t0, range(100000) r", sc)
	stream, err := f.client.DoGet(f.ctx, &flight.Ticket{Ticket: f.seal(tk)})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream, ipcAlloc(f.cliMem))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatal(rdr.Err())
	}
	f.srv.Shutdown()
	rows := rdr.RecordBatch().NumRows()
	for rdr.Next() {
		rows += rdr.RecordBatch().NumRows()
	}
	if rows >= totalRows*100000 {
		t.Fatalf("the stream finished (%d rows) after Shutdown", rows)
	}
	wantCode(t, rdr.Err(), codes.Unavailable, "worker shutting down")
	wantCode(t, f.lastHandled(), codes.Unavailable)

	// New streams are refused, and health says so.
	wantCode(t, f.doGet(f.ctx, f.seal(f.ticket("SELECT 1 AS x"))).err, codes.Unavailable, "worker shutting down")
	conn, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, svc := range []string{"", FlightServiceName} {
		resp, err := healthpb.NewHealthClient(conn).Check(f.ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("health %q after Shutdown: %v %v", svc, resp, err)
		}
	}
	stopped := make(chan struct{})
	go func() { f.gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("GracefulStop did not return after Shutdown")
	}
}

func TestHealthServing(t *testing.T) {
	f := newFixture(t)
	conn, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, svc := range []string{"", FlightServiceName} {
		resp, err := healthpb.NewHealthClient(conn).Check(f.ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q: %v %v", svc, resp, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{BatchRows: -1}.Validate()
	for _, want := range []string{"Key", "Engine", "Cache", "BatchRows"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want a problem with %s", err, want)
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New with no options: want an error")
	}
	k, _ := wire.RandomKey()
	if s := (Options{Key: k}).String(); !strings.Contains(s, "redacted") {
		t.Errorf("String shows the key: %s", s)
	}
}

func TestToStatus(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	shut, stop := context.WithCancelCause(live)
	stop(errShuttingDown)
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		code codes.Code
	}{
		{live, nil, codes.OK},
		{live, wire.ErrUnsealed, codes.Unauthenticated},
		{live, wire.ErrExpired, codes.Unauthenticated},
		{live, wire.ErrMalformed, codes.InvalidArgument},
		{live, wire.ErrVersion, codes.InvalidArgument},
		{live, &queryError{err: errors.New("Conversion Error")}, codes.InvalidArgument},
		{live, &queryError{err: errors.New(`IO Error: No files found that match the pattern "/wh/a.parquet"`)}, codes.NotFound},
		{live, &queryError{err: errors.New(`IO Error: Could not read from file "/wh/a.parquet": bad magic`)}, codes.Internal},
		{live, &readError{table: "c.s.t", file: "f", err: os.ErrNotExist}, codes.NotFound},
		{live, &readError{table: "c.s.t", file: "f", err: errors.New("corrupt")}, codes.Internal},
		{live, fmt.Errorf("%w: x", errInternal), codes.Internal},
		{live, status.Error(codes.ResourceExhausted, "x"), codes.ResourceExhausted},
		{cancelled, errors.New("INTERRUPT Error"), codes.Canceled},
		{shut, errors.New("INTERRUPT Error"), codes.Unavailable},
		{live, errShuttingDown, codes.Unavailable},
	} {
		if got := status.Code(toStatus(tc.ctx, tc.err)); got != tc.code {
			t.Errorf("toStatus(%v) = %s, want %s", tc.err, got, tc.code)
		}
	}
}

// TestPassthroughSlicesLargeBatches: a passthrough ticket streams the scan
// without DuckDB, with the same rows, and never sends a batch larger than
// BatchRows (clients cap message sizes).
func TestPassthroughSlicesLargeBatches(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.BatchRows = 2 })
	sc := f.scanOf(f.tbl, "t0", []string{"id", "s"}, nil, false)
	tk := f.ticket("SELECT id, s FROM t0", sc)
	want := f.doGet(f.ctx, f.seal(tk))
	if want.err != nil {
		t.Fatal(want.err)
	}
	tk.Passthrough = true
	got := f.doGet(f.ctx, f.seal(tk))
	if got.err != nil {
		t.Fatal(got.err)
	}
	if !slices.Equal(slices.Sorted(slices.Values(got.rows)), slices.Sorted(slices.Values(want.rows))) || len(got.rows) < 3 {
		t.Fatalf("passthrough rows %v, want %v", got.rows, want.rows)
	}
	for _, b := range got.batches {
		if b > 2 {
			t.Fatalf("batches %v: one above BatchRows", got.batches)
		}
	}
}
