package statement

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// parseCall parses a CALL and binds it to its procedure.
func parseCall(s planner.Session, q string) (*procCall, error) {
	st, err := parse.Parse(q)
	if err != nil {
		return nil, err
	}
	return bindCall(s, st.Body.(*parse.Call))
}

func TestParseCall(t *testing.T) {
	s := planner.Session{Catalog: "local", Schema: "default"}
	c, err := parseCall(s, `CALL lake.system.rewrite_data_files(table => 'db.t', options => map('min-input-files', '2', 'Rewrite-All', true), where => 'id > 5');`)
	if err != nil {
		t.Fatal(err)
	}
	if c.sess.Catalog != "lake" || c.proc.name != "rewrite_data_files" || c.str("table", "") != "db.t" || c.str("where", "") != "id > 5" {
		t.Fatalf("parsed %+v", c)
	}
	if o := c.options(); o["min-input-files"] != "2" || o["rewrite-all"] != "TRUE" {
		t.Fatalf("options %v", o)
	}
	c, err = parseCall(s, `call system.expire_snapshots('t', TIMESTAMP '2024-01-02 03:04:05', 3, NULL, NULL, array(1, -2))`)
	if err != nil {
		t.Fatal(err)
	}
	if ts, _ := c.time("older_than"); !ts.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("older_than %v", ts)
	}
	if n, _ := c.int("retain_last"); n != 3 {
		t.Fatalf("retain_last %d", n)
	}
	if ids, _ := c.args["snapshot_ids"].([]int64); len(ids) != 2 || ids[1] != -2 {
		t.Fatalf("snapshot_ids %v", c.args["snapshot_ids"])
	}
	for _, tc := range []struct {
		q    string
		want error
		word string
	}{
		{`CALL system.nope('t')`, planner.ErrNotFound, "rewrite_data_files"},
		{`CALL other.expire_snapshots('t')`, planner.ErrNotFound, "system namespace"},
		{`CALL system.expire_snapshots()`, planner.ErrInvalid, "missing argument table"},
		{`CALL system.expire_snapshots(table => 't', 3)`, planner.ErrInvalid, "all by position"},
		{`CALL system.expire_snapshots(tabel => 't')`, planner.ErrInvalid, `no argument "tabel"`},
		{`CALL system.expire_snapshots(table => 't', table => 'u')`, planner.ErrInvalid, "twice"},
		{`CALL system.expire_snapshots(table => 't', retain_last => 'x')`, planner.ErrInvalid, "retain_last must be an integer"},
		{`CALL system.expire_snapshots(table => 't', older_than => 'soon')`, planner.ErrInvalid, "older_than must be a timestamp"},
		{`CALL system.expire_snapshots(table => 't', retain_last => 1 + 1)`, planner.ErrSyntax, "unexpected"},
		{`CALL system.expire_snapshots(table => (SELECT 1))`, planner.ErrInvalid, "want a literal"},
		{`CALL system.rollback_to_snapshot('t', 1, 2, 3)`, planner.ErrInvalid, "at most 2"},
	} {
		_, err := parseCall(s, tc.q)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.word) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.q, err, tc.want, tc.word)
		}
	}
}

func TestRowsSQL(t *testing.T) {
	cols := []procColumn{{"n", "BIGINT"}, {"path", "VARCHAR"}}
	if got := rowsSQL(cols, nil); got != `SELECT CAST(NULL AS BIGINT) AS "n", CAST(NULL AS VARCHAR) AS "path" WHERE false` {
		t.Fatal(got)
	}
	got := rowsSQL(cols, [][]any{{int64(1), "it's"}, {nil, "x"}})
	if want := `SELECT * FROM (VALUES (CAST(1 AS BIGINT), CAST('it''s' AS VARCHAR)), (CAST(NULL AS BIGINT), CAST('x' AS VARCHAR))) AS __icefloe_rows("n", "path")`; got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
}

func TestTrinoQuantities(t *testing.T) {
	if n, err := parseDataSize("128MB"); err != nil || n != 128<<20 {
		t.Fatal(n, err)
	}
	if n, err := parseDataSize("1.5kB"); err != nil || n != 1536 {
		t.Fatal(n, err)
	}
	if d, err := parseDuration("7d"); err != nil || d != 7*24*time.Hour {
		t.Fatal(d, err)
	}
	for _, bad := range []string{"", "MB", "12 furlongs", "1..2h"} {
		if _, err := parseDataSize(bad); err == nil {
			t.Errorf("size %q accepted", bad)
		}
		if _, err := parseDuration(bad); err == nil {
			t.Errorf("duration %q accepted", bad)
		}
	}
}
