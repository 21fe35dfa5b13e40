package integration

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
)

// benchInserts is how many INSERTs BenchmarkCompactSmallInserts runs
// (ICEFLOE_BENCH_INSERTS, default 10,000).
func benchInserts() int {
	if n, err := strconv.Atoi(os.Getenv("ICEFLOE_BENCH_INSERTS")); err == nil && n > 0 {
		return n
	}
	return 10_000
}

// medianQuery runs q reps times and returns the median wall time and the
// rows of the last run.
func medianQuery(b *testing.B, cnxn adbc.Connection, q string, reps int) (time.Duration, []string) {
	b.Helper()
	var times []time.Duration
	var rows []string
	for range reps {
		t0 := time.Now()
		rows = mustQuery(b, cnxn, q).sorted()
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	return times[len(times)/2], rows
}

// BenchmarkCompactSmallInserts: a table receives many small INSERTs (ten
// rows each, as a trickle of events would), so it holds one tiny file per
// INSERT; one rewrite_data_files puts it back to a few files. Reported:
// files and bytes before and after, the rewrite's time, and the median
// time of a scan-and-aggregate and of a point lookup before and after
// (the same answers). Every 500 INSERTs expire_snapshots trims the
// history, as a table under maintenance would; it deletes no data file,
// since every file is live. Run with -benchtime=1x.
func BenchmarkCompactSmallInserts(b *testing.B) {
	n := benchInserts()
	for i := 0; i < b.N; i++ {
		s := StartCluster(b, Workers(2))
		cnxn := adbcConn(b, s.Addr())
		execUpdate(b, cnxn, `CREATE TABLE events (id BIGINT NOT NULL, kind VARCHAR, v DOUBLE) WITH ('commit.manifest-merge.enabled' = true)`)
		t0 := time.Now()
		for j := 0; j < n; j++ {
			vals := make([]string, 10)
			for k := range vals {
				id := j*10 + k
				vals[k] = fmt.Sprintf("(%d, 'kind%d', %d.5)", id, id%7, id%1000)
			}
			execUpdate(b, cnxn, `INSERT INTO events VALUES `+strings.Join(vals, ", "))
			if (j+1)%500 == 0 {
				mustQuery(b, cnxn, `CALL system.expire_snapshots(table => 'events', older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)`)
			}
		}
		inserts := time.Since(t0)
		files := func() (int, int64) {
			data, _ := liveDataFiles(b, localTable(b, s, "events"))
			var size int64
			for _, f := range data {
				size += f.FileSizeBytes()
			}
			return len(data), size
		}
		const scan = `SELECT kind, count(*), sum(v), max(id) FROM events GROUP BY kind`
		const point = `SELECT * FROM events WHERE id = 4242`
		filesBefore, bytesBefore := files()
		scanBefore, scanRows := medianQuery(b, cnxn, scan, 5)
		pointBefore, pointRows := medianQuery(b, cnxn, point, 5)

		t0 = time.Now()
		res := mustQuery(b, cnxn, `CALL system.rewrite_data_files('events')`)
		rewrite := time.Since(t0)
		filesAfter, bytesAfter := files()
		scanAfter, scanRows2 := medianQuery(b, cnxn, scan, 5)
		pointAfter, pointRows2 := medianQuery(b, cnxn, point, 5)
		if !slices.Equal(scanRows, scanRows2) || !slices.Equal(pointRows, pointRows2) || filesAfter >= filesBefore {
			b.Fatalf("compaction changed the answers or left %d files of %d (%q)", filesAfter, filesBefore, res.rows)
		}
		b.ReportMetric(float64(n), "inserts")
		b.ReportMetric(inserts.Seconds(), "insert_s")
		b.ReportMetric(float64(filesBefore), "files_before")
		b.ReportMetric(float64(filesAfter), "files_after")
		b.ReportMetric(float64(bytesBefore), "bytes_before")
		b.ReportMetric(float64(bytesAfter), "bytes_after")
		b.ReportMetric(rewrite.Seconds(), "rewrite_s")
		b.ReportMetric(scanBefore.Seconds(), "scan_before_s")
		b.ReportMetric(scanAfter.Seconds(), "scan_after_s")
		b.ReportMetric(pointBefore.Seconds(), "point_before_s")
		b.ReportMetric(pointAfter.Seconds(), "point_after_s")
	}
}
