package parse

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestKinds(t *testing.T) {
	for q, want := range map[string]Kind{
		"SELECT 1": KindSelect, "  -- c\n with x as (select 1) select * from x": KindSelect,
		"/* x */ (SELECT 1)": KindSelect, "VALUES (1)": KindSelect, "FROM t": KindSelect, "TABLE t": KindSelect,
		";SELECT 1;;": KindSelect, "SUMMARIZE t": KindSummarize,
		"EXPLAIN SELECT 1": KindExplain, "explain analyze select 1": KindExplain, "CALL system.x()": KindCall,
		"SHOW TABLES": KindShow, "DESCRIBE t": KindShow, "desc select 1": KindShow, "USE s": KindUse,
		"create schema s": KindCreateSchema, "DROP SCHEMA s": KindDropSchema,
		"create table t (a int)": KindCreateTable, "CREATE TABLE t AS SELECT 1": KindCreateTable,
		"CREATE OR REPLACE TABLE t (a int)": KindReplaceTable, "DROP TABLE t": KindDropTable,
		"CREATE VIEW v AS SELECT 1": KindCreateView, "CREATE OR REPLACE VIEW v AS SELECT 1": KindCreateView,
		"DROP VIEW v": KindDropView, "INSERT INTO t VALUES (1)": KindInsert, "UPDATE t SET a = 1": KindUpdate,
		"DELETE FROM t": KindDelete, "MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE": KindMerge,
		"TRUNCATE t": KindTruncate, "ALTER TABLE t ADD COLUMN c INT": KindAlterTable,
		"SET result_cache = off": KindSet, "reset RESULT_CACHE": KindSet,
	} {
		st, err := Parse(q)
		if err != nil || st.Kind != want {
			t.Errorf("%q: got %v %v, want %v", q, st.Kind, err, want)
		}
	}
	for q, want := range map[string]struct {
		err error
		msg string
	}{
		"COPY t TO 'x'":                    {ErrRefused, "COPY statements are not allowed"},
		"attach 'x'":                       {ErrRefused, "ATTACH statements are not allowed"},
		"SET x = 1":                        {ErrRefused, "SET statements are not allowed"},
		"SET result_cache = 2":             {ErrInvalid, "result_cache is on or off, not 2"},
		"SET result_cache off":             {ErrSyntax, "unexpected"},
		"PRAGMA version":                   {ErrRefused, "PRAGMA statements are not allowed"},
		"INSTALL httpfs":                   {ErrRefused, "INSTALL statements"},
		"LOAD httpfs":                      {ErrRefused, "LOAD statements"},
		"begin":                            {ErrUnsupported, "BEGIN statements"},
		"ANALYZE t":                        {ErrUnsupported, "ANALYZE statements"},
		"CREATE MACRO m":                   {ErrUnsupported, "CREATE MACRO statements"},
		"DROP INDEX i":                     {ErrUnsupported, "DROP INDEX statements"},
		"ALTER VIEW v":                     {ErrUnsupported, "ALTER VIEW statements"},
		"CREATE TEMP TABLE":                {ErrUnsupported, "CREATE TEMP statements"},
		"":                                 {ErrSyntax, "empty statement"},
		" ;; ":                             {ErrSyntax, "empty statement"},
		"blah":                             {ErrSyntax, `unknown statement starting with "BLAH"`},
		"SELECT 'x":                        {ErrSyntax, "unterminated quoted string"},
		"DROP TABLE a; DROP TABLE b":       {ErrSyntax, "one statement at a time"},
		"EXPLAIN CALL system.x()":          {ErrUnsupported, "EXPLAIN CALL"},
		"EXPLAIN ANALYZE EXPLAIN SELECT 1": {ErrUnsupported, "EXPLAIN EXPLAIN"},
		"EXPLAIN":                          {ErrSyntax, "EXPLAIN needs a statement"},
		"EXPLAIN COPY t TO 'x'":            {ErrRefused, "COPY statements"},
		"SHOW FUNCTIONS":                   {ErrUnsupported, "SHOW FUNCTIONS; icefloe has SHOW CATALOGS"},
	} {
		st, err := Parse(q)
		if !errors.Is(err, want.err) || !strings.Contains(err.Error(), want.msg) {
			t.Errorf("%q: got %v, want %v with %q", q, err, want.err, want.msg)
		}
		if st == nil || st.Kind != KindInvalid || st.Body != nil {
			t.Errorf("%q: a failed parse gives %+v", q, st)
		}
	}
}

