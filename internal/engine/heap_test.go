package engine

import (
	"context"
	"strings"
	"testing"
)

// TestHeapLimit: with DuckDB's heap bounded, statements whose one
// expression builds a value far past the bound (a 12 GB list, a list of
// 1.5 million strings made of values, a 4 GB string) fail with DuckDB's
// out-of-memory error, without DuckDB's advice to change settings, and
// the heap's count returns to where it was; preparing such a statement,
// which folds its constants, refuses the folding and succeeds; what fits
// answers; and the count sees what a statement allocates.
func TestHeapLimit(t *testing.T) {
	const limit = 256 << 20
	if err := SetHeapLimit(limit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { SetHeapLimit(0) })
	ctx := context.Background()
	e, err := Open(ctx, Options{Threads: 2, MemoryLimit: "64MB"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	conn := func() *Conn {
		c, err := e.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	base := Heap().Used
	for _, q := range []string{
		"SELECT list_aggregate(range(1500000000), 'sum')",
		"SELECT count(*) FROM (SELECT unnest(range(2000000000)))",
		"SELECT len(list_transform(range(1500000), x -> repeat('ab', 500)))",
		"SELECT length(repeat('x', 4000000000))",
		"SELECT count(*) FROM range(2) t(i) WHERE len(range(1500000000 + i)) > 0",
	} {
		refused := Heap().Refused
		err := drain(conn().Query(ctx, q, QueryOptions{}))
		if !IsResourceError(err) || ResourceKey(err) != MemoryKey {
			t.Fatalf("%s: %v, want DuckDB's out-of-memory error", q, err)
		}
		if strings.Contains(err.Error(), "Possible solutions") || strings.Contains(err.Error(), "SET ") {
			t.Fatalf("%s: %q gives DuckDB's advice", q, err)
		}
		if Heap().Refused == refused {
			t.Fatalf("%s: failed without the heap refusing: %v", q, err)
		}
		if used := Heap().Used; used > base+16<<20 {
			t.Fatalf("%s: the heap still counts %d bytes, %d at the start", q, used, base)
		}
	}
	if err := conn().Exec(ctx, "CREATE TEMP TABLE big AS SELECT range(100000000) AS l"); !IsResourceError(err) {
		t.Fatalf("a statement run through database/sql: %v, want DuckDB's out-of-memory error", err)
	}
	// Binding a statement folds its constants: the fold that passes the
	// bound is refused, and the expression is left for the run.
	refused := Heap().Refused
	schema, err := conn().QuerySchema(ctx, "SELECT len(range(1500000000)) AS n")
	if err != nil || schema.NumFields() != 1 {
		t.Fatalf("prepare: %v, %v", schema, err)
	}
	if Heap().Refused == refused {
		t.Fatal("preparing folded a 12 GB list without the heap refusing it")
	}
	peak := Heap().Peak
	if err := drain(conn().Query(ctx, "SELECT len(range(10000000))", QueryOptions{})); err != nil {
		t.Fatalf("an 80 MB list within the bound: %v", err)
	}
	if Heap().Peak < min(peak, base+80<<20) {
		t.Fatalf("peak %d: an 80 MB list was not counted (base %d)", Heap().Peak, base)
	}
	if h := Heap(); h.Limit != limit || h.Peak > limit+limit/16+16<<20 {
		t.Fatalf("heap %+v: over the bound of %d", h, limit)
	}
}

// BenchmarkHeapCounting runs statements that allocate much and often
// through DuckDB's allocator and operator new (a hash aggregate, a sort,
// a join, strings, lists): counted only, then bounded (SetHeapLimit, which
// also has jemalloc return freed pages at once). Against a build without
// heap.cc (copy this benchmark there), it gives the cost of the count.
func BenchmarkHeapCounting(b *testing.B) {
	for _, mode := range []string{"counted", "bounded"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "bounded" {
				if err := SetHeapLimit(8 << 30); err != nil {
					b.Fatal(err)
				}
				defer SetHeapLimit(0)
			}
			benchmarkHeapQueries(b)
		})
	}
}

func benchmarkHeapQueries(b *testing.B) {
	ctx := context.Background()
	e, err := Open(ctx, Options{MemoryLimit: "1GB"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	c, err := e.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, q := range []struct{ name, sql string }{
		{"aggregate", "SELECT count(*), sum(s) FROM (SELECT i % 1000003 AS k, sum(i) AS s FROM range(10000000) t(i) GROUP BY k)"},
		{"sort", "SELECT sum(x) FROM (SELECT i AS x FROM range(3000000) t(i) ORDER BY (i * 7919) % 10000019 LIMIT 100000)"},
		{"join", "SELECT count(*) FROM range(2000000) a(i) JOIN range(2000000) b(j) ON a.i = b.j * 2"},
		{"strings", "SELECT sum(length(s)) FROM (SELECT CAST(i AS VARCHAR) || 'abcdefgh' AS s FROM range(5000000) t(i))"},
		{"lists", "SELECT sum(len(l)) FROM (SELECT range(i % 100) AS l FROM range(1000000) t(i))"},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				if err := drain(c.Query(ctx, q.sql, QueryOptions{})); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
