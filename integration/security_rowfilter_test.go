package integration

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/crypto/bcrypt"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
)

// rowRoles: eu_reader reads hr.people only in its user's region, with
// ssn masked, and may write it (which the filter refuses); own_row
// reads only the row of its own name; both read hr.ssns whole, the view
// hr.people_v and everything in sandbox.
var rowRoles = []authz.Role{
	{Name: "eu_reader", Grants: []authz.Grant{
		{Privileges: []authz.Privilege{authz.Select}, On: "local.hr.people",
			Where: "region = current_user_attribute('region')",
			Masks: []authz.Mask{{Column: "ssn", Expr: "'***-**-' || right(ssn, 4)"}}},
		{Privileges: []authz.Privilege{authz.Insert, authz.Update, authz.Delete}, On: "local.hr.people"},
		{Privileges: []authz.Privilege{authz.Select}, On: "local.hr.ssns"},
		{Privileges: []authz.Privilege{authz.Select}, On: "local.hr.people_v"},
		{Privileges: []authz.Privilege{authz.All}, On: "local.sandbox"},
		{Privileges: []authz.Privilege{authz.Select}, On: "local.default.ledger", Where: "id < 2"},
		{Privileges: []authz.Privilege{authz.Insert, authz.Delete}, On: "local.default.ledger"},
	}},
	{Name: "own_row", Grants: []authz.Grant{
		{Privileges: []authz.Privilege{authz.Select}, On: "local.hr.people", Where: "name = current_user"},
	}},
}

