package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
)

// failAfter is a client stream whose Err() reports an error after its
// first n batches: the client's side of the ingest breaks mid-way.
type failAfter struct {
	array.RecordReader
	n   int
	err error
}

func (r *failAfter) Next() bool {
	if r.n == 0 {
		r.err = errors.New("client stream broke mid-way")
		return false
	}
	r.n--
	return r.RecordReader.Next()
}

func (r *failAfter) Err() error { return r.err }

// ingestCancel is ingest with a context that is cancelled once the client
// has its answer: a client whose stream failed leaves its DoPut open, and
// cancelling it is what a real client's end looks like to the server.
func ingestCancel(t testing.TB, cnxn adbc.Connection, name, mode string, rdr array.RecordReader) (int64, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	for k, v := range map[string]string{adbc.OptionKeyIngestTargetTable: name, adbc.OptionKeyIngestMode: mode} {
		if err := stmt.SetOption(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := stmt.BindStream(ctx, rdr); err != nil {
		t.Fatal(err)
	}
	return stmt.ExecuteUpdate(ctx)
}

// localTables lists the tables of the local catalog's default schema.
func localTables(t testing.TB, s *cluster.Standalone) []string {
	t.Helper()
	mt, err := s.Mounts.Get(catalog.LocalCatalogName)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for id, err := range mt.Catalog.ListTables(context.Background(), icecat.ToIdentifier(catalog.DefaultSchema)) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, id[len(id)-1])
	}
	slices.Sort(out)
	return out
}

// wantNoStaging fails if a replace's staging table is left in the schema.
//
// A statement whose client went away is cleaned up by the server on its
// own time, so the staging table may take a moment to go.
func wantNoStaging(t testing.TB, s *cluster.Standalone) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		staging := s.Mounts.Staging(context.Background())
		if len(staging) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("staging tables %v left behind (tables %v)", staging, localTables(t, s))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFiles waits until the table's data folder holds exactly want: a
// statement whose client went away is cleaned up by the server on its own
// time.
func waitFiles(t testing.TB, s *cluster.Standalone, name string, want []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := dataFiles(t, localTable(t, s, name))
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: data files after a failed replace:\n%v\nwant\n%v", name, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func deleteFileCount(t testing.TB, tbl *table.Table) int {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		n += len(task.DeleteFiles) + len(task.DeletionVectorFiles)
	}
	return n
}