// Every kind the table lists has a parser, a runner and an audit kind;
// the words that start one kind start no other.
func TestKindTable(t *testing.T) {
	seen := map[string]Kind{}
	for _, k := range Kinds() {
		if k.Runner == 0 || k.Audit == "" || k.Name == "" || len(k.Starts) == 0 {
			t.Errorf("%v: incomplete entry %+v", k.Kind, k)
		}
		if k.Rows != (k.Runner == RunPlanner) {
			t.Errorf("%v: returns rows %v but runs on %v", k.Kind, k.Rows, k.Runner)
		}
		if (k.Audit == AuditQuery) != k.Rows {
			t.Errorf("%v: audit kind %s", k.Kind, k.Audit)
		}
		for _, s := range k.Starts {
			key := strings.Join(s, " ")
			if other, dup := seen[key]; dup {
				t.Errorf("%q starts %v and %v", key, other, k.Kind)
			}
			seen[key] = k.Kind
		}
	}
}

func TestKeywordAndRedacted(t *testing.T) {
	st, _ := Parse("  with x as (select 'secret', 42, E'a\\nb', $t$x$t$, B'01') select * from x -- c\n;")
	if st.Keyword() != "WITH" {
		t.Errorf("keyword %q", st.Keyword())
	}
	if got, want := st.Redacted(), "with x as (select ?, ?, ?, ?, ?) select * from x ;"; got != want {
		t.Errorf("redacted %q, want %q", got, want)
	}
	bad, err := Parse("SELECT 'unterminated")
	if err == nil || bad.Redacted() != "" || bad.Keyword() != "SELECT" {
		t.Errorf("lexical error: %v %q %q", err, bad.Redacted(), bad.Keyword())
	}
}

func TestHasParams(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT ?": true, "SELECT $1": true, "INSERT INTO t VALUES (?1, ?2)": true,
		"SELECT '?', $$a$1$$ AS x -- ?": false, `SELECT "$1"`: false, "SELECT 1": false,
	} {
		if got := Must(q).HasParams(); got != want {
			t.Errorf("%q: HasParams %v, want %v", q, got, want)
		}
	}
}

func TestCheap(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1": true, "values (1, 'a')": true, "SELECT 1;": true, "SELECT now()": true,
		"SELECT * FROM t": false, "TABLE t": false, "SELECT 1 INTO x": false, "WITH a AS (SELECT 1) SELECT * FROM a": false,
		"SELECT 1; SELECT 2": false, "EXPLAIN SELECT 1": false, "SELECT '" + strings.Repeat("x", CheapTextBytes) + "'": false,
		"  select 1 + 2 AS x -- FROM orders": true, "VALUES (1), (2)": true, "SELECT 'FROM' AS s": true,
		"SELECT count(*) FROM orders": false, "SELECT (SELECT max(id) FROM t)": false, "INSERT INTO t VALUES (1)": false,
		"SELECT * INTO t": false, "SELECT 1 AS \"x\" " + strings.Repeat(" ", CheapTextBytes): false,
	} {
		st, _ := Parse(q)
		if st.Cheap() != want {
			t.Errorf("%.40q: cheap %v, want %v", q, st.Cheap(), want)
		}
	}
}

func body[T Body](t *testing.T, q string) T {
	t.Helper()
	st, err := Parse(q)
	if err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	b, ok := st.Body.(T)
	if !ok {
		t.Fatalf("%q: body %T", q, st.Body)
	}
	return b
}

