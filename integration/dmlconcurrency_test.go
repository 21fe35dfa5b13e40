package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icefloe/icefloe/cluster"
)

// Concurrent writers on one table through real clients: a stream of
// one-row INSERTs beside UPDATE, DELETE and MERGE on keys of their own,
// at both isolation levels; and DELETEs racing INSERTs of rows they
// match, where a real conflict must fail the DELETE rather than lose
// what it deletes.

// isolationProps sets the isolation level of every row-level operation.
func isolationProps(level string) string {
	return fmt.Sprintf(`('write.delete.isolation-level' = '%[1]s', 'write.update.isolation-level' = '%[1]s', 'write.merge.isolation-level' = '%[1]s')`, level)
}

// inserters runs n clients of one-row INSERTs into tbl, each row (k,
// owner -1, i) with keys of its own from keyOf(client, i), until stop is
// closed and each has made at least min; it returns every key inserted,
// and fails the test on any error.
type inserters struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	keys []int64
	took []time.Duration // each INSERT's time, client-side
	errs []error
	stop chan struct{}
}

func startInserters(t testing.TB, s *cluster.Standalone, tbl string, n, min int, keyOf func(c, i int) int64) *inserters {
	t.Helper()
	ins := &inserters{stop: make(chan struct{})}
	for c := range n {
		cnxn := adbcConn(t, s.Addr())
		ins.wg.Add(1)
		go func() {
			defer ins.wg.Done()
			for i := 0; ; i++ {
				if i >= min {
					select {
					case <-ins.stop:
						return
					default:
					}
				}
				k := keyOf(c, i)
				q := fmt.Sprintf(`INSERT INTO %s VALUES (%d, -1, %d)`, tbl, k, i)
				t0 := time.Now()
				n, err := tryUpdate(t, cnxn, q)
				took := time.Since(t0)
				ins.mu.Lock()
				if err == nil && n != 1 {
					err = fmt.Errorf("counted %d", n)
				}
				if err != nil {
					ins.errs = append(ins.errs, fmt.Errorf("%s: %w", q, err))
					ins.mu.Unlock()
					return
				}
				ins.keys = append(ins.keys, k)
				ins.took = append(ins.took, took)
				ins.mu.Unlock()
			}
		}()
	}
	return ins
}

