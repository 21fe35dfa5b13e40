package integration

import (
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestStatementIDsPerPrincipal: a client's statement id is scoped to the
// principal that sends it. alice's load under an id does not stop root's
// later 10-row load under the same id (before, root's was answered
// "already committed" and silently dropped, or ALREADY_EXISTS with
// nothing landed); each user's own retry under the id still commits
// nothing again. The snapshots record a digest of the principal, never
// the user's name.
func TestStatementIDsPerPrincipal(t *testing.T) {
	e := startSecure(t)
	root := e.login(t, "root")
	execUpdate(t, root, "CREATE SCHEMA sandbox")
	execUpdate(t, root, "CREATE TABLE sandbox.loads (who VARCHAR, n INTEGER)")
	const id = "nightly-load-2026-12-01"
	as := func(user string) adbc.Connection {
		c, err := e.open(t, map[string]string{adbc.OptionKeyUsername: user, adbc.OptionKeyPassword: securePasswords[user],
			"adbc.flight.sql.rpc.call_header.x-icefloe-statement-id": id})
		if err != nil {
			t.Fatalf("log in as %s: %v", user, err)
		}
		return c
	}
	aliceLoad := "INSERT INTO sandbox.loads VALUES ('alice', 1)"
	rootLoad := "INSERT INTO sandbox.loads SELECT 'root', CAST(i AS INTEGER) FROM range(10) t(i)"
	if n, err := tryUpdate(t, as("alice"), aliceLoad); err != nil || n != 1 {
		t.Fatalf("alice's load: %d, %v", n, err)
	}
	if n, err := tryUpdate(t, as("root"), rootLoad); err != nil || n != 10 {
		t.Fatalf("root's load under the id alice used first: %d, %v; want 10 rows landed", n, err)
	}
	for user, q := range map[string]string{"alice": aliceLoad, "root": rootLoad} {
		_, err := tryUpdate(t, as(user), q)
		wantStatus(t, err, adbc.StatusAlreadyExists)
		if !strings.Contains(err.Error(), id) {
			t.Fatalf("%s's retry: %v, want its id named", user, err)
		}
	}
	wantRows(t, root, "SELECT who, count(*) FROM sandbox.loads GROUP BY who", "alice | 1", "root | 10")
	res := mustQuery(t, root, `SELECT count(DISTINCT summary['icefloe.statement-principal']), count(*) FROM sandbox."loads$snapshots" WHERE summary['icefloe.statement-id'] = '`+id+`'`)
	if got := strings.Join(res.sorted(), ""); got != "2 | 2" {
		t.Fatalf("snapshots under the id: %q, want two, of two principals", got)
	}
	for _, row := range mustQuery(t, root, `SELECT CAST(summary AS VARCHAR) FROM sandbox."loads$snapshots"`).sorted() {
		if strings.Contains(row, "alice") || strings.Contains(row, "root") {
			t.Fatalf("a snapshot summary names a user: %s", row)
		}
	}
}
