package statement

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/planner"
)

// Every context the planner infers a parameter type from, and the Arrow
// type clients are told to bind: what the JDBC driver writes into a
// vector of that type is what the server reads (timestamps and times in
// milliseconds, decimals at the column's precision and scale).
func TestParameterSchemaTypes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.exec(t, `CREATE TABLE p (id BIGINT NOT NULL, i INTEGER, b BOOLEAN, f FLOAT, d DOUBLE, amount DECIMAL(12,2),
		dt DATE, tm TIME, ts TIMESTAMP, tz TIMESTAMPTZ, s VARCHAR, u UUID, bl BLOB, tags VARCHAR[])`)
	const ms, msz = "timestamp[ms]", "timestamp[ms, tz=UTC]"
	cases := []struct {
		q    string
		want []string
	}{
		{"SELECT id FROM p WHERE amount > ?", []string{"decimal(12, 2)"}},
		{"SELECT CAST(? AS DECIMAL(12,2)) AS x", []string{"decimal(12, 2)"}},
		{"SELECT ?::DECIMAL(38,10) AS x", []string{"decimal(38, 10)"}},
		{"SELECT id FROM p WHERE ts < ? AND tz >= ?", []string{ms, msz}},
		{"SELECT id FROM p WHERE dt BETWEEN ? AND ? AND tm = ?", []string{"date32", "date32", "time32[ms]"}},
		{"SELECT id FROM p WHERE id IN (?, ?) AND s LIKE ? AND i = ?", []string{"int64", "int64", "utf8", "int32"}},
		{"SELECT id FROM p WHERE b = ? AND f = ? AND d = ? AND u = ? AND bl = ? AND tags = ?",
			[]string{"bool", "float32", "float64", "utf8", "binary", "utf8"}},
		{"SELECT ? AS anything", []string{"utf8"}},
		{"INSERT INTO p (id, amount, ts, tz, tm) VALUES (?, ?, ?, ?, ?)", []string{"int64", "decimal(12, 2)", ms, msz, "time32[ms]"}},
		{"UPDATE p SET amount = ?, tz = ? WHERE id = ? AND ts < ?", []string{"decimal(12, 2)", msz, "int64", ms}},
		{"DELETE FROM p WHERE amount > ? OR dt = ?", []string{"decimal(12, 2)", "date32"}},
	}
	for _, c := range cases {
		sc, err := parameters(ctx, e.x, e.sess, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		var got []string
		for _, f := range sc.Fields() {
			got = append(got, f.Type.String())
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: parameters %v, want %v", c.q, got, c.want)
		}
	}
}

// paramRecord is a batch of parameter rows: ids 0…n-1, amount id+0.05 as
// DECIMAL(12,2) and a timestamp[ms] of id milliseconds after
// 2024-02-29 23:59:58.5.
func paramRecord(t *testing.T, mem memory.Allocator, n int) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
		{Name: "c", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i)*100 + 5))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1709251198500 + int64(i)))
	}
	return b.NewRecordBatch()
}

