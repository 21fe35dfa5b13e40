package engine

import (
	"context"
	"strings"
	"testing"

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
