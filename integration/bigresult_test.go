package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/membudget"
)

// TestLongStringsStream: a result of long strings (600,000 rows of about
// 1 KiB in three data files, streamed straight from the files by the
// workers) comes through the Go ADBC driver, every endpoint at once,
// while the query may hold 512 MiB of Go-side Arrow buffers: each stream
// holds a batch of worker.scanBatchRows and the Parquet reader's page
// (measured: 315 MiB for the three streams), not what iceberg-go's reader
// decoded ahead, whole files in batches of 131,072 rows (788 MiB, and
// the query failed with RESOURCE_EXHAUSTED).
func TestLongStringsStream(t *testing.T) {
	const perQuery = 512 << 20
	budget := membudget.New(0, perQuery, nil)
	s := StartCluster(t, Workers(2), WithLimits(cluster.Limits{Memory: budget}))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE TABLE longs (s VARCHAR)")
	for i := range 3 {
		execUpdate(t, cnxn, fmt.Sprintf("INSERT INTO longs SELECT repeat('x', 1000) || i FROM range(%d, %d) t(i)", i*200000, (i+1)*200000))
	}
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("SELECT s FROM longs"); err != nil {
		t.Fatal(err)
	}
	var held atomic.Int64 // the most the read held, sampled
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			held.Store(max(held.Load(), budget.Used()))
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows, bytes int64
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0).(*array.String)
		rows += int64(col.Len())
		bytes += int64(col.ValueLen(0)) * int64(col.Len())
	}
	close(stop)
	<-sampled
	if err := rdr.Err(); err != nil {
		t.Fatalf("after %d rows: %v", rows, err)
	}
	if rows != 600000 || bytes < 600000*1000 {
		t.Fatalf("%d rows, %d bytes", rows, bytes)
	}
	t.Logf("%d MiB streamed; the most Go-side Arrow buffers the read held at once: %d MiB (the inserts: %d MiB)", bytes>>20, held.Load()>>20, budget.Peak()>>20)
}