func TestStatementBodies(t *testing.T) {
	yes, no := true, false
	_ = no
	cases := []struct {
		q    string
		want Body
	}{
		{"CREATE SCHEMA IF NOT EXISTS c.s WITH ('location' = 'x', format-version = 2)",
			&CreateSchema{IfNotExists: true, Name: []string{"c", "s"}, Props: map[string]string{"location": "x", "format-version": "2"}}},
		{"DROP SCHEMA IF EXISTS s CASCADE", &DropSchema{IfExists: true, Name: []string{"s"}, Cascade: true}},
		{"DROP SCHEMA s RESTRICT", &DropSchema{Name: []string{"s"}}},
		{`CREATE TABLE IF NOT EXISTS "S".t (a INT NOT NULL, b VARCHAR) PARTITIONED BY (bucket(16, a), day(ts), b) ORDERED BY (a DESC NULLS FIRST, b) WITH (write.format.default = 'parquet', x = true)`,
			&CreateTable{IfNotExists: true, Name: []string{"S", "t"}, Columns: "(a INT NOT NULL, b VARCHAR)",
				Partition: []PartitionItem{{Transform: "bucket", Column: "a", Arg: 16, HasArg: true}, {Transform: "day", Column: "ts"}, {Column: "b"}},
				Order:     []SortItem{{Column: "a", Desc: true, NullsFirst: &yes}, {Column: "b"}},
				With:      map[string]string{"write.format.default": "parquet", "x": "true"}}},
		{"DROP TABLE IF EXISTS a.b.c PURGE", &DropTable{IfExists: true, Name: []string{"a", "b", "c"}, Purge: true}},
		{"DROP VIEW v", &DropView{Name: []string{"v"}}},
		{"TRUNCATE TABLE t", &Truncate{Name: []string{"t"}}},
		{"USE c.s", &Use{Name: []string{"c", "s"}}},
		{"SET result_cache = off", &Set{Name: "result_cache"}},
		{"SET Result_Cache TO 'on'", &Set{Name: "result_cache", On: true}},
		{"SET result_cache = DEFAULT", &Set{Name: "result_cache", Reset: true}},
		{"RESET result_cache", &Set{Name: "result_cache", Reset: true}},
		{"UPDATE t SET a = f(1, 2), l = [1, 2], s = {'x': 1, 'y': 2}, c = CASE WHEN a THEN 1, 2 END WHERE a > 1",
			&Update{Name: []string{"t"}, Set: []SetClause{{"a", "f(1, 2)"}, {"l", "[1, 2]"}, {"s", "{'x': 1, 'y': 2}"}, {"c", "CASE WHEN a THEN 1, 2 END"}}, Where: "a > 1"}},
		{"DELETE FROM s.t WHERE x IN (1, 2)", &Delete{Name: []string{"s", "t"}, Where: "x IN (1, 2)"}},
		{"DELETE FROM t", &Delete{Name: []string{"t"}}},
		{"INSERT INTO t (a, \"B\") VALUES (1, 2), (?, $2)", &Insert{Name: []string{"t"}, Columns: []string{"a", "B"}, Values: "VALUES (1, 2), (?, $2)"}},
		{"CALL local.system.expire_snapshots(table => 't', older_than => TIMESTAMP '2024-01-01', ids => array(1, -2), m => map('a', 'b'), x => NULL)",
			&Call{Name: []string{"local", "system", "expire_snapshots"}, Args: []Arg{
				{"table", Value{Kind: 3, Text: "t"}}, {"older_than", Value{Kind: 3, Text: "2024-01-01", Typed: "TIMESTAMP"}},
				{"ids", Value{Ctor: "array", Items: []Value{{Kind: 5, Text: "1"}, {Kind: 5, Text: "-2"}}}},
				{"m", Value{Ctor: "map", Items: []Value{{Kind: 3, Text: "a"}, {Kind: 3, Text: "b"}}}},
				{"x", Value{Kind: 1, Text: "NULL"}}}}},
		{"SHOW TABLES FROM c.s LIKE 'o%'", &Show{What: ShowTables, Name: []string{"c", "s"}, Like: strp("o%")}},
		{"SHOW SCHEMAS IN c", &Show{What: ShowSchemas, Name: []string{"c"}}},
		{"SHOW CATALOGS", &Show{What: ShowCatalogs}},
		{"SHOW COLUMNS FROM t LIKE 'a'", &Show{What: ShowColumns, Name: []string{"t"}, Like: strp("a")}},
		{"SHOW CREATE TABLE s.t", &Show{What: ShowCreateTable, Name: []string{"s", "t"}}},
		{"DESC t", &Show{What: DescribeTable, Name: []string{"t"}}},
	}
	for _, c := range cases {
		st, err := Parse(c.q)
		if err != nil {
			t.Errorf("%q: %v", c.q, err)
			continue
		}
		if !reflect.DeepEqual(st.Body, c.want) {
			t.Errorf("%q:\n got %#v\nwant %#v", c.q, st.Body, c.want)
		}
	}
}

