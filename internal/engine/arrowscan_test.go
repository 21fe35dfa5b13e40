package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// streamSchema is the shape the DuckDB bugs were measured on: two
// integer columns, a float and a string.
var streamSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// streamBatches are rows 0..n-1 cut into batches of size rows (not a
// multiple of DuckDB's vector): k = id % 16, v NULL every 7th row, s a
// string of id % 1000.
func streamBatches(mem memory.Allocator, n, size int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for off := 0; off < n; off += size {
		b := array.NewRecordBuilder(mem, streamSchema)
		for i := off; i < min(off+size, n); i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.Int64Builder).Append(int64(i % 16))
			if i%7 == 0 {
				b.Field(2).(*array.Float64Builder).AppendNull()
			} else {
				b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
			}
			b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("s%03d", i%1000))
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

func reader(t testing.TB, batches []arrow.RecordBatch) array.RecordReader {
	t.Helper()
	rdr, err := array.NewRecordReader(streamSchema, batches)
	if err != nil {
		t.Fatal(err)
	}
	return rdr
}

// readerOf is a reader of rows 0..n-1 in batches of size rows (as
// streamBatches), which holds the only reference to them.
func readerOf(t testing.TB, mem memory.Allocator, n, size int) array.RecordReader {
	t.Helper()
	batches := streamBatches(mem, n, size)
	rdr := reader(t, batches)
	for _, b := range batches {
		b.Release()
	}
	return rdr
}

// answer runs q and returns its rows as text, one line per row, in order.
func answer(t *testing.T, c *Conn, q string) (string, error) {
	t.Helper()
	rows, err := c.DB().QueryContext(context.Background(), q)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		fmt.Fprintln(&b, vals...)
	}
	return b.String(), rows.Err()
}

// The queries DuckDB answers wrong over a registered Arrow view
// (duckdb/duckdb#17012: a column's values for another's, a crash, rows a
// filter should drop) answer over a streamed view exactly as over a table
// loaded from the same batches. Each query streams afresh: a stream is
// scanned once.
func TestStreamAnswersAsATable(t *testing.T) {
	ctx := context.Background()
	const rows = 20000
	batches := streamBatches(memory.DefaultAllocator, rows, 4999)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	ref := openTest(t)
	rdr := reader(t, batches)
	if err := ref.LoadTable(ctx, "v", rdr); err != nil {
		t.Fatal(err)
	}
	rdr.Release()
	eng := ref.e
	for _, q := range []string{
		"SELECT sum(k), count(*) FROM v",              // wrong column over a view
		"SELECT max(s), min(s) FROM v",                // the crash over a view
		"SELECT count(*), sum(id) FROM v WHERE k = 2", // unfiltered over a view
		"SELECT s, id FROM v WHERE id % 1000 = 7 ORDER BY id",
		"SELECT count(*) FROM v",
		"SELECT count(v), sum(v) FROM v WHERE s LIKE 's00%'",
		"SELECT k, count(*), sum(v), max(s) FROM v GROUP BY k ORDER BY k",
		"SELECT id FROM v ORDER BY id DESC LIMIT 3",
		"SELECT * FROM v WHERE id BETWEEN 4990 AND 5010 ORDER BY id",
		"SELECT count(*) FROM v AS a JOIN (SELECT range AS id FROM range(0, 30000, 3)) AS b ON a.id = b.id WHERE a.k < 8",
	} {
		want, err := answer(t, ref, q)
		if err != nil {
			t.Fatalf("%s: reference: %v", q, err)
		}
		c, err := eng.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rdr := reader(t, batches)
		if err := c.Stream(ctx, "v", rdr, rows); err != nil {
			t.Fatal(err)
		}
		got, err := answer(t, c, q)
		c.Close()
		rdr.Release()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got != want {
			t.Errorf("%s:\ngot  %q\nwant %q", q, got, want)
		}
	}
}

