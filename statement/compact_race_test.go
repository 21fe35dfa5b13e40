package statement_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/icefloe/icefloe/internal/parse"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/statement"
)

// raceEnv is a one-worker cluster and its coordinator's planner.
type raceEnv struct {
	s    *cluster.Standalone
	p    *planner.Planner
	sess planner.Session
	dir  string
}

func startRaceEnv(t *testing.T) *raceEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	s, err := cluster.StartStandalone(ctx, cluster.StandaloneOptions{Listen: "127.0.0.1:0", Workers: 1, DataDir: dir,
		WorkerEngine: engine.Options{Threads: 1, MemoryLimit: "512MB"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &raceEnv{s: s, p: s.Coordinator.Planner, sess: planner.Session{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema}, dir: dir}
}

func (e *raceEnv) exec(t *testing.T, q string) {
	t.Helper()
	if _, err := statement.New(e.p).Exec(context.Background(), e.sess, parse.Must(q)); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (e *raceEnv) count(t *testing.T, name string) int64 {
	t.Helper()
	pin, err := e.s.Mounts.LoadTable(context.Background(), catalog.TableRef{Catalog: e.sess.Catalog, Schema: e.sess.Schema, Table: name})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := pin.Table.Scan().ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		n += rec.NumRows()
		rec.Release()
	}
	return n
}

// parquetOnDisk lists the table's Parquet files on disk.
func (e *raceEnv) parquetOnDisk(t *testing.T, name string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	root := filepath.Join(e.dir, "warehouse")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") && strings.Contains(p, "/"+name+"/") {
			out[p] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compact runs rewrite_data_files on name while once runs a concurrent
// statement between the workers' writes and the commit.
func (e *raceEnv) compact(t *testing.T, name, concurrent string) error {
	t.Helper()
	var once sync.Once
	statement.SetBeforeRewriteCommit(func() {
		once.Do(func() { e.exec(t, concurrent) })
	})
	defer statement.SetBeforeRewriteCommit(nil)
	_, err := statement.New(e.p).Plan(context.Background(), e.sess,
		parse.Must(fmt.Sprintf(`CALL system.rewrite_data_files(table => '%s', options => map('min-input-files', '2'))`, name)))
	return err
}

// TestRewriteConflicts races commits against a compaction's commit, on v2
// and v3 tables: a concurrent append survives (the rewrite is built again
// on top of it, also when it drops delete files); a
// concurrent delete of rows in rewritten files, by delete file or by
// rewriting them, fails the compaction with ErrConflict, keeps the
// delete's effect and leaves none of the compaction's files behind.
func TestRewriteConflicts(t *testing.T) {
	e := startRaceEnv(t)
	for _, v := range []string{"2", "3"} {
		name := "race" + v
		e.exec(t, fmt.Sprintf(`CREATE TABLE %s (id BIGINT, p INTEGER) PARTITIONED BY (p) WITH ('format-version' = '%s', 'write.delete.mode' = 'merge-on-read')`, name, v))
		insert := func(from int) {
			for i := from; i < from+6; i++ {
				e.exec(t, fmt.Sprintf(`INSERT INTO %s VALUES (%d, %d), (%d, %d)`, name, i, i%2, i+1000, i%2))
			}
		}
		insert(0)
		if err := e.compact(t, name, `INSERT INTO `+name+` VALUES (500, 1)`); err != nil {
			t.Fatalf("v%s: compaction with a concurrent append: %v", v, err)
		}
		if got := e.count(t, name); got != 13 {
			t.Fatalf("v%s: %d rows after compaction racing an append, want 13", v, got)
		}

		insert(10)
		e.exec(t, `DELETE FROM `+name+` WHERE id = 10`) // a delete file the next rewrite drops
		if err := e.compact(t, name, `INSERT INTO `+name+` VALUES (501, 0)`); err != nil {
			t.Fatalf("v%s: compaction dropping delete files with a concurrent append: %v", v, err)
		}
		if got := e.count(t, name); got != 25 {
			t.Fatalf("v%s: %d rows after the second compaction, want 25", v, got)
		}

		for i, del := range []string{`DELETE FROM %s WHERE id = 11`, `DELETE FROM %s WHERE id %% 7 = 3`} {
			insert(20 + 10*i)
			before := e.parquetOnDisk(t, name)
			want := e.count(t, name)
			err := e.compact(t, name, fmt.Sprintf(del, name))
			if !errors.Is(err, planner.ErrConflict) {
				t.Fatalf("v%s: compaction racing %q: %v, want ErrConflict", v, del, err)
			}
			after := e.count(t, name)
			if after >= want {
				t.Fatalf("v%s: the concurrent %q was lost: %d rows, had %d", v, del, after, want)
			}
			for p := range e.parquetOnDisk(t, name) {
				if !before[p] && !strings.Contains(p, "delete") && !referenced(t, e, name, p) {
					t.Fatalf("v%s: the failed compaction left %s", v, p)
				}
			}
		}
	}
}

// referenced reports whether the current snapshot of name reads path.
func referenced(t *testing.T, e *raceEnv, name, path string) bool {
	t.Helper()
	pin, err := e.s.Mounts.LoadTable(context.Background(), catalog.TableRef{Catalog: e.sess.Catalog, Schema: e.sess.Schema, Table: name})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := pin.Table.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		files := []iceberg.DataFile{task.File}
		files = append(append(files, task.DeleteFiles...), task.DeletionVectorFiles...)
		for _, f := range files {
			if strings.TrimPrefix(f.FilePath(), "file://") == path {
				return true
			}
		}
	}
	return false
}

// TestRewritePositionDeletesConflict: a DELETE committed while
// rewrite_position_delete_files writes its merged file fails the rewrite
// with ErrConflict; the DELETE stands and the merged file is deleted.
func TestRewritePositionDeletesConflict(t *testing.T) {
	e := startRaceEnv(t)
	e.exec(t, `CREATE TABLE pdrace (id BIGINT, p INTEGER) WITH ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')`)
	for i := 0; i < 4; i++ {
		e.exec(t, fmt.Sprintf(`INSERT INTO pdrace VALUES (%d, 0), (%d, 0), (%d, 0)`, 3*i, 3*i+1, 3*i+2))
	}
	for _, id := range []int{0, 4, 8} {
		e.exec(t, fmt.Sprintf(`DELETE FROM pdrace WHERE id = %d`, id))
	}
	before := e.parquetOnDisk(t, "pdrace")
	var once sync.Once
	statement.SetBeforeRewriteCommit(func() { once.Do(func() { e.exec(t, `DELETE FROM pdrace WHERE id = 10`) }) })
	defer statement.SetBeforeRewriteCommit(nil)
	_, err := statement.New(e.p).Plan(context.Background(), e.sess, parse.Must(`CALL system.rewrite_position_delete_files(table => 'pdrace', options => map('min-input-files', '2'))`))
	if !errors.Is(err, planner.ErrConflict) {
		t.Fatalf("rewrite racing a DELETE: %v, want ErrConflict", err)
	}
	if got := e.count(t, "pdrace"); got != 8 {
		t.Fatalf("%d rows, want 8 (the concurrent DELETE stands)", got)
	}
	for p := range e.parquetOnDisk(t, "pdrace") {
		if !before[p] && !referenced(t, e, "pdrace", p) {
			t.Fatalf("the failed rewrite left %s", p)
		}
	}
}