func strp(s string) *string { return &s }

func TestQueriesInsideStatements(t *testing.T) {
	ctas := body[*CreateTable](t, "CREATE TABLE t PARTITIONED BY (a) WITH (k = 1) AS SELECT * FROM default.u;")
	if ctas.As == nil || ctas.As.Text != "SELECT * FROM default.u" || ctas.As.Query().Duck != `SELECT * FROM "default".u` || ctas.Columns != "" {
		t.Errorf("ctas %+v", ctas)
	}
	v := body[*CreateView](t, `CREATE OR REPLACE VIEW v AS  SELECT "A" FROM t`)
	if !v.OrReplace || v.Query.Text != `SELECT "A" FROM t` || !v.Query.Quoted("A") {
		t.Errorf("view %+v", v)
	}
	ins := body[*Insert](t, "INSERT INTO t (SELECT 1) UNION ALL (SELECT 2)")
	if ins.Query == nil || ins.Query.Text != "(SELECT 1) UNION ALL (SELECT 2)" || ins.Columns != nil {
		t.Errorf("insert %+v", ins)
	}
	ins = body[*Insert](t, "INSERT INTO t (a) WITH x AS (SELECT 1) SELECT * FROM x")
	if ins.Query == nil || ins.Query.Text != "WITH x AS (SELECT 1) SELECT * FROM x" || !reflect.DeepEqual(ins.Columns, []string{"a"}) {
		t.Errorf("insert %+v", ins)
	}
	d := body[*Show](t, "DESCRIBE SELECT 1 AS x")
	if d.What != DescribeQuery || d.Query.Text != "SELECT 1 AS x" {
		t.Errorf("describe %+v", d)
	}
	ex := body[*Explain](t, "EXPLAIN ANALYZE UPDATE t SET a = 1 WHERE b = 2;")
	if !ex.Analyze || ex.Inner.Kind != KindUpdate || ex.Inner.Text != "UPDATE t SET a = 1 WHERE b = 2" {
		t.Errorf("explain %+v %+v", ex, ex.Inner)
	}
	if u := ex.Inner.Body.(*Update); u.Where != "b = 2" {
		t.Errorf("explained update %+v", u)
	}
}

