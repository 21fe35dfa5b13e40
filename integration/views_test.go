package integration

import (
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestViews, through the ADBC driver: CREATE [OR REPLACE] VIEW stores an
// Iceberg view in the local (SQL) catalog; a query over it answers what
// the view's query answers, joined, nested in another schema's view and
// under an outer CTE of the same name as a table it reads; SHOW TABLES and
// information_schema list it as a VIEW; DROP VIEW removes it; errors have
// their codes.
func TestViews(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	count := func(q string) string {
		t.Helper()
		return strings.Join(mustQuery(t, cnxn, q).rows, "\n")
	}
	execUpdate(t, cnxn, "CREATE VIEW big_orders AS SELECT id, customer_id, amount FROM orders WHERE amount > 100")
	for view, direct := range map[string]string{
		"SELECT count(*), sum(amount) FROM big_orders":                               "SELECT count(*), sum(amount) FROM orders WHERE amount > 100",
		"SELECT count(*) FROM big_orders b JOIN customers c ON b.customer_id = c.id": "SELECT count(*) FROM orders o JOIN customers c ON o.customer_id = c.id WHERE o.amount > 100",
		"SELECT big_orders.id FROM big_orders ORDER BY id DESC LIMIT 3":              "SELECT id FROM orders WHERE amount > 100 ORDER BY id DESC LIMIT 3",
		"WITH orders AS (SELECT 1 AS id) SELECT count(*) FROM big_orders":            "SELECT count(*) FROM orders WHERE amount > 100",
		"SELECT count(*) FROM local.\"default\".big_orders WHERE customer_id < 10":   "SELECT count(*) FROM orders WHERE amount > 100 AND customer_id < 10",
	} {
		if got, want := count(view), count(direct); got != want {
			t.Errorf("%s: %s, want %s (%s)", view, got, want, direct)
		}
	}
	execUpdate(t, cnxn, "CREATE SCHEMA local.rep")
	execUpdate(t, cnxn, "CREATE VIEW rep.totals AS SELECT count(*) AS n FROM \"default\".big_orders")
	if got, want := count("SELECT n FROM rep.totals"), count("SELECT count(*) FROM orders WHERE amount > 100"); got != want {
		t.Errorf("view over a view: %s, want %s", got, want)
	}
	// Unqualified names in a view resolve in the view's schema.
	_, err := query(t, cnxn, "CREATE VIEW rep.bad AS SELECT * FROM orders")
	wantStatus(t, err, adbc.StatusNotFound)

	wantTable(t, cnxn, "SHOW TABLES", "name", "big_orders", "customers", "events", "orders")
	wantTable(t, cnxn, "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'rep'", "table_name,table_type", "totals|VIEW")

	_, err = query(t, cnxn, "CREATE VIEW big_orders AS SELECT 1 AS x")
	wantStatus(t, err, adbc.StatusAlreadyExists)
	_, err = query(t, cnxn, "CREATE VIEW orders AS SELECT 1 AS x")
	wantStatus(t, err, adbc.StatusAlreadyExists)
	execUpdate(t, cnxn, "CREATE VIEW IF NOT EXISTS big_orders AS SELECT 1 AS x")
	execUpdate(t, cnxn, "CREATE OR REPLACE VIEW big_orders AS SELECT id, customer_id, amount FROM orders WHERE amount > 200")
	if got, want := count("SELECT count(*) FROM big_orders"), count("SELECT count(*) FROM orders WHERE amount > 200"); got != want {
		t.Errorf("replaced view: %s, want %s", got, want)
	}
	_, err = query(t, cnxn, "CREATE VIEW leak AS SELECT * FROM read_csv('/etc/passwd')")
	wantStatus(t, err, adbc.StatusUnauthorized)

	execUpdate(t, cnxn, "DROP VIEW rep.totals")
	execUpdate(t, cnxn, "DROP VIEW big_orders")
	_, err = query(t, cnxn, "SELECT * FROM big_orders")
	wantStatus(t, err, adbc.StatusNotFound)
	_, err = query(t, cnxn, "DROP VIEW big_orders")
	wantStatus(t, err, adbc.StatusNotFound)
	execUpdate(t, cnxn, "DROP VIEW IF EXISTS big_orders")
}
