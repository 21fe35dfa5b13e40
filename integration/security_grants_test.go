package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/icefloe/icefloe/internal/audit"
)

// denied runs q as a query (Python ADBC sends every statement that way)
// and wants PermissionDenied naming the privilege and the object.
func denied(t *testing.T, cnxn adbc.Connection, q, priv, object string) {
	t.Helper()
	stmt := newStatement(t, cnxn, q)
	defer stmt.Close()
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err == nil {
		rdr.Release()
	}
	wantADBC(t, q, err, adbc.StatusUnauthorized, "permission denied", priv, object)
}

// allowed runs q as a query and wants no error.
func allowed(t *testing.T, cnxn adbc.Connection, q string) {
	t.Helper()
	stmt := newStatement(t, cnxn, q)
	defer stmt.Close()
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	for rdr.Next() {
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	rdr.Release()
}

func TestSecurityGrants(t *testing.T) {
	e := startSecure(t)
	root := e.login(t, "root")
	for _, q := range []string{
		"CREATE SCHEMA sales",
		"CREATE SCHEMA sandbox",
		"CREATE TABLE sales.orders AS SELECT id, customer_id, status, amount FROM orders LIMIT 2000",
		"CREATE TABLE sales.refunds (id BIGINT, amount DOUBLE)",
		"INSERT INTO sales.refunds VALUES (1, 2.5)",
	} {
		execUpdate(t, root, q)
	}
	snap := mustQuery(t, root, "SELECT snapshot_id FROM sales.orders$snapshots").rows[0]
	demoSnap := mustQuery(t, root, "SELECT snapshot_id FROM orders$snapshots LIMIT 1").rows[0]
	alice := e.login(t, "alice")
	g := &grantsEnv{e: e, root: root, alice: alice, snap: snap, demoSnap: demoSnap, own: "local.sales.orders", other: "local.default.orders"}

	t.Run("query shapes", func(t *testing.T) { grantsQueryShapes(t, g) })

	t.Run("statement kinds", func(t *testing.T) { grantsStatementKinds(t, g) })

	t.Run("ingest", func(t *testing.T) { grantsIngest(t, g) })

	t.Run("browsing", func(t *testing.T) { grantsBrowsing(t, g) })

	t.Run("audit log", func(t *testing.T) { grantsAuditLog(t, g) })

	// A Spark branch name is checked against the table it names: alice
	// writes the branch of the table she may insert into, not another's.
	t.Run("branches", func(t *testing.T) { grantsBranches(t, g) })

	// Views run with the reader's grants (invoker's rights): a view of a
	// table alice may not read lends her nothing, a view of her own
	// tables reads; creating one needs CREATE and plans as its creator.
	t.Run("views", func(t *testing.T) { grantsViews(t, g) })
}

// grantsEnv is what TestSecurityGrants's parts share: the cluster, root's
// and alice's connections, two snapshot ids, the table alice owns and one
// she may not read.
type grantsEnv struct {
	e              *secureEnv
	root, alice    adbc.Connection
	snap, demoSnap string
	own, other     string
}

// grantsQueryShapes is the query shapes part of TestSecurityGrants.
func grantsQueryShapes(t *testing.T, g *grantsEnv) {
	alice, snap, demoSnap, other := g.alice, g.snap, g.demoSnap, g.other
	for _, q := range []string{
		"SELECT count(*) FROM sales.orders",
		"SELECT a.id FROM sales.orders a JOIN sales.orders b ON a.id = b.id",
		"SELECT id FROM sales.orders UNION ALL SELECT id FROM sales.orders",
		"SELECT id FROM sales.orders WHERE id IN (SELECT id FROM sales.refunds)",
		"WITH o AS (SELECT * FROM sales.orders) SELECT count(*) FROM o",
		"SELECT count(*) FROM sales.\"orders$snapshots\"",
		"SELECT count(*) FROM sales.orders AT (VERSION => " + snap + ")",
		"SELECT status, count(*) FROM sales.orders GROUP BY status ORDER BY 2 DESC LIMIT 3",
		"EXPLAIN SELECT * FROM sales.orders",
		"EXPLAIN ANALYZE SELECT status, count(*) FROM sales.orders GROUP BY status",
		"EXPLAIN INSERT INTO sales.refunds VALUES (3, 1.0)",
		// A CTE named like a table alice may not read is the CTE.
		"WITH orders AS (SELECT * FROM sales.orders) SELECT count(*) FROM orders",
		"SELECT count(*) FROM sales.orders o WHERE EXISTS (SELECT 1 FROM sales.refunds r WHERE r.id = o.id)",
		"SELECT count(*) FROM SALES.Orders",
	} {
		allowed(t, alice, q)
	}
	for _, q := range []string{
		"SELECT count(*) FROM orders",
		"SELECT * FROM local.default.orders",
		"SELECT id FROM sales.orders UNION ALL SELECT id FROM local.default.orders",
		"SELECT a.id FROM sales.orders a JOIN local.default.orders b ON a.id = b.id",
		"SELECT id FROM sales.orders WHERE id IN (SELECT id FROM local.default.orders)",
		"SELECT (SELECT max(id) FROM local.default.orders) AS m",
		"WITH o AS (SELECT * FROM local.default.orders) SELECT count(*) FROM o",
		"WITH sales AS (SELECT 1) SELECT * FROM local.default.orders",
		"SELECT count(*) FROM local.default.\"orders$snapshots\"",
		"SELECT count(*) FROM local.default.orders AT (VERSION => " + demoSnap + ")",
		"EXPLAIN SELECT * FROM local.default.orders",
		"EXPLAIN ANALYZE SELECT count(*) FROM local.default.orders",
		"EXPLAIN INSERT INTO sales.refunds SELECT id, amount FROM local.default.orders",
		// A CTE's name is seen only in its own scope.
		"SELECT * FROM (WITH o AS (SELECT * FROM sales.orders) SELECT * FROM o) s, orders",
		"SELECT count(*) FROM sales.orders o WHERE EXISTS (SELECT 1 FROM local.default.orders d WHERE d.id = o.id)",
		"SELECT * FROM sales.orders s JOIN LATERAL (SELECT * FROM local.default.orders d WHERE d.id = s.id) x ON true",
	} {
		denied(t, alice, q, "SELECT", other)
	}
	// Preparing is checked as well (DBeaver prepares everything).
	stmt := newStatement(t, alice, "SELECT * FROM local.default.orders")
	defer stmt.Close()
	err := stmt.Prepare(context.Background())
	wantADBC(t, "prepare", err, adbc.StatusUnauthorized, "SELECT", other)
}

// grantsStatementKinds is the statement kinds part of TestSecurityGrants.
func grantsStatementKinds(t *testing.T, g *grantsEnv) {
	root, alice, own, other := g.root, g.alice, g.own, g.other
	allowed(t, alice, "INSERT INTO sales.refunds VALUES (2, 1.5)")
	allowed(t, alice, "INSERT INTO sales.refunds SELECT id, amount FROM sales.orders LIMIT 10")
	allowed(t, alice, "CREATE TABLE sandbox.copy AS SELECT * FROM sales.orders WHERE id < 100")
	allowed(t, alice, "ALTER TABLE sandbox.copy ADD COLUMN note VARCHAR")
	allowed(t, alice, "DELETE FROM sandbox.copy WHERE id < 10")
	allowed(t, alice, "UPDATE sandbox.copy SET note = 'x' WHERE id < 20")
	allowed(t, alice, "ALTER TABLE sandbox.copy RENAME TO copy2")
	allowed(t, alice, "DROP TABLE sandbox.copy2")
	for _, c := range []struct{ q, priv, object string }{
		{"INSERT INTO sales.orders VALUES (1, 1, 'x', 1.0)", "INSERT", own},
		{"INSERT INTO sales.orders SELECT * FROM sales.orders", "INSERT", own},
		{"INSERT INTO sales.refunds SELECT id, amount FROM local.default.orders", "SELECT", other},
		{"CREATE TABLE sandbox.leak AS SELECT * FROM local.default.orders", "SELECT", other},
		{"CREATE TABLE sales.mine AS SELECT * FROM sales.orders", "CREATE", "local.sales.mine"},
		{"CREATE TABLE sales.mine (a INT)", "CREATE", "local.sales.mine"},
		{"DELETE FROM sales.refunds WHERE id = 1", "DELETE", "local.sales.refunds"},
		{"UPDATE sales.refunds SET amount = 0", "UPDATE", "local.sales.refunds"},
		{"ALTER TABLE sales.refunds ADD COLUMN x INT", "ALTER", "local.sales.refunds"},
		{"ALTER TABLE sales.refunds RENAME TO x", "ALTER", "local.sales.refunds"},
		// INSERT is not enough for the table's refs, identifier
		// fields or maintenance.
		{"ALTER TABLE sales.refunds CREATE BRANCH b2", "ALTER", "local.sales.refunds"},
		{"ALTER TABLE sales.refunds CREATE TAG t2", "ALTER", "local.sales.refunds"},
		{"ALTER TABLE sales.refunds SET IDENTIFIER FIELDS id", "ALTER", "local.sales.refunds"},
		{"ALTER TABLE sales.refunds EXECUTE optimize", "ALTER", "local.sales.refunds"},
		{"CALL system.expire_snapshots(table => 'sales.refunds')", "ALTER", "local.sales.refunds"},
		{"CALL system.rollback_to_snapshot('sales.refunds', 1)", "ALTER", "local.sales.refunds"},
		{"DROP TABLE sales.refunds", "DROP", "local.sales.refunds"},
		{"DROP TABLE local.default.orders", "DROP", other},
		{"CREATE SCHEMA elsewhere", "CREATE", "local.elsewhere"},
		{"DROP SCHEMA sales CASCADE", "DROP", "local.sales"},
	} {
		denied(t, alice, c.q, c.priv, c.object)
	}
	// The denied statements changed nothing.
	if got := mustQuery(t, root, "SELECT count(*) FROM sales.refunds").rows[0]; got != "12" {
		t.Fatalf("sales.refunds holds %s rows, want 12", got)
	}
}

// grantsIngest is the ingest part of TestSecurityGrants.
func grantsIngest(t *testing.T, g *grantsEnv) {
	alice, own := g.alice, g.own
	ing := func(table, mode string) error {
		_, err := ingest(t, alice, table, mode, ingestRows(t, 0, 1, 10), adbc.OptionValueIngestTargetDBSchema, "sales")
		return err
	}
	wantADBC(t, "append into a table without INSERT", ing("orders", adbc.OptionValueIngestModeAppend), adbc.StatusUnauthorized, "INSERT", own)
	wantADBC(t, "create without CREATE", ing("fresh", adbc.OptionValueIngestModeCreate), adbc.StatusUnauthorized, "CREATE", "local.sales.fresh")
	wantADBC(t, "replace without DELETE", ing("refunds", adbc.OptionValueIngestModeReplace), adbc.StatusUnauthorized, "DELETE", "local.sales.refunds")
	_, err := ingest(t, alice, "loaded", adbc.OptionValueIngestModeCreate, ingestRows(t, 0, 2, 10), adbc.OptionValueIngestTargetDBSchema, "sandbox")
	if err != nil {
		t.Fatalf("ingest into sandbox: %v", err)
	}
	if got := mustQuery(t, alice, "SELECT count(*) FROM sandbox.loaded").rows[0]; got != "20" {
		t.Fatalf("sandbox.loaded holds %s rows", got)
	}
}

// grantsBrowsing is the browsing part of TestSecurityGrants.
func grantsBrowsing(t *testing.T, g *grantsEnv) {
	e, alice := g.e, g.alice
	cl := e.flightSQL(t, "alice")
	schemas := metaColumn(t, cl, func(ctx context.Context) (*flight.FlightInfo, error) {
		return cl.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{})
	}, 1)
	if !slices.Equal(schemas, []string{"sales", "sandbox"}) {
		t.Fatalf("alice sees schemas %v, want sales and sandbox", schemas)
	}
	tables := metaColumn(t, cl, func(ctx context.Context) (*flight.FlightInfo, error) {
		return cl.GetTables(ctx, &flightsql.GetTablesOpts{})
	}, 2)
	// sales.orders and sales.refunds, sandbox.loaded: never a demo table
	// of the default schema (whose orders would be a second "orders").
	slices.Sort(tables)
	if !slices.Equal(tables, []string{"loaded", "orders", "refunds"}) {
		t.Fatalf("alice sees tables %v", tables)
	}
	// The same through SQL: SHOW and information_schema list only
	// what alice may see, and suggest nothing else.
	if got := mustQuery(t, alice, "SELECT table_name FROM information_schema.tables ORDER BY 1").rows; !slices.Equal(got, tables) {
		t.Fatalf("information_schema.tables for alice: %v, want %v", got, tables)
	}
	if got := mustQuery(t, alice, "SELECT DISTINCT table_schema FROM information_schema.columns ORDER BY 1").rows; !slices.Equal(got, schemas) {
		t.Fatalf("information_schema.columns for alice: schemas %v", got)
	}
	if got := mustQuery(t, alice, "SHOW SCHEMAS").rows; !slices.Equal(got, schemas) {
		t.Fatalf("SHOW SCHEMAS for alice: %v", got)
	}
	if got := mustQuery(t, alice, "SHOW TABLES FROM Sales").rows; !slices.Equal(got, []string{"orders", "refunds"}) {
		t.Fatalf("SHOW TABLES FROM sales for alice: %v", got)
	}
	if _, err := query(t, alice, "SHOW TABLES FROM \"default\""); err == nil || !strings.Contains(err.Error(), "schema default does not exist in catalog local") {
		t.Fatalf("SHOW TABLES of a schema alice cannot see: %v", err)
	}
	if _, err := query(t, alice, "SELECT * FROM sales.order"); err == nil || !strings.Contains(err.Error(), "did you mean orders?") {
		t.Fatalf("a near miss in alice's schema: %v", err)
	}
	cats := metaColumn(t, cl, func(ctx context.Context) (*flight.FlightInfo, error) { return cl.GetCatalogs(ctx) }, 0)
	if !slices.Equal(cats, []string{"local"}) {
		t.Fatalf("catalogs %v", cats)
	}
	rootSchemas := metaColumn(t, e.flightSQL(t, "root"), func(ctx context.Context) (*flight.FlightInfo, error) {
		return e.flightSQL(t, "root").GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{})
	}, 1)
	if !slices.Contains(rootSchemas, "default") {
		t.Fatalf("the admin sees schemas %v", rootSchemas)
	}
}

