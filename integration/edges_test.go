package integration

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icefloe/icefloe/internal/engine"
)

// Values at the edges of what clients send: nested literals in every
// statement that takes values, and parameters in every select-list
// position (see also property_test.go, whose generators draw from the
// same forms).

// nestedDDL is a table of nested columns, and nestedLiterals rows of it
// as SQL literals: lists, structs (quoted and bare keys), maps, nested
// combinations, and strings holding brackets, commas, quotes and
// keywords.
const nestedDDL = `(id BIGINT NOT NULL, l INTEGER[], s STRUCT(a INTEGER, b VARCHAR), m MAP(VARCHAR, INTEGER),
	ll INTEGER[][], ls STRUCT(a INTEGER, b VARCHAR)[], sm STRUCT(k VARCHAR[], m MAP(VARCHAR, INTEGER[])), t VARCHAR)`

var nestedLiterals = [][]string{
	{"1", "[1, 2]", "{'a': 7, 'b': 'x'}", "MAP {'a': 1, 'b': 2}", "[[1, 2], [3]]", "[{'a': 1, 'b': '], {'}]",
		"{'k': ['x, y', ']'], 'm': MAP {'(': [1, 2]}}", "'[1, 2], {''a'': 3} WHERE x = 1'"},
	{"2", "[]", "{a: 3, b: 'when, then'}", "MAP {}", "[[], [NULL]]", "[]", "{'k': [], 'm': MAP {}}", "'}'"},
	{"3", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
	{"4", "[NULL, -1]", "{'a': NULL, 'b': NULL}", "MAP {'x, y': NULL}", "[NULL]", "[NULL, {'a': 2, 'b': '\"q\"'}]",
		"{'k': NULL, 'm': NULL}", "'a, b = c'"},
}

// nestedSets are SET lists an UPDATE or a MERGE's WHEN MATCHED clause
// takes, over the columns of nestedDDL.
var nestedSets = []string{
	"l = [1, 2]",
	"s = {'a': 7, 'b': 'x'}",
	"m = MAP {'a': 1, 'b': 2}",
	"l = [3, 4], s = {'a': 1, 'b': 'c, d'}, m = MAP {'x, y': 3}",
	"ll = [[5], [6, 7]], ls = [{'a': 1, 'b': '[,]'}, {'a': 2, 'b': '{,}'}], t = 'SET x = 1, y = [2'",
	"sm = {'k': ['a', 'b'], 'm': MAP {'k': [1, 2, 3]}}, l = list_value(1, 2) || [3]",
	"s = {a: 9, b: 'from'}, t = CASE WHEN l = [1, 2] THEN 'x, y' ELSE '[' END",
	"l = [x + 1 FOR x IN [1, 2] IF x > 0], m = map_from_entries([('a', 1), ('b', 2)])",
	"ls = [{'a': length(t)::INTEGER, 'b': 'WHERE'}], s = NULL",
}

// nestedRead is the query both sides are read back with.
const nestedRead = "SELECT id, CAST(l AS VARCHAR), CAST(s AS VARCHAR), CAST(m AS VARCHAR), CAST(ll AS VARCHAR), " +
	"CAST(ls AS VARCHAR), CAST(sm AS VARCHAR), t FROM %s ORDER BY id"

// TestNestedLiteralsInEveryStatement runs INSERT … VALUES, UPDATE … SET,
// MERGE … UPDATE SET and MERGE … INSERT VALUES with nested literals (and
// UPDATE and INSERT with nested values as parameters) through ADBC and the
// same statements on single-node DuckDB, and compares the tables after
// each.
func TestNestedLiteralsInEveryStatement(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	ref := freshReference(t)
	ctx := context.Background()
	both := func(q string, args ...any) {
		t.Helper()
		var err error
		if len(args) == 0 {
			err = ref.Exec(ctx, q)
		} else {
			_, err = ref.DB().ExecContext(ctx, q, args...)
		}
		if err != nil {
			t.Fatalf("reference: %s: %v", q, err)
		}
		if _, err := execParams(t, cnxn, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		got := mustQuery(t, cnxn, fmt.Sprintf(nestedRead, "nl"))
		rdr, err := ref.Query(ctx, fmt.Sprintf(nestedRead, "nl"), engine.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := collect(t, rdr)
		if strings.Join(got.rows, "\n") != strings.Join(want.rows, "\n") {
			t.Fatalf("after %s:\n got:\n%s\nwant:\n%s", q, strings.Join(got.rows, "\n"), strings.Join(want.rows, "\n"))
		}
	}
	for _, side := range []func(string){
		func(q string) { execUpdate(t, cnxn, q) },
		func(q string) {
			if err := ref.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		},
	} {
		side("CREATE TABLE nl " + nestedDDL)
		side("CREATE TABLE nsrc (id BIGINT)")
	}
	// INSERT … VALUES, one row and several.
	both("INSERT INTO nl VALUES (" + strings.Join(nestedLiterals[0], ", ") + ")")
	var rows []string
	for _, r := range nestedLiterals[1:] {
		rows = append(rows, "("+strings.Join(r, ", ")+")")
	}
	both("INSERT INTO nl VALUES " + strings.Join(rows, ", "))
	both("INSERT INTO nl (id, s, l) VALUES (5, {'a': 1, 'b': ')'}, [9])")
	for i, set := range nestedSets {
		both(fmt.Sprintf("UPDATE nl SET %s WHERE id = %d", set, 1+i%5))
		both(fmt.Sprintf("UPDATE nl SET %s WHERE l = [1, 2] OR s = {'a': 7, 'b': 'x'} OR m = MAP {'a': 1, 'b': 2}", set))
	}
	// MERGE: matched rows get a SET list, unmatched source rows are
	// inserted with nested VALUES, and conditions hold nested literals.
	for _, id := range []string{"1", "6", "7"} {
		both("INSERT INTO nsrc VALUES (" + id + ")")
	}
	for i, set := range nestedSets {
		both(fmt.Sprintf(`MERGE INTO nl USING (SELECT id FROM nsrc) AS src ON nl.id = src.id
			WHEN MATCHED AND nl.l <> [0, 0] OR nl.l IS NULL THEN UPDATE SET %s
			WHEN NOT MATCHED AND src.id = %d THEN INSERT (id, l, s, m, ll, ls, sm, t) VALUES (%s)`,
			set, 6+i%2, strings.Join(append([]string{"src.id"}, nestedLiterals[i%2][1:]...), ", ")))
	}
	both(`MERGE INTO nl USING (SELECT 8 AS id) AS src ON nl.id = src.id
		WHEN NOT MATCHED THEN INSERT VALUES (src.id, [1, 2], {'a': 1, 'b': 'x, y'}, MAP {'a': 1}, [[1], [2, 3]],
			[{'a': 1, 'b': 'WHEN'}], {'k': ['THEN'], 'm': MAP {'END': [1]}}, 'VALUES (1, 2)')`)
	// Nested values as parameters: DuckDB's literal text, which it casts.
	both("UPDATE nl SET l = ?, s = ?, m = ? WHERE id = ?", "[10, 20]", "{'a': 5, 'b': 'x, y'}", "{a=1, b=2}", int64(2))
	both("INSERT INTO nl (id, l, s, ls) VALUES (?, ?, ?, ?)", int64(9), "[1, NULL]", "{'a': 1, 'b': '[]'}", "[{'a': 3, 'b': '{}'}]")
}

// freshReference is a single-node DuckDB with no tables.
func freshReference(t testing.TB) *engine.Conn {
	return referenceConn(t, nil, nil)
}

// execParams runs an update through ADBC with one row of parameters:
// int64 values bind as int64, strings as strings.
func execParams(t testing.TB, cnxn adbc.Connection, q string, args ...any) (int64, error) {
	t.Helper()
	stmt := newStatement(t, cnxn, q)
	defer stmt.Close()
	if len(args) > 0 {
		if err := stmt.Prepare(context.Background()); err != nil {
			return 0, err
		}
		rec := paramBatch(t, args)
		defer rec.Release()
		if err := stmt.Bind(context.Background(), rec); err != nil {
			return 0, err
		}
	}
	return stmt.ExecuteUpdate(context.Background())
}

// paramBatch is one row of parameters.
func paramBatch(t testing.TB, args []any) arrow.RecordBatch {
	t.Helper()
	var fields []arrow.Field
	var cols []arrow.Array
	mem := memory.DefaultAllocator
	for i, a := range args {
		if v, ok := a.(driver.Valuer); ok {
			a, _ = v.Value()
		}
		var arr arrow.Array
		switch v := a.(type) {
		case int64:
			b := array.NewInt64Builder(mem)
			b.Append(v)
			arr = b.NewArray()
			b.Release()
		case string:
			b := array.NewStringBuilder(mem)
			b.Append(v)
			arr = b.NewArray()
			b.Release()
		case float64:
			b := array.NewFloat64Builder(mem)
			b.Append(v)
			arr = b.NewArray()
			b.Release()
		default:
			t.Fatalf("parameter of type %T", a)
		}
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("$%d", i+1), Type: arr.DataType(), Nullable: true})
		cols = append(cols, arr)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// TestNullAndNullStringPartitions: NULL and a value whose partition path
// is also "null" (the string 'null', a truncate(4) of 'nullx', the bytes
// whose base64 is "null") are different partitions for every write path
// (INSERT … VALUES, INSERT … SELECT, bulk ingest): IS NULL finds the NULL
// rows through icefloe and through pyiceberg's scan of the metadata, and
// UPDATE and DELETE … WHERE … IS NULL reach them.
func TestNullAndNullStringPartitions(t *testing.T) {
	dir := t.TempDir()
	s := StartCluster(t, Workers(2), DataDir(dir))
	cnxn := adbcConn(t, s.Addr())
	py := startPyScanner(t, dir)
	execUpdate(t, cnxn, "CREATE TABLE nsrc (id BIGINT NOT NULL, s VARCHAR, b BLOB, v INTEGER)")
	execUpdate(t, cnxn, `INSERT INTO nsrc VALUES (1, 'null', '\x9E\xE9\x65'::BLOB, 0), (2, NULL, NULL, 0),
		(3, 'nullx', '\x9E\xE9\x65\x00'::BLOB, 0), (4, NULL, NULL, 0), (5, 'nul', 'x'::BLOB, 0)`)
	specs := []struct {
		by          string
		col         string
		eq          string // the value whose path is "null", in SQL
		pyEq        any    // and in pyiceberg's filter
		nulls, eqID string
	}{
		{"s", "s", "'null'", "null", "2,4", "1"},
		{"truncate(4, s)", "s", "'nullx'", "nullx", "2,4", "3"},
		{"b", "b", `'\x9E\xE9\x65'::BLOB`, "9ee965", "2,4", "1"},
		{"truncate(3, b)", "b", `'\x9E\xE9\x65\x00'::BLOB`, "9ee96500", "2,4", "3"},
		{"s, b", "s", "'null'", "null", "2,4", "1"},
	}
	for i, sp := range specs {
		for _, path := range []string{"values", "select", "ingest"} {
			name := fmt.Sprintf("np%d_%s", i, path)
			t.Run(name, func(t *testing.T) {
				execUpdate(t, cnxn, "CREATE TABLE "+name+" (id BIGINT NOT NULL, s VARCHAR, b BLOB, v INTEGER) PARTITIONED BY ("+sp.by+")")
				switch path {
				case "values":
					execUpdate(t, cnxn, `INSERT INTO `+name+` VALUES (1, 'null', '\x9E\xE9\x65'::BLOB, 0), (2, NULL, NULL, 0),
						(3, 'nullx', '\x9E\xE9\x65\x00'::BLOB, 0), (4, NULL, NULL, 0), (5, 'nul', 'x'::BLOB, 0)`)
				case "select":
					execUpdate(t, cnxn, "INSERT INTO "+name+" SELECT * FROM nsrc")
				case "ingest":
					rdr := queryReader(t, cnxn, "SELECT * FROM nsrc ORDER BY id")
					_, err := ingest(t, cnxn, name, adbc.OptionValueIngestModeAppend, rdr)
					rdr.Release()
					if err != nil {
						t.Fatal(err)
					}
				}
				ids := func(where string) string {
					t.Helper()
					res := mustQuery(t, cnxn, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM "+name+" WHERE "+where)
					return res.rows[0]
				}
				if got := ids(sp.col + " IS NULL"); got != sp.nulls {
					t.Errorf("%s IS NULL: %s, want %s", sp.col, got, sp.nulls)
				}
				if got := ids(sp.col + " = " + sp.eq); got != sp.eqID {
					t.Errorf("%s = %s: %s, want %s", sp.col, sp.eq, got, sp.eqID)
				}
				for _, c := range []struct {
					filter map[string]any
					want   string
				}{
					{map[string]any{"op": "is_null", "col": sp.col}, sp.nulls},
					{map[string]any{"op": "eq", "col": sp.col, "v": sp.pyEq}, sp.eqID},
				} {
					got, why, err := py.scan(name, c.filter)
					if err != nil || why != "" {
						t.Fatalf("pyiceberg %v: %v %s", c.filter, err, why)
					}
					if s := joinIDs(got); s != c.want {
						t.Errorf("pyiceberg %v: ids %s, want %s", c.filter, s, c.want)
					}
				}
				if n := execUpdate(t, cnxn, "UPDATE "+name+" SET v = 1 WHERE "+sp.col+" IS NULL"); n != 2 {
					t.Errorf("UPDATE … WHERE %s IS NULL: %d rows, want 2", sp.col, n)
				}
				if got := ids("v = 1"); got != sp.nulls {
					t.Errorf("updated rows %s, want %s", got, sp.nulls)
				}
				if n := execUpdate(t, cnxn, "DELETE FROM "+name+" WHERE "+sp.col+" IS NULL"); n != 2 {
					t.Errorf("DELETE … WHERE %s IS NULL: %d rows, want 2", sp.col, n)
				}
				if got := ids("true"); got != "1,3,5" {
					t.Errorf("after the DELETE: %s, want 1,3,5", got)
				}
			})
		}
	}
}

// queryReader runs q through ADBC and returns its stream; the caller
// releases it.
func queryReader(t testing.TB, cnxn adbc.Connection, q string) array.RecordReader {
	t.Helper()
	stmt := newStatement(t, cnxn, q)
	t.Cleanup(func() { stmt.Close() })
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rdr
}

func joinIDs(ids []int64) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	return strings.Join(out, ",")
}

// TestNullAndNullStringPartitionDeletes: a merge-on-read DELETE whose
// rows are in the NULL partition and in the 'null' one (whose paths are
// the same) deletes both, with positional deletes and with equality
// deletes, and pyiceberg reads the rows that are left.
func TestNullAndNullStringPartitionDeletes(t *testing.T) {
	dir := t.TempDir()
	s := StartCluster(t, Workers(2), DataDir(dir))
	cnxn := adbcConn(t, s.Addr())
	py := startPyScanner(t, dir)
	for _, kind := range []string{"positional", "equality"} {
		for _, by := range []string{"s", "truncate(4, s)"} {
			name := fmt.Sprintf("nd_%s_%d", kind, len(by))
			t.Run(name, func(t *testing.T) {
				props := "'format-version' = '2', 'write.delete.mode' = 'merge-on-read'"
				if kind == "equality" {
					props += ", 'icefloe.delete-kind' = 'equality'"
				}
				execUpdate(t, cnxn, "CREATE TABLE "+name+" (id BIGINT NOT NULL, s VARCHAR) PARTITIONED BY ("+by+") WITH ("+props+")")
				if kind == "equality" {
					execUpdate(t, cnxn, "ALTER TABLE "+name+" SET IDENTIFIER FIELDS id")
				}
				execUpdate(t, cnxn, "INSERT INTO "+name+" VALUES (1, 'null'), (2, 'null'), (3, NULL), (4, NULL), (5, 'x')")
				if n := execUpdate(t, cnxn, "DELETE FROM "+name+" WHERE id IN (1, 3)"); n != 2 {
					t.Fatalf("DELETE counted %d rows, want 2", n)
				}
				wantRows(t, cnxn, "SELECT id FROM "+name, "2", "4", "5")
				for _, c := range []struct {
					filter map[string]any
					want   string
				}{
					{map[string]any{"op": "is_null", "col": "s"}, "4"},
					{map[string]any{"op": "not_null", "col": "s"}, "2,5"},
				} {
					got, why, err := py.scan(name, c.filter)
					if err != nil || why != "" {
						t.Fatalf("pyiceberg %v: %v %s", c.filter, err, why)
					}
					if s := joinIDs(got); s != c.want {
						t.Errorf("pyiceberg %v: ids %s, want %s", c.filter, s, c.want)
					}
				}
			})
		}
	}
}