// Two streams join as two tables would, whichever DuckDB builds on.
func TestStreamJoin(t *testing.T) {
	ctx := context.Background()
	c := openTest(t)
	ra, rb := readerOf(t, memory.DefaultAllocator, 30000, 8192), readerOf(t, memory.DefaultAllocator, 5000, 3000)
	defer ra.Release()
	defer rb.Release()
	if err := c.Stream(ctx, "a", ra, 30000); err != nil {
		t.Fatal(err)
	}
	if err := c.Stream(ctx, "b", rb, 5000); err != nil {
		t.Fatal(err)
	}
	got, err := answer(t, c, "SELECT count(*), sum(a.k), max(b.s) FROM a JOIN b ON a.id = b.id * 3 WHERE b.k <> 1")
	if err != nil {
		t.Fatal(err)
	}
	// b.id*3 < 30000 for every b.id < 5000 (10000 > 5000); b.k <> 1 drops
	// the b rows with id % 16 = 1 (313 of 5000).
	var want strings.Builder
	n, sum := 0, int64(0)
	maxS := ""
	for i := range 5000 {
		if i%16 == 1 {
			continue
		}
		n++
		sum += int64(i*3) % 16
		maxS = max(maxS, fmt.Sprintf("s%03d", i%1000))
	}
	fmt.Fprintln(&want, n, sum, maxS)
	if got != want.String() {
		t.Fatalf("got %q, want %q", got, want.String())
	}
}

// A second scan of a streamed view fails, naming why, instead of seeing a
// drained stream (duckdb/duckdb#19040: too few rows, silently).
func TestStreamScannedOnce(t *testing.T) {
	ctx := context.Background()
	batches := streamBatches(memory.DefaultAllocator, 10000, 4096)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	e := openTest(t).e
	for _, q := range []string{
		"SELECT count(*) FROM v a JOIN v b ON a.id = b.id",
		"SELECT count(*) FROM (SELECT id FROM v UNION ALL SELECT id FROM v)",
	} {
		c, err := e.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rdr := reader(t, batches)
		if err := c.Stream(ctx, "v", rdr, 10000); err != nil {
			t.Fatal(err)
		}
		got, err := answer(t, c, q)
		if err == nil || !strings.Contains(err.Error(), ErrStreamRead.Error()) {
			t.Errorf("%s: got %q, %v; want %v", q, got, err, ErrStreamRead)
		}
		// The first query is over; a next one on the view fails too.
		if got, err := answer(t, c, "SELECT count(*) FROM v"); err == nil {
			t.Errorf("a query after the stream was read: got %q, want an error", got)
		}
		c.Close()
		rdr.Release()
	}
}