// Many parameter rows of an INSERT … VALUES are one commit, whether they
// go in as one statement over a table of the batches or row by row; a
// NULL in a NOT NULL column names its row and commits nothing.
func TestExecBatchInsertsInOneCommit(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.DefaultAllocator)
	alloc = checked
	defer func() { alloc = memory.DefaultAllocator }()
	defer checked.AssertSize(t, 0)
	e := newEnv(t)
	ctx := context.Background()
	e.exec(t, `CREATE TABLE b (id BIGINT NOT NULL, amount DECIMAL(12,2), ts TIMESTAMP) PARTITIONED BY (bucket(4, id))`)
	rec := paramRecord(t, checked, 1000)
	defer rec.Release()
	n, err := runBatch(ctx, e.x, e.sess, "INSERT INTO b VALUES (?, ?, ?)", []arrow.RecordBatch{rec})
	if err != nil || n != 1000 {
		t.Fatalf("batch insert: %d, %v", n, err)
	}
	// An expression over the placeholders, and $n.
	n, err = runBatch(ctx, e.x, e.sess, "INSERT INTO b (ts, id, amount) VALUES ($3, $1 + 1000, $2 * 2)", []arrow.RecordBatch{rec})
	if err != nil || n != 1000 {
		t.Fatalf("batch insert of expressions: %d, %v", n, err)
	}
	tbl := e.load(t, "default", "b")
	if got := len(tbl.Metadata().Snapshots()); got != 2 {
		t.Fatalf("%d snapshots for two batches, want 2", got)
	}
	got := e.query(t, tbl, "SELECT count(*), count(DISTINCT id), sum(amount), min(ts)::VARCHAR, max(ts)::VARCHAR FROM t")
	if want := "2000|2000|1498650|2024-02-29 23:59:58.5|2024-02-29 23:59:59.499"; len(got) != 1 || got[0] != want {
		t.Fatalf("rows %v, want %s", got, want)
	}
	// Row by row (a multi-row VALUES clause) gives the same rows.
	n, err = runBatch(ctx, e.x, e.sess, "INSERT INTO b VALUES (?, ?, ?), (-1, NULL, NULL)", []arrow.RecordBatch{rec})
	if err != nil || n != 2000 {
		t.Fatalf("row-by-row batch insert: %d, %v", n, err)
	}
	bad := paramRecord(t, checked, 10)
	defer bad.Release()
	ids := nullAt(checked, bad.Column(0).(*array.Int64), 6)
	defer ids.Release()
	nullID := array.NewRecordBatch(bad.Schema(), []arrow.Array{ids, bad.Column(1), bad.Column(2)}, 10)
	defer nullID.Release()
	_, err = runBatch(ctx, e.x, e.sess, "INSERT INTO b VALUES (?, ?, ?)", []arrow.RecordBatch{nullID})
	if !errors.Is(err, planner.ErrInvalid) || !strings.Contains(err.Error(), "parameter row 7") || !strings.Contains(err.Error(), "NOT NULL") {
		t.Fatalf("NULL id in row 7: %v", err)
	}
	if got := len(e.load(t, "default", "b").Metadata().Snapshots()); got != 3 {
		t.Fatalf("a failed batch committed: %d snapshots", got)
	}
	// The one-statement path is taken for these batches (and refused for a
	// multi-row VALUES clause).
	conn, err := e.eng.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Exec(ctx, "CREATE TEMP TABLE s (id BIGINT NOT NULL, amount DECIMAL(12,2), ts TIMESTAMP)"); err != nil {
		t.Fatal(err)
	}
	for values, want := range map[string]bool{"VALUES ($1, $2 * 2, $3)": true, "VALUES (?, ?, ?), (1, 2, 3)": false, "VALUES (1, 2, 3)": false} {
		sel, n, err := planner.ValuesSelect(ctx, conn, values, paramsTable, 3)
		if err != nil || (sel != "") != want || want && n != 3 {
			t.Fatalf("%s: one statement %q (%d placeholders), %v; want %v", values, sel, n, err, want)
		}
		if want {
			if ok, err := insertAll(ctx, conn, "INSERT INTO s", values, []arrow.RecordBatch{rec}); !ok || err != nil {
				t.Fatalf("%s: insertAll %v %v", values, ok, err)
			}
		}
	}
	if got := countOf(t, conn, "SELECT count(*) FROM s"); got != 1000 {
		t.Fatalf("insertAll inserted %d rows", got)
	}
}

func countOf(t *testing.T, conn *engine.Conn, q string) int64 {
	t.Helper()
	var n int64
	if err := conn.DB().QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// nullAt is a copy of a with row i NULL; the caller releases it.
func nullAt(mem memory.Allocator, a *array.Int64, i int) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for j := 0; j < a.Len(); j++ {
		if j == i {
			b.AppendNull()
		} else {
			b.Append(a.Value(j))
		}
	}
	return b.NewArray()
}

