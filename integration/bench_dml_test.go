package integration

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// benchEnvInt reads a positive integer from the environment, def
// without one.
func benchEnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// percentile is the p-th percentile (0 < p ≤ 100) of sorted durations,
// in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return float64(sorted[min(max(i, 0), len(sorted)-1)].Microseconds()) / 1000
}

// BenchmarkDMLBesideInserts (docs/benchmarks.md, "UPDATE, DELETE and
// MERGE beside 16 inserting clients"): 16 ADBC clients of one-row
// INSERTs into one table (ICEFLOE_BENCH_INSERTERS) while 2 others run
// UPDATE, DELETE and MERGE on keys of their own in turn
// (ICEFLOE_BENCH_DML_CLIENTS), for ICEFLOE_BENCH_SECONDS (60), at the
// isolation level ICEFLOE_BENCH_ISOLATION (serializable). Reported:
// commit attempts per statement (all statements; the coordinator's
// commit counters), conflicts, DML statements committed and failed, DML
// and INSERT p50/p99 latency as clients see it, INSERTs per second.
// Never asserted. Run with -benchtime=1x:
//
//	go test -tags duckdb_arrow -run '^$' -bench DMLBesideInserts -benchtime 1x ./integration/
func BenchmarkDMLBesideInserts(b *testing.B) {
	inserters := benchEnvInt("ICEFLOE_BENCH_INSERTERS", 16)
	clients := benchEnvInt("ICEFLOE_BENCH_DML_CLIENTS", 2)
	dur := time.Duration(benchEnvInt("ICEFLOE_BENCH_SECONDS", 60)) * time.Second
	level := os.Getenv("ICEFLOE_BENCH_ISOLATION")
	if level == "" {
		level = "serializable"
	}
	for range b.N {
		s := StartCluster(b, Workers(2))
		setup := adbcConn(b, s.Addr())
		execUpdate(b, setup, `CREATE TABLE bench_dml (k BIGINT, owner INTEGER, v BIGINT)`)
		execUpdate(b, setup, `ALTER TABLE bench_dml SET TBLPROPERTIES `+isolationProps(level))
		for c := range clients {
			execUpdate(b, setup, fmt.Sprintf(`INSERT INTO bench_dml SELECT %d + i, %d, 0 FROM range(100) t(i)`, 1000*(c+1), c))
		}
		stats := s.Coordinator.Planner.Commits()
		attempts0, conflicts0, retries0 := stats.Attempts.Load(), stats.Conflicts.Load(), stats.Retries.Load()
		start := time.Now()
		ins := startInserters(b, s, "bench_dml", inserters, 1, func(c, i int) int64 { return int64(1_000_000 + 1_000_000*c + i) })
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			took   []time.Duration
			failed int
		)
		for c := range clients {
			cnxn := adbcConn(b, s.Addr())
			wg.Add(1)
			go func() {
				defer wg.Done()
				lo := 1000 * (c + 1)
				for r := 0; time.Since(start) < dur; r++ {
					k := lo + r%100
					var q string
					switch r % 3 {
					case 0:
						q = fmt.Sprintf(`UPDATE bench_dml SET v = v + 1 WHERE k = %d`, k)
					case 1:
						q = fmt.Sprintf(`MERGE INTO bench_dml USING (VALUES (%d, %d)) AS s(k, v) ON bench_dml.k = s.k
							WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.k, %d, s.v)`, k, r, c)
					default:
						q = fmt.Sprintf(`DELETE FROM bench_dml WHERE k = %d`, k)
					}
					t0 := time.Now()
					_, err := tryUpdate(b, cnxn, q)
					d := time.Since(t0)
					mu.Lock()
					if err != nil {
						failed++
						b.Logf("%s: %v", q, err)
					} else {
						took = append(took, d)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		keys := ins.wait(b)
		elapsed := time.Since(start)
		slices.Sort(took)
		slices.Sort(ins.took)
		statements := len(keys) + len(took) + failed
		b.ReportMetric(float64(stats.Attempts.Load()-attempts0)/float64(statements), "attempts/stmt")
		b.ReportMetric(float64(stats.Retries.Load()-retries0)/float64(statements), "retries/stmt")
		b.ReportMetric(float64(stats.Conflicts.Load()-conflicts0), "conflicts")
		b.ReportMetric(float64(len(took)), "dml-committed")
		b.ReportMetric(float64(failed), "dml-failed")
		b.ReportMetric(percentile(took, 50), "dml-p50-ms")
		b.ReportMetric(percentile(took, 99), "dml-p99-ms")
		b.ReportMetric(percentile(ins.took, 50), "insert-p50-ms")
		b.ReportMetric(percentile(ins.took, 99), "insert-p99-ms")
		b.ReportMetric(float64(len(keys))/elapsed.Seconds(), "inserts/s")
	}
}
