package integration

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzDifferential turns its input into a random query — predicates,
// aggregates, DISTINCT, top-N — over the differential tables, runs it
// through the cluster (2 workers, default groups or groups of one file)
// and on single-node DuckDB, and compares the results the way
// TestDifferential does. Plain `go test` runs the seeds in
// testdata/fuzz/FuzzDifferential and the f.Add ones; `go test -fuzz
// FuzzDifferential ./integration/` explores. A mismatch it finds becomes a
// case in corpus/fuzz.txt (its query is in the failure message).
func FuzzDifferential(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0, 0},
		{1, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		{2, 0, 1, 1, 0, 3, 2, 1, 4},
		{3, 4, 5, 0, 2, 2, 1, 7, 9, 1, 3},
		{4, 1, 3, 2, 0, 5, 1, 1, 2, 8},
		{5, 2, 0, 3, 1, 4, 4, 4, 0, 2, 6},
		{6, 3, 1, 0, 2, 6, 3, 5, 1, 1},
		{0, 5, 4, 1, 3, 2, 2, 0, 1, 5, 5, 5},
		{1, 4, 6, 2, 1, 1, 0, 3, 3, 3, 2},
		{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
	} {
		f.Add(seed)
	}
	env := startDiffEnv(f, []int{2}, []bool{false, true})
	f.Fuzz(func(t *testing.T, data []byte) {
		q, ordered := genQuery(data)
		cfg := env.configs[0]
		if len(data) > 0 && data[len(data)-1]%2 == 1 {
			cfg = env.configs[1]
		}
		want, wantErr := runReference(env.ref, q)
		if d := cfg.check(q, ordered, want, wantErr); d != "" {
			mode := "rows"
			if ordered {
				mode = "ordered"
			}
			t.Errorf("mismatch on %s; add it to corpus/fuzz.txt:\n\nquery %s\n%s\n\n%s", cfg.name, mode, q, d)
		}
	})
}

// fuzzKind is a column's type class, which decides its constants and
// aggregates.
type fuzzKind int

const (
	kInt fuzzKind = iota
	kDec
	kFloat
	kStr
	kDate
	kTs
	kBool
	kOther // compared only: time, uuid, binary
)

type fuzzCol struct {
	name   string
	kind   fuzzKind
	consts []string
	likes  []string // LIKE patterns of a kStr column; nil: likePats
}

type fuzzTable struct {
	name string
	key  string // a unique key, for total orders
	cols []fuzzCol
}

var (
	tsConsts  = []string{"TIMESTAMPTZ '2024-03-01 00:00:00+00'", "TIMESTAMPTZ '2024-03-02 12:00:00+00'", "TIMESTAMPTZ '2024-03-03 00:00:00+01'", "TIMESTAMPTZ '2024-03-05 23:59:59.999999+00'", "TIMESTAMPTZ '2024-03-09 00:00:00+00'", "TIMESTAMPTZ '2023-12-31 00:00:00+00'"}
	strConsts = []string{"'a'", "'a_b'", "'a%b'", "'100%'", "''", "' '", "'trail_'", "'日本'", "'zz'"}
	likePats  = []string{"'a%'", "'a_b'", "'%\\_%' ESCAPE '\\'", "'%\\%%' ESCAPE '\\'", "'_%'", "'%_'", "'trail%'", "'%e%'", "'%'", "'a\\_b' ESCAPE '\\'", "'100\\%' ESCAPE '\\'", "'%10\\% extra%' ESCAPE '\\'", "'under\\_score%' ESCAPE '\\'", "'A%'"}
)