func TestStatementErrors(t *testing.T) {
	for q, want := range map[string]struct {
		err error
		msg string
	}{
		"CREATE TABLE t":                                                 {ErrSyntax, "needs a column list or AS query"},
		"CREATE TABLE t (a INT) AS SELECT 1":                             {ErrUnsupported, "CREATE TABLE … AS SELECT"},
		"CREATE OR REPLACE TABLE IF NOT EXISTS t (a INT)":                {ErrSyntax, "cannot be used together"},
		"CREATE TABLE t (a INT) PARTITIONED BY (bucket(1, a, b))":        {ErrSyntax, "at most two arguments"},
		"CREATE TABLE t (a INT) PARTITIONED BY (bucket(16))":             {ErrSyntax, "names no column"},
		"CREATE TABLE t (a INT) WITH (k = x)":                            {ErrSyntax, `unexpected "x"`},
		"CREATE VIEW v":                                                  {ErrSyntax, "CREATE VIEW needs AS query"},
		"UPDATE t SET a = 1, A = 2":                                      {ErrInvalid, `column "A" is set twice`},
		"UPDATE t SET a = 1 FROM u":                                      {ErrUnsupported, "UPDATE … FROM"},
		"UPDATE t SET a = 1 WHERE b RETURNING *":                         {ErrUnsupported, "UPDATE … RETURNING"},
		"DELETE FROM t USING u":                                          {ErrUnsupported, "DELETE … USING"},
		"INSERT OR REPLACE INTO t VALUES (1)":                            {ErrUnsupported, "INSERT OR"},
		"INSERT INTO t DEFAULT VALUES":                                   {ErrUnsupported, "DEFAULT VALUES"},
		"INSERT INTO t BY NAME SELECT 1":                                 {ErrUnsupported, "BY NAME"},
		"INSERT INTO t VALUES (1) RETURNING *":                           {ErrUnsupported, "RETURNING"},
		"INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING":                {ErrUnsupported, "ON CONFLICT"},
		"MERGE INTO t USING s ON a = b":                                  {ErrSyntax, "at least one WHEN clause"},
		"MERGE INTO t USING s ON a = b WHEN MATCHED THEN INSERT *":       {ErrInvalid, "WHEN NOT MATCHED [BY TARGET] takes INSERT"},
		"ALTER TABLE t ADD COLUMN c INT)":                                {ErrSyntax, "unbalanced parentheses in the column definition"},
		"ALTER TABLE t ALTER COLUMN c TYPE DECIMAL(10":                   {ErrSyntax, "unbalanced parentheses in the type"},
		"ALTER TABLE t EXECUTE expire_snapshots WHERE a":                 {ErrSyntax, `unexpected "WHERE"`},
		"ALTER TABLE t CREATE TAG v WITH SNAPSHOT RETENTION 2 SNAPSHOTS": {ErrInvalid, "tags keep one snapshot"},
		"ALTER TABLE t CREATE BRANCH b RETAIN 0 DAYS":                    {ErrInvalid, "want a positive whole number"},
		"ALTER TABLE t ADD PARTITION FIELD a, b":                         {ErrSyntax, "one partition field at a time"},
		"ALTER TABLE t SET IDENTIFIER FIELDS":                            {ErrSyntax, "unexpected end of statement"},
		"CALL system.p(x => y)":                                          {ErrInvalid, "want a literal"},
		"USE a.b.c":                                                      {ErrSyntax, "more than 2 parts"},
	} {
		_, err := Parse(q)
		if !errors.Is(err, want.err) || !strings.Contains(err.Error(), want.msg) {
			t.Errorf("%q: got %v, want %v with %q", q, err, want.err, want.msg)
		}
	}
}