// TestIngestReplaceInPlace: replace with a stream of the table's shape
// replaces the rows in place, in one snapshot: history, partition spec,
// sort order, properties and format version are kept and the old
// snapshot still reads the old rows; delete files go with the old rows.
func TestIngestReplaceInPlace(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	for _, c := range []struct {
		name, with string
		mor        bool
	}{
		{"rp2", `'format-version' = '2'`, false},
		{"rp3", `'format-version' = '3'`, false},
		{"rpmor2", `'format-version' = '2', 'write.delete.mode' = 'merge-on-read'`, true},
		{"rpmor3", `'format-version' = '3', 'write.delete.mode' = 'merge-on-read'`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE %s (id BIGINT NOT NULL, name VARCHAR, score DOUBLE)
				PARTITIONED BY (bucket(4, id)) WITH (%s, 'x.keep' = 'yes')`, c.name, c.with))
			if n, err := ingest(t, cnxn, c.name, adbc.OptionValueIngestModeAppend, ingestRows(t, 0, 2, 500)); err != nil || n != 1000 {
				t.Fatalf("append: %d, %v", n, err)
			}
			if c.mor {
				execUpdate(t, cnxn, `DELETE FROM `+c.name+` WHERE id < 100`)
				if deleteFileCount(t, localTable(t, s, c.name)) == 0 {
					t.Fatal("merge-on-read DELETE wrote no delete files")
				}
				if got := mustQuery(t, cnxn, `SELECT count(*) FROM "`+c.name+`$delete_files"`).sorted(); slices.Equal(got, []string{"0"}) {
					t.Fatal("$delete_files lists no delete file")
				}
			}
			old := localTable(t, s, c.name)
			oldSnap := old.CurrentSnapshot().SnapshotID
			oldRows := mustQuery(t, cnxn, `SELECT count(*), min(id), max(id) FROM `+c.name).sorted()
			n, err := ingest(t, cnxn, c.name, adbc.OptionValueIngestModeReplace, ingestRows(t, 5000, 3, 10))
			if err != nil || n != 30 {
				t.Fatalf("replace: %d, %v", n, err)
			}
			wantRows(t, cnxn, `SELECT count(*), count(DISTINCT id), min(id), max(id), count(name) FROM `+c.name, "30 | 30 | 5000 | 5029 | 26")
			tbl := localTable(t, s, c.name)
			if got, want := snapshotCount(t, tbl), snapshotCount(t, old)+1; got != want {
				t.Fatalf("%d snapshots, want %d", got, want)
			}
			if tbl.Metadata().TableUUID() != old.Metadata().TableUUID() {
				t.Fatal("replace made a new table; want the same table replaced in place")
			}
			if tbl.Metadata().Version() != old.Metadata().Version() {
				t.Fatalf("format version %d, was %d", tbl.Metadata().Version(), old.Metadata().Version())
			}
			if !tbl.Spec().Equals(old.Spec()) || tbl.Spec().IsUnpartitioned() {
				t.Fatalf("partition spec %v, was %v", tbl.Spec(), old.Spec())
			}
			if tbl.Properties()["x.keep"] != "yes" {
				t.Fatalf("properties lost: %v", tbl.Properties())
			}
			if p := tbl.CurrentSnapshot().ParentSnapshotID; p == nil || *p != oldSnap {
				t.Fatalf("parent of the replace snapshot %v, want %d", p, oldSnap)
			}
			if deleteFileCount(t, tbl) != 0 {
				t.Fatal("delete files of the old rows are still live")
			}
			// Also the ones no live data file refers to any more.
			wantRows(t, cnxn, `SELECT count(*) FROM "`+c.name+`$delete_files"`, "0")
			// Time travel still reads the old rows.
			if got := mustQuery(t, cnxn, fmt.Sprintf(`SELECT count(*), min(id), max(id) FROM %s AT (VERSION => %d)`, c.name, oldSnap)).sorted(); !slices.Equal(got, oldRows) {
				t.Fatalf("as of the old snapshot: %v, want %v", got, oldRows)
			}
			if tbl.Metadata().Version() >= 3 {
				checkRowLineage(t, tbl)
			}
			// The rows landed in the table's partitions.
			if got := partitionTuples(t, tbl); len(got) < 2 {
				t.Fatalf("partitions %v", got)
			}
			// A second replace with no rows empties the table, still in place.
			// (A stream of no batches never sends its schema: one batch of no rows.)
			one := ingestRows(t, 0, 1, 1)
			one.Next()
			none := one.RecordBatch().NewSlice(0, 0)
			empty, _ := array.NewRecordReader(one.Schema(), []arrow.RecordBatch{none})
			none.Release()
			one.Release()
			if n, err := ingest(t, cnxn, c.name, adbc.OptionValueIngestModeReplace, empty); err != nil || n != 0 {
				t.Fatalf("empty replace: %d, %v", n, err)
			}
			wantRows(t, cnxn, `SELECT count(*) FROM `+c.name, "0")
			if got := snapshotCount(t, localTable(t, s, c.name)); got != snapshotCount(t, tbl)+1 {
				t.Fatalf("%d snapshots after the empty replace", got)
			}
		})
	}
	wantNoStaging(t, s)
}

// TestIngestReplaceNewShape: replace with a stream of another shape makes
// the table anew with the stream's schema, and leaves no staging table.
func TestIngestReplaceNewShape(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE ns (a INTEGER, b VARCHAR) PARTITIONED BY (a)`)
	execUpdate(t, cnxn, `INSERT INTO ns VALUES (1, 'x'), (2, 'y')`)
	n, err := ingest(t, cnxn, "ns", adbc.OptionValueIngestModeReplace, ingestRows(t, 10, 2, 5))
	if err != nil || n != 10 {
		t.Fatalf("replace: %d, %v", n, err)
	}
	wantRows(t, cnxn, `SELECT count(*), min(id), max(id), sum(score) FROM ns`, "10 | 10 | 19 | 36.25")
	tbl := localTable(t, s, "ns")
	var names []string
	for _, f := range tbl.Schema().Fields() {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"id", "name", "score"}) || !tbl.Spec().IsUnpartitioned() {
		t.Fatalf("schema %v, spec %v", tbl.Schema(), tbl.Spec())
	}
	if got := localTables(t, s); !slices.Equal(got, []string{"ns"}) {
		t.Fatalf("tables %v, want [ns]", got)
	}
	// Columns of another case are another shape: the table takes them.
	sc := arrow.NewSchema([]arrow.Field{{Name: "ID", Type: arrow.PrimitiveTypes.Int64}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	bld.Field(0).(*array.Int64Builder).AppendValues([]int64{7}, nil)
	rec := bld.NewRecordBatch()
	bld.Release()
	rdr, _ := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	rec.Release()
	if n, err := ingest(t, cnxn, "ns", adbc.OptionValueIngestModeReplace, rdr); err != nil || n != 1 {
		t.Fatalf("replace: %d, %v", n, err)
	}
	if f := localTable(t, s, "ns").Schema().Fields(); len(f) != 1 || f[0].Name != "ID" {
		t.Fatalf("schema %v", localTable(t, s, "ns").Schema())
	}
	wantNoStaging(t, s)
}

// TestIngestReplaceFailureKeepsTable: a replace that fails — the client's
// stream breaks mid-way, or a NULL reaches a NOT NULL column — leaves the
// old table as it was: all its rows, no new snapshot, no staging table,
// no files of the failed statement. Same shape and new shape alike.
func TestIngestReplaceFailureKeepsTable(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE keep (id BIGINT NOT NULL, name VARCHAR NOT NULL, score DOUBLE) PARTITIONED BY (bucket(2, id))`)
	if n, err := ingest(t, cnxn, "keep", adbc.OptionValueIngestModeAppend, strictRows(t, 0, 2, 500, false, "score")); err != nil || n != 1000 {
		t.Fatalf("append: %d, %v", n, err)
	}
	const all = `SELECT count(*), sum(id), count(name) FROM keep`
	want := "1000 | 499500 | 1000"
	wantRows(t, cnxn, all, want)
	before := localTable(t, s, "keep")
	files := dataFiles(t, before)
	snaps := snapshotCount(t, before)
	check := func(what string) {
		t.Helper()
		waitFiles(t, s, "keep", files)
		tbl := localTable(t, s, "keep")
		if got := snapshotCount(t, tbl); got != snaps {
			t.Fatalf("%s: %d snapshots, want %d", what, got, snaps)
		}
		if tbl.Metadata().TableUUID() != before.Metadata().TableUUID() {
			t.Fatalf("%s: the table was made anew", what)
		}
		wantRows(t, cnxn, all, want)
		wantNoStaging(t, s)
	}

	// Same shape (id, name, score): a NULL in the NOT NULL name column, in
	// the third batch, after the first two went to the workers.
	_, err := ingest(t, cnxn, "keep", adbc.OptionValueIngestModeReplace, strictRows(t, 1, 3, 200, true, "score"))
	if err == nil || !strings.Contains(err.Error(), "name") {
		t.Fatalf("NULL into NOT NULL: %v", err)
	}
	wantStatus(t, err, adbc.StatusInvalidArgument)
	check("NULL into NOT NULL")

	// Same shape, the client's stream breaks after its first batch.
	_, err = ingestCancel(t, cnxn, "keep", adbc.OptionValueIngestModeReplace, &failAfter{RecordReader: strictRows(t, 5000, 3, 200, false, "score"), n: 1})
	if err == nil {
		t.Fatal("a broken client stream succeeded")
	}
	check("same shape, broken stream")

	// New shape: a broken stream and a NULL in a column the stream says is
	// NOT NULL, each after rows were written into the staging table.
	_, err = ingestCancel(t, cnxn, "keep", adbc.OptionValueIngestModeReplace, &failAfter{RecordReader: strictRows(t, 0, 3, 200, false, "extra"), n: 2})
	if err == nil {
		t.Fatal("a broken client stream succeeded")
	}
	check("new shape, broken stream")
	_, err = ingest(t, cnxn, "keep", adbc.OptionValueIngestModeReplace, strictRows(t, 0, 3, 200, true, "extra"))
	if err == nil || !strings.Contains(err.Error(), "NULL") {
		t.Fatalf("new shape, NULL into NOT NULL: %v", err)
	}
	check("new shape, NULL into NOT NULL")
	if got := localTables(t, s); !slices.Equal(got, []string{"keep"}) {
		t.Fatalf("tables %v", got)
	}

	// After all that, a good replace still works in place.
	if n, err := ingest(t, cnxn, "keep", adbc.OptionValueIngestModeReplace, strictRows(t, 7, 1, 3, false, "score")); err != nil || n != 3 {
		t.Fatalf("replace: %d, %v", n, err)
	}
	wantRows(t, cnxn, `SELECT id, name FROM keep`, "7 | s7", "8 | s8", "9 | s9")
	if got := snapshotCount(t, localTable(t, s, "keep")); got != snaps+1 {
		t.Fatalf("%d snapshots, want %d", got, snaps+1)
	}
}

// strictRows is a stream of batches of n rows each: id and name, both
// NOT NULL, and a nullable double column named third (table keep's shape
// with "score", another with anything else); with bad, the name column of
// the last batch holds a NULL.
func strictRows(t testing.TB, start, batches, n int, bad bool, third string) array.RecordReader {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: third, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	return rowStream(t, sc, start, batches, n, func(bld *array.RecordBuilder, b, id int) {
		bld.Field(0).(*array.Int64Builder).Append(int64(id))
		if bad && b == batches-1 && id == start+b*n+n/2 {
			bld.Field(1).AppendNull()
		} else {
			bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("s%d", id))
		}
		bld.Field(2).(*array.Float64Builder).Append(float64(id))
	})
}

// TestIngestReplaceConcurrentAppends: appends committed while a same-shape
// replace runs are never carried into the replace's snapshot (which holds
// exactly the stream's rows) nor lost after it: the table ends with the
// last replace's rows plus every append committed after it.
func TestIngestReplaceConcurrentAppends(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	// Snapshot isolation: iceberg-go's own replay would let concurrent
	// appends into a replayed overwrite; the replace must not rely on it.
	execUpdate(t, cnxn, `CREATE TABLE busy (id BIGINT NOT NULL, name VARCHAR, score DOUBLE) WITH ('write.update.isolation-level' = 'snapshot')`)
	if _, err := ingest(t, cnxn, "busy", adbc.OptionValueIngestModeAppend, ingestRows(t, 0, 1, 100)); err != nil {
		t.Fatal(err)
	}
	const appenders, appends, replaces, replaceRows = 3, 15, 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, appenders*appends+replaces)
	for c := range appenders {
		conn := adbcConn(t, s.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range appends {
				id := 1_000_000 + c*1000 + i
				if _, err := tryUpdate(t, conn, fmt.Sprintf(`INSERT INTO busy VALUES (%d, 'a', 0)`, id)); err != nil {
					errs <- fmt.Errorf("append %d: %w", id, err)
				}
			}
		}()
	}
	replaced := 0
	var replaceErr error
	for r := range replaces {
		_, err := ingest(t, cnxn, "busy", adbc.OptionValueIngestModeReplace, ingestRows(t, r*1000, 1, replaceRows))
		switch {
		case err == nil:
			replaced++
		case strings.Contains(err.Error(), "commit conflict"):
			// A replace that lost every attempt is aborted, nothing committed.
		default:
			replaceErr = err
		}
	}
	wg.Wait()
	if replaceErr != nil {
		t.Fatal(replaceErr)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if replaced == 0 {
		t.Fatal("no replace got through")
	}
	tbl := localTable(t, s, "busy")
	// Walk the history from the current snapshot: every replace snapshot
	// holds exactly one stream; the appends after the last one are all
	// there.
	var after int
	seenReplace := false
	for snap := tbl.CurrentSnapshot(); snap != nil; {
		if snap.Summary != nil && snap.Summary.Operation == table.OpOverwrite {
			got := mustQuery(t, cnxn, fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE id >= 1000000) FROM busy AT (VERSION => %d)`, snap.SnapshotID)).sorted()
			if !slices.Equal(got, []string{fmt.Sprint(replaceRows, " | 0")}) {
				t.Fatalf("replace snapshot %d holds %v, want only the %d rows of its stream", snap.SnapshotID, got, replaceRows)
			}
			seenReplace = true
		}
		if !seenReplace && snap.Summary != nil && snap.Summary.Operation == table.OpAppend {
			after++
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = tbl.SnapshotByID(*snap.ParentSnapshotID)
	}
	if !seenReplace {
		t.Fatal("no replace snapshot in the history")
	}
	wantRows(t, cnxn, `SELECT count(*) FROM busy`, fmt.Sprint(replaceRows+after))
}