// grantsAuditLog is the audit log part of TestSecurityGrants.
func grantsAuditLog(t *testing.T, g *grantsEnv) {
	e, own := g.e, g.own
	if _, err := e.open(t, map[string]string{adbc.OptionKeyUsername: "alice", adbc.OptionKeyPassword: "guess-1"}); err == nil {
		t.Fatal("a wrong password logged in")
	}
	lines := auditLines(t, e.audit)
	for what, ok := range auditSightings(lines, own) {
		if !ok {
			t.Errorf("the audit log has no line for %s (%d lines)", what, len(lines))
		}
	}
	raw, _ := os.ReadFile(e.audit)
	for _, pw := range []string{"guess-1", "alice-pw", "bob-pw", "root-pw"} {
		if strings.Contains(string(raw), pw) {
			t.Errorf("the audit log holds the password %q", pw)
		}
	}
}

// grantsBranches is the branches part of TestSecurityGrants.
func grantsBranches(t *testing.T, g *grantsEnv) {
	root, alice, own := g.root, g.alice, g.own
	execUpdate(t, root, "ALTER TABLE sales.refunds CREATE BRANCH dev")
	execUpdate(t, root, "ALTER TABLE sales.orders CREATE BRANCH dev")
	allowed(t, alice, "INSERT INTO sales.refunds.branch_dev VALUES (-9, 9.5)")
	denied(t, alice, "INSERT INTO sales.orders.branch_dev VALUES (1, 1, 'x', 1.0)", "INSERT", own)
	if got := mustQuery(t, root, "SELECT count(*) FROM sales.refunds.branch_dev WHERE id = -9").rows[0]; got != "1" {
		t.Fatalf("branch dev of sales.refunds holds %s rows with id -9, want 1", got)
	}
	if got := mustQuery(t, root, "SELECT count(*) FROM sales.refunds WHERE id = -9").rows[0]; got != "0" {
		t.Fatalf("main of sales.refunds holds %s rows with id -9, want 0", got)
	}
}