func TestAlterActions(t *testing.T) {
	v := int64(7)
	for q, want := range map[string]AlterAction{
		"ALTER TABLE t ADD COLUMN IF NOT EXISTS c DECIMAL(10, 2)": &AddColumn{IfNotExists: true, Column: "c", Def: "c DECIMAL(10, 2)"},
		"ALTER TABLE t ADD partition INT":                         &AddColumn{Column: "partition", Def: "partition INT"},
		"ALTER TABLE t DROP COLUMN IF EXISTS c":                   &DropColumn{IfExists: true, Column: "c"},
		"ALTER TABLE t DROP c":                                    &DropColumn{Column: "c"},
		"ALTER TABLE t RENAME COLUMN a TO b":                      &RenameColumn{From: "a", To: "b"},
		"ALTER TABLE t ALTER COLUMN a SET DATA TYPE BIGINT":       &SetColumnType{Column: "a", Type: "BIGINT"},
		"ALTER TABLE t ALTER a TYPE DECIMAL(12,2)":                &SetColumnType{Column: "a", Type: "DECIMAL(12,2)"},
		"ALTER TABLE t ALTER a DROP NOT NULL":                     &DropNotNull{Column: "a"},
		"ALTER TABLE t ALTER a SET NOT NULL":                      &SetNotNull{Column: "a"},
		"ALTER TABLE t SET TBLPROPERTIES ('a' = 1, b.c-d = 'x')":  &SetProperties{Props: map[string]string{"a": "1", "b.c-d": "x"}},
		"ALTER TABLE t UNSET PROPERTIES (a.b, 'c')":               &UnsetProperties{Keys: []string{"a.b", "c"}},
		"ALTER TABLE t ADD PARTITION FIELD bucket(8, id)":         &AddPartitionField{Item: PartitionItem{Transform: "bucket", Column: "id", Arg: 8, HasArg: true}},
		"ALTER TABLE t DROP PARTITION KEY day(ts)":                &DropPartitionField{Item: &PartitionItem{Transform: "day", Column: "ts"}},
		"ALTER TABLE t DROP PARTITION FIELD ts_day":               &DropPartitionField{Name: "ts_day"},
		"ALTER TABLE t RENAME TO s.u":                             &RenameTable{To: []string{"s", "u"}},
		"ALTER TABLE t SET IDENTIFIER FIELDS a, s.b":              &SetIdentifierFields{Columns: []string{"a", "s.b"}},
		"ALTER TABLE t DROP IDENTIFIER FIELDS":                    &DropIdentifierFields{},
		"ALTER TABLE t CREATE OR REPLACE BRANCH b AS OF VERSION 7 RETAIN 2 DAYS WITH SNAPSHOT RETENTION 3 SNAPSHOTS 4 HOURS": &RefChange{
			Branch: true, Name: "b", Create: true, Replace: true, Version: &v, RetainMs: 2 * 86400000, MinSnapshots: 3, MaxSnapshotAgeMs: 4 * 3600000},
		"ALTER TABLE t DROP TAG IF EXISTS v1":      &RefChange{Name: "v1", Drop: true, IfExists: true},
		"ALTER TABLE t CREATE TAG IF NOT EXISTS v": &RefChange{Name: "v", Create: true, IfNotExists: true},
		"ALTER TABLE t EXECUTE optimize(file_size_threshold => '10MB') WHERE a > 1": &Execute{Procedure: "optimize",
			Args: []Arg{{"file_size_threshold", Value{Kind: 3, Text: "10MB"}}}, Where: "a > 1"},
		"ALTER TABLE t EXECUTE expire_snapshots": &Execute{Procedure: "expire_snapshots"},
	} {
		a := body[*AlterTable](t, q)
		if !reflect.DeepEqual(a.Action, want) {
			t.Errorf("%q:\n got %#v\nwant %#v", q, a.Action, want)
		}
	}
	a := body[*AlterTable](t, "ALTER TABLE IF EXISTS c.s.t DROP c")
	if !a.IfExists || !reflect.DeepEqual(a.Name, []string{"c", "s", "t"}) {
		t.Errorf("%+v", a)
	}
}

