package planner

import (
	"testing"

	"github.com/apache/iceberg-go"
)

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
