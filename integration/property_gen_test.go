package integration

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Generation for the property test (property_test.go): tables of edge
// values of every type, partitioned every way Iceberg allows, and filters
// over them, as SQL for the cluster and as pyiceberg row filters.

// propType is a column type of generated tables.
type propType struct {
	sql        string   // the DuckDB type
	kind       fuzzKind // for the filter generator
	edges      []string // edge values, as text DuckDB casts to the type (nested: literals)
	ordinary   func(r *rand.Rand) string
	transforms []string // partition transforms that take it
	// nested types' values are SQL literals (lists, structs, maps), not
	// text to cast: every statement that takes values gets them as written.
	nested bool
	// collide are values whose partition path is also NULL's ("null"),
	// for strings and binaries (see internal/icemeta/lanes.go).
	collide []string
}

var a15 = strings.Repeat("a", 15)

var temporalTransforms = []string{"identity", "bucket", "year", "month", "day"}

var propTypes = []propType{
	{sql: "BOOLEAN", kind: kBool, edges: []string{"true", "false"},
		ordinary:   func(r *rand.Rand) string { return strconv.FormatBool(r.IntN(2) == 0) },
		transforms: []string{"identity"}},
	{sql: "INTEGER", kind: kInt, edges: []string{"-2147483648", "2147483647", "0", "-1", "1"},
		ordinary:   func(r *rand.Rand) string { return strconv.Itoa(r.IntN(41) - 20) },
		transforms: []string{"identity", "bucket", "truncate"}},
	{sql: "BIGINT", kind: kInt, edges: []string{"-9223372036854775808", "9223372036854775807", "0", "-1"},
		ordinary:   func(r *rand.Rand) string { return strconv.Itoa(r.IntN(2001) - 1000) },
		transforms: []string{"identity", "bucket", "truncate"}},
	{sql: "FLOAT", kind: kFloat, edges: []string{"NaN", "NaN", "NaN", "-0.0", "0.0", "Infinity", "-Infinity", "3.4028234663852886e38", "-3.4028234663852886e38", "1.401298464324817e-45", "7.0", "1e15"},
		ordinary:   func(r *rand.Rand) string { return strconv.FormatFloat(float64(r.IntN(81)-40)/4, 'g', -1, 64) },
		transforms: []string{"identity"}},
	{sql: "DOUBLE", kind: kFloat, edges: []string{"NaN", "NaN", "NaN", "-0.0", "0.0", "Infinity", "-Infinity", "1.7976931348623157e308", "-1.7976931348623157e308", "5e-324", "7.0", "100.0", "1e15"},
		ordinary:   func(r *rand.Rand) string { return strconv.FormatFloat(float64(r.IntN(81)-40)/4, 'g', -1, 64) },
		transforms: []string{"identity"}},
	decimalType(9, 2), decimalType(18, 0), decimalType(38, 10),
	{sql: "DATE", kind: kDate, edges: []string{"0001-01-01", "9999-12-31", "1970-01-01", "1969-12-31", "2000-02-29"},
		ordinary: func(r *rand.Rand) string {
			return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(801)-400).Format("2006-01-02")
		},
		transforms: temporalTransforms},
	{sql: "TIME", kind: kOther, edges: []string{"00:00:00", "23:59:59.999999", "12:00:00"},
		ordinary: func(r *rand.Rand) string {
			return time.Unix(int64(r.IntN(86400)), int64(r.IntN(1e6))*1000).UTC().Format("15:04:05.999999")
		},
		transforms: []string{"identity", "bucket"}},
	{sql: "TIMESTAMP", kind: kTs, edges: []string{"0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", "1970-01-01 00:00:00", "1969-12-31 23:59:59.999999", "2024-02-29 23:59:59.999999"},
		ordinary:   func(r *rand.Rand) string { return ordinaryTS(r).Format("2006-01-02 15:04:05.999999") },
		transforms: append(slices.Clone(temporalTransforms), "hour")},
	{sql: "TIMESTAMPTZ", kind: kTs, edges: []string{"0001-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00", "1970-01-01 00:00:00+00", "1969-12-31 23:59:59.999999+00"},
		ordinary:   func(r *rand.Rand) string { return ordinaryTS(r).Format("2006-01-02 15:04:05.999999") + "+00" },
		transforms: append(slices.Clone(temporalTransforms), "hour")},
	{sql: "VARCHAR", kind: kStr, edges: []string{"", "", "a", a15 + "éxyz", a15 + "𝄞z", a15 + "\U0010FFFFz", strings.Repeat("\U0010FFFF", 17), a15 + "\uD7FFz", "a%b", "a_b", "it's", "ü", strings.Repeat("z", 4100),
		"null", "nullx", "NULL", "a b", "a+b", "a%20b", "a%2Bb", "a/b", "a=b"},
		ordinary: func(r *rand.Rand) string {
			parts := []string{"a", "b", "ab", "é", "日本", "z", "%", "_", " "}
			var b strings.Builder
			for n := r.IntN(4); n >= 0; n-- {
				b.WriteString(parts[r.IntN(len(parts))])
			}
			return b.String()
		},
		transforms: []string{"identity", "bucket", "truncate"},
		collide:    []string{"null", "nullx", "null"}},
	{sql: "UUID", kind: kOther, edges: []string{"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff", "80000000-0000-0000-0000-000000000000", "7fffffff-ffff-ffff-ffff-ffffffffffff"},
		ordinary: func(r *rand.Rand) string {
			return fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Uint32()>>uint(r.IntN(32)), r.IntN(4))
		},
		transforms: []string{"identity", "bucket"}},
	{sql: "BLOB", kind: kOther, edges: []string{"", `\x00`, strings.Repeat(`\xFF`, 17), `\x00\xFF`, `\x7F\x80`, `\x9E\xE9\x65`, `\x9E\xE9\x65\x00`},
		ordinary: func(r *rand.Rand) string {
			var b strings.Builder
			for n := r.IntN(4); n > 0; n-- {
				fmt.Fprintf(&b, `\x%02X`, []byte{0x00, 0x01, 0x61, 0x7f, 0x80, 0xff}[r.IntN(6)])
			}
			return b.String()
		},
		transforms: []string{"identity", "bucket", "truncate"},
		collide:    []string{`\x9E\xE9\x65`, `\x9E\xE9\x65\x00`, `\x9E\xE9\x65\x9E`}},
	// Nested types: written as literals in INSERT … VALUES, UPDATE SET and
	// MERGE, with strings that hold brackets, commas, quotes and keywords.
	{sql: "INTEGER[]", kind: kOther, nested: true, edges: []string{"[]", "[NULL]", "[1, 2]", "[-2147483648, 2147483647]", "[[1, 2][1]]"},
		ordinary: func(r *rand.Rand) string { return intList(r) }},
	{sql: "VARCHAR[]", kind: kOther, nested: true, edges: []string{"[]", "['a, b', ']', '[', 'it''s']", "['{', '}', 'WHERE x = 1', NULL]", "[x FOR x IN ['p', 'q']]"},
		ordinary: func(r *rand.Rand) string {
			return "['" + string(rune('a'+r.IntN(3))) + "', '" + []string{",", "]", "[", " "}[r.IntN(4)] + "']"
		}},
	{sql: "STRUCT(a INTEGER, b VARCHAR)", kind: kOther, nested: true, edges: []string{"{'a': 1, 'b': 'x, y'}", "{'a': NULL, 'b': ']'}", "{a: 7, b: 'when, then'}", "{'a': -1, 'b': '{''}'}", "row(3, 'r')"},
		ordinary: func(r *rand.Rand) string {
			return fmt.Sprintf("{'a': %d, 'b': '%s'}", r.IntN(9), []string{"x", ",", "[", "} {"}[r.IntN(4)])
		}},
	{sql: "MAP(VARCHAR, INTEGER)", kind: kOther, nested: true, edges: []string{"MAP {}", "MAP {'a': 1, 'b, c': 2}", "MAP {'[': NULL}", "map_from_entries([('k', 3)])"},
		ordinary: func(r *rand.Rand) string { return fmt.Sprintf("MAP {'%c': %d}", 'a'+r.IntN(3), r.IntN(9)) }},
	{sql: "STRUCT(l INTEGER[], m MAP(VARCHAR, VARCHAR[]))", kind: kOther, nested: true,
		edges: []string{"{'l': [1, 2], 'm': MAP {'x': ['a, b']}}", "{'l': NULL, 'm': MAP {}}", "{'l': [], 'm': NULL}"},
		ordinary: func(r *rand.Rand) string {
			return fmt.Sprintf("{'l': %s, 'm': MAP {'k': ['%d']}}", intList(r), r.IntN(9))
		}},
}