func TestMergeBody(t *testing.T) {
	m := body[*Merge](t, `MERGE INTO t AS x USING (SELECT * FROM s) AS y ON x.id = y.id
		WHEN MATCHED AND y.d THEN DELETE
		WHEN MATCHED THEN UPDATE SET v = [y.a, y.b], w = CASE WHEN y.c THEN 1 ELSE 2 END
		WHEN NOT MATCHED BY SOURCE THEN DO NOTHING
		WHEN NOT MATCHED THEN INSERT (id, v) VALUES (y.id, {'k': 1, 'l': 2})`)
	want := &Merge{Target: []string{"t"}, Alias: "x", Source: "(SELECT * FROM s) AS y", On: 0,
		Exprs: []string{"x.id = y.id", "y.d", "[y.a, y.b]", "CASE WHEN y.c THEN 1 ELSE 2 END", "y.id", "{'k': 1, 'l': 2}"},
		Clauses: []MergeClause{
			{When: WhenMatched, Cond: 1, Action: "DELETE"},
			{When: WhenMatched, Cond: -1, Action: "UPDATE", Cols: []string{"v", "w"}, Exprs: []int{2, 3}},
			{When: WhenNotMatchedBySource, Cond: -1, Action: "NOTHING"},
			{When: WhenNotMatched, Cond: -1, Action: "INSERT", Cols: []string{"id", "v"}, Exprs: []int{4, 5}},
		}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got  %#v\nwant %#v", m, want)
	}
}

func TestTextArguments(t *testing.T) {
	if n, err := TableName(`"My".t;`); err != nil || !reflect.DeepEqual(n, []string{"My", "t"}) {
		t.Errorf("table name %v %v", n, err)
	}
	if _, err := TableName("a.b.c.d"); !errors.Is(err, ErrSyntax) {
		t.Errorf("four parts: %v", err)
	}
	items, err := SortOrder("a DESC, b NULLS LAST")
	no := false
	if err != nil || !reflect.DeepEqual(items, []SortItem{{Column: "a", Desc: true}, {Column: "b", NullsFirst: &no}}) {
		t.Errorf("sort order %+v %v", items, err)
	}
}

func TestLexicalErrors(t *testing.T) {
	for _, bad := range []string{`'open`, `"open`, `/* open`, `$q$ open`, "CREATE TABLE t (a INT)\x00; DROP TABLE t"} {
		if _, err := Parse(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: got %v, want a syntax error", bad, err)
		}
	}
}

