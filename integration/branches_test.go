package integration

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/iceberg-go/table"
)

// TestBranchesAndTags: branch and tag DDL, writes to a branch (Spark's
// t.branch_b, and a session's WAP branch), reads of branches and tags in
// every spelling, and the procedures that move main (fast_forward,
// rollback_to_snapshot, rollback_to_timestamp, set_current_snapshot,
// cherrypick_snapshot) — on v2 and v3 tables, partitioned and not, each
// read compared with DuckDB running the same statements on a copy.
func TestBranchesAndTags(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	wap := sessionConn(t, s.Addr(), map[string]string{"icefloe.wap_branch": "audit"})
	for _, l := range maintLayouts {
		t.Run(l.name, func(t *testing.T) {
			name := "b" + l.name
			execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE %s %s %s WITH ('format-version' = '%s', 'write.delete.mode' = 'merge-on-read')`, name, maintCols, l.part, l.version))
			ref := newRefTable(t, s)
			ref.exec(t, `CREATE TABLE m `+maintCols)
			for _, stmt := range []string{`INSERT INTO %s VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 0, 'c')`, `INSERT INTO %s VALUES (4, 1, 'd'), (5, 2, 'e')`} {
				execUpdate(t, cnxn, fmt.Sprintf(stmt, name))
				ref.exec(t, fmt.Sprintf(stmt, "m"))
			}
			mainRows := ref.query(t, `SELECT * FROM m`)
			s0 := localTable(t, s, name).CurrentSnapshot()

			execUpdate(t, cnxn, `ALTER TABLE `+name+` CREATE BRANCH dev`)
			execUpdate(t, cnxn, `ALTER TABLE `+name+` CREATE TAG v1 RETAIN 7 DAYS`)
			_, err := tryUpdate(t, cnxn, `ALTER TABLE `+name+` CREATE TAG v1`)
			wantStatus(t, err, adbc.StatusAlreadyExists)
			execUpdate(t, cnxn, `ALTER TABLE `+name+` CREATE TAG IF NOT EXISTS v1`)
			execUpdate(t, cnxn, fmt.Sprintf(`ALTER TABLE %s CREATE BRANCH keep AS OF VERSION %d RETAIN 2 DAYS WITH SNAPSHOT RETENTION 3 SNAPSHOTS 4 HOURS`, name, s0.SnapshotID))
			keep, _ := refOf(localTable(t, s, name), "keep")
			if keep.SnapshotID != s0.SnapshotID || *keep.MaxRefAgeMs != 2*24*3600*1000 || *keep.MinSnapshotsToKeep != 3 || *keep.MaxSnapshotAgeMs != 4*3600*1000 {
				t.Fatalf("branch keep: %+v", keep)
			}

			ref.exec(t, `CREATE TABLE d AS SELECT * FROM m`)
			for _, stmt := range []string{
				`INSERT INTO %s VALUES (100, 1, 'dev')`,
				`INSERT INTO %s SELECT id + 1000, p, s FROM {main}`,
				`DELETE FROM %s WHERE id = 1`,
				`DELETE FROM %s WHERE id %% 2 = 0 AND id > 1000`,
				`UPDATE %s SET s = 'u' WHERE id = 3`,
			} {
				q := fmt.Sprintf(stmt, name+".branch_dev")
				want := ref.exec(t, strings.ReplaceAll(fmt.Sprintf(stmt, "d"), "{main}", "m"))
				if n := execUpdate(t, cnxn, strings.ReplaceAll(q, "{main}", name)); n != want {
					t.Fatalf("%s: count %d, DuckDB %d", q, n, want)
				}
			}
			devRows := ref.query(t, `SELECT * FROM d`)
			if cur := localTable(t, s, name).CurrentSnapshot(); cur.SnapshotID != s0.SnapshotID {
				t.Fatal("writes to branch dev moved main")
			}
			wantRows(t, cnxn, `SELECT * FROM `+name, mainRows...)
			for _, q := range []string{`SELECT * FROM %s FOR VERSION AS OF 'dev'`, `SELECT * FROM %s VERSION AS OF 'dev'`,
				`SELECT * FROM %s.branch_dev`, `SELECT * FROM %s AT (VERSION => 'dev')`, `SELECT x.* FROM %s FOR SYSTEM_VERSION AS OF 'dev' AS x`} {
				wantRows(t, cnxn, fmt.Sprintf(q, name), devRows...)
			}
			wantRows(t, cnxn, fmt.Sprintf(`SELECT d.id FROM %s FOR VERSION AS OF 'dev' d WHERE d.id = 100`, name), "100")
			for _, q := range []string{`SELECT * FROM %s.tag_v1`, `SELECT * FROM %s FOR VERSION AS OF 'v1'`,
				fmt.Sprintf(`SELECT * FROM %%s FOR VERSION AS OF %d`, s0.SnapshotID),
				`SELECT * FROM %s FOR TIMESTAMP AS OF TIMESTAMP '` + time.UnixMilli(s0.TimestampMs).UTC().Format("2006-01-02 15:04:05.000") + `'`} {
				wantRows(t, cnxn, fmt.Sprintf(q, name), mainRows...)
			}
			_, err = tryUpdate(t, cnxn, `INSERT INTO `+name+`.tag_v1 VALUES (9, 9, 'x')`)
			wantStatus(t, err, adbc.StatusInvalidArgument)
			_, err = tryUpdate(t, cnxn, `INSERT INTO `+name+`.branch_nope VALUES (9, 9, 'x')`)
			wantStatus(t, err, adbc.StatusNotFound)

			// Publish dev, go back, jump to dev again, then back by time.
			dev, _ := refOf(localTable(t, s, name), "dev")
			wantCall(t, cnxn, `CALL system.fast_forward('`+name+`', 'main', 'dev')`, "main", s0.SnapshotID, dev.SnapshotID)
			wantRows(t, cnxn, `SELECT * FROM `+name, devRows...)
			wantCall(t, cnxn, fmt.Sprintf(`CALL system.rollback_to_snapshot('%s', %d)`, name, s0.SnapshotID), dev.SnapshotID, s0.SnapshotID)
			wantRows(t, cnxn, `SELECT * FROM `+name, mainRows...)
			wantCall(t, cnxn, `CALL system.set_current_snapshot(table => '`+name+`', ref => 'dev')`, s0.SnapshotID, dev.SnapshotID)
			wantRows(t, cnxn, `SELECT * FROM `+name, devRows...)
			after := time.UnixMilli(s0.TimestampMs + 1).UTC().Format("2006-01-02 15:04:05.000")
			wantCall(t, cnxn, `CALL system.rollback_to_timestamp('`+name+`', TIMESTAMP '`+after+`')`, dev.SnapshotID, s0.SnapshotID)
			wantRows(t, cnxn, `SELECT * FROM `+name, mainRows...)

			// Write-audit-publish: the WAP session writes and reads branch
			// audit; others see main until audit is fast-forwarded.
			execUpdate(t, cnxn, `ALTER TABLE `+name+` SET TBLPROPERTIES ('write.wap.enabled' = 'true')`)
			execUpdate(t, cnxn, `ALTER TABLE `+name+` CREATE BRANCH audit`)
			execUpdate(t, wap, `INSERT INTO `+name+` VALUES (200, 2, 'wap')`)
			audited := append(slices.Clone(mainRows), "200 | 2 | wap")
			wantRows(t, wap, `SELECT * FROM `+name, audited...)
			wantRows(t, cnxn, `SELECT * FROM `+name, mainRows...)
			audit, _ := refOf(localTable(t, s, name), "audit")
			wantCall(t, cnxn, `CALL system.fast_forward(table => '`+name+`', branch => 'main', to => 'audit')`, "main", s0.SnapshotID, audit.SnapshotID)
			wantRows(t, cnxn, `SELECT * FROM `+name, audited...)

			// Cherry-pick a dev commit onto main, which has moved on.
			execUpdate(t, cnxn, `INSERT INTO `+name+`.branch_dev VALUES (300, 0, 'picked')`)
			dev, _ = refOf(localTable(t, s, name), "dev")
			res := mustQuery(t, cnxn, fmt.Sprintf(`CALL system.cherrypick_snapshot('%s', %d)`, name, dev.SnapshotID))
			if row := cellsOf(res.rows[0]); row[0] != strconv.FormatInt(dev.SnapshotID, 10) || row[1] != strconv.FormatInt(localTable(t, s, name).CurrentSnapshot().SnapshotID, 10) {
				t.Fatalf("cherrypick result %q", res.rows[0])
			}
			wantRows(t, cnxn, `SELECT * FROM `+name, append(slices.Clone(audited), "300 | 0 | picked")...)
			_, err = query(t, cnxn, fmt.Sprintf(`CALL system.cherrypick_snapshot('%s', %d)`, name, dev.SnapshotID))
			wantStatus(t, err, adbc.StatusInvalidArgument)
			if l.version == "3" {
				checkRowLineage(t, localTable(t, s, name))
			}

			execUpdate(t, cnxn, `ALTER TABLE `+name+` DROP BRANCH dev`)
			execUpdate(t, cnxn, `ALTER TABLE `+name+` DROP TAG v1`)
			execUpdate(t, cnxn, `ALTER TABLE `+name+` DROP TAG IF EXISTS v1`)
			_, err = query(t, cnxn, `SELECT * FROM `+name+` FOR VERSION AS OF 'dev'`)
			wantStatus(t, err, adbc.StatusNotFound)
			_, err = tryUpdate(t, cnxn, `ALTER TABLE `+name+` DROP BRANCH main`)
			wantStatus(t, err, adbc.StatusInvalidArgument)
			_, err = query(t, cnxn, `CALL system.fast_forward('`+name+`', 'audit', 'keep')`)
			wantStatus(t, err, adbc.StatusInvalidArgument)
		})
	}
}

// sessionConn opens an ADBC connection that keeps its session (cookies)
// and sets the given session options.
func sessionConn(t testing.TB, addr string, opts map[string]string) adbc.Connection {
	t.Helper()
	cnxn := openADBC(t, map[string]string{adbc.OptionKeyURI: "grpc://" + addr, adbcflight.OptionCookieMiddleware: "true"})
	for k, v := range opts {
		if err := cnxn.(adbc.PostInitOptions).SetOption(adbcflight.OptionSessionOptionPrefix+k, v); err != nil {
			t.Fatal(err)
		}
	}
	return cnxn
}

// refOf returns tbl's ref called name.
func refOf(tbl *table.Table, name string) (table.SnapshotRef, bool) {
	for n, r := range tbl.Metadata().Refs() {
		if n == name {
			return r, true
		}
	}
	return table.SnapshotRef{}, false
}

// wantCall runs a CALL and checks its one row.
func wantCall(t *testing.T, cnxn adbc.Connection, q string, want ...any) {
	t.Helper()
	res := mustQuery(t, cnxn, q)
	var cells []string
	for _, w := range want {
		cells = append(cells, fmt.Sprint(w))
	}
	if len(res.rows) != 1 || res.rows[0] != strings.Join(cells, " | ") {
		t.Fatalf("%s: %q, want %q", q, res.rows, strings.Join(cells, " | "))
	}
}
