package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/partstats"
)

// statsOf reads the partition statistics of tbl's current snapshot, by
// partition key; ok is false when it has none.
func statsOf(t *testing.T, tbl *table.Table) (map[string]partstats.Row, bool) {
	t.Helper()
	for f := range tbl.Metadata().PartitionStatistics() {
		if f.SnapshotID != tbl.CurrentSnapshot().SnapshotID {
			continue
		}
		rows, err := partstats.Read(t.Context(), tbl, f)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]partstats.Row{}
		for _, r := range rows {
			out[r.Key] = r
		}
		return out, true
	}
	return nil, false
}

// TestPartitionStatistics: a table with 'icefloe.partition-stats.enabled'
// gets each new snapshot's partition statistics on commit, with the
// record and file counts of every partition (position deletes included);
// EXPLAIN estimates rows from them for the partitions a query reads, and
// from manifest statistics for a table without them;
// compute_partition_stats writes them on demand; expire_snapshots deletes
// the expired snapshots' statistics files.
func TestPartitionStatistics(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	for _, l := range maintLayouts {
		t.Run(l.name, func(t *testing.T) {
			name := newMaintTable(t, cnxn, "ps", l, ", 'icefloe.partition-stats.enabled' = 'true'")
			tbl := localTable(t, s, name)
			stats, ok := statsOf(t, tbl)
			if l.part == "" {
				// Partition statistics are for partitioned tables.
				if ok {
					t.Fatal("an unpartitioned table has partition statistics")
				}
				text := strings.Join(mustQuery(t, cnxn, `EXPLAIN SELECT * FROM `+name).rows, "\n")
				if !strings.Contains(text, "(manifest statistics)") {
					t.Fatalf("EXPLAIN of an unpartitioned table:\n%s", text)
				}
				_, err := query(t, cnxn, `CALL system.compute_partition_stats('`+name+`')`)
				wantStatus(t, err, adbc.StatusInvalidArgument)
				return
			}
			if !ok {
				t.Fatal("no partition statistics for the current snapshot")
			}
			// Expected: rows by partition value, as DuckDB counts them.
			live := map[string]int64{}
			for _, r := range mustQuery(t, cnxn, `SELECT p, count(*) FROM `+name+` GROUP BY p`).rows {
				f := cellsOf(r)
				live[f[0]] = atoi(t, f[1])
			}
			tasks, err := tbl.Scan().PlanFiles(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var total, files int64
			seen := map[string]bool{}
			for _, task := range tasks {
				key, err := partstats.KeyOf(partstats.UnifiedType(tbl.Metadata()), task.File.SpecID(), task.File.Partition())
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := stats[key]; !ok {
					t.Fatalf("no statistics for partition %s", key)
				}
				if !seen[key] {
					seen[key] = true
					total += stats[key].Live()
				}
				files++
			}
			var want, dataFiles int64
			for _, n := range live {
				want += n
			}
			for _, r := range stats {
				dataFiles += int64(r.DataFiles)
			}
			if total != want || dataFiles != files || len(stats) != len(live) {
				t.Fatalf("statistics: %d live rows in %d files over %d partitions; table: %d rows, %d files, %d partitions", total, dataFiles, len(stats), want, files, len(live))
			}
			res := mustQuery(t, cnxn, `EXPLAIN SELECT * FROM `+name+` WHERE p = 1`)
			text := strings.Join(res.rows, "\n")
			if wantLine := fmt.Sprintf("~%d rows in 1 partitions (partition statistics)", live["1"]); !strings.Contains(text, wantLine) {
				t.Fatalf("EXPLAIN does not estimate %q:\n%s", wantLine, text)
			}
			res = mustQuery(t, cnxn, `CALL system.expire_snapshots(table => '`+name+`', older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)`)
			if row := cellsOf(res.rows[0]); atoi(t, row[5]) != int64(snapshotCount(t, tbl)-1) {
				t.Fatalf("expire_snapshots %q: want %d statistics files deleted", res.rows[0], snapshotCount(t, tbl)-1)
			}
		})
	}
	execUpdate(t, cnxn, `CREATE TABLE nostats `+maintCols+` PARTITIONED BY (p)`)
	smallInserts(t, func(q string) int64 { return execUpdate(t, cnxn, q) }, "nostats")
	text := strings.Join(mustQuery(t, cnxn, `EXPLAIN SELECT * FROM nostats WHERE p = 1`).rows, "\n")
	if !strings.Contains(text, "~24 rows (manifest statistics)") {
		t.Fatalf("EXPLAIN without statistics:\n%s", text)
	}
	res := mustQuery(t, cnxn, `CALL system.compute_partition_stats('nostats')`)
	if len(res.rows) != 1 || !strings.Contains(res.rows[0], "partition-stats-") {
		t.Fatalf("compute_partition_stats: %q", res.rows)
	}
	if _, ok := statsOf(t, localTable(t, s, "nostats")); !ok {
		t.Fatal("compute_partition_stats registered no statistics")
	}
	text = strings.Join(mustQuery(t, cnxn, `EXPLAIN SELECT * FROM nostats WHERE p = 1`).rows, "\n")
	if !strings.Contains(text, "~24 rows in 1 partitions (partition statistics)") {
		t.Fatalf("EXPLAIN after compute_partition_stats:\n%s", text)
	}
}