// intList is a list literal of a few small integers.
func intList(r *rand.Rand) string {
	vals := make([]string, r.IntN(4))
	for i := range vals {
		vals[i] = strconv.Itoa(r.IntN(21) - 10)
	}
	return "[" + strings.Join(vals, ", ") + "]"
}

var fragileTypes = []string{"VARCHAR", "BLOB", "DOUBLE", "FLOAT", "VARCHAR"}

// typeNamed is the generated type of DuckDB type name sql.
func typeNamed(sql string) *propType {
	for i := range propTypes {
		if propTypes[i].sql == sql {
			return &propTypes[i]
		}
	}
	panic("no generated type " + sql)
}

func decimalType(p, s int) propType {
	nines := strings.Repeat("9", p-s)
	frac := ""
	if s > 0 {
		frac = "." + strings.Repeat("9", s)
	}
	ulp := "1"
	if s > 0 {
		ulp = "0." + strings.Repeat("0", s-1) + "1"
	}
	return propType{sql: fmt.Sprintf("DECIMAL(%d,%d)", p, s), kind: kDec,
		edges: []string{"-" + nines + frac, nines + frac, "0", ulp, "-" + ulp},
		ordinary: func(r *rand.Rand) string {
			v := strconv.Itoa(r.IntN(2001) - 1000)
			if s > 0 {
				v += "." + strconv.Itoa(r.IntN(10))
			}
			return v
		},
		transforms: []string{"identity", "bucket", "truncate"}}
}