// waitFor waits until the inserters have inserted n rows (or failed).
func (ins *inserters) waitFor(t testing.TB, n int) {
	t.Helper()
	for {
		ins.mu.Lock()
		done := len(ins.keys) >= n || len(ins.errs) > 0
		ins.mu.Unlock()
		if done {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wait stops the inserters and returns the keys they inserted.
func (ins *inserters) wait(t testing.TB) []int64 {
	t.Helper()
	close(ins.stop)
	ins.wg.Wait()
	for _, err := range ins.errs {
		t.Error(err)
	}
	slices.Sort(ins.keys)
	return ins.keys
}

// TestDMLBesideInserts: 16 clients of one-row INSERTs on a table while
// three others run UPDATE, MERGE and DELETE on keys of their own: every
// statement commits (retried within the commit as it needs), at both
// isolation levels, and the table ends holding exactly the inserted rows
// and the DML clients' rows as a model of their statements says.
// Before, the DML statements' commits were checked against every
// concurrent append (AlwaysTrue) and lost their races to the inserts of
// the same coordinator: they failed with ABORTED.
func TestDMLBesideInserts(t *testing.T) {
	s := StartCluster(t, Workers(2))
	setup := adbcConn(t, s.Addr())
	for _, level := range []string{"serializable", "snapshot"} {
		t.Run(level, func(t *testing.T) {
			tbl := "dml_" + level
			execUpdate(t, setup, fmt.Sprintf(`CREATE TABLE %s (k BIGINT, owner INTEGER, v BIGINT)`, tbl))
			execUpdate(t, setup, fmt.Sprintf(`ALTER TABLE %s SET TBLPROPERTIES %s`, tbl, isolationProps(level)))
			const dmlClients, rounds = 3, 3
			// Each DML client's keys: 1000·(c+1) + j, seeded in a file of
			// its own (a shared file would make them rewrite each other's).
			model := make([]map[int64]int64, dmlClients)
			for c := range dmlClients {
				model[c] = map[int64]int64{}
				var vals []string
				for j := range 10 {
					k := int64(1000*(c+1) + j)
					model[c][k] = 0
					vals = append(vals, fmt.Sprintf("(%d, %d, 0)", k, c))
				}
				execUpdate(t, setup, fmt.Sprintf(`INSERT INTO %s VALUES %s`, tbl, strings.Join(vals, ", ")))
			}
			before := s.Coordinator.Planner.Commits()
			attempts0, conflicts0 := before.Attempts.Load(), before.Conflicts.Load()
			ins := startInserters(t, s, tbl, 16, 3, func(c, i int) int64 { return int64(1_000_000 + 100_000*c + i) })
			var wg sync.WaitGroup
			var statements atomic.Int64
			dmlErrs := make(chan error, dmlClients*rounds*3)
			for c := range dmlClients {
				cnxn := adbcConn(t, s.Addr())
				wg.Add(1)
				go func() {
					defer wg.Done()
					m, lo := model[c], int64(1000*(c+1))
					run := func(q string, want int64) bool {
						n, err := tryUpdate(t, cnxn, q)
						statements.Add(1)
						if err == nil && n != want {
							err = fmt.Errorf("counted %d, want %d", n, want)
						}
						if err != nil {
							dmlErrs <- fmt.Errorf("client %d: %s: %w", c, q, err)
							return false
						}
						return true
					}
					for r := range rounds {
						// UPDATE every row of the client's.
						for k := range m {
							m[k]++
						}
						if !run(fmt.Sprintf(`UPDATE %s SET v = v + 1 WHERE k BETWEEN %d AND %d`, tbl, lo, lo+999), int64(len(m))) {
							return
						}
						// MERGE: one key updated, one new key inserted.
						upd, add := lo+int64(r), lo+100+int64(r)
						m[upd], m[add] = int64(100+r), 7
						if !run(fmt.Sprintf(`MERGE INTO %[1]s USING (VALUES (%[2]d, %[3]d), (%[4]d, 7)) AS s(k, v) ON %[1]s.k = s.k
							WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.k, %[5]d, s.v)`, tbl, upd, 100+r, add, c), 2) {
							return
						}
						// DELETE one key.
						del := lo + 5 + int64(r)
						delete(m, del)
						if !run(fmt.Sprintf(`DELETE FROM %s WHERE k = %d`, tbl, del), 1) {
							return
						}
					}
				}()
			}
			wg.Wait()
			keys := ins.wait(t)
			close(dmlErrs)
			failed := 0
			for err := range dmlErrs {
				failed++
				t.Error(err)
			}
			after := s.Coordinator.Planner.Commits()
			t.Logf("%s: %d DML statements (%d failed) beside %d inserts; %d commit attempts, %d conflicts",
				level, statements.Load(), failed, len(keys), after.Attempts.Load()-attempts0, after.Conflicts.Load()-conflicts0)
			if failed > 0 {
				t.FailNow()
			}
			var sum int64
			for _, k := range keys {
				sum += k
			}
			wantRows(t, setup, fmt.Sprintf(`SELECT count(*), count(DISTINCT k), sum(k) FROM %s WHERE owner = -1`, tbl),
				fmt.Sprintf("%d | %d | %d", len(keys), len(keys), sum))
			var want []string
			for c := range dmlClients {
				for _, k := range slices.Sorted(maps.Keys(model[c])) {
					want = append(want, fmt.Sprintf("%d | %d | %d", k, c, model[c][k]))
				}
			}
			wantRows(t, setup, fmt.Sprintf(`SELECT k, owner, v FROM %s WHERE owner >= 0`, tbl), want...)
		})
	}
}

// TestDeleteBesideMatchingInserts: under serializable isolation a
// DELETE's commit conflicts with a concurrent INSERT of a row its WHERE
// matches, and never loses it: every DELETE that committed left no
// matching row in its own snapshot (a row inserted before it commits is
// deleted or the DELETE fails), and no row it deleted is ever back. The
// DELETEs that fail say so with ABORTED, nothing committed. Each DELETE
// runs under a statement id of its own, to find its snapshot.
func TestDeleteBesideMatchingInserts(t *testing.T) {
	s := StartCluster(t, Workers(2))
	setup := adbcConn(t, s.Addr())
	execUpdate(t, setup, `CREATE TABLE hot (k BIGINT, owner INTEGER, n BIGINT)`)
	// One insert in six matches the DELETE (k < 1000000).
	ins := startInserters(t, s, "hot", 6, 15, func(c, i int) int64 {
		k := int64(1_000_000 + 10_000*c + i)
		if i%6 == 0 {
			k -= 1_000_000
		}
		return k
	})
	deleter := adbcConn(t, s.Addr())
	// DELETEs run until several have committed and several have failed
	// (at most maxDeletes): how they fall depends on the machine's speed.
	const maxDeletes, enough = 40, 3
	committed := map[string]bool{}
	deletes, failed := 0, 0
	for ; deletes < maxDeletes && (len(committed) < enough || failed < enough); deletes++ {
		if deletes == 0 {
			ins.waitFor(t, 12) // the inserts have begun
		}
		id := fmt.Sprintf("purge-%d", deletes)
		stmt := newStatement(t, deleter, `DELETE FROM hot WHERE k < 1000000`)
		if err := stmt.SetOption("adbc.flight.sql.rpc.call_header.x-icefloe-statement-id", id); err != nil {
			t.Fatal(err)
		}
		_, err := stmt.ExecuteUpdate(context.Background())
		stmt.Close()
		switch {
		case err == nil:
			committed[id] = true
		case strings.Contains(err.Error(), "conflict") && strings.Contains(err.Error(), "Aborted"):
			failed++
			if !strings.Contains(err.Error(), "nothing was committed") {
				t.Fatalf("%s: %v", id, err)
			}
		default:
			t.Fatalf("%s: %v", id, err)
		}
	}
	keys := ins.wait(t)
	t.Logf("%d of %d DELETEs committed beside %d inserts", len(committed), deletes, len(keys))

	keysAt := func(version string) map[string]bool {
		out := map[string]bool{}
		for _, r := range mustQuery(t, setup, `SELECT k FROM hot AT (VERSION => `+version+`) WHERE k < 1000000`).rows {
			out[r] = true
		}
		return out
	}
	final := keysAt("'main'")
	for id := range committed {
		res := mustQuery(t, setup, `SELECT snapshot_id, parent_id FROM "hot$snapshots" WHERE summary['icefloe.statement-id'] = '`+id+`'`)
		if len(res.rows) == 0 {
			continue // it matched no row: nothing to commit
		}
		if len(res.rows) != 1 {
			t.Fatalf("%s: snapshots %q, want one", id, res.rows)
		}
		ids := strings.Split(res.rows[0], " | ")
		if at := keysAt(ids[0]); len(at) != 0 {
			t.Fatalf("%s committed snapshot %s holding rows it matches: %v", id, ids[0], slices.Sorted(maps.Keys(at)))
		}
		for k := range keysAt(ids[1]) {
			if final[k] {
				t.Fatalf("%s deleted k = %s, which is in the table again", id, k)
			}
		}
	}
	// Every inserted row is there unless a DELETE removed it.
	all := map[string]bool{}
	for _, r := range mustQuery(t, setup, `SELECT k FROM hot`).rows {
		all[r] = true
	}
	for _, k := range keys {
		ks := strconv.FormatInt(k, 10)
		if k >= 1_000_000 && !all[ks] {
			t.Fatalf("inserted row k = %d, which no DELETE matches, is gone", k)
		}
		if k < 1_000_000 && !all[ks] && len(committed) == 0 {
			t.Fatalf("inserted row k = %d is gone, and no DELETE committed", k)
		}
	}
	wantRows(t, setup, `SELECT count(*) = count(DISTINCT k) FROM hot`, "true")
}
