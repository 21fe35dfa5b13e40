package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// adbcSessionConn is adbcConn with cookies kept, so the session (USE)
// lasts from one statement to the next.
func adbcSessionConn(t testing.TB, addr string) adbc.Connection {
	t.Helper()
	return adbcConn(t, addr, map[string]string{adbcflight.OptionCookieMiddleware: adbc.OptionValueEnabled})
}

func wantTable(t *testing.T, cnxn adbc.Connection, q string, cols string, rows ...string) {
	t.Helper()
	got := mustQuery(t, cnxn, q)
	var names []string
	for _, f := range got.schema.Fields() {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != cols {
		t.Errorf("%s: columns %s, want %s", q, strings.Join(names, ","), cols)
	}
	for i, r := range rows {
		rows[i] = strings.ReplaceAll(r, "|", " | ")
	}
	if strings.Join(got.rows, "\n") != strings.Join(rows, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", q, got.rows, rows)
	}
}

// TestShowDescribeInformationSchema: the statements that list catalogs,
// schemas, tables and columns, through the ADBC driver.
func TestShowDescribeInformationSchema(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE SCHEMA local.sales")
	execUpdate(t, cnxn, "CREATE TABLE local.sales.MyTable (id BIGINT NOT NULL, note VARCHAR, ts TIMESTAMP) PARTITIONED BY (bucket(4, id), day(ts)) ORDERED BY (id DESC NULLS FIRST) WITH ('write.target-file-size-bytes' = '1048576')")

	wantTable(t, cnxn, "SHOW CATALOGS", "Catalog", "local")
	wantTable(t, cnxn, "SHOW DATABASES", "database_name", "local")
	wantTable(t, cnxn, "SHOW SCHEMAS", "Schema", "default", "sales")
	wantTable(t, cnxn, "SHOW SCHEMAS FROM LOCAL LIKE 's%'", "Schema", "sales")
	wantTable(t, cnxn, "SHOW TABLES", "name", "customers", "events", "orders")
	wantTable(t, cnxn, "SHOW TABLES FROM sales", "name", "MyTable")
	wantTable(t, cnxn, "SHOW TABLES FROM local.\"default\" LIKE 'c%'", "name", "customers")
	wantTable(t, cnxn, "DESCRIBE orders", "column_name,column_type,null,key,default,extra",
		"id|BIGINT|NO|NULL|NULL|NULL", "customer_id|BIGINT|YES|NULL|NULL|NULL", "status|VARCHAR|YES|NULL|NULL|NULL",
		"amount|DECIMAL(12,2)|YES|NULL|NULL|NULL", "ordered_at|TIMESTAMP WITH TIME ZONE|YES|NULL|NULL|NULL", "ordered_on|DATE|YES|NULL|NULL|NULL")
	wantTable(t, cnxn, "DESC sales.mytable", "column_name,column_type,null,key,default,extra",
		"id|BIGINT|NO|NULL|NULL|NULL", "note|VARCHAR|YES|NULL|NULL|NULL", "ts|TIMESTAMP|YES|NULL|NULL|NULL")
	wantTable(t, cnxn, "DESCRIBE SELECT id, amount * 2 AS twice FROM orders", "column_name,column_type,null,key,default,extra",
		"id|BIGINT|YES|NULL|NULL|NULL", "twice|DECIMAL(18,2)|YES|NULL|NULL|NULL")
	wantTable(t, cnxn, "SHOW COLUMNS FROM customers LIKE 'n%'", "Column,Type,Extra,Comment", "name|VARCHAR||")

	// SHOW CREATE TABLE answers DDL icefloe accepts back: run it under a
	// new name and the copy shows the same.
	ddl := mustQuery(t, cnxn, "SHOW CREATE TABLE sales.MYTABLE")
	if len(ddl.rows) != 1 || ddl.schema.Field(0).Name != "Create Table" {
		t.Fatalf("SHOW CREATE TABLE: %v %v", ddl.schema, ddl.rows)
	}
	for _, part := range []string{`"id" BIGINT NOT NULL`, `PARTITIONED BY (bucket(4, "id"), day("ts"))`,
		`ORDERED BY ("id" DESC NULLS FIRST)`, `'write.target-file-size-bytes' = '1048576'`} {
		if !strings.Contains(ddl.rows[0], part) {
			t.Errorf("SHOW CREATE TABLE lacks %s:\n%s", part, ddl.rows[0])
		}
	}
	execUpdate(t, cnxn, strings.Replace(ddl.rows[0], `"MyTable"`, `"MyCopy"`, 1))
	again := mustQuery(t, cnxn, "SHOW CREATE TABLE sales.mycopy")
	if want := strings.Replace(ddl.rows[0], `"MyTable"`, `"MyCopy"`, 1); len(again.rows) != 1 || again.rows[0] != want {
		t.Errorf("the copy's DDL:\n%v\nwant\n%s", again.rows, want)
	}

	wantTable(t, cnxn, "SELECT table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema = 'sales' ORDER BY 2",
		"table_schema,table_name,table_type", "sales|MyCopy|BASE TABLE", "sales|MyTable|BASE TABLE")
	wantTable(t, cnxn, "SELECT catalog_name, schema_name FROM local.information_schema.schemata ORDER BY 2",
		"catalog_name,schema_name", "local|default", "local|sales")
	// information_schema joins like any table, and with icefloe's tables.
	wantTable(t, cnxn, `SELECT c.column_name, c.ordinal_position, c.data_type, c.is_nullable
		FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
		WHERE t.table_name = 'orders' AND c.ordinal_position <= 2 ORDER BY c.ordinal_position`,
		"column_name,ordinal_position,data_type,is_nullable", "id|1|BIGINT|NO", "customer_id|2|BIGINT|YES")
	wantTable(t, cnxn, `SELECT count(*) FROM orders o WHERE o.status IN (SELECT 'shipped' FROM information_schema.tables WHERE table_name = 'orders')`,
		"count_star()", mustQuery(t, cnxn, "SELECT count(*) FROM orders WHERE status = 'shipped'").rows[0])
	wantTable(t, cnxn, "SELECT current_catalog(), current_schema(), current_database() AS db", "current_catalog(),current_schema(),db",
		"local|default|local")

	// docs/sql.md's example, as written there.
	wantTable(t, cnxn, `SHOW TABLES FROM local."default" LIKE 'o%'`, "name", "orders")
	wantTable(t, cnxn, `SELECT table_name, count(*) AS columns
FROM information_schema.columns
WHERE table_schema = 'default'
GROUP BY table_name ORDER BY table_name`, "table_name,columns", "customers|5", "events|5", "orders|6")

	summ := mustQuery(t, cnxn, "SUMMARIZE orders")
	if len(summ.rows) != 6 || summ.schema.Field(0).Name != "column_name" || !strings.HasPrefix(summ.rows[0], "id | BIGINT | 1 | ") {
		t.Errorf("SUMMARIZE orders: %v %v", summ.schema, summ.rows)
	}
	// DuckDB's own catalog stays out of reach under every spelling.
	for _, q := range []string{"SELECT * FROM information_schema.views", "SELECT * FROM pg_catalog.pg_class", "SHOW ALL TABLES"} {
		if _, err := query(t, cnxn, q); err == nil {
			t.Errorf("%s: ran", q)
		}
	}
}

// TestCaseInsensitiveNames: unquoted names match whatever their case;
// quoted ones exactly; reserved words work qualified and quoted; USE sets
// the session.
func TestCaseInsensitiveNames(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcSessionConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE TABLE MyTable (Id BIGINT, Name VARCHAR)")
	execUpdate(t, cnxn, "INSERT INTO MyTable VALUES (1, 'a'), (2, 'b')")
	n := mustQuery(t, cnxn, "SELECT count(*) FROM orders").rows[0]
	for _, q := range []string{"SELECT count(*) FROM ORDERS", "SELECT count(*) FROM Local.Default.Orders",
		"SELECT count(*) FROM local.\"default\".orders", "SELECT count(*) FROM \"default\".orders",
		"SELECT count(*) FROM default.orders", "SELECT count(*) FROM (SELECT * FROM orders) AS o JOIN ORDERS p ON o.id = p.id"} {
		wantTable(t, cnxn, q, "count_star()", n)
	}
	wantTable(t, cnxn, "SELECT id, name FROM mytable ORDER BY ID", "Id,Name", "1|a", "2|b")
	wantTable(t, cnxn, `SELECT "Id" FROM "MyTable" WHERE id = 2`, "Id", "2")

	cl := flightClient(t, s.Addr())
	ctx := context.Background()
	execUpdate(t, cnxn, "CREATE TABLE mytable (x INT)")
	for _, c := range []struct {
		q    string
		code codes.Code
		text string
	}{
		{`SELECT * FROM "mytable2"`, codes.NotFound, "table mytable2 does not exist in schema local.default; did you mean mytable?"},
		{`SELECT * FROM "ORDERS"`, codes.NotFound, "table ORDERS does not exist in schema local.default; did you mean orders?"},
		{"SELECT * FROM MYTABLE", codes.InvalidArgument, `table name MYTABLE is ambiguous in schema local.default: it matches "MyTable" and "mytable"`},
		{"SELECT * FROM ordrs", codes.NotFound, "did you mean orders?"},
		{"SELECT * FROM nosuchschema.orders", codes.NotFound, "schema nosuchschema does not exist in catalog local"},
		{"SELECT * FROM defualt.orders", codes.NotFound, "schema defualt does not exist in catalog local; did you mean default?"},
		{"SELECT * FROM locl.default.orders", codes.NotFound, "catalog locl does not exist; did you mean local?"},
		{"SELECT nosuch FROM orders", codes.InvalidArgument, "nosuch"},
		{"SHOW COLUMNS FROM custmers", codes.NotFound, "did you mean customers?"},
		{"USE nosuch", codes.NotFound, "schema nosuch does not exist in catalog local"},
	} {
		_, err := cl.Execute(ctx, c.q)
		st, _ := status.FromError(err)
		if st.Code() != c.code || !strings.Contains(st.Message(), c.text) {
			t.Errorf("%s: got %v, want %s with %q", c.q, err, c.code, c.text)
		}
		for _, internal := range []string{"__icefloe", "planner:", "catalog:"} {
			if strings.Contains(st.Message(), internal) {
				t.Errorf("%s: message shows %q: %s", c.q, internal, st.Message())
			}
		}
	}

	// A statement failing on the data, on the workers: DuckDB's message,
	// without the rewritten fragment or the path it took (the driver
	// still prints it once per location it tried).
	for _, q := range []string{"SELECT CAST(status AS INTEGER) FROM orders",
		"SELECT CAST(status AS INTEGER), count(*) FROM orders GROUP BY 1"} {
		_, err := query(t, cnxn, q)
		if err == nil || !strings.Contains(err.Error(), "Could not convert string") {
			t.Fatalf("%s: %v", q, err)
		}
		for _, internal := range []string{"__icefloe", "LINE 1", "run fragment", "child fragment"} {
			if strings.Contains(err.Error(), internal) {
				t.Errorf("%s: message shows %q: %v", q, internal, err)
			}
		}
	}

	execUpdate(t, cnxn, "CREATE SCHEMA Sales")
	execUpdate(t, cnxn, "CREATE TABLE sales.t (v INT)")
	// USE through GetFlightInfo, as Python's driver sends every statement
	// (Go's ExecuteUpdate never reads the DoPut stream's header or trailer,
	// so no cookie it is sent reaches its jar).
	mustQuery(t, cnxn, "USE local.SALES")
	wantTable(t, cnxn, "SELECT current_catalog(), current_schema()", "current_catalog(),current_schema()", "local|Sales")
	wantTable(t, cnxn, "SHOW TABLES", "name", "t")
	execUpdate(t, cnxn, "INSERT INTO t VALUES (7)")
	wantTable(t, cnxn, "SELECT v FROM t", "v", "7")
	mustQuery(t, cnxn, `USE "default"`)
	wantTable(t, cnxn, "SELECT current_schema()", "current_schema()", "default")
}
