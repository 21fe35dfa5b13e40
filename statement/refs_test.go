package statement

import (
	"testing"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

func TestRefDDL(t *testing.T) {
	parseRef := func(q string) (*parse.RefChange, error) {
		st, err := parse.Parse("ALTER TABLE t " + q)
		if err != nil {
			return nil, err
		}
		return st.Body.(*parse.AlterTable).Action.(*parse.RefChange), nil
	}
	d, err := parseRef(`CREATE OR REPLACE BRANCH b AS OF VERSION 7 RETAIN 3 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS 5 MINUTES`)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Create || !d.Replace || d.Name != "b" || *d.Version != 7 || d.RetainMs != 3*86400000 || d.MinSnapshots != 2 || d.MaxSnapshotAgeMs != 300000 {
		t.Fatalf("%+v", d)
	}
	for _, bad := range []string{`CREATE TAG t WITH SNAPSHOT RETENTION 2 SNAPSHOTS`, `CREATE BRANCH b RETAIN 3 WEEKS`,
		`DROP BRANCH b AS OF VERSION 1`, `CREATE BRANCH`, `CREATE BRANCH b RETAIN -1 DAYS`} {
		if _, err := parseRef(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestAlterRefs runs the branch and tag DDL through the Executor.
func TestAlterRefs(t *testing.T) {
	e := newEnv(t)
	e.exec(t, "CREATE TABLE r (a INT)")
	e.execErr(t, "ALTER TABLE r CREATE BRANCH b", planner.ErrInvalid, "no snapshot")
	e.exec(t, "INSERT INTO r VALUES (1)")
	e.exec(t, "ALTER TABLE r CREATE BRANCH b")
	e.execErr(t, "ALTER TABLE r CREATE BRANCH b", planner.ErrExists, "b")
	e.exec(t, "ALTER TABLE r CREATE BRANCH IF NOT EXISTS b")
	e.exec(t, "ALTER TABLE r CREATE TAG v1 RETAIN 3 DAYS")
	e.execErr(t, "ALTER TABLE r DROP BRANCH v1", planner.ErrInvalid, "tag")
	e.execErr(t, "ALTER TABLE r DROP BRANCH main", planner.ErrInvalid, "main")
	refs := e.load(t, "default", "r").Metadata().Refs()
	n := 0
	for range refs {
		n++
	}
	if n != 3 {
		t.Fatalf("%d refs, want main, b and v1", n)
	}
	e.exec(t, "ALTER TABLE r DROP BRANCH b")
	e.exec(t, "ALTER TABLE r DROP BRANCH IF EXISTS b")
	e.execErr(t, "ALTER TABLE r DROP BRANCH b", planner.ErrNotFound, "b")
	e.exec(t, "ALTER TABLE IF EXISTS nope CREATE BRANCH b")
}
