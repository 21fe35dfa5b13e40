package planner

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

func TestAlterTable(t *testing.T) {
	e := newDDLEnv(t)
	e.exec(t, "CREATE TABLE t (id INT NOT NULL, price FLOAT, amount DECIMAL(9,2), name VARCHAR, ts TIMESTAMP)")
	e.exec(t, "INSERT INTO t VALUES (1, 1.5, 2.25, 'a', TIMESTAMP '2024-01-02 03:04:05')")

	e.exec(t, "ALTER TABLE t ADD COLUMN note VARCHAR")
	e.exec(t, "ALTER TABLE t ADD COLUMN IF NOT EXISTS note VARCHAR")
	e.execErr(t, "ALTER TABLE t ADD COLUMN note VARCHAR", ErrExists, "note")
	e.execErr(t, "ALTER TABLE t ADD COLUMN must INT NOT NULL", ErrInvalid, "NOT NULL")
	e.exec(t, "ALTER TABLE t RENAME COLUMN name TO label")
	e.execErr(t, "ALTER TABLE t RENAME COLUMN nope TO x", ErrInvalid, "nope")
	e.exec(t, "ALTER TABLE t ALTER COLUMN id TYPE BIGINT")
	e.exec(t, "ALTER TABLE t ALTER COLUMN price SET DATA TYPE DOUBLE")
	e.exec(t, "ALTER TABLE t ALTER COLUMN amount TYPE DECIMAL(18,2)")
	e.execErr(t, "ALTER TABLE t ALTER COLUMN label TYPE INT", ErrInvalid, "widening")
	e.execErr(t, "ALTER TABLE t ALTER COLUMN amount TYPE DECIMAL(18,3)", ErrInvalid, "amount")
	e.exec(t, "ALTER TABLE t ALTER COLUMN id DROP NOT NULL")
	e.exec(t, "ALTER TABLE t SET TBLPROPERTIES ('write.delete.mode' = 'copy-on-write', owner = 'me')")
	e.exec(t, "ALTER TABLE t UNSET TBLPROPERTIES (owner)")
	e.exec(t, "ALTER TABLE t ADD PARTITION FIELD day(ts)")
	e.exec(t, "ALTER TABLE t ADD PARTITION FIELD bucket(4, id)")
	e.execErr(t, "ALTER TABLE t DROP COLUMN ts", ErrInvalid, "partition")
	e.exec(t, "ALTER TABLE t DROP PARTITION FIELD day(ts)")
	e.exec(t, "ALTER TABLE t DROP COLUMN note")
	e.exec(t, "ALTER TABLE t DROP COLUMN IF EXISTS note")
	e.execErr(t, "ALTER TABLE t DROP COLUMN note", ErrInvalid, "note")
	e.execErr(t, "ALTER TABLE nope ADD COLUMN x INT", ErrNotFound)
	e.exec(t, "ALTER TABLE IF EXISTS nope ADD COLUMN x INT")
	e.execErr(t, "ALTER TABLE t FROBNICATE", ErrSyntax)
	e.execErr(t, "ALTER VIEW v RENAME TO w", ErrUnsupported)

	tbl := e.load(t, "default", "t")
	sc := tbl.Schema()
	var got []string
	for _, f := range sc.Fields() {
		got = append(got, f.Name+":"+f.Type.String()+map[bool]string{true: "!", false: ""}[f.Required])
	}
	want := "id:long price:double amount:decimal(18, 2) label:string ts:timestamp"
	if strings.Join(got, " ") != want {
		t.Fatalf("schema %q, want %q", strings.Join(got, " "), want)
	}
	props := tbl.Properties()
	if props["write.delete.mode"] != "copy-on-write" || props["owner"] != "" {
		t.Fatalf("properties %v", props)
	}
	spec := tbl.Spec()
	if spec.NumFields() != 1 || spec.Field(0).Transform.String() != (iceberg.BucketTransform{NumBuckets: 4}).String() {
		t.Fatalf("spec %v", spec)
	}
	if len(tbl.Metadata().PartitionSpecs()) < 3 {
		t.Fatalf("specs %v", tbl.Metadata().PartitionSpecs())
	}
	// The old data reads through the evolved schema.
	rows := e.query(t, tbl, "SELECT id, price, amount, label FROM t")
	if len(rows) != 1 || rows[0] != "1|1.5|2.25|a" {
		t.Fatalf("rows %q", rows)
	}
	e.exec(t, "ALTER TABLE t RENAME TO t2")
	e.load(t, "default", "t2")
}