var fuzzTables = []fuzzTable{
	{"lineitem", "l_orderkey, l_linenumber", []fuzzCol{
		{"l_orderkey", kInt, []string{"0", "1", "100", "4000", "12001", "24001", "-5"}, nil},
		{"l_linenumber", kInt, []string{"1", "2", "4", "7", "8"}, nil},
		{"l_partkey", kInt, []string{"1", "50", "200", "400", "401"}, nil},
		{"l_quantity", kDec, []string{"1", "10.5", "25", "49.99", "50", "0"}, nil},
		{"l_extendedprice", kDec, []string{"900.00", "10000", "25000.50", "54000"}, nil},
		{"l_discount", kDec, []string{"0", "0.05", "0.1", "0.07"}, nil},
		{"l_tax", kFloat, []string{"0", "0.04", "0.08", "0.5"}, nil},
		{"l_returnflag", kStr, []string{"'A'", "'N'", "'R'", "'X'", "''"}, nil},
		{"l_shipdate", kDate, []string{"DATE '2024-03-01'", "DATE '2024-04-15'", "DATE '2024-07-01'", "DATE '2025-01-01'"}, nil},
		{"l_shipmode", kStr, []string{"'AIR'", "'MAIL'", "'REG AIR'", "'TRUCK'", "'Z'"}, nil},
		{"l_comment", kStr, strConsts, nil},
		{"l_weight", kFloat, []string{"0.25", "100.5", "7142.82", "14285.96", "-1"}, nil},
	}},
	{"orders", "o_orderkey", []fuzzCol{
		{"o_orderkey", kInt, []string{"1", "33", "1000", "12000", "24000", "99999"}, nil},
		{"o_custkey", kInt, []string{"1", "10", "750", "1500", "1550"}, nil},
		{"o_orderstatus", kStr, []string{"'F'", "'O'", "'P'", "'f'"}, nil},
		{"o_totalprice", kDec, []string{"100", "1000.5", "250000", "499999.99"}, nil},
		{"o_orderdate", kDate, []string{"DATE '2024-03-01'", "DATE '2024-03-04'", "DATE '2024-03-08'", "DATE '2024-03-09'"}, nil},
		{"o_ts", kTs, tsConsts, nil},
		{"o_orderpriority", kStr, []string{"'1-URGENT'", "'3-MEDIUM'", "'5-LOW'", "'4-NOT SPECIFIED'"}, nil},
		{"o_comment", kStr, strConsts, nil},
	}},
	{"customer", "c_custkey", []fuzzCol{
		{"c_custkey", kInt, []string{"1", "2", "500", "1000", "1500"}, nil},
		{"c_nationkey", kInt, []string{"0", "7", "24", "25"}, nil},
		{"c_acctbal", kDec, []string{"-1000", "0", "0.01", "5000", "9999.99"}, nil},
		{"c_mktsegment", kStr, []string{"'BUILDING'", "'MACHINERY'", "'HOUSEHOLD'", "'b'"}, nil},
		{"c_name", kStr, []string{"'Customer#000001'", "'Customer#000750'", "'Customer#'"}, nil},
		{"c_comment", kStr, strConsts, nil},
	}},
	{"events", "e_id", []fuzzCol{
		{"e_id", kInt, []string{"1", "199", "200", "201", "2000", "4000"}, nil},
		{"e_ts", kTs, tsConsts, nil},
		{"e_kind", kStr, []string{"'view'", "'click'", "'purchase'", "'nope'"}, nil},
		{"e_value", kFloat, []string{"0.5", "1000", "7812.5", "15625.484375", "1e10"}, nil},
		{"e_flag", kBool, []string{"true", "false"}, nil},
		{"e_user", kInt, []string{"0", "7", "150", "299", "300"}, nil},
	}},
	{"strs", "id", []fuzzCol{
		{"id", kInt, []string{"1", "13", "30", "60"}, nil},
		{"s", kStr, strConsts, nil},
		{"grp", kInt, []string{"0", "1", "3"}, nil},
		{"amount", kDec, []string{"-1000", "0", "0.001", "999.999"}, nil},
	}},
	{"empty_t", "id", []fuzzCol{
		{"id", kInt, []string{"0", "1"}, nil},
		{"name", kStr, strConsts, nil},
		{"amount", kDec, []string{"0", "1.5"}, nil},
		{"ts", kTs, tsConsts, nil},
		{"x", kFloat, []string{"0", "2.5"}, nil},
	}},
}

// fuzzGen reads choices from the fuzz input; past its end every choice
// is 0, so every input makes a valid query.
type fuzzGen struct {
	data []byte
	i    int
}

func (g *fuzzGen) pick(n int) int {
	if g.i >= len(g.data) || n <= 1 {
		g.i++
		return 0
	}
	b := g.data[g.i]
	g.i++
	return int(b) % n
}

func (g *fuzzGen) col(t fuzzTable) fuzzCol { return t.cols[g.pick(len(t.cols))] }

func (g *fuzzGen) constant(c fuzzCol) string { return c.consts[g.pick(len(c.consts))] }

// atom is one predicate on one column.
func (g *fuzzGen) atom(t fuzzTable) string {
	c := g.col(t)
	ops := []string{"=", "<>", "<", "<=", ">", ">="}
	switch g.pick(9) {
	case 0, 1:
		if c.kind == kBool {
			return c.name
		}
		return fmt.Sprintf("%s %s %s", c.name, ops[g.pick(len(ops))], g.constant(c))
	case 2:
		return c.name + " IS NULL"
	case 3:
		return c.name + " IS NOT NULL"
	case 4:
		if c.kind == kBool {
			return "NOT " + c.name
		}
		a, b := g.constant(c), g.constant(c)
		return fmt.Sprintf("%s BETWEEN %s AND %s", c.name, a, b)
	case 5:
		n := 1 + g.pick(3)
		vals := make([]string, n)
		for i := range vals {
			vals[i] = g.constant(c)
		}
		not := ""
		if g.pick(3) == 0 {
			not = "NOT "
		}
		return fmt.Sprintf("%s %sIN (%s)", c.name, not, strings.Join(vals, ", "))
	case 6:
		if c.kind != kStr {
			return fmt.Sprintf("%s = %s", c.name, g.constant(c))
		}
		op := []string{"LIKE", "NOT LIKE", "ILIKE"}[g.pick(3)]
		pats := likePats
		if c.likes != nil {
			pats = c.likes
		}
		return fmt.Sprintf("%s %s %s", c.name, op, pats[g.pick(len(pats))])
	case 7: // a cast on the column (never pushed into pruning)
		op := ops[g.pick(len(ops))]
		switch c.kind {
		case kInt, kDec, kFloat:
			return fmt.Sprintf("CAST(%s AS DOUBLE) %s CAST(%s AS DOUBLE)", c.name, op, g.constant(c))
		case kTs:
			return fmt.Sprintf("CAST(%s AS DATE) %s CAST(%s AS DATE)", c.name, op, g.constant(c))
		}
		return fmt.Sprintf("CAST(%s AS VARCHAR) %s CAST(%s AS VARCHAR)", c.name, op, g.constant(c))
	default:
		return "NOT (" + g.atom(t) + ")"
	}
}