// startRowSecurity is startSecure with rowRoles: alice (eu_reader,
// region EU), bob (own_row), root (admin), and external JWTs whose
// region claim is an attribute.
func startRowSecurity(t *testing.T) *secureEnv {
	t.Helper()
	var a *auth.Authenticator
	e := startSecure(t, func(so *cluster.StandaloneOptions) {
		users := []auth.User{
			{Name: "root", Roles: []string{authz.AdminRole}},
			{Name: "alice", Roles: []string{"eu_reader"}, Attributes: map[string]string{"region": "EU"}},
			{Name: "bob", Roles: []string{"own_row"}},
		}
		for i := range users {
			h, err := bcrypt.GenerateFromPassword([]byte(securePasswords[users[i].Name]), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			users[i].PasswordHash = string(h)
		}
		var err error
		a, err = auth.New(auth.Options{Key: so.Key, Users: users, JWKS: &auth.JWKSOptions{
			File: filepath.Join(so.DataDir, "jwks.json"), Issuer: idpIssuer, Audience: idpAudience, AttributeClaims: []string{"region"}}})
		if err != nil {
			t.Fatal(err)
		}
		if so.Security.Policy, err = authz.NewPolicy(rowRoles); err != nil {
			t.Fatal(err)
		}
		so.Security.Auth = a
		so.REST = cluster.RESTOptions{Listen: "127.0.0.1:0"}
	})
	e.auth = a
	return e
}

// preparedInt64 prepares q, binds v to its one parameter and returns
// the rows it answers.
func preparedInt64(t *testing.T, cnxn adbc.Connection, q string, v int64) []string {
	t.Helper()
	ctx := context.Background()
	stmt := newStatement(t, cnxn, q)
	defer stmt.Close()
	if err := stmt.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(v)
	col := b.NewArray()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
	col.Release()
	b.Release()
	defer rec.Release()
	if err := stmt.Bind(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rows = append(rows, rowsOf(rdr.RecordBatch())...)
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// refused runs q and wants PermissionDenied whose message holds words.
func refused(t *testing.T, cnxn adbc.Connection, q string, words ...string) {
	t.Helper()
	_, err := query(t, cnxn, q)
	wantADBC(t, q, err, adbc.StatusUnauthorized, append([]string{"permission denied"}, words...)...)
}

// hidden are values of the rows alice may not see, and the unmasked
// social security numbers of hers: no answer or error may carry them.
var hidden = []string{"cat", "dan", "eve", "333-33", "444-44", "555-55", "111-11", "222-22"}

func noHidden(t *testing.T, what, text string) {
	t.Helper()
	for _, h := range hidden {
		if strings.Contains(text, h) {
			t.Errorf("%s reveals %q: %s", what, h, text)
		}
	}
}

func TestSecurityRowFilters(t *testing.T) {
	e := startRowSecurity(t)
	root := e.login(t, "root")
	for _, q := range []string{
		"CREATE SCHEMA hr",
		"CREATE SCHEMA sandbox",
		`CREATE TABLE hr.people AS SELECT * FROM (VALUES
			(1, 'EU', 'ana', '111-11-1111', 100),
			(2, 'EU', 'bob', '222-22-2222', 200),
			(3, 'US', 'cat', '333-33-3333', 300)) AS t(id, region, name, ssn, salary)`,
		"CREATE TABLE hr.ssns AS SELECT * FROM (VALUES ('111-11-1111'), ('***-**-2222'), ('333-33-3333')) AS t(ssn)",
	} {
		execUpdate(t, root, q)
	}
	first := mustQuery(t, root, "SELECT snapshot_id FROM hr.\"people$snapshots\" ORDER BY committed_at LIMIT 1").rows[0]
	for _, q := range []string{
		"INSERT INTO hr.people VALUES (4, 'US', 'dan', '444-44-4444', 400), (5, 'APAC', 'eve', '555-55-5555', 500), (6, 'EU', 'fay', '666-66-6666', 600)",
		"CREATE VIEW hr.people_v AS SELECT id, name, ssn, salary FROM hr.people",
	} {
		execUpdate(t, root, q)
	}
	alice := e.login(t, "alice")
	bob := e.login(t, "bob")

	t.Run("rows and masks", func(t *testing.T) {
		wantRows(t, alice, "SELECT * FROM hr.people",
			"1 | EU | ana | ***-**-1111 | 100", "2 | EU | bob | ***-**-2222 | 200", "6 | EU | fay | ***-**-6666 | 600")
		wantRows(t, alice, "SELECT id, ssn FROM hr.people WHERE id < 3", "1 | ***-**-1111", "2 | ***-**-2222")
		wantRows(t, bob, "SELECT id, name, ssn FROM hr.people", "2 | bob | 222-22-2222")
		// The administrator reads everything.
		wantRows(t, root, "SELECT count(*), sum(salary) FROM hr.people", "6 | 2100")
	})

	t.Run("aggregates count only visible rows", func(t *testing.T) {
		wantRows(t, alice, "SELECT count(*), sum(salary), min(id), max(id) FROM hr.people", "3 | 900 | 1 | 6")
		wantRows(t, alice, "SELECT region, count(*) FROM hr.people GROUP BY region", "EU | 3")
		wantRows(t, alice, "SELECT count(DISTINCT region), median(salary) FROM hr.people", "1 | 200")
		wantRows(t, alice, "SELECT count(*) FROM hr.people WHERE region = 'US'", "0")
		wantRows(t, alice, "SELECT id FROM hr.people ORDER BY salary DESC LIMIT 1", "6")
		wantRows(t, bob, "SELECT count(*) FROM hr.people", "1")
	})

	t.Run("joins and predicates see masked values", func(t *testing.T) {
		// hr.ssns holds one raw and one masked number of alice's rows:
		// only the masked one joins.
		wantRows(t, alice, "SELECT p.id FROM hr.people p JOIN hr.ssns s ON p.ssn = s.ssn", "2")
		wantRows(t, alice, "SELECT count(*) FROM hr.people WHERE ssn = '111-11-1111'", "0")
		wantRows(t, alice, "SELECT count(*) FROM hr.people WHERE ssn LIKE '111%'", "0")
		wantRows(t, alice, "SELECT count(*) FROM hr.people WHERE ssn = '***-**-1111'", "1")
		wantRows(t, alice, "SELECT count(*) FROM hr.people a JOIN hr.people b ON a.id = b.id", "3")
		wantRows(t, alice, "SELECT id FROM hr.people WHERE id IN (SELECT id FROM hr.people WHERE salary > 150)", "2", "6")
		wantRows(t, alice, "WITH p AS (SELECT * FROM hr.people) SELECT count(*) FROM p", "3")
		wantRows(t, alice, "SELECT count(*) FROM hr.people UNION ALL SELECT count(*) FROM hr.people", "3", "3")
	})

	t.Run("time travel", func(t *testing.T) {
		wantRows(t, alice, "SELECT id, ssn FROM hr.people AT (VERSION => "+first+")", "1 | ***-**-1111", "2 | ***-**-2222")
		wantRows(t, alice, "SELECT count(*) FROM hr.people FOR VERSION AS OF "+first, "2")
		wantRows(t, root, "SELECT count(*) FROM hr.people FOR VERSION AS OF "+first, "3")
		// A branch (Spark's spelling) is the same table.
		execUpdate(t, root, "ALTER TABLE hr.people CREATE BRANCH audit")
		wantRows(t, alice, "SELECT count(*), sum(salary) FROM hr.people.branch_audit", "3 | 900")
		wantRows(t, alice, "SELECT count(*) FROM hr.people AT (VERSION => 'audit')", "3")
	})

	t.Run("views read with the reader's filter", func(t *testing.T) {
		wantRows(t, alice, "SELECT id, ssn FROM hr.people_v", "1 | ***-**-1111", "2 | ***-**-2222", "6 | ***-**-6666")
		wantRows(t, root, "SELECT count(*) FROM hr.people_v", "6")
	})

	t.Run("prepared statements", func(t *testing.T) {
		rows := preparedInt64(t, alice, "SELECT count(*), sum(salary) FROM hr.people WHERE salary > ?", 150)
		if !slices.Equal(rows, []string{"2 | 800"}) {
			t.Errorf("prepared: %v, want [2 | 800]", rows)
		}
	})

	t.Run("metadata tables and EXPLAIN are refused", func(t *testing.T) {
		for _, meta := range []string{"files", "snapshots", "partitions", "manifests", "history"} {
			refused(t, alice, "SELECT * FROM hr.\"people$"+meta+"\"", "local.hr.people", "row filter", "$"+meta)
		}
		refused(t, alice, "EXPLAIN SELECT count(*) FROM hr.people", "EXPLAIN", "local.hr.people")
		refused(t, alice, "EXPLAIN ANALYZE SELECT count(*) FROM hr.people", "EXPLAIN")
		// EXPLAIN of a write from it shows no plan of the read.
		res, err := query(t, alice, "EXPLAIN INSERT INTO sandbox.x SELECT * FROM hr.people")
		if err == nil {
			noHidden(t, "EXPLAIN INSERT", strings.Join(res.rows, "\n"))
			for _, r := range res.rows {
				if strings.Contains(r, "bytes") || strings.Contains(r, "rows") {
					t.Errorf("EXPLAIN of a write over a filtered table prints %q", r)
				}
			}
		}
		// Unrestricted tables still explain.
		allowed(t, alice, "EXPLAIN SELECT count(*) FROM hr.ssns")
	})

	t.Run("errors quote no hidden value", func(t *testing.T) {
		for _, q := range []string{
			"SELECT CAST(name AS INTEGER) FROM hr.people",
			"SELECT count(*) FROM hr.people WHERE CAST(name AS INTEGER) = 1",
			"SELECT count(*) FROM hr.people WHERE CAST(ssn AS INTEGER) = 1",
			"SELECT CAST(ssn AS INTEGER) FROM hr.people",
			"SELECT * FROM hr.people p JOIN hr.ssns s ON CAST(p.name AS INTEGER) = 1",
		} {
			_, err := query(t, alice, q)
			if err == nil {
				t.Errorf("%s: no error", q)
				continue
			}
			noHidden(t, q, err.Error())
		}
	})

	t.Run("no oracle through errors", func(t *testing.T) {
		// A predicate that fails on a hidden row would tell of it, were
		// it evaluated before the filter.
		for _, q := range []string{
			"SELECT count(*) FROM hr.people WHERE CASE WHEN name = 'cat' THEN error('cat is there') ELSE true END",
			"SELECT count(*) FROM hr.people WHERE CASE WHEN ssn LIKE '333%' THEN error('333 is there') ELSE true END",
			"SELECT count(*) FROM hr.people WHERE id = 3 AND error('3 is there')",
			"SELECT count(*) FROM hr.people p JOIN hr.ssns s ON p.ssn = s.ssn OR (p.name = 'cat' AND error('cat is there'))",
		} {
			if _, err := query(t, alice, q); err != nil && strings.Contains(err.Error(), "is there") {
				t.Errorf("%s: %v", q, err)
			}
		}
		// The same probe of a visible row fails: the probes above ran.
		q := "SELECT count(*) FROM hr.people WHERE CASE WHEN name = 'ana' THEN error('ana is there') ELSE true END"
		if _, err := query(t, alice, q); err == nil || !strings.Contains(err.Error(), "ana is there") {
			t.Errorf("%s: %v, want the error of a visible row", q, err)
		}
	})

	t.Run("writes", func(t *testing.T) {
		for _, q := range []string{
			"DELETE FROM hr.people WHERE id = 3",
			"DELETE FROM hr.people",
			"UPDATE hr.people SET salary = 0 WHERE region = 'US'",
			"MERGE INTO hr.people t USING hr.ssns s ON t.ssn = s.ssn WHEN NOT MATCHED THEN INSERT VALUES (9, 'EU', 'x', s.ssn, 0)",
		} {
			refused(t, alice, q, "local.hr.people", "row filter")
		}
		wantRows(t, root, "SELECT count(*) FROM hr.people", "6")
		// Reading it into a table of one's own copies what one sees.
		execUpdate(t, alice, "CREATE TABLE sandbox.mine AS SELECT * FROM hr.people")
		wantRows(t, alice, "SELECT id, ssn FROM sandbox.mine", "1 | ***-**-1111", "2 | ***-**-2222", "6 | ***-**-6666")
		execUpdate(t, alice, "INSERT INTO sandbox.mine SELECT * FROM hr.people WHERE id = 1")
		wantRows(t, alice, "SELECT count(*) FROM sandbox.mine", "4")
		execUpdate(t, alice, "CREATE TABLE sandbox.t (id INTEGER, ssn VARCHAR)")
		execUpdate(t, alice, "MERGE INTO sandbox.t t USING hr.people s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.ssn)")
		wantRows(t, alice, "SELECT id, ssn FROM sandbox.t", "1 | ***-**-1111", "2 | ***-**-2222", "6 | ***-**-6666")
		// Bulk ingest replace would delete the hidden rows too.
		execUpdate(t, root, "CREATE TABLE ledger AS SELECT * FROM range(5) AS t(id)")
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.Append(9)
		col := b.NewArray()
		sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
		rec := array.NewRecordBatch(sch, []arrow.Array{col}, 1)
		col.Release()
		b.Release()
		rdr, err := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		_, err = ingestCancel(t, alice, "ledger", adbc.OptionValueIngestModeReplace, rdr)
		rdr.Release()
		wantADBC(t, "ingest replace", err, adbc.StatusUnauthorized, "permission denied", "local.default.ledger", "row filter", "bulk ingest replace")
		wantRows(t, root, "SELECT count(*) FROM ledger", "5")
		// Inserting is no read: allowed.
		execUpdate(t, alice, "INSERT INTO hr.people VALUES (7, 'EU', 'gus', '777-77-7777', 700)")
		wantRows(t, alice, "SELECT count(*) FROM hr.people", "4")
	})

	t.Run("external JWT attributes", func(t *testing.T) {
		uma, err := e.withToken(t, e.jwtClaims(t, "uma", time.Hour, map[string]any{"roles": []string{"eu_reader"}, "region": "US"}))
		if err != nil {
			t.Fatal(err)
		}
		wantRows(t, uma, "SELECT id, ssn FROM hr.people", "3 | ***-**-3333", "4 | ***-**-4444")
		// Without the attribute the filter compares with NULL: nothing.
		vic, err := e.withToken(t, e.jwt(t, "vic", []string{"eu_reader"}, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		wantRows(t, vic, "SELECT count(*) FROM hr.people", "0")
	})

	t.Run("REST loadTable is refused", func(t *testing.T) {
		base := e.s.Coordinator.RESTURL()
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: e.client.TLS.Clone()}}
		get := func(user, path string) (int, string) {
			req, err := http.NewRequest(http.MethodGet, base+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+e.token(t, user, time.Hour))
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		code, body := get("alice", "/v1/local/namespaces/hr/tables/people")
		if code != http.StatusForbidden || !strings.Contains(body, "row filter") || !strings.Contains(body, "SQL") {
			t.Errorf("alice's loadTable of a filtered table: %d %s", code, body)
		}
		code, body = get("alice", "/v1/local/namespaces/hr/tables/people/credentials")
		if code != http.StatusForbidden {
			t.Errorf("alice's loadCredentials of a filtered table: %d %s", code, body)
		}
		if code, body := get("alice", "/v1/local/namespaces/hr/tables/ssns"); code != http.StatusOK {
			t.Errorf("alice's loadTable of an unfiltered table: %d %s", code, body)
		}
		if code, body := get("root", "/v1/local/namespaces/hr/tables/people"); code != http.StatusOK {
			t.Errorf("root's loadTable: %d %s", code, body)
		}
	})
}