// Every type DuckDB hands out as Arrow comes back through a stream as it
// does through a loaded table.
func TestStreamTypes(t *testing.T) {
	ctx := context.Background()
	c := openTest(t)
	src := `SELECT range AS id,
		range % 2 = 0 AS b, CAST(range % 100 AS TINYINT) AS i8, CAST(range AS SMALLINT) AS i16, CAST(range AS INTEGER) AS i32,
		CAST(range % 200 AS UTINYINT) AS u8, CAST(range AS USMALLINT) AS u16, CAST(range AS UINTEGER) AS u32, CAST(range AS UBIGINT) AS u64,
		CAST(range AS HUGEINT) * 1000000000000 AS h, CAST(range AS FLOAT) / 3 AS f, range / 7 AS d,
		CAST(range / 3 AS DECIMAL(9,2)) AS d9, CAST(range / 3 AS DECIMAL(18,4)) AS d18, CAST(range / 3 AS DECIMAL(38,10)) AS d38,
		CASE WHEN range % 5 = 0 THEN NULL ELSE repeat('é', range % 20) END AS s, CAST(repeat('x', range % 9) AS BLOB) AS bl,
		DATE '2024-01-01' + CAST(range AS INTEGER) AS dt, TIME '01:02:03' + INTERVAL (range) SECOND AS tm,
		TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (range) MINUTE AS ts, TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (range) HOUR AS tz,
		INTERVAL (range) DAY AS iv, [range, NULL, range + 1] AS l, {'a': range, 'b': CAST(range AS VARCHAR)} AS st,
		MAP {'k': range} AS m, CAST('00000000-0000-0000-0000-' || lpad(CAST(range AS VARCHAR), 12, '0') AS UUID) AS u
		FROM range(3000)`
	load := func(name string, stream bool) {
		rdr, err := c.Query(ctx, src, QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		var batches []arrow.RecordBatch
		for rdr.Next() {
			b := rdr.RecordBatch()
			b.Retain()
			batches = append(batches, b)
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		in, err := array.NewRecordReader(rdr.Schema(), batches)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			b.Release()
		}
		if stream {
			err = c.Stream(ctx, name, in, 3000)
			c.Hold(in.Release)
		} else {
			err = c.LoadTable(ctx, name, in)
			in.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	load("loaded", false)
	load("streamed", true)
	ts, err := c.QuerySchema(ctx, "SELECT * FROM loaded")
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.QuerySchema(ctx, "SELECT * FROM streamed")
	if err != nil {
		t.Fatal(err)
	}
	if !ts.Equal(ss) {
		t.Fatalf("streamed schema %s, loaded %s", ss, ts)
	}
	// Every row of one is in the other, and both have 3000.
	got, err := answer(t, c, "SELECT count(*), (SELECT count(*) FROM (SELECT * FROM loaded EXCEPT ALL SELECT * FROM streamed)) FROM loaded")
	if err != nil {
		t.Fatal(err)
	}
	if got != "3000 0\n" {
		t.Fatalf("loaded rows and rows not streamed: %q, want 3000 0", got)
	}
}

// errReader fails after its first batch.
type errReader struct {
	array.RecordReader
	n   int
	err error
}

var errMidStream = errors.New("the source went away")

func (r *errReader) Next() bool {
	if r.n++; r.n > 1 {
		r.err = errMidStream
		return false
	}
	return r.RecordReader.Next()
}
func (r *errReader) Err() error { return r.err }

// A stream failing mid-way fails the query over it with its message; the
// reader keeps the error itself for the caller.
func TestStreamReaderError(t *testing.T) {
	ctx := context.Background()
	c := openTest(t)
	batches := streamBatches(memory.DefaultAllocator, 10000, 4096)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	rdr := &errReader{RecordReader: reader(t, batches)}
	defer rdr.Release()
	if err := c.Stream(ctx, "v", rdr, -1); err != nil {
		t.Fatal(err)
	}
	_, err := answer(t, c, "SELECT count(*) FROM v")
	if err == nil || !strings.Contains(err.Error(), errMidStream.Error()) {
		t.Fatalf("got %v, want the stream's error", err)
	}
	if !errors.Is(rdr.Err(), errMidStream) {
		t.Fatalf("reader error %v", rdr.Err())
	}
}

// Whatever the scans held is released: batches fully read, a scan ended
// early by LIMIT, a stream never scanned.
func TestStreamReleases(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e := openTest(t).e
	for _, q := range []string{"SELECT count(*), max(s) FROM v", "SELECT id FROM v LIMIT 5", ""} {
		rdr := readerOf(t, mem, 20000, 4096)
		c, err := e.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Stream(ctx, "v", rdr, 20000); err != nil {
			t.Fatal(err)
		}
		if q != "" {
			if _, err := answer(t, c, q); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		rdr.Release()
		mem.AssertSize(t, 0)
	}
}

// Another connection cannot scan a stream, even knowing its id.
func TestStreamPrivateToItsConnection(t *testing.T) {
	ctx := context.Background()
	a := openTest(t)
	batches := streamBatches(memory.DefaultAllocator, 100, 100)
	rdr := reader(t, batches)
	batches[0].Release()
	defer rdr.Release()
	if err := a.Stream(ctx, "v", rdr, 100); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	streams.Range(func(k, v any) bool {
		if v.(*streamSource).rdr == rdr {
			ids = append(ids, k.(uint64))
		}
		return true
	})
	if len(ids) != 1 {
		t.Fatalf("registered ids %v", ids)
	}
	b, err := a.e.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, err := answer(t, b, fmt.Sprintf("SELECT count(*) FROM %s(%d::UBIGINT)", streamFunction, ids[0])); err == nil {
		t.Fatalf("another connection read the stream: %q", got)
	}
	if got, err := answer(t, a, "SELECT count(*) FROM v"); err != nil || got != "100\n" {
		t.Fatalf("own connection: %q, %v", got, err)
	}
}

// Streams on several connections run at once, each on a DuckDB of two
// threads.
func TestStreamsConcurrently(t *testing.T) {
	ctx := context.Background()
	e, err := Open(ctx, Options{Threads: 2, MemoryLimit: "512MB", TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			ra, rb := readerOf(t, memory.DefaultAllocator, 40000, 5000), readerOf(t, memory.DefaultAllocator, 40000, 7000)
			defer ra.Release()
			defer rb.Release()
			c, err := e.Conn(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if err := c.Stream(ctx, "a", ra, 40000); err != nil {
				errs <- err
				return
			}
			if err := c.Stream(ctx, "b", rb, 40000); err != nil {
				errs <- err
				return
			}
			var n, k int64
			if err := c.DB().QueryRowContext(ctx, "SELECT count(*), sum(a.k + b.k) FROM a JOIN b USING (id, s)").Scan(&n, &k); err != nil {
				errs <- err
				return
			}
			if n != 40000 || k != 2*(40000/16)*(15*16/2) {
				errs <- fmt.Errorf("got %d rows, sum %d", n, k)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// DuckDB's own registered Arrow views are still wrong in the ways the
// stream table function avoids (duckdb/duckdb#17012, #19040): when this
// test fails, DuckDB fixed them, and views may be worth measuring again.
// (The third way, SIGSEGV for `SELECT max(s)`, is not run here.)
func TestArrowViewBugs(t *testing.T) {
	ctx := context.Background()
	batches := streamBatches(memory.DefaultAllocator, 1000, 1000)
	defer batches[0].Release()
	e := openTest(t).e
	for _, c := range []struct {
		query, right, bug string
	}{
		{"SELECT sum(k) FROM v", "7468\n", "499500\n"},                        // sum(id): another column
		{"SELECT count(*) FROM v WHERE k = 2", "63\n", "1000\n"},              // the filter not applied
		{"SELECT count(*) FROM v a JOIN v b ON a.id = b.id", "1000\n", "0\n"}, // read once
	} {
		conn, err := e.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rdr := reader(t, batches)
		release, err := conn.arrow.RegisterView(rdr, "v")
		if err != nil {
			t.Fatal(err)
		}
		got, err := answer(t, conn, c.query)
		conn.Exec(ctx, "DROP VIEW v")
		release()
		rdr.Release()
		conn.Close()
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.query, err)
		case got == c.right:
			t.Errorf("%s over a registered Arrow view is right now (%q): DuckDB fixed it", c.query, got)
		case got != c.bug:
			t.Errorf("%s over a registered Arrow view: %q, neither right (%q) nor the known bug (%q)", c.query, got, c.right, c.bug)
		}
	}
}

// BenchmarkArrowIn compares the ways a stream gets into DuckDB: loaded
// into a temp table first (LoadTable) or scanned in place (Stream), for a
// GROUP BY over one stream and a join of two. Run with
// `go test -tags duckdb_arrow -run - -bench ArrowIn ./internal/engine/`.
func BenchmarkArrowIn(b *testing.B) {
	ctx := context.Background()
	e, err := Open(ctx, Options{Threads: 1, MemoryLimit: "2GB", TempDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	const probe, build = 2_000_000, 400_000
	probeBatches := streamBatches(memory.DefaultAllocator, probe, 64*1024)
	buildBatches := streamBatches(memory.DefaultAllocator, build, 64*1024)
	defer func() {
		for _, s := range [][]arrow.RecordBatch{probeBatches, buildBatches} {
			for _, r := range s {
				r.Release()
			}
		}
	}()
	queries := map[string]string{
		"groupby": "SELECT k, count(*), sum(v), max(s) FROM a GROUP BY k",
		"join":    "SELECT count(*), sum(a.v), max(b.s) FROM a JOIN b ON a.id = b.id * 5",
	}
	for _, q := range []string{"groupby", "join"} {
		for _, how := range []string{"load", "stream"} {
			b.Run(q+"/"+how, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c, err := e.Conn(ctx)
					if err != nil {
						b.Fatal(err)
					}
					ra, rb := reader(b, probeBatches), reader(b, buildBatches)
					in := func(name string, rdr array.RecordReader, rows int64) error {
						if how == "load" {
							return c.LoadTable(ctx, name, rdr)
						}
						return c.Stream(ctx, name, rdr, rows)
					}
					err = in("a", ra, probe)
					if q == "join" {
						err = errors.Join(err, in("b", rb, build))
					}
					if err != nil {
						b.Fatal(err)
					}
					var n int64
					rows, err := c.DB().QueryContext(ctx, queries[q])
					if err != nil {
						b.Fatal(err)
					}
					for rows.Next() {
						n++
					}
					rows.Close()
					c.Close()
					ra.Release()
					rb.Release()
				}
				b.ReportMetric(float64(probe)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