// Parameterised writes to a branch (t.branch_b) commit to the branch and
// leave main where it was: INSERT … VALUES over a batch (one statement
// over the parameter table) and over one row (bound in DuckDB), and
// DELETE … WHERE with parameters through merge-on-read's position deletes
// and through equality deletes. Preparing the INSERT describes its
// parameters against the branch's table.
func TestParamWritesReachBranch(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, kind := range []string{"position", "equality"} {
		t.Run(kind, func(t *testing.T) {
			name := "br_" + kind
			with := "'format-version' = '2', 'write.delete.mode' = 'merge-on-read'"
			if kind == "equality" {
				with += ", '" + DeleteKindKey + "' = 'equality'"
			}
			e.exec(t, "CREATE TABLE "+name+" (id BIGINT NOT NULL, amount DECIMAL(12,2), ts TIMESTAMP) WITH ("+with+")")
			if kind == "equality" {
				// SET IDENTIFIER FIELDS runs in package statement: set them
				// in the catalog.
				tx := e.load(t, "default", name).NewTransaction()
				if err := tx.UpdateSchema(true, false).SetIdentifierField([][]string{{"id"}}).Commit(); err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			e.exec(t, "INSERT INTO "+name+" VALUES (-1, 1.00, TIMESTAMP '2024-01-01 00:00:00')")
			// CREATE BRANCH runs in package statement: make the branch in
			// the catalog.
			mainID := e.load(t, "default", name).CurrentSnapshot().SnapshotID
			branch := table.NewSetSnapshotRefUpdate("b", mainID, table.BranchRef, 0, 0, 0)
			if _, _, err := e.cat.CommitTable(ctx, table.Identifier{"default", name}, nil, []table.Update{branch}); err != nil {
				t.Fatal(err)
			}

			insert := "INSERT INTO " + name + ".branch_b VALUES (?, ?, ?)"
			sc, err := parameters(ctx, e.x, e.sess, insert)
			if err != nil || sc.NumFields() != 3 {
				t.Fatalf("parameters of %s: %v, %v", insert, sc, err)
			}
			rec := paramRecord(t, memory.DefaultAllocator, 10)
			defer rec.Release()
			if n, err := runBatch(ctx, e.x, e.sess, insert, []arrow.RecordBatch{rec}); err != nil || n != 10 {
				t.Fatalf("batch insert into the branch: %d, %v", n, err)
			}
			if n, err := run(ctx, e.x, e.sess, insert, int64(100), nil, nil); err != nil || n != 1 {
				t.Fatalf("one-row insert into the branch: %d, %v", n, err)
			}
			del := "DELETE FROM " + name + ".branch_b WHERE id = ?"
			if n, err := run(ctx, e.x, e.sess, del, int64(3)); err != nil || n != 1 {
				t.Fatalf("%s (3): %d, %v", del, n, err)
			}
			del = "DELETE FROM " + name + ".branch_b WHERE id >= ? AND id < ?"
			if n, err := run(ctx, e.x, e.sess, del, int64(5), int64(7)); err != nil || n != 2 {
				t.Fatalf("%s (5, 7): %d, %v", del, n, err)
			}

			tbl := e.load(t, "default", name)
			if tbl.CurrentSnapshot().SnapshotID != mainID {
				t.Fatal("parameterised writes to branch b moved main")
			}
			if got := branchIDs(t, tbl, tbl.CurrentSnapshot().SnapshotID); got != "-1" {
				t.Fatalf("main holds %s, want -1", got)
			}
			r, ok := commit.FindRef(tbl, "b")
			if !ok {
				t.Fatal("branch b is gone")
			}
			if got, want := branchIDs(t, tbl, r.SnapshotID), "-1,0,1,2,4,7,8,9,100"; got != want {
				t.Fatalf("branch b holds %s, want %s", got, want)
			}
			key := "added-position-delete-files"
			if kind == "equality" {
				key = "added-equality-delete-files"
			}
			if snap := tbl.SnapshotByID(r.SnapshotID); snap.Summary == nil || snap.Summary.Properties[key] == "" {
				t.Fatalf("the branch's last DELETE did not write %s: %+v", key, snap.Summary)
			}
		})
	}
}

// branchIDs are the ids in tbl's snapshot id, ascending, comma-separated.
func branchIDs(t *testing.T, tbl *table.Table, id int64) string {
	t.Helper()
	at, err := tbl.Scan(table.WithSnapshotID(id), table.WithSelectedFields("id")).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var ids []int64
	for i := 0; i < int(at.NumCols()); i++ {
		for _, c := range at.Column(i).Data().Chunks() {
			ids = append(ids, c.(*array.Int64).Int64Values()...)
		}
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, v := range ids {
		out[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(out, ",")
}
