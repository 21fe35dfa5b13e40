//go:build catalogs

package catalogs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/catalog"
)

// roundTrip runs create → insert → query → alter → time travel and the
// metadata tables through icefloe on catalog cfg.
func roundTrip(t *testing.T, cnxn adbc.Connection, cfg catalog.Config, schema string) {
	t.Helper()
	tbl := cfg.Name + "." + schema + ".t"
	meta := func(kind string) string { return cfg.Name + "." + schema + `."t$` + kind + `"` }
	run(t, cnxn, "CREATE SCHEMA "+cfg.Name+"."+schema)
	run(t, cnxn, "CREATE TABLE "+tbl+" (id INTEGER, name VARCHAR)")
	run(t, cnxn, "INSERT INTO "+tbl+" VALUES (1, 'a'), (2, 'b')")
	wantRows(t, cnxn, "SELECT id, name FROM "+tbl+" ORDER BY id", "1 | a", "2 | b")
	snaps := mustQuery(t, cnxn, "SELECT snapshot_id FROM "+meta("snapshots"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots after one insert: %q", snaps)
	}
	first := snaps[0]
	time.Sleep(50 * time.Millisecond)
	between := time.Now().UTC().Format("2006-01-02 15:04:05.000")
	time.Sleep(50 * time.Millisecond)
	run(t, cnxn, "INSERT INTO "+tbl+" VALUES (3, 'c')")

	// Alter through icefloe.
	run(t, cnxn, "ALTER TABLE "+tbl+" ADD COLUMN score DOUBLE")

	// The next query sees the new column, NULL in old files.
	wantRows(t, cnxn, "SELECT * FROM "+tbl+" ORDER BY id", "1 | a | NULL", "2 | b | NULL", "3 | c | NULL")
	// Time travel: by snapshot id (old schema), by timestamp, by branch.
	wantRows(t, cnxn, "SELECT * FROM "+tbl+" AT (VERSION => "+first+") ORDER BY id", "1 | a", "2 | b")
	wantRows(t, cnxn, "SELECT count(*) FROM "+tbl+" AT (TIMESTAMP => TIMESTAMP '"+between+"')", "2")
	wantRows(t, cnxn, "SELECT count(*) FROM "+tbl+" AT (VERSION => 'main')", "3")
	// Both versions in one query.
	wantRows(t, cnxn, "SELECT (SELECT count(*) FROM "+tbl+") - (SELECT count(*) FROM "+tbl+" AT (VERSION => "+first+"))", "1")
	if _, err := query(t, cnxn, "SELECT * FROM "+tbl+" AT (VERSION => 'nope')"); code(err) != codes.NotFound {
		t.Fatalf("unknown branch: %v, want NotFound", err)
	}
	// Metadata tables, with SQL on top.
	wantRows(t, cnxn, "SELECT count(*) FROM "+meta("snapshots"), "2")
	wantRows(t, cnxn, "SELECT count(*), bool_and(is_current_ancestor) FROM "+meta("history"), "2 | true")
	wantRows(t, cnxn, "SELECT name, type FROM "+meta("refs"), "main | BRANCH")
	wantRows(t, cnxn, "SELECT count(*), sum(record_count) FROM "+meta("files"), "2 | 3")
	if rows := mustQuery(t, cnxn, "SELECT count(*) > 0 FROM "+meta("manifests")); rows[0] != "true" {
		t.Fatalf("manifests: %q", rows)
	}
	wantRows(t, cnxn, "SELECT sum(record_count) FROM "+meta("partitions"), "3")
	wantRows(t, cnxn, "SELECT count(*) FROM "+tbl+" t JOIN "+meta("snapshots")+" s ON true WHERE s.snapshot_id = "+first, "3")
}

// wantCode checks err is a gRPC status with code whose message names the
// catalog and does not leak secret.
func wantCode(t *testing.T, err error, want codes.Code, catalogName, secret string) {
	t.Helper()
	if code(err) != want {
		t.Fatalf("got %v, want %v", err, want)
	}
	msg := err.Error()
	if !strings.Contains(msg, catalogName) {
		t.Fatalf("message %q does not name catalog %q", msg, catalogName)
	}
	if secret != "" && strings.Contains(msg, secret) {
		t.Fatalf("message %q leaks the secret", msg)
	}
}

func wantErrIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got %v, want %v", err, target)
	}
}

// code is the gRPC code of an error from the server, which the ADBC driver
// keeps in its message as "(Code; Method)".
func code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return st.Code()
	}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if strings.Contains(err.Error(), "("+c.String()+";") {
			return c
		}
	}
	return codes.Unknown
}
