package integration

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestExplainAnalyzeAndWrites, through the ADBC driver: EXPLAIN ANALYZE
// runs the query and reports each endpoint's rows and bytes, which add up
// to the query's own result; EXPLAIN of INSERT, UPDATE, DELETE and CREATE
// TABLE … AS prints the write plan and leaves the snapshot (and the
// catalog) as it was.
func TestExplainAnalyzeAndWrites(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	endpoint := regexp.MustCompile(`^analyze endpoint \d+ \| (\d+) rows, (\d+) bytes, first batch after .*, done after .*, served by grpc://`)
	total := regexp.MustCompile(`^analyze total \| (\d+) rows, (\d+) bytes from (\d+) endpoints \((\d+) child fragments\) in `)
	child := regexp.MustCompile(`^analyze endpoint \d+ child \d+ \(__icefloe_\w+\) \| (\d+) rows, (\d+) bytes, .*, served by grpc://`)
	// The plan tree's result and fragments carry the measured figures.
	result := regexp.MustCompile(`^plan \| Result .*; actual (\d+) rows, (\d+) bytes, .* in (\d+) streams\)$`)
	partial := regexp.MustCompile(`^plan \| +Fragment (?:partial|child) .*; actual (\d+) rows, \d+ bytes, .* in (\d+) streams\)$`)
	for q, wantChildren := range map[string]bool{
		"SELECT * FROM orders":                                            false, // scatter
		"SELECT status, count(*) FROM orders GROUP BY status":             true,  // two-phase
		"SELECT count(DISTINCT customer_id) FROM orders":                  false, // gather, read where it runs
		"SELECT * FROM orders o JOIN customers c ON o.customer_id = c.id": false, // broadcast
	} {
		want := int64(len(mustQuery(t, cnxn, q).rows))
		res := mustQuery(t, cnxn, "EXPLAIN ANALYZE "+q)
		var sum, endpoints, children, childRows, treeChildren, treeChildRows int64
		var tot, root []string
		for _, l := range res.rows {
			if m := result.FindStringSubmatch(l); m != nil {
				root = m
			}
			if m := partial.FindStringSubmatch(l); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				k, _ := strconv.ParseInt(m[2], 10, 64)
				treeChildRows, treeChildren = treeChildRows+n, treeChildren+k
			}
			if m := endpoint.FindStringSubmatch(l); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				if b, _ := strconv.ParseInt(m[2], 10, 64); b <= 0 && n > 0 {
					t.Errorf("%s: %d rows in 0 bytes: %s", q, n, l)
				}
				sum += n
				endpoints++
			}
			if m := child.FindStringSubmatch(l); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				childRows += n
				children++
			}
			if m := total.FindStringSubmatch(l); m != nil {
				tot = m
			}
		}
		if tot == nil || endpoints == 0 {
			t.Fatalf("EXPLAIN ANALYZE %s has no endpoint figures:\n%s", q, strings.Join(res.rows, "\n"))
		}
		if sum != want || tot[1] != strconv.FormatInt(want, 10) || tot[3] != strconv.FormatInt(endpoints, 10) {
			t.Errorf("EXPLAIN ANALYZE %s: endpoints stream %d rows (total line %s), the query returns %d:\n%s", q, sum, tot[0], want, strings.Join(res.rows, "\n"))
		}
		if root == nil || root[1] != strconv.FormatInt(want, 10) || root[3] != strconv.FormatInt(endpoints, 10) {
			t.Errorf("EXPLAIN ANALYZE %s: the plan tree's result says %v, want %d rows in %d streams:\n%s", q, root, want, endpoints, strings.Join(res.rows, "\n"))
		}
		if treeChildren != children || treeChildRows != childRows {
			t.Errorf("EXPLAIN ANALYZE %s: the plan tree's child fragments have %d rows in %d streams, the child lines %d in %d:\n%s", q, treeChildRows, treeChildren, childRows, children, strings.Join(res.rows, "\n"))
		}
		if tot[4] != strconv.FormatInt(children, 10) || (children > 0) != wantChildren || wantChildren && childRows == 0 {
			t.Errorf("EXPLAIN ANALYZE %s: %d child fragments with %d rows (total line %s), want children %v:\n%s", q, children, childRows, tot[0], wantChildren, strings.Join(res.rows, "\n"))
		}
	}
	_, err := query(t, cnxn, "EXPLAIN ANALYZE DELETE FROM orders")
	wantStatus(t, err, adbc.StatusNotImplemented)

	before := localTable(t, s, "orders").CurrentSnapshot().SnapshotID
	for q, word := range map[string]string{
		"EXPLAIN INSERT INTO orders SELECT * FROM orders":          "commit | append",
		"EXPLAIN INSERT INTO orders (id) VALUES (100000)":          "commit | append",
		"EXPLAIN UPDATE orders SET status = 'X' WHERE id = 1":      "commit | overwrite (copy-on-write)",
		"EXPLAIN DELETE FROM orders WHERE status = 'shipped'":      "commit | overwrite (copy-on-write)",
		"EXPLAIN CREATE TABLE orders_copy AS SELECT * FROM orders": "commit | create the table",
	} {
		text := strings.Join(mustQuery(t, cnxn, q).rows, "\n")
		if !strings.Contains(text, word) {
			t.Errorf("%s: no %q in\n%s", q, word, text)
		}
	}
	if after := localTable(t, s, "orders").CurrentSnapshot().SnapshotID; after != before {
		t.Errorf("EXPLAIN of writes moved orders from snapshot %d to %d", before, after)
	}
	for _, n := range localTables(t, s) {
		if n == "orders_copy" {
			t.Error("EXPLAIN CREATE TABLE … AS created orders_copy")
		}
	}
}