// pred is a predicate tree of at most depth levels.
func (g *fuzzGen) pred(t fuzzTable, depth int) string {
	if depth == 0 || g.pick(3) == 0 {
		return g.atom(t)
	}
	op := []string{"AND", "OR"}[g.pick(2)]
	return fmt.Sprintf("(%s %s %s)", g.pred(t, depth-1), op, g.pred(t, depth-1))
}

func (g *fuzzGen) where(t fuzzTable) string {
	if g.pick(4) == 0 {
		return ""
	}
	return " WHERE " + g.pred(t, 2)
}

// agg is one aggregate over a column of t.
func (g *fuzzGen) agg(t fuzzTable) string {
	c := g.col(t)
	numeric := c.kind == kInt || c.kind == kDec || c.kind == kFloat
	switch g.pick(7) {
	case 0:
		return "count(*)"
	case 1:
		return fmt.Sprintf("count(%s)", c.name)
	case 2:
		if numeric {
			return fmt.Sprintf("sum(%s)", c.name)
		}
		return fmt.Sprintf("min(%s)", c.name)
	case 3:
		if numeric {
			return fmt.Sprintf("avg(%s)", c.name)
		}
		return fmt.Sprintf("max(%s)", c.name)
	case 4:
		return fmt.Sprintf("min(%s)", c.name)
	case 5:
		return fmt.Sprintf("max(%s)", c.name)
	default:
		return fmt.Sprintf("count(DISTINCT %s)", c.name)
	}
}

func (g *fuzzGen) aggs(t fuzzTable) string {
	n := 1 + g.pick(3)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s AS a%d", g.agg(t), i)
	}
	return strings.Join(out, ", ")
}

// genQuery makes the query data describes, and whether its order is
// fixed.
func genQuery(data []byte) (string, bool) {
	g := &fuzzGen{data: data}
	t := fuzzTables[g.pick(len(fuzzTables))]
	switch g.pick(7) {
	case 0: // projection
		a, b := g.col(t), g.col(t)
		return fmt.Sprintf("SELECT %s, %s, %s FROM %s%s", t.key, a.name, b.name, t.name, g.where(t)), false
	case 1: // grouped aggregate
		k := g.col(t)
		return fmt.Sprintf("SELECT %s, %s FROM %s%s GROUP BY %s", k.name, g.aggs(t), t.name, g.where(t), k.name), false
	case 2: // global aggregate
		return fmt.Sprintf("SELECT %s FROM %s%s", g.aggs(t), t.name, g.where(t)), false
	case 3: // DISTINCT
		a := g.col(t)
		return fmt.Sprintf("SELECT DISTINCT %s FROM %s%s", a.name, t.name, g.where(t)), false
	case 4: // top-N with a total order
		a := g.col(t)
		dir := []string{"ASC", "DESC"}[g.pick(2)]
		nulls := []string{"NULLS FIRST", "NULLS LAST"}[g.pick(2)]
		limit := []int{0, 1, 5, 17, 100}[g.pick(5)]
		return fmt.Sprintf("SELECT %s, %s FROM %s%s ORDER BY %s %s %s, %s LIMIT %d", t.key, a.name, t.name, g.where(t), a.name, dir, nulls, t.key, limit), true
	case 5: // LIMIT without order: only the count is fixed
		return fmt.Sprintf("SELECT count(*) AS n FROM (SELECT * FROM %s%s LIMIT %d)", t.name, g.where(t), []int{0, 3, 50, 5000}[g.pick(4)]), false
	default: // HAVING
		k := g.col(t)
		return fmt.Sprintf("SELECT %s, count(*) AS n, %s FROM %s%s GROUP BY %s HAVING count(*) > %d", k.name, g.agg(t), t.name, g.where(t), k.name, g.pick(4)), false
	}
}
