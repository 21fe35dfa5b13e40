package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/icefloe/icefloe/catalog"
)

// newStatement returns a statement of cnxn set to q; the caller closes it.
func newStatement(t testing.TB, cnxn adbc.Connection, q string) adbc.Statement {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	if err := stmt.SetSqlQuery(q); err != nil {
		stmt.Close()
		t.Fatal(err)
	}
	return stmt
}

// query runs q through ADBC (all endpoints, in parallel, as Python does).
func query(t testing.TB, cnxn adbc.Connection, q string) (result, error) {
	t.Helper()
	stmt := newStatement(t, cnxn, q)
	defer stmt.Close()
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return result{}, err
	}
	defer rdr.Release()
	res := result{schema: rdr.Schema()}
	for rdr.Next() {
		res.rows = append(res.rows, rowsOf(rdr.RecordBatch())...)
	}
	return res, rdr.Err()
}

func mustQuery(t testing.TB, cnxn adbc.Connection, q string) result {
	t.Helper()
	res, err := query(t, cnxn, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}

func execUpdate(t testing.TB, cnxn adbc.Connection, q string) int64 {
	t.Helper()
	stmt := newStatement(t, cnxn, q)
	defer stmt.Close()
	n, err := stmt.ExecuteUpdate(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// partitions runs q with ExecutePartitions and returns each partition's
// endpoint.
func partitions(t testing.TB, cnxn adbc.Connection, q string) (adbc.Partitions, []*flight.FlightEndpoint) {
	t.Helper()
	stmt := newStatement(t, cnxn, q)
	defer stmt.Close()
	_, parts, _, err := stmt.ExecutePartitions(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var eps []*flight.FlightEndpoint
	for _, p := range parts.PartitionIDs {
		var info flight.FlightInfo
		if err := proto.Unmarshal(p, &info); err != nil {
			t.Fatal(err)
		}
		eps = append(eps, info.Endpoint...)
	}
	return parts, eps
}

func TestScatterManyFilesMatchesDuckDB(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	q := "SELECT id, customer_id, status, amount, ordered_at FROM orders WHERE amount IS NULL OR amount > 10"
	parts, eps := partitions(t, cnxn, q)
	if len(eps) < 2 {
		t.Fatalf("want > 1 endpoint for a table with many files, got %d", len(eps))
	}
	owners := map[string]bool{}
	for _, ep := range eps {
		if len(ep.Location) == 0 {
			t.Fatal("endpoint without a location")
		}
		owners[ep.Location[0].Uri] = true
	}
	if len(owners) < 2 {
		t.Fatalf("want endpoints on >= 2 worker locations, got %v", owners)
	}
	// Read every partition (as adbc_read_partition does) and compare the
	// union with single-node DuckDB on the same snapshot.
	union := result{}
	for _, p := range parts.PartitionIDs {
		rdr, err := cnxn.ReadPartition(context.Background(), p)
		if err != nil {
			t.Fatalf("read partition: %v", err)
		}
		part := collect(t, rdr)
		union.schema = part.schema
		union.rows = append(union.rows, part.rows...)
	}
	want := reference(t, s, q, "orders")
	if len(want.rows) < 10000 {
		t.Fatalf("demo orders too small for this test: %d rows", len(want.rows))
	}
	assertSameResult(t, union, want, false)
	// The same through ExecuteQuery, which pulls all endpoints in parallel.
	got := mustQuery(t, cnxn, q)
	assertSameResult(t, got, want, false)
}

func TestQueriesMatchDuckDB(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	cases := []struct {
		q       string
		tables  []string
		ordered bool
	}{
		{"SELECT * FROM orders", []string{"orders"}, false},
		{"SELECT id * 2 AS twice, upper(status) AS s FROM orders WHERE status LIKE 'sh%'", []string{"orders"}, false},
		{"SELECT status, count(*) AS n, sum(amount) AS total FROM orders GROUP BY status ORDER BY status", []string{"orders"}, true},
		{"SELECT o.id, c.name FROM orders o JOIN customers c ON o.customer_id = c.id WHERE o.id < 500", []string{"orders", "customers"}, false},
		{"SELECT id FROM orders ORDER BY amount DESC NULLS LAST, id LIMIT 7", []string{"orders"}, true},
		{"WITH big AS (SELECT * FROM orders WHERE amount > 100) SELECT count(*) FROM big", []string{"orders"}, false},
		{"SELECT id, row_number() OVER (PARTITION BY status ORDER BY id) AS rn FROM orders", []string{"orders"}, false},
		{"SELECT count(DISTINCT customer_id) FROM orders", []string{"orders"}, false},
		{"SELECT kind, avg(value) FROM events GROUP BY kind", []string{"events"}, false},
		{"SELECT id FROM orders UNION ALL SELECT id FROM orders", []string{"orders"}, false},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			got := mustQuery(t, cnxn, c.q)
			want := reference(t, s, c.q, c.tables...)
			assertSameResult(t, got, want, c.ordered)
		})
	}
}

func TestNoTableQueries(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	got := mustQuery(t, cnxn, "SELECT 1 AS one")
	if len(got.rows) != 1 || got.rows[0] != "1" || got.schema.Field(0).Name != "one" {
		t.Fatalf("SELECT 1: %v %v", got.schema, got.rows)
	}
	v := mustQuery(t, cnxn, "SELECT version()")
	if len(v.rows) != 1 || !strings.HasPrefix(v.rows[0], "v") {
		t.Fatalf("SELECT version(): %v", v.rows)
	}
}

func TestEmptyTable(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE TABLE empty_t (id BIGINT NOT NULL, name VARCHAR, amount DECIMAL(10,2))")
	_, eps := partitions(t, cnxn, "SELECT * FROM empty_t")
	if len(eps) != 1 {
		t.Fatalf("an empty table must give exactly one endpoint, got %d", len(eps))
	}
	got := mustQuery(t, cnxn, "SELECT * FROM empty_t")
	if len(got.rows) != 0 {
		t.Fatalf("rows from an empty table: %v", got.rows)
	}
	if got.schema.NumFields() != 3 || got.schema.Field(2).Type.String() != "decimal(10, 2)" {
		t.Fatalf("schema: %s", got.schema)
	}
}

func TestInsertThenQuery(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE TABLE pts (id BIGINT NOT NULL, s VARCHAR, ts TIMESTAMP) PARTITIONED BY (bucket(4, id))")
	for i := 0; i < 8; i++ {
		n := execUpdate(t, cnxn, fmt.Sprintf("INSERT INTO pts VALUES (%d, 'a%d', TIMESTAMP '2026-01-0%d 10:00:00'), (%d, NULL, NULL)", i, i, i+1, 100+i))
		if n != 2 {
			t.Fatalf("insert count %d, want 2", n)
		}
	}
	q := "SELECT * FROM pts WHERE id % 2 = 0"
	assertSameResult(t, mustQuery(t, cnxn, q), reference(t, s, q, "pts"), false)
}

// flightClient returns an arrow-go Flight SQL client of the coordinator.
func flightClient(t testing.TB, addr string) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func TestTamperedTicketRejected(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	ctx := context.Background()
	cl := flightClient(t, s.Addr())
	info, err := cl.Execute(ctx, "SELECT id FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	ep := info.Endpoint[0]
	loc := strings.TrimPrefix(ep.Location[0].Uri, "grpc://")
	wc, err := flight.NewClientWithMiddleware(loc, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	ticket := append([]byte(nil), ep.Ticket.Ticket...)
	ticket[len(ticket)-5] ^= 0x40
	stream, err := wc.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("tampered ticket: got %v, want Unauthenticated", err)
	}
	if strings.Contains(strings.ToLower(err.Error()), "key") {
		t.Fatalf("error talks about the key: %v", err)
	}
	// The untouched ticket still works on the same worker.
	stream, err = wc.DoGet(ctx, &flight.Ticket{Ticket: ep.Ticket.Ticket})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	if res := collect(t, rdr); len(res.rows) == 0 {
		t.Fatal("the untouched ticket returned no rows")
	}
}

func TestMissingDataFileFailsQuery(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE TABLE frag (id BIGINT, s VARCHAR)")
	for i := 0; i < 4; i++ {
		execUpdate(t, cnxn, fmt.Sprintf("INSERT INTO frag VALUES (%d, 'x'), (%d, 'y')", 2*i, 2*i+1))
	}
	ctx := context.Background()
	p, err := s.Mounts.LoadTable(ctx, catalog.TableRef{Catalog: "local", Schema: "default", Table: "frag"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := p.Table.Scan().PlanFiles(ctx)
	if err != nil || len(tasks) != 4 {
		t.Fatalf("plan: %d tasks, %v", len(tasks), err)
	}
	victim := tasks[2].File.FilePath()
	if err := os.Remove(strings.TrimPrefix(victim, "file://")); err != nil {
		t.Fatal(err)
	}
	_, err = query(t, cnxn, "SELECT * FROM frag")
	if err == nil {
		t.Fatal("query over a deleted data file succeeded")
	}
	base := victim[strings.LastIndex(victim, "/")+1:]
	if !strings.Contains(err.Error(), base) {
		t.Fatalf("error does not name the missing file %s: %v", base, err)
	}
}

func TestEscapesRefused(t *testing.T) {
	s := StartCluster(t, Workers(1))
	cnxn := adbcConn(t, s.Addr())
	for _, q := range []string{
		"SELECT * FROM read_csv('/etc/passwd')",
		"SELECT * FROM read_parquet('/tmp/x.parquet')",
		"SELECT * FROM glob('/etc/*')",
		"SELECT * FROM read_text('/etc/passwd')",
		"COPY (SELECT 1) TO '/tmp/icefloe-escape.csv'",
		"ATTACH '/tmp/icefloe-escape.db' AS x",
		"INSTALL httpfs",
		"LOAD httpfs",
		"SET enable_external_access = true",
		"PRAGMA version",
		"SELECT * FROM '/etc/passwd'",
	} {
		_, err := query(t, cnxn, q)
		if err == nil {
			t.Errorf("%s: not refused", q)
			continue
		}
		var ae adbc.Error
		msg := err.Error()
		if !strings.Contains(strings.ToLower(msg), "not allowed") && !strings.Contains(msg, "not found") && !strings.Contains(msg, "does not exist") {
			t.Errorf("%s: error does not say what was refused: %v (%v)", q, err, ae.Code)
		}
	}
	// The server is still up.
	mustQuery(t, cnxn, "SELECT 42")
}

func TestBadInputErrors(t *testing.T) {
	s := StartCluster(t, Workers(1), Demo())
	ctx := context.Background()
	cl := flightClient(t, s.Addr())
	cases := []struct {
		q    string
		code codes.Code
		text string
	}{
		{"SELEC 1", codes.InvalidArgument, "syntax error"},
		{"SELECT * FROM no_such_table", codes.NotFound, "no_such_table"},
		{"SELECT * FROM nocat.default.orders", codes.NotFound, "nocat"},
		{"SELECT no_such_column FROM orders", codes.InvalidArgument, "no_such_column"},
		{"BEGIN TRANSACTION", codes.Unimplemented, "BEGIN"},
		{"COPY orders TO '/tmp/x'", codes.PermissionDenied, "COPY"},
	}
	for _, c := range cases {
		_, err := cl.Execute(ctx, c.q)
		if status.Code(err) != c.code || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: got %v, want %s mentioning %q", c.q, err, c.code, c.text)
		}
	}
	_ = memory.DefaultAllocator
	_ = time.Second
}