// grantsViews is the views part of TestSecurityGrants.
func grantsViews(t *testing.T, g *grantsEnv) {
	root, alice, other := g.root, g.alice, g.other
	execUpdate(t, root, `CREATE VIEW sales.leaky AS SELECT * FROM "default".orders`)
	execUpdate(t, root, "CREATE VIEW sales.counts AS SELECT status, count(*) AS n FROM orders GROUP BY status")
	denied(t, alice, "SELECT count(*) FROM sales.leaky", "SELECT", other)
	allowed(t, alice, "SELECT * FROM sales.counts")
	denied(t, alice, `CREATE VIEW sandbox.mine AS SELECT * FROM "default".orders`, "SELECT", other)
	denied(t, alice, "CREATE VIEW sales.mine AS SELECT 1 AS x", "CREATE", "local.sales.mine")
	denied(t, alice, "DROP VIEW sales.counts", "DROP", "local.sales.counts")
	allowed(t, alice, "CREATE VIEW sandbox.mine AS SELECT id FROM sales.orders")
	if got := mustQuery(t, alice, "SELECT count(*) FROM sandbox.mine").rows[0]; got != "2000" {
		t.Fatalf("sandbox.mine holds %s rows, want 2000", got)
	}
}

// metaColumn runs a metadata command and returns column col of its rows.
func metaColumn(t *testing.T, cl *flightsql.Client, cmd func(context.Context) (*flight.FlightInfo, error), col int) []string {
	t.Helper()
	ctx := context.Background()
	info, err := cmd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		c := rdr.RecordBatch().Column(col).(*array.String)
		for i := 0; i < c.Len(); i++ {
			out = append(out, c.Value(i))
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// auditSightings tells which of the lines TestSecurityGrants expects the
// audit log holds: alice's read with its snapshot, her denial, her write
// with rows, bytes and the new snapshot, her failed login and a worker's
// fetch of hers.
func auditSightings(lines []audit.Entry, own string) map[string]bool {
	var sawRead, sawDenied, sawWrite, sawFailedLogin, sawFetch bool
	for _, l := range lines {
		switch {
		case l.Event == audit.EventStatement && l.Principal == "alice" && l.Outcome == audit.OutcomeOK && l.SQL == "SELECT count(*) FROM sales.orders":
			sawRead = len(l.Read) == 1 && l.Read[0].Table == own && l.Read[0].Snapshot != 0 && l.Client != "" && l.QueryID != ""
		case l.Event == audit.EventStatement && l.Principal == "alice" && l.Code == "PermissionDenied" && strings.Contains(l.SQL, "default.orders"):
			sawDenied = true
		case l.Event == audit.EventStatement && l.Principal == "alice" && l.Kind == "update" && strings.HasPrefix(l.SQL, "INSERT INTO sales.refunds SELECT"):
			sawWrite = len(l.Written) == 1 && l.Written[0].Snapshot != 0 && l.Rows > 0 && l.Bytes > 0 && len(l.Read) == 1
		case l.Event == audit.EventLogin && l.Principal == "alice" && l.Code == "Unauthenticated":
			sawFailedLogin = true
		case l.Event == audit.EventFetch && l.Principal == "alice" && l.Rows > 0 && l.Bytes > 0 && strings.HasPrefix(l.Node, "worker "):
			sawFetch = true
		}
	}
	return map[string]bool{"a read with its snapshot": sawRead, "a denial": sawDenied, "a write with rows, bytes and the new snapshot": sawWrite, "a failed login": sawFailedLogin, "a worker's fetch": sawFetch}
}

func auditLines(t *testing.T, path string) []audit.Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e audit.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}
