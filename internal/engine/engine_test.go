package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func openTest(t *testing.T) *Conn {
	t.Helper()
	ctx := context.Background()
	e, err := Open(ctx, Options{Threads: 1, MemoryLimit: "256MB", TempDir: t.TempDir() + "/spill"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c, err := e.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLockdown(t *testing.T) {
	c := openTest(t)
	ctx := context.Background()
	for _, q := range []string{
		"SELECT * FROM read_csv('/etc/passwd')",
		"COPY (SELECT 1) TO '/tmp/icefloe-escape.csv'",
		"SET lock_configuration = false",
		"SET enable_external_access = true",
		"INSTALL httpfs",
		"LOAD httpfs",
		"ATTACH '/tmp/icefloe-escape.db' AS x",
	} {
		if err := c.Exec(ctx, q); err == nil {
			t.Errorf("%s: want an error, got none", q)
		}
	}
}

func TestLoadTableTwiceScannable(t *testing.T) {
	c := openTest(t)
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < 100; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", i%5))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LoadTable(ctx, "t0", rdr); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := c.DB().QueryRowContext(ctx, "SELECT count(*) FROM t0 a JOIN t0 b USING (id) WHERE a.s = b.s").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 100 {
		t.Fatalf("self join: got %d rows, want 100", n)
	}
	got, err := c.QuerySchema(ctx, "SELECT id, s FROM t0")
	if err != nil {
		t.Fatal(err)
	}
	if got.NumFields() != 2 || got.Field(0).Type.ID() != arrow.INT64 {
		t.Fatalf("schema: %s", got)
	}
}

func TestSerializeSQL(t *testing.T) {
	c := openTest(t)
	ctx := context.Background()
	ast, err := c.SerializeSQL(ctx, "SELECT a FROM s.t WHERE a > 1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ast, `"BASE_TABLE"`) {
		t.Fatalf("no base table in %s", ast)
	}
	back, err := c.DeserializeSQL(ctx, ast)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(back, "s.t") {
		t.Fatalf("round trip: %s", back)
	}
}

// TestOneStatement: Exec, ExecChecked and Query run exactly one statement,
// and nothing of a text that holds more.
func TestOneStatement(t *testing.T) {
	c := openTest(t)
	ctx := context.Background()
	if err := c.Exec(ctx, "CREATE TEMP TABLE t (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)",
		"INSERT INTO t VALUES (1) -- c\r; INSERT INTO t VALUES (2)",
		"SELECT 1; INSERT INTO t VALUES (2)",
		"",
		"-- nothing",
	} {
		if err := c.Exec(ctx, q); !errors.Is(err, ErrStatement) {
			t.Errorf("Exec(%q): got %v, want ErrStatement", q, err)
		}
		if err := c.ExecChecked(ctx, duckdb.STATEMENT_TYPE_INSERT, q); !errors.Is(err, ErrStatement) {
			t.Errorf("ExecChecked(%q): got %v, want ErrStatement", q, err)
		}
		if rdr, err := c.Query(ctx, q, QueryOptions{}); !errors.Is(err, ErrStatement) {
			if rdr != nil {
				rdr.Release()
			}
			t.Errorf("Query(%q): got %v, want ErrStatement", q, err)
		}
	}
	// A statement of another kind than asked for does not run.
	if err := c.ExecChecked(ctx, duckdb.STATEMENT_TYPE_INSERT, "CREATE TEMP TABLE u (a INTEGER)"); !errors.Is(err, ErrStatement) {
		t.Errorf("CREATE as INSERT: got %v, want ErrStatement", err)
	}
	// Text only DuckDB's fallback parsers accept is refused.
	var pe *ParseError
	if err := c.ExecChecked(ctx, duckdb.STATEMENT_TYPE_INSERT, "INSERT INTO t VALUES (3)\v"); !errors.As(err, &pe) {
		t.Errorf("trailing \\v: got %v, want a ParseError", err)
	}
	if err := c.ExecChecked(ctx, duckdb.STATEMENT_TYPE_INSERT, "INSERT INTO t VALUES (?)", int64(4)); err != nil {
		t.Fatal(err)
	}
	var n, sum int64
	if err := c.DB().QueryRowContext(ctx, "SELECT count(*), coalesce(sum(a), 0) FROM t").Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != 1 || sum != 4 {
		t.Fatalf("t holds %d rows summing to %d, want the one row 4", n, sum)
	}
	if _, err := c.DB().ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkStatementChecks measures what the one-statement checks cost:
// Query and ExecChecked against the same statement run unchecked (the
// reference, measured in the same run). A query of a fragment's size over
// 10,000 rows; an INSERT of one row.
func BenchmarkStatementChecks(b *testing.B) {
	ctx := context.Background()
	e, err := Open(ctx, Options{Threads: 1, MemoryLimit: "256MB", TempDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	c, err := e.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec(ctx, "CREATE TEMP TABLE t AS SELECT range AS id, range % 7 AS k FROM range(10000)"); err != nil {
		b.Fatal(err)
	}
	const q = "SELECT k, count(*) AS n, sum(id) AS s FROM t WHERE id % 3 = 1 GROUP BY k ORDER BY k"
	drain := func(b *testing.B, query func() (interface {
		Next() bool
		Release()
	}, error)) {
		for range b.N {
			rdr, err := query()
			if err != nil {
				b.Fatal(err)
			}
			for rdr.Next() {
			}
			rdr.Release()
		}
	}
	b.Run("query/checked", func(b *testing.B) {
		drain(b, func() (interface {
			Next() bool
			Release()
		}, error) {
			return c.Query(ctx, q, QueryOptions{})
		})
	})
	b.Run("query/reference", func(b *testing.B) {
		drain(b, func() (interface {
			Next() bool
			Release()
		}, error) {
			return c.arrow.QueryContext(ctx, q)
		})
	})
	if err := c.Exec(ctx, "CREATE TEMP TABLE u (a BIGINT, s VARCHAR)"); err != nil {
		b.Fatal(err)
	}
	const ins = "INSERT INTO u VALUES (1, 'a')"
	b.Run("insert/checked", func(b *testing.B) {
		for range b.N {
			if err := c.ExecChecked(ctx, duckdb.STATEMENT_TYPE_INSERT, ins); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("insert/reference", func(b *testing.B) {
		for range b.N {
			if _, err := c.c.ExecContext(ctx, ins); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestIsResourceError(t *testing.T) {
	ctx := context.Background()
	e, err := Open(ctx, Options{MemoryLimit: "20MB", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	conn, err := e.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// One string far past the memory limit: nothing to spill.
	err = drain(conn.Query(ctx, "SELECT length(string_agg(repeat('x', 1000), '')) AS n FROM range(200000)", QueryOptions{}))
	if err == nil || !IsResourceError(err) {
		t.Fatalf("repeat past memory_limit: %v (resource: %v)", err, IsResourceError(err))
	}
	err = drain(conn.Query(ctx, "SELECT 'a'::INTEGER AS n", QueryOptions{}))
	if err == nil || IsResourceError(err) {
		t.Fatalf("cast error counted as resource error: %v", err)
	}
	// A full disk under a write, and its text as a peer reports it.
	full := fmt.Errorf("write data file: %w", &fs.PathError{Op: "write", Path: "/w/t/data/f.parquet", Err: syscall.ENOSPC})
	if !IsResourceError(full) || !IsResourceError(errors.New("worker: rpc error: code = Internal desc = "+full.Error())) {
		t.Fatalf("a full disk not counted as a resource error: %v", full)
	}
}

// drain reads a result to its end and returns the first error.
func drain(rdr array.RecordReader, err error) error {
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
	}
	return rdr.Err()
}

// TestQueryKept: a kept statement runs again without preparing, reads the
// connection's tables as they are when it runs, and Query never keeps.
func TestQueryKept(t *testing.T) {
	c := openTest(t)
	ctx := context.Background()
	if err := c.Exec(ctx, "CREATE TEMP TABLE k AS SELECT range AS x FROM range(5)"); err != nil {
		t.Fatal(err)
	}
	count := func(kept bool) (int64, bool) {
		t.Helper()
		var rdr array.RecordReader
		var reused bool
		var err error
		if kept {
			rdr, reused, err = c.QueryKept(ctx, "SELECT count(*) AS n FROM k", QueryOptions{})
		} else {
			rdr, err = c.Query(ctx, "SELECT count(*) AS n FROM k", QueryOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		if !rdr.Next() {
			t.Fatalf("no rows: %v", rdr.Err())
		}
		return rdr.RecordBatch().Column(0).(*array.Int64).Value(0), reused
	}
	if n, reused := count(true); n != 5 || reused {
		t.Fatalf("first kept run: %d rows, reused %v", n, reused)
	}
	if err := c.Exec(ctx, "INSERT INTO k VALUES (5)"); err != nil {
		t.Fatal(err)
	}
	if n, reused := count(true); n != 6 || !reused {
		t.Fatalf("second kept run: %d, reused %v; want 6, reused", n, reused)
	}
	if n, _ := count(false); n != 6 {
		t.Fatalf("Query: %d", n)
	}
	if len(c.kept) != 1 {
		t.Fatalf("%d kept statements, want 1", len(c.kept))
	}
}

// TestWaitForMemory: a connection waits while another holds most of the
// database's memory_limit and goes on once that one lets go.
func TestWaitForMemory(t *testing.T) {
	ctx := context.Background()
	e, err := Open(ctx, Options{Threads: 1, MemoryLimit: "64MB", TempDir: t.TempDir() + "/spill"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	holder, err := e.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter, err := e.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	if !waiter.WaitForMemory(ctx, time.Second) {
		t.Fatal("waited with no memory held")
	}
	// About 40 MB of distinct strings, held in memory by a temp table.
	if err := holder.Exec(ctx, "CREATE TEMP TABLE big AS SELECT repeat(i::VARCHAR, 10) || i AS s FROM range(1000000) t(i)"); err != nil {
		t.Fatal(err)
	}
	if waiter.WaitForMemory(ctx, 100*time.Millisecond) {
		t.Fatal("WaitForMemory returned while another connection held most of the memory")
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = holder.Exec(ctx, "DROP TABLE big")
	}()
	if !waiter.WaitForMemory(ctx, 10*time.Second) {
		t.Fatal("WaitForMemory did not return once the memory was released")
	}
}
