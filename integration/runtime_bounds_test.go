package integration

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestRuntimeQueriesDoNotGrowByBeingRead: each read of
// system.runtime.queries is a statement whose plan the registry keeps;
// that plan must not embed the plans of earlier reads (which made each
// read's plan about nine times the last one's until a read ran out of
// memory), and the SQL and plan kept of a statement are bounded.
func TestRuntimeQueriesDoNotGrowByBeingRead(t *testing.T) {
	s := StartCluster(t, Demo(), Workers(1))
	cnxn := adbcConn(t, s.Addr())
	mustQuery(t, cnxn, "SELECT count(*) FROM orders WHERE status = 'first line\nsecond line'")
	read := func(what string) string {
		t.Helper()
		// A plan tree has one Result; more are earlier plans embedded.
		res := mustQuery(t, cnxn, `SELECT max(length(plan)), max(length(sql)),
			max((length(plan) - length(replace(plan, 'Result ', ''))) // 7) FROM system.runtime.queries`)
		var plan, sql, results int
		if _, err := fmt.Sscanf(res.rows[0], "%d | %d | %d", &plan, &sql, &results); err != nil {
			t.Fatalf("%q: %v", res.rows[0], err)
		}
		if plan > 64<<10 || sql > 16<<10 || results > 1 {
			t.Fatalf("%s: the longest plan and SQL kept are %d and %d bytes, and a plan holds %d plan trees; want at most 64 KiB, 16 KiB and one",
				what, plan, sql, results)
		}
		return res.rows[0]
	}
	var sizes []string
	for range 6 {
		sizes = append(sizes, read(fmt.Sprintf("read %d", len(sizes)+1)))
	}
	t.Logf("longest plan | SQL after each read: %v", sizes)
	var ins strings.Builder
	for i := range 10000 {
		if i > 0 {
			ins.WriteString(", ")
		}
		ins.WriteString(strconv.Itoa(i))
	}
	mustQuery(t, cnxn, "SELECT count(*) FROM orders WHERE id IN ("+ins.String()+")")
	read("after a statement of 10000 literals")
}

// TestPlansRedactedForOthers: literals of a reader's WHERE — one-line,
// multi-line, E'…' and dollar-quoted strings and numbers — appear
// neither in system.runtime.queries (plan and sql) nor on the status
// page an admin reads.
func TestPlansRedactedForOthers(t *testing.T) {
	e := startSecure(t)
	addr := statusListener(t, e.s.Coordinator)
	bob, root := e.login(t, "bob"), e.login(t, "root")
	secrets := []string{"reader-secret", "multi-secret", "second-line-secret", "e-string-secret", "dollar-secret", "8675309"}
	for _, q := range []string{
		"SELECT id FROM orders WHERE status = 'reader-secret'",
		"SELECT count(*) FROM orders WHERE status = 'multi-secret\nsecond-line-secret'",
		"SELECT id, status FROM orders WHERE status = E'e-string-secret\\n' OR status = $q$dollar-secret$q$",
		"SELECT status, count(*) FROM orders WHERE amount > 8675309 GROUP BY status",
	} {
		mustQuery(t, bob, q)
	}
	res := mustQuery(t, root, "SELECT sql, plan FROM system.runtime.queries WHERE principal = 'bob'")
	if len(res.rows) < 4 {
		t.Fatalf("bob's statements: %d rows", len(res.rows))
	}
	all := strings.Join(res.rows, "\n")
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.SetBasicAuth("root", securePasswords["root"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	code, body := resp.StatusCode, string(raw)
	if code != http.StatusOK || !strings.Contains(body, "orders") {
		t.Fatalf("status page: %d\n%.300s", code, body)
	}
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("system.runtime.queries shows %q:\n%s", s, all)
		}
		if strings.Contains(body, s) {
			t.Errorf("the status page shows %q", s)
		}
	}
	if !strings.Contains(all, "status = ?") {
		t.Errorf("the redacted plans lost their shape:\n%s", all)
	}
}
