package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
)

func TestRawConnection(t *testing.T) {
	c := openTest(t)
	if c.raw.Ptr == nil {
		t.Fatal("no C connection")
	}
	if _, err := rawConn(struct{}{}); !errors.Is(err, errNoRawConn) {
		t.Fatalf("not a duckdb connection: %v", err)
	}
}

// A result far larger than memory streams: the first batches arrive and
// releasing the reader stops the statement. A materialised result would
// never return from Query's first Next.
func TestQueryStreamsAndStopsEarly(t *testing.T) {
	c := openTest(t)
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rdr, err := c.Query(ctx, "SELECT range AS i, repeat('x', 100) AS s FROM range(10000000000)", QueryOptions{BatchRows: 10000, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for i := 0; i < 3 && rdr.Next(); i++ {
		if n := rdr.RecordBatch().NumRows(); n != 10000 {
			t.Fatalf("batch %d has %d rows, want the chunks merged to 10000", i, n)
		}
		rows += rdr.RecordBatch().NumRows()
	}
	rdr.Release()
	if rows < 30000 {
		t.Fatalf("rows %d", rows)
	}
	// The connection runs the next statement normally.
	if got := count(t, c, "SELECT count(*) FROM range(1000)"); got != 1000 {
		t.Fatalf("count after an early release: %d", got)
	}
}

func count(t *testing.T, c *Conn, q string) int64 {
	t.Helper()
	var n int64
	if err := c.DB().QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Cancelling the context interrupts a statement that has not produced
// its first chunk yet (a blocking aggregate), and says why.
func TestQueryCancelInterruptsBeforeTheFirstChunk(t *testing.T) {
	c := openTest(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	rdr, err := c.Query(ctx, "SELECT sum(hash(a.range * b.range)) FROM range(100000) a, range(100000) b", QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("client went away")
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel(cause)
	}()
	if rdr.Next() {
		t.Fatal("a row from a cancelled aggregate")
	}
	if !errors.Is(rdr.Err(), cause) {
		t.Fatalf("err %v, want the cancel cause", rdr.Err())
	}
	rdr.Release()
	if got := count(t, c, "SELECT count(*) FROM range(7)"); got != 7 {
		t.Fatalf("count after an interrupt: %d", got)
	}
}

// Small chunks wait at most FlushAfter before they leave, merged.
func TestQueryFlushAfter(t *testing.T) {
	c := openTest(t)
	rdr, err := c.Query(context.Background(), "SELECT * FROM range(5000)", QueryOptions{BatchRows: 1 << 20, FlushAfter: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows int64
	for rdr.Next() {
		rows += rdr.RecordBatch().NumRows()
	}
	if rdr.Err() != nil || rows != 5000 {
		t.Fatalf("rows %d, err %v", rows, rdr.Err())
	}
}

func TestQueryErrors(t *testing.T) {
	c := openTest(t)
	ctx := context.Background()
	if _, err := c.Query(ctx, "SELEC 1", QueryOptions{}); err == nil || !strings.Contains(err.Error(), "Parser Error") {
		t.Fatalf("syntax: %v", err)
	}
	if _, err := c.Query(ctx, "SELECT 1; SELECT 2", QueryOptions{}); err == nil {
		t.Fatal("two statements prepared as one")
	}
	// An error while producing rows ends the stream with DuckDB's error.
	rdr, err := c.Query(ctx, "SELECT CAST(CASE WHEN range < 5000 THEN '1' ELSE 'x' END AS INTEGER) FROM range(10000)", QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	for rdr.Next() {
	}
	var de *duckdb.Error
	if !errors.As(rdr.Err(), &de) || de.Type != duckdb.ErrorTypeConversion {
		t.Fatalf("err %v", rdr.Err())
	}
}

// The schema Query reports is the one its batches carry, for every type
// icefloe reads.
func TestQuerySchemaMatchesBatches(t *testing.T) {
	c := openTest(t)
	q := `SELECT 1::INTEGER AS i, 2::BIGINT AS l, 1.5::FLOAT AS f, 2.5::DOUBLE AS d, 12.34::DECIMAL(12,2) AS dec,
		DATE '2024-02-29' AS dt, TIME '13:14:15.123456' AS tm, TIMESTAMP '2024-03-01 10:11:12.345678' AS ts,
		TIMESTAMPTZ '2024-03-01 10:11:12.345678+00' AS tz, 'a'::VARCHAR AS s, '\x00'::BLOB AS b,
		'0193c1b4-7e25-7c4f-9a52-000000000001'::UUID AS u, [1, 2] AS li, MAP {'a': 1} AS m, {'x': 1} AS st, sum(1) AS h`
	sc, err := c.QuerySchema(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.Query(context.Background(), q, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatal(rdr.Err())
	}
	if !rdr.RecordBatch().Schema().Equal(sc) {
		t.Fatalf("batch schema %s\nprepared schema %s", rdr.RecordBatch().Schema(), sc)
	}
	if got := sc.Field(15).Type; !arrow.TypeEqual(got, &arrow.Decimal128Type{Precision: 38, Scale: 0}) {
		t.Fatalf("sum(INTEGER) is %s", got)
	}
}

func TestMergeReader(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil)
	batch := func(n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := 0; i < n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
		}
		return b.NewRecordBatch()
	}
	var in []arrow.RecordBatch
	for _, n := range []int{3, 3, 0, 20, 4, 4, 4} {
		in = append(in, batch(n))
	}
	src, _ := array.NewRecordReader(schema, in)
	for _, b := range in {
		b.Release()
	}
	rdr := Merge(src, QueryOptions{BatchRows: 8, Allocator: mem})
	defer rdr.Release()
	var sizes []int64
	for rdr.Next() {
		sizes = append(sizes, rdr.RecordBatch().NumRows())
	}
	if want := []int64{8, 8, 8, 8, 6}; !slices.Equal(sizes, want) {
		t.Fatalf("batch sizes %v, want %v", sizes, want)
	}
}

// Wide rows are cut by bytes before BatchRows: no batch outgrows what a
// client accepts in one message.
func TestQueryBatchBytes(t *testing.T) {
	c := openTest(t)
	rdr, err := c.Query(context.Background(), "SELECT range AS i, repeat('x', 10000) AS s FROM range(5000)",
		QueryOptions{BatchRows: 65536, BatchBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows, batches int64
	for rdr.Next() {
		b := rdr.RecordBatch()
		if n := b.NumRows(); n > (1<<20)/10000 {
			t.Fatalf("batch of %d rows of 10 kB", n)
		}
		rows += b.NumRows()
		batches++
	}
	if rdr.Err() != nil || rows != 5000 || batches < 40 {
		t.Fatalf("%d rows in %d batches, err %v", rows, batches, rdr.Err())
	}
}

// The chunks fetched ahead of the reader are bounded in bytes: with rows
// of 5 kB a DuckDB chunk is 10 MB, so once the reader holds its first
// batch the producer has at most one more chunk queued (BatchBytes is
// 8 MiB), not the 32 chunks (320 MB, in DuckDB's memory) a queue sized
// by BatchRows alone would hold.
func TestQueryQueueBoundedByBytes(t *testing.T) {
	c := openTest(t)
	rdr, err := c.Query(context.Background(), "SELECT range AS i, repeat('x', 5000) AS s FROM range(1000000)",
		QueryOptions{BatchRows: 65536, BatchBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatal(rdr.Err())
	}
	s := rdr.(*stream)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n := len(s.chunks); n > 1 {
			t.Fatalf("%d chunks of 10 MB queued ahead of the reader", n)
		}
	}
}