func TestMergeParts(t *testing.T) {
	m := body[*Merge](t, `MERGE INTO db.t AS x USING (SELECT a, b FROM s WHERE c ON d) AS y ON x.a = y.a AND CASE WHEN y.b THEN true END
		WHEN MATCHED AND y.b > (1) THEN UPDATE SET b = CASE WHEN y.b THEN 1 ELSE 2 END, c = 3
		WHEN NOT MATCHED BY SOURCE THEN DELETE
		WHEN NOT MATCHED AND y.a IS NOT NULL THEN INSERT (a, b) VALUES (y.a, (y.b, 1))
		WHEN NOT MATCHED BY TARGET THEN DO NOTHING`)
	if strings.Join(m.Target, ".") != "db.t" || m.Alias != "x" || m.Source != "(SELECT a, b FROM s WHERE c ON d) AS y" {
		t.Fatalf("target %v alias %q source %q", m.Target, m.Alias, m.Source)
	}
	if got := m.Exprs[m.On]; got != "x.a = y.a AND CASE WHEN y.b THEN true END" {
		t.Fatalf("ON %q", got)
	}
	if len(m.Clauses) != 4 {
		t.Fatalf("%d clauses", len(m.Clauses))
	}
	c := m.Clauses[0]
	if c.When != WhenMatched || c.Action != "UPDATE" || m.Exprs[c.Cond] != "y.b > (1)" ||
		strings.Join(c.Cols, ",") != "b,c" || m.Exprs[c.Exprs[0]] != "CASE WHEN y.b THEN 1 ELSE 2 END" || m.Exprs[c.Exprs[1]] != "3" {
		t.Fatalf("clause 1: %+v", c)
	}
	if c := m.Clauses[1]; c.When != WhenNotMatchedBySource || c.Action != "DELETE" || c.Cond != -1 {
		t.Fatalf("clause 2: %+v", c)
	}
	if c := m.Clauses[2]; c.When != WhenNotMatched || c.Action != "INSERT" || len(c.Exprs) != 2 || m.Exprs[c.Exprs[1]] != "(y.b, 1)" {
		t.Fatalf("clause 3: %+v", c)
	}
	if c := m.Clauses[3]; c.When != WhenNotMatched || c.Action != "NOTHING" {
		t.Fatalf("clause 4: %+v", c)
	}
	for _, bad := range []struct {
		q    string
		want error
		text string
	}{
		{`MERGE t USING s ON t.a = s.a WHEN MATCHED THEN DELETE`, ErrSyntax, "unexpected"},
		{`MERGE INTO t USING s WHEN MATCHED THEN DELETE`, ErrSyntax, "ON"},
		{`MERGE INTO t USING s ON t.a = s.a`, ErrSyntax, "WHEN"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN INSERT VALUES (1)`, ErrInvalid, "WHEN NOT MATCHED"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN DELETE`, ErrInvalid, "INSERT"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN UPDATE SET a = 1, a = 2`, ErrInvalid, "twice"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN INSERT (a, b) VALUES (1)`, ErrInvalid, "2 columns"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE RETURNING *`, ErrSyntax, "unexpected"},
	} {
		if _, err := Parse(bad.q); !errors.Is(err, bad.want) || !strings.Contains(err.Error(), bad.text) {
			t.Errorf("%s: got %v, want %v mentioning %q", bad.q, err, bad.want, bad.text)
		}
	}
}

// TestSetListNestedLiterals: the expressions of an UPDATE's and a MERGE's
// SET list, and of a MERGE's VALUES, end at a comma outside every bracket
// DuckDB's grammar has (parentheses, lists, structs and maps), never at
// one inside a literal, a string or a quoted name.
func TestSetListNestedLiterals(t *testing.T) {
	exprs := []string{
		"[1, 2]",
		"{'a': 7, 'b': 'x'}",
		"MAP {'a': 1, 'b': 2}",
		"[{'a': [1, 2], 'b': MAP {'k': [3, 4]}}, NULL]",
		"{a: 1, b: 'when, then'}",
		"'], {, '' [' || \"odd, name\"",
		"[x + 1 FOR x IN [1, 2] IF x > 0]",
		"CASE WHEN l = [1, 2] THEN {'a': 1} ELSE {'a': 2} END",
		"ARRAY[1, 2][1:1]",
		"list_value(1, 2) -- a comment, with a comma\n",
	}
	// Each expression as the parser cuts it: up to its last token.
	want := make([]string, len(exprs))
	var set []string
	for i, e := range exprs {
		want[i] = strings.TrimSuffix(e, " -- a comment, with a comma\n")
		set = append(set, fmt.Sprintf("c%d = %s", i, e))
	}
	u := body[*Update](t, "UPDATE t SET "+strings.Join(set, ", ")+" WHERE l = [1, 2]")
	var got []string
	for _, c := range u.Set {
		got = append(got, c.Expr)
	}
	if !slices.Equal(got, want) || u.Where != "l = [1, 2]" {
		t.Fatalf("UPDATE SET %q WHERE %q", got, u.Where)
	}
	m := body[*Merge](t, "MERGE INTO t USING s ON t.l = [1, 2] WHEN MATCHED AND s.m = MAP {'a': 1, 'b': 2} THEN UPDATE SET "+
		strings.Join(set, ", ")+" WHEN NOT MATCHED THEN INSERT VALUES ("+strings.Join(exprs, ", ")+")")
	if len(m.Clauses) != 2 || m.Exprs[m.Clauses[0].Cond] != "s.m = MAP {'a': 1, 'b': 2}" {
		t.Fatalf("clauses %+v", m.Clauses)
	}
	for k, c := range m.Clauses {
		got = got[:0]
		for _, i := range c.Exprs {
			got = append(got, m.Exprs[i])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("clause %d: %q", k+1, got)
		}
	}
}