func TestDMLParseErrors(t *testing.T) {
	e := newDDLEnv(t)
	e.exec(t, "CREATE TABLE t (a INT)")
	e.execErr(t, "DELETE t", ErrSyntax)
	e.execErr(t, "DELETE FROM t WHERE", ErrSyntax)
	e.execErr(t, "DELETE FROM t USING u WHERE t.a = u.a", ErrUnsupported, "USING")
	e.execErr(t, "DELETE FROM t WHERE a = 1 RETURNING a", ErrUnsupported, "RETURNING")
	e.execErr(t, "DELETE FROM nope WHERE a = 1", ErrNotFound)
	e.execErr(t, "UPDATE t a = 1", ErrSyntax)
	e.execErr(t, "UPDATE t SET b = 1", ErrInvalid, `"b"`)
	e.execErr(t, "UPDATE t SET a = 1, a = 2", ErrInvalid, "twice")
	e.execErr(t, "UPDATE t SET a = 1 FROM u", ErrUnsupported, "FROM")
	e.execErr(t, "CREATE TABLE c AS", ErrSyntax)
}

func TestFragmentUUIDs(t *testing.T) {
	stmt := uuid.New()
	for i := 10; i < 16; i++ {
		stmt[i] = 0
	}
	prefix := writePrefix(stmt.String())
	seen := map[string]bool{}
	for i := range 300 {
		id := fragmentUUID(stmt.String(), i)
		if !strings.HasPrefix(id, prefix) || seen[id] {
			t.Fatalf("fragment %d: %s (prefix %s)", i, id, prefix)
		}
		seen[id] = true
	}
}

func TestCastColumns(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "Name", Type: iceberg.PrimitiveTypes.String})
	got, err := castColumns(sc, map[string]int{"name": 0}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `CAST("id" AS BIGINT) AS "id", CASE WHEN coalesce((__icefloe_hole(1)), false) THEN CAST((__icefloe_hole(0)) AS VARCHAR) ELSE CAST("Name" AS VARCHAR) END AS "Name"`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCreateTableSortOrder(t *testing.T) {
	e := newDDLEnv(t)
	e.exec(t, "CREATE TABLE s (a INT, b VARCHAR, ts TIMESTAMP) PARTITIONED BY (day(ts)) ORDERED BY (b DESC, a NULLS LAST) WITH ('format-version' = 2)")
	tbl := e.load(t, "default", "s")
	order := tbl.SortOrder()
	if order.Len() != 2 {
		t.Fatalf("sort order %v", order)
	}
	b, a := order.Field(0), order.Field(1)
	if bn, _ := tbl.Schema().FindColumnName(b.SourceID()); bn != "b" || b.Direction != "desc" || b.NullOrder != "nulls-last" {
		t.Fatalf("first sort field %v (%s)", b, bn)
	}
	if an, _ := tbl.Schema().FindColumnName(a.SourceID()); an != "a" || a.Direction != "asc" || a.NullOrder != "nulls-last" {
		t.Fatalf("second sort field %v (%s)", a, an)
	}
	if got := partitionOrder(tbl); got != `"ts", "b" DESC NULLS LAST, "a" ASC NULLS LAST` {
		t.Fatalf("write order %s", got)
	}
	e.execErr(t, "CREATE TABLE s2 (a INT) ORDERED BY (nope)", ErrInvalid, "nope")
	e.execErr(t, "CREATE TABLE s3 (a INT) ORDERED BY a", ErrSyntax)
}