func ordinaryTS(r *rand.Rand) time.Time {
	return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(400*24*time.Hour))) - 200*24*time.Hour).Truncate(time.Microsecond)
}

// propValue is one cell: its text, or NULL.
type propValue struct {
	text   string
	null   bool
	nested bool // text is a SQL literal (a list, struct or map)
}

// literal is the SQL of a value of type typ.
func (v propValue) literal(typ string) string {
	if v.null {
		return "NULL::" + typ
	}
	if v.nested {
		// Postfix, so that the literal's commas are the only ones a SET
		// list or VALUES sees: none inside parentheses.
		return v.text + "::" + typ
	}
	return "CAST(" + sqlString(v.text) + " AS " + typ + ")"
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// filterLiteral is the SQL of a value of type typ as a filter's constant:
// the plain literal forms icefloe's pruning pushes (strings, integers,
// booleans, DATE/TIMESTAMP/TIMESTAMPTZ literals), a cast otherwise.
func (v propValue) filterLiteral(typ string) string {
	switch {
	case v.null:
		return v.literal(typ)
	case typ == "VARCHAR":
		return sqlString(v.text)
	case typ == "INTEGER", typ == "BIGINT", typ == "BOOLEAN":
		return v.text
	case typ == "DATE", typ == "TIMESTAMP", typ == "TIMESTAMPTZ":
		return typ + " " + sqlString(v.text)
	}
	return v.literal(typ)
}

// propCol is a column of a generated table.
type propCol struct {
	name string
	typ  *propType
}

// writePath is how a generated table gets its rows.
type writePath string

const (
	viaValues       writePath = "INSERT … VALUES"
	viaInsertSelect writePath = "INSERT … SELECT"
	viaCTAS         writePath = "CREATE TABLE … AS SELECT"
	viaIngest       writePath = "bulk ingest"
	viaUpdate       writePath = "INSERT … VALUES, then UPDATE"
	viaMerge        writePath = "INSERT … VALUES and MERGE … INSERT VALUES, then MERGE … UPDATE SET"
)

var writePaths = []writePath{viaValues, viaInsertSelect, viaCTAS, viaIngest, viaUpdate, viaMerge}

// propTable is a generated table: columns (after id BIGINT NOT NULL),
// partition fields, format version, write path, rows (each starting with
// its id) split into commits, and the UPDATEs of viaUpdate.
type propTable struct {
	name    string
	cols    []propCol
	parts   []string
	version int
	path    writePath
	rows    [][]propValue // rows[i][0] is the id
	commits int
	updates []propUpdate // of viaUpdate and viaMerge
}

// propUpdate is one UPDATE of a generated table: SET col = lit where the
// id is rem modulo mod.
type propUpdate struct {
	col, lit string
	mod, rem int
}

// sql is the UPDATE of table name.
func (u propUpdate) sql(name string) string {
	return fmt.Sprintf("UPDATE %s SET %s = %s WHERE id %% %d = %d", name, u.col, u.lit, u.mod, u.rem)
}

// merge is the same change as a MERGE into table name from the VALUES of
// its rows' ids.
func (u propUpdate) merge(name string, ids []string) string {
	vals := make([]string, len(ids))
	for i, id := range ids {
		vals[i] = "(" + id + "::BIGINT)"
	}
	return fmt.Sprintf("MERGE INTO %[1]s USING (VALUES %[6]s) AS s(id) ON %[1]s.id = s.id WHEN MATCHED AND s.id %% %[2]d = %[3]d THEN UPDATE SET %[4]s = %[5]s",
		name, u.mod, u.rem, u.col, u.lit, strings.Join(vals, ", "))
}

// genTable makes table number n of seed-stream r.
func genTable(r *rand.Rand, name string, path writePath) *propTable {
	t := &propTable{name: name, version: 2 + r.IntN(2), path: path, commits: 1 + r.IntN(3)}
	ncols := 2 + r.IntN(4)
	for i := range ncols {
		typ := &propTypes[r.IntN(len(propTypes))]
		if i == 0 && r.IntN(2) == 0 {
			// Half the tables lead with a type whose statistics are the
			// most fragile (empty and long strings, NaN and zeros).
			typ = typeNamed(fragileTypes[r.IntN(len(fragileTypes))])
		}
		t.cols = append(t.cols, propCol{name: fmt.Sprintf("c%d", i+1), typ: typ})
	}
	// Partition fields: none, or one or two transforms of distinct
	// columns, at most one of them decimal-valued (icefloe refuses more:
	// iceberg-go cannot write their manifests).
	used, decimals := map[string]bool{}, 0
	for k := r.IntN(3); k > 0; k-- {
		c := t.cols[r.IntN(len(t.cols))]
		if k == 1 && r.IntN(2) == 0 {
			c = t.cols[0]
		}
		if len(c.typ.transforms) == 0 {
			continue // a nested type is no partition source
		}
		tr := c.typ.transforms[r.IntN(len(c.typ.transforms))]
		if used[c.name] || c.typ.kind == kDec && tr != "bucket" && decimals > 0 {
			continue
		}
		used[c.name] = true
		if c.typ.kind == kDec && tr != "bucket" {
			decimals++
		}
		switch tr {
		case "identity":
			t.parts = append(t.parts, c.name)
		case "bucket":
			t.parts = append(t.parts, fmt.Sprintf("bucket(%d, %s)", []int{1, 3, 16}[r.IntN(3)], c.name))
		case "truncate":
			t.parts = append(t.parts, fmt.Sprintf("truncate(%d, %s)", []int{1, 2, 3, 4, 16}[r.IntN(5)], c.name))
		default:
			t.parts = append(t.parts, fmt.Sprintf("%s(%s)", tr, c.name))
		}
	}
	nrows := 4 + r.IntN(24)
	for i := range nrows {
		row := []propValue{{text: strconv.Itoa(i + 1)}}
		for _, c := range t.cols {
			row = append(row, genPartValue(r, c, t.parts))
		}
		t.rows = append(t.rows, row)
	}
	if path == viaUpdate || path == viaMerge {
		for k := 1 + r.IntN(2); k > 0; k-- {
			c := t.cols[r.IntN(len(t.cols))]
			v := genPartValue(r, c, t.parts)
			t.updates = append(t.updates, propUpdate{col: c.name, lit: v.literal(c.typ.sql), mod: 2 + r.IntN(2), rem: r.IntN(2)})
		}
	}
	return t
}

// genPartValue is a value of column c (genValue); when c is a partition
// source, a third of the time NULL or a value whose partition path is
// NULL's too, and never one too long to name a directory.
func genPartValue(r *rand.Rand, c propCol, parts []string) propValue {
	source := slices.ContainsFunc(parts, func(p string) bool { return propColumn.FindString(p) == c.name })
	if source && len(c.typ.collide) > 0 && r.IntN(3) == 0 {
		if r.IntN(3) == 0 {
			return propValue{null: true}
		}
		return propValue{text: c.typ.collide[r.IntN(len(c.typ.collide))]}
	}
	v := genValue(r, c.typ)
	// An identity partition value is a directory name: one over the file
	// system's 255 bytes cannot be written (the write fails), so such
	// columns keep their values short.
	for slices.Contains(parts, c.name) && len(v.text) > 64 {
		v = genValue(r, c.typ)
	}
	return v
}

// genValue is NULL, an edge value or an ordinary one.
func genValue(r *rand.Rand, typ *propType) propValue {
	switch x := r.IntN(100); {
	case x < 15:
		return propValue{null: true}
	case x < 55:
		return propValue{text: typ.edges[r.IntN(len(typ.edges))], nested: typ.nested}
	}
	return propValue{text: typ.ordinary(r), nested: typ.nested}
}

// columnsSQL is the column list of the table's CREATE TABLE.
func (t *propTable) columnsSQL() string {
	cols := []string{"id BIGINT NOT NULL"}
	for _, c := range t.cols {
		cols = append(cols, c.name+" "+c.typ.sql)
	}
	return "(" + strings.Join(cols, ", ") + ")"
}

// clauses are the PARTITIONED BY and WITH clauses of its CREATE TABLE.
func (t *propTable) clauses() string {
	s := ""
	if len(t.parts) > 0 {
		s += " PARTITIONED BY (" + strings.Join(t.parts, ", ") + ")"
	}
	return s + fmt.Sprintf(" WITH ('format-version' = '%d')", t.version)
}

func (t *propTable) ddl() string {
	return "CREATE TABLE " + t.name + " " + t.columnsSQL() + t.clauses()
}

// inserts are INSERT … VALUES statements of the rows into name, one per
// commit.
func (t *propTable) inserts(name string, commits int) []string {
	return t.insertsOf(name, t.rows, commits)
}

// insertsOf are INSERT … VALUES statements of rows (of t) into name, one
// per commit.
func (t *propTable) insertsOf(name string, rows [][]propValue, commits int) []string {
	var out []string
	for _, chunk := range splitRows(rows, commits) {
		rows := make([]string, len(chunk))
		for i, row := range chunk {
			vals := make([]string, len(row))
			for j, v := range row {
				typ := "BIGINT"
				if j > 0 {
					typ = t.cols[j-1].typ.sql
				}
				vals[j] = v.literal(typ)
			}
			rows[i] = "(" + strings.Join(vals, ", ") + ")"
		}
		out = append(out, "INSERT INTO "+name+" VALUES "+strings.Join(rows, ", "))
	}
	return out
}

func splitRows(rows [][]propValue, n int) [][][]propValue {
	n = max(1, min(n, len(rows)))
	var out [][][]propValue
	for i := range n {
		lo, hi := i*len(rows)/n, (i+1)*len(rows)/n
		if hi > lo {
			out = append(out, rows[lo:hi])
		}
	}
	return out
}

// fuzzTable is the table as the filter generator sees it: each column
// with constants from its own values and its type's edges.
func (t *propTable) fuzzTable(r *rand.Rand) fuzzTable {
	ft := fuzzTable{name: t.name, key: "id", cols: []fuzzCol{{"id", kInt, []string{"1", "3", "7", "100", "-1"}, nil}}}
	for i, c := range t.cols {
		var consts, likes []string
		seen := map[string]bool{}
		add := func(v propValue) {
			if lit := v.filterLiteral(c.typ.sql); !v.null && !seen[lit] {
				seen[lit] = true
				consts = append(consts, lit)
			}
		}
		for k := 0; k < 5; k++ {
			add(t.rows[r.IntN(len(t.rows))][i+1])
		}
		for _, e := range c.typ.edges {
			if len(e) < 100 {
				add(propValue{text: e, nested: c.typ.nested})
			}
		}
		add(propValue{text: c.typ.ordinary(r), nested: c.typ.nested})
		if c.typ.kind == kStr {
			likes = []string{"'%'", "'_%'", "''", "'a%'", "'a\\%%' ESCAPE '\\'", "'%b'"}
			for k := 0; k < 4; k++ {
				v := t.rows[r.IntN(len(t.rows))][i+1]
				if v.null {
					continue
				}
				runes := []rune(v.text)
				likes = append(likes, sqlString(string(runes[:r.IntN(len(runes)+1)])+"%"))
			}
		}
		fc := fuzzCol{c.name, c.typ.kind, consts, likes}
		ft.cols = append(ft.cols, fc)
		// Partition sources and floats are drawn twice as often: their
		// statistics are the ones pruning trusts most.
		if c.typ.kind == kFloat || slices.ContainsFunc(t.parts, func(p string) bool { return propColumn.FindString(p) == c.name }) {
			ft.cols = append(ft.cols, fc)
		}
	}
	return ft
}

// genSQLFilter is a WHERE predicate over t of at most depth levels from
// the shared filter generator, driven by random choices. Depth 0 is one
// predicate on one column, the shape pruning pushes most.
func genSQLFilter(r *rand.Rand, ft fuzzTable, depth int) string {
	data := make([]byte, 64)
	for i := range data {
		data[i] = byte(r.IntN(256))
	}
	return (&fuzzGen{data: data}).pred(ft, depth)
}

// pyFilter is a pyiceberg row filter (see integration/interop/row_filters.py)
// and the SQL predicate that selects the same rows. Comparisons are guarded
// with NOT NULL (and NOT NaN for floats) on both sides, so that both are
// two-valued and NOT and OR compose alike: pyiceberg compares floats as
// IEEE (NaN matches no comparison), DuckDB orders NaN above every number.
type pyFilter struct {
	tree map[string]any
	sql  string
}

func genPyFilter(r *rand.Rand, t *propTable, depth int) pyFilter {
	if depth > 0 && r.IntN(3) > 0 {
		switch r.IntN(3) {
		case 0:
			c := genPyFilter(r, t, depth-1)
			return pyFilter{map[string]any{"op": "not", "arg": c.tree}, "NOT " + c.sql}
		default:
			op := []string{"and", "or"}[r.IntN(2)]
			a, b := genPyFilter(r, t, depth-1), genPyFilter(r, t, depth-1)
			return pyFilter{map[string]any{"op": op, "args": []any{a.tree, b.tree}}, "(" + a.sql + " " + strings.ToUpper(op) + " " + b.sql + ")"}
		}
	}
	return genPyAtom(r, t)
}

// pyColumns are the columns pyiceberg can filter on: not UUIDs (pyarrow
// has no comparison kernels for its uuid extension type, and pyiceberg
// 0.10 compares UUID bounds with bytes), nor nested ones (no filters).
func (t *propTable) pyColumns() []int {
	var out []int
	for i, c := range t.cols {
		if c.typ.sql != "UUID" && !c.typ.nested {
			out = append(out, i)
		}
	}
	return out
}

func genPyAtom(r *rand.Rand, t *propTable) pyFilter {
	cols := t.pyColumns()
	ci := cols[r.IntN(len(cols))]
	c := t.cols[ci]
	nonNull := []any{map[string]any{"op": "not_null", "col": c.name}}
	guard := c.name + " IS NOT NULL"
	if c.typ.kind == kFloat {
		nonNull = append(nonNull, map[string]any{"op": "not_nan", "col": c.name})
		guard += " AND NOT isnan(" + c.name + ")"
	}
	guarded := func(atom map[string]any, sql string) pyFilter {
		return pyFilter{map[string]any{"op": "and", "args": append(slices.Clone(nonNull), atom)}, "(" + guard + " AND " + sql + ")"}
	}
	value := func() propValue {
		for range 20 {
			v := t.rows[r.IntN(len(t.rows))][ci+1]
			if r.IntN(3) == 0 {
				v = propValue{text: c.typ.edges[r.IntN(len(c.typ.edges))]}
			}
			// pyiceberg 0.10 turns an infinite literal for a float (32-bit)
			// column into its above-max/below-min sentinel, which makes
			// `< Infinity` true for Infinity: compare such columns with
			// finite values only.
			inf := c.typ.sql == "FLOAT" && strings.HasSuffix(v.text, "Infinity")
			// It takes the largest double for its above-max sentinel too:
			// `= 1.7976931348623157e308` matches no row.
			inf = inf || c.typ.sql == "DOUBLE" && strings.HasSuffix(v.text, "1.7976931348623157e308")
			if !v.null && v.text != "NaN" && !inf {
				return v
			}
		}
		return propValue{text: c.typ.ordinary(r)}
	}
	switch k := r.IntN(10); {
	case k == 0:
		return pyFilter{map[string]any{"op": "is_null", "col": c.name}, c.name + " IS NULL"}
	case k == 1 && c.typ.kind == kFloat:
		return pyFilter{map[string]any{"op": "and", "args": []any{nonNull[0], map[string]any{"op": "is_nan", "col": c.name}}},
			"(" + c.name + " IS NOT NULL AND isnan(" + c.name + "))"}
	case k == 2:
		n := 1 + r.IntN(3)
		var vs []any
		var lits []string
		for range n {
			v := value()
			if c.typ.kind == kFloat && (v.text == "0.0" || v.text == "-0.0" || v.text == "0") {
				// pyarrow's is_in hashes -0.0 and 0.0 apart (IEEE and
				// DuckDB call them equal): no zeros in float IN lists.
				v = propValue{text: "2.5"}
			}
			vs = append(vs, pyText(c.typ, v.text))
			lits = append(lits, v.literal(c.typ.sql))
		}
		op, not := "in", ""
		if r.IntN(2) == 0 {
			op, not = "not_in", "NOT "
		}
		return guarded(map[string]any{"op": op, "col": c.name, "vs": vs}, c.name+" "+not+"IN ("+strings.Join(lits, ", ")+")")
	case k == 3 && c.typ.kind == kStr:
		v := value()
		runes := []rune(v.text)
		prefix := string(runes[:r.IntN(len(runes)+1)])
		op, sql := "starts_with", "starts_with("+c.name+", "+sqlString(prefix)+")"
		if r.IntN(2) == 0 {
			op, sql = "not_starts_with", "NOT "+sql
		}
		return guarded(map[string]any{"op": op, "col": c.name, "v": prefix}, sql)
	}
	ops := []struct{ py, sql string }{{"eq", "="}, {"ne", "<>"}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}}
	op := ops[r.IntN(len(ops))]
	if c.typ.kind == kBool {
		op = ops[r.IntN(2)]
	}
	v := value()
	return guarded(map[string]any{"op": op.py, "col": c.name, "v": pyText(c.typ, v.text)}, c.name+" "+op.sql+" "+v.literal(c.typ.sql))
}

// pyText is a value as row_filters.py takes it: integers for dates
// (days), times and timestamps (µs), hex for binaries, else the text.
func pyText(typ *propType, text string) any {
	switch typ.sql {
	case "DATE":
		d, _ := time.Parse("2006-01-02", text)
		return d.Unix() / 86400
	case "TIME":
		d, _ := time.Parse("15:04:05.999999", text)
		return int64(d.Hour())*3600e6 + int64(d.Minute())*60e6 + int64(d.Second())*1e6 + int64(d.Nanosecond()/1000)
	case "TIMESTAMP", "TIMESTAMPTZ":
		ts, _ := time.Parse("2006-01-02 15:04:05.999999", strings.TrimSuffix(text, "+00"))
		return ts.UnixMicro()
	case "BLOB":
		return hex.EncodeToString(blobBytes(text))
	}
	return text
}

// blobBytes decodes the \xHH text of a generated blob.
func blobBytes(text string) []byte {
	var out []byte
	for i := 0; i+4 <= len(text); i += 4 {
		b, _ := strconv.ParseUint(text[i+2:i+4], 16, 8)
		out = append(out, byte(b))
	}
	return out
}
