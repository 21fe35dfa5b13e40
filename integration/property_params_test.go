package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/icefloe/icefloe/internal/engine"
)

// Parameters for the property test: queries over a generated table with
// placeholders in every select-list position (bare, aliased, inside
// expressions, subqueries, list literals, UNION branches, derived tables
// and CTEs) and in WHERE, bound through ADBC with values of the table's
// own types (and whole-number doubles), compared with single-node DuckDB
// running the same prepared statement on the same values: the column
// names, types and rows.

// propParam is one bound value and the DuckDB type a client sends it as.
type propParam struct {
	v   propValue
	typ string
}

// wholeFloats are doubles Go's JSON encoder writes without a fraction.
var wholeFloats = []string{"7.0", "2.0", "100.0", "-0.0", "0.0", "1e15", "-1e15"}

// paramTemplates are the queries; %[1]s is the table, %[2]s a column; a
// "c" placeholder takes a value of that column's type, an "x" one any
// value.
var paramTemplates = []struct {
	sql   string
	slots string
}{
	{`SELECT ? AS a, ? AS "Mixed Alias", ?, id FROM %[1]s WHERE id <= 3`, "xxx"},
	{`SELECT coalesce(%[2]s, ?) AS v, coalesce(?, %[2]s), id FROM %[1]s`, "cc"},
	{`SELECT (SELECT ?) AS s, [?] AS l, ? IS NULL, (?), id FROM %[1]s WHERE %[2]s IS NOT DISTINCT FROM ? OR id = 1`, "xxxxc"},
	{`SELECT ? AS u, id FROM %[1]s WHERE id <= 2 UNION ALL SELECT ?, id FROM %[1]s WHERE id > 2`, "cc"},
	{`SELECT * FROM (SELECT ? AS z, ?, %[2]s, id FROM %[1]s) WHERE id %% 2 = 0`, "xx"},
	{`WITH w AS (SELECT ?, %[2]s AS c FROM %[1]s) SELECT * FROM w`, "x"},
	{`SELECT id, %[2]s = ? AS eq, ? FROM %[1]s WHERE %[2]s = ? OR %[2]s IS NULL`, "cxc"},
	{`SELECT $2 AS two, $1, $2 IS NULL AS n FROM %[1]s WHERE id < 4`, "xx"},
}

// genParamQuery is a query of paramTemplates over tbl and its values.
func genParamQuery(r *rand.Rand, tbl *propTable) (string, []propParam) {
	var cols []int
	for i, c := range tbl.cols {
		if !c.typ.nested {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		return "", nil
	}
	ci := cols[r.IntN(len(cols))]
	c := tbl.cols[ci]
	tmpl := paramTemplates[r.IntN(len(paramTemplates))]
	valueOf := func(k int) propParam {
		col := tbl.cols[k]
		typ := col.typ.sql
		if typ == "UUID" {
			typ = "VARCHAR" // what clients bind a UUID as: its text
		}
		v := tbl.rows[r.IntN(len(tbl.rows))][k+1]
		if r.IntN(3) == 0 {
			v = propValue{text: col.typ.edges[r.IntN(len(col.typ.edges))]}
		}
		if len(v.text) > 200 {
			v.text = v.text[:200]
		}
		return propParam{v: v, typ: typ}
	}
	var params []propParam
	for _, slot := range tmpl.slots {
		switch {
		case slot == 'c':
			params = append(params, valueOf(ci))
		case r.IntN(3) == 0:
			params = append(params, propParam{v: propValue{text: wholeFloats[r.IntN(len(wholeFloats))]}, typ: "DOUBLE"})
		default:
			params = append(params, valueOf(cols[r.IntN(len(cols))]))
		}
	}
	return fmt.Sprintf(tmpl.sql, tbl.name, c.name), params
}

// paramMismatch runs q with params on cfg through ADBC and on the
// reference as a prepared statement; "" when they agree (both failing
// is agreement).
func (pe *propEnv) paramMismatch(cfg *diffConfig, q string, params []propParam) string {
	want, wantErr := pe.referenceParams(q, params)
	if wantErr == nil {
		pe.stats.paramsAnswered++
	}
	got, err := pe.clusterParams(cfg, q, params)
	return diffOutcomes(got, err, want, wantErr, false)
}

// literals are the params as SQL.
func literals(params []propParam) []string {
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.v.literal(p.typ)
	}
	return out
}

// referenceParams runs q as DuckDB's own prepared statement, executed
// with the values.
func (pe *propEnv) referenceParams(q string, params []propParam) (typedResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pe.ref.Exec(ctx, "PREPARE icefloe_pq AS "+q); err != nil {
		return typedResult{}, err
	}
	defer pe.ref.Exec(ctx, "DEALLOCATE icefloe_pq")
	return runReference(pe.ref, "EXECUTE icefloe_pq("+strings.Join(literals(params), ", ")+")")
}

// clusterParams binds the values as the Arrow batch DuckDB makes of them
// (what a client holding them sends) and runs q on cfg.
func (pe *propEnv) clusterParams(cfg *diffConfig, q string, params []propParam) (typedResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sel := make([]string, len(params))
	for i, l := range literals(params) {
		sel[i] = fmt.Sprintf("%s AS p%d", l, i+1)
	}
	rdr, err := pe.ref.Query(ctx, "SELECT "+strings.Join(sel, ", "), engine.QueryOptions{})
	if err != nil {
		return typedResult{}, fmt.Errorf("make the parameters: %w", err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		return typedResult{}, fmt.Errorf("make the parameters: no row: %v", rdr.Err())
	}
	rec := rdr.RecordBatch()
	stmt, err := cfg.cnxn.NewStatement()
	if err != nil {
		return typedResult{}, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return typedResult{}, err
	}
	if err := stmt.Prepare(ctx); err != nil {
		return typedResult{}, err
	}
	if err := stmt.Bind(ctx, rec); err != nil {
		return typedResult{}, err
	}
	out, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return typedResult{}, err
	}
	return readAll(out)
}
