package worker

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/table"

	"github.com/apache/iceberg-go/codec"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/wire"
)

// writeTicket is a write fragment into target of sql over scans.
func (f *fixture) writeTicket(sql string, rewrite bool, match string, scans ...wire.Scan) (*wire.Ticket, *wire.Write) {
	f.t.Helper()
	t := f.ticket(sql, scans...)
	id := uuid.New()
	for i := 10; i < 16; i++ {
		id[i] = 0
	}
	w := &wire.Write{
		Table:            f.tbl.Identifier(),
		Display:          "local.default.t",
		MetadataLocation: f.tbl.MetadataLocation(),
		WriteUUID:        id.String(),
		Rewrite:          rewrite,
		MatchSQL:         match,
	}
	t.Write = w
	return t, w
}

// writeResults decodes the rows of a write fragment's stream.
func (f *fixture) writeResults(res result) []wire.WriteResult {
	f.t.Helper()
	if res.err != nil {
		f.t.Fatalf("write fragment: %v", res.err)
	}
	if res.schema.NumFields() != 1 || res.schema.Field(0).Name != wire.WriteResultColumn {
		f.t.Fatalf("result schema %s", res.schema)
	}
	var out []wire.WriteResult
	for _, row := range res.rows {
		var r wire.WriteResult
		raw, err := base64.StdEncoding.DecodeString(row) // ValueStr of binary
		if err != nil {
			f.t.Fatalf("result %q: %v", row, err)
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			f.t.Fatalf("decode %q: %v", row, err)
		}
		out = append(out, r)
	}
	return out
}

func dataDirFiles(t *testing.T, loc string) []string {
	t.Helper()
	loc = strings.TrimPrefix(loc, "file://")
	var out []string
	filepath.Walk(filepath.Join(loc, "data"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestWriteFragmentAppends(t *testing.T) {
	f := newFixture(t)
	sc := f.scanOf(f.tbl, "v", nil, nil, false)
	tkt, w := f.writeTicket(`SELECT * FROM v WHERE id >= 5`, false, "", sc)
	w.Project, w.InputColumns = `CAST(__q.__c0 AS BIGINT) AS "id", CAST(__q.__c1 AS VARCHAR) AS "s", CAST(__q.__c2 AS INTEGER) AS "g"`, 3
	before := len(dataDirFiles(t, f.tbl.Location()))
	results := f.writeResults(f.doGet(f.ctx, f.seal(tkt)))
	var rows int64
	md := f.tbl.Metadata()
	for _, r := range results {
		if r.Replaced != "" || len(r.DataFile) == 0 {
			t.Fatalf("append result %+v", r)
		}
		df, err := codec.DecodeDataFile(r.DataFile, *md.PartitionSpecByID(r.SpecID), md.CurrentSchema(), md.Version())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(df.FilePath(), w.WriteUUID[:24]) {
			t.Fatalf("file %s does not carry the write uuid %s", df.FilePath(), w.WriteUUID)
		}
		if df.Count() != r.Rows {
			t.Fatalf("rows %d vs %d", df.Count(), r.Rows)
		}
		rows += r.Rows
	}
	if rows != totalRows-5 {
		t.Fatalf("wrote %d rows, want %d", rows, totalRows-5)
	}
	if got := len(dataDirFiles(t, f.tbl.Location())); got != before+len(results) {
		t.Fatalf("%d files on disk, want %d", got, before+len(results))
	}
}

func TestWriteFragmentNotNull(t *testing.T) {
	f := newFixture(t)
	sc := f.scanOf(f.tbl, "v", nil, nil, false)
	// id is required: a NULL in it fails the fragment, naming the column,
	// and leaves no file behind.
	tkt, w := f.writeTicket(`SELECT CASE WHEN id = 7 THEN NULL ELSE id END, s, g FROM v`, false, "", sc)
	w.Project, w.InputColumns = `CAST(__q.__c0 AS BIGINT) AS "id", CAST(__q.__c1 AS VARCHAR) AS "s", CAST(__q.__c2 AS INTEGER) AS "g"`, 3
	before := dataDirFiles(t, f.tbl.Location())
	res := f.doGet(f.ctx, f.seal(tkt))
	wantCode(t, res.err, codes.InvalidArgument, "NOT NULL", "id")
	f.lastHandled()
	if after := dataDirFiles(t, f.tbl.Location()); len(after) != len(before) {
		t.Fatalf("files left behind: %v", after)
	}
}

func TestWriteFragmentRewrite(t *testing.T) {
	f := newFixture(t)
	sc := f.scanOf(f.tbl, "v", nil, nil, false)
	// Delete ids 0…4 (all in the first file): only that file is rewritten.
	tkt, _ := f.writeTicket(`SELECT * FROM v WHERE NOT coalesce(id < 5, false)`, true, `SELECT count(*) FROM v WHERE id < 5`, sc)
	results := f.writeResults(f.doGet(f.ctx, f.seal(tkt)))
	var replaced []string
	var rows, affected int64
	for _, r := range results {
		if r.Replaced != "" {
			replaced = append(replaced, r.Replaced)
			affected += r.Affected
		}
		rows += r.Rows
	}
	if len(replaced) != 1 || affected != 5 || rows != rowsPerFile-5 {
		t.Fatalf("replaced %v, affected %d, rows %d", replaced, affected, rows)
	}
	// Deleting a whole file replaces it with nothing.
	tkt, _ = f.writeTicket(`SELECT * FROM v WHERE NOT coalesce(id >= 20, false)`, true, `SELECT count(*) FROM v WHERE id >= 20`, sc)
	results = f.writeResults(f.doGet(f.ctx, f.seal(tkt)))
	if len(results) != 1 || results[0].Replaced == "" || len(results[0].DataFile) != 0 || results[0].Affected != rowsPerFile {
		t.Fatalf("whole-file delete: %+v", results)
	}
	if fmt.Sprint(len(results)) != "1" {
		t.Fatal("unreachable")
	}
}

func TestDoPutIngestShare(t *testing.T) {
	f := newFixture(t)
	target, err := table.SchemaToArrowSchema(f.tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	put := func(tkt []byte, ids []int64, nulls bool) ([]wire.WriteResult, error) {
		stream, err := f.client.DoPut(f.ctx)
		if err != nil {
			return nil, err
		}
		wr := flight.NewRecordWriter(stream, ipc.WithSchema(target))
		wr.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: tkt})
		b := array.NewRecordBuilder(memory.DefaultAllocator, target)
		for _, id := range ids {
			if nulls {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(id)
			}
			b.Field(1).(*array.StringBuilder).Append("x")
			b.Field(2).(*array.Int32Builder).Append(1)
		}
		rec := b.NewRecordBatch()
		b.Release()
		_ = wr.Write(rec)
		rec.Release()
		wr.Close()
		stream.CloseSend()
		var out []wire.WriteResult
		for {
			pr, err := stream.Recv()
			if err == io.EOF {
				return out, nil
			}
			if err != nil {
				return out, err
			}
			var rs []wire.WriteResult
			if err := json.Unmarshal(pr.GetAppMetadata(), &rs); err != nil {
				return out, err
			}
			out = append(out, rs...)
		}
	}
	_, w := f.writeTicket(`SELECT 1`, false, "", f.scanOf(f.tbl, "v", nil, nil, false))
	tkt := f.seal(&wire.Ticket{QueryID: "q", ExpiresAt: time.Now().Add(time.Hour), Write: w})
	res, err := put(tkt, []int64{1, 2, 3}, false)
	if err != nil || len(res) != 1 || res[0].Rows != 3 {
		t.Fatalf("ingest share: %+v, %v", res, err)
	}
	before := len(dataDirFiles(t, f.tbl.Location()))
	// Another statement (a fresh write UUID): its failure deletes only its
	// own files.
	_, w2 := f.writeTicket(`SELECT 1`, false, "", f.scanOf(f.tbl, "v", nil, nil, false))
	_, err = put(f.seal(&wire.Ticket{QueryID: "q2", ExpiresAt: time.Now().Add(time.Hour), Write: w2}), []int64{1}, true)
	wantCode(t, err, codes.InvalidArgument, "NOT NULL", "id")
	if after := len(dataDirFiles(t, f.tbl.Location())); after != before {
		t.Fatalf("a failed share left files: %d → %d", before, after)
	}
	// A query ticket is not an ingest ticket.
	_, err = put(f.seal(f.ticket(`SELECT * FROM v`, f.scanOf(f.tbl, "v", nil, nil, false))), []int64{1}, false)
	wantCode(t, err, codes.InvalidArgument, "not an ingest ticket")
}

// peakAllocator counts the most bytes outstanding at once.
type peakAllocator struct {
	memory.Allocator
	mu        sync.Mutex
	cur, peak int64
}

func (a *peakAllocator) add(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cur += int64(n)
	a.peak = max(a.peak, a.cur)
}

func (a *peakAllocator) Allocate(n int) []byte {
	a.add(n)
	return a.Allocator.Allocate(n)
}

func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	a.add(n - len(b))
	return a.Allocator.Reallocate(n, b)
}

func (a *peakAllocator) Free(b []byte) {
	a.add(-len(b))
	a.Allocator.Free(b)
}

// TestWriteFragmentBoundedBytes: a write fragment of ~100 MiB of rows (a
// big CTAS) holds a few batches of at most BatchBytes at a time, not
// BatchRows-row batches queued 64 deep, and the heap returns to about
// where it started once the write is done.
func TestWriteFragmentBoundedBytes(t *testing.T) {
	const batchBytes, rowGroupBytes = 1 << 20, 4 << 20
	var peak *peakAllocator
	f := newFixture(t, func(o *Options) {
		peak = &peakAllocator{Allocator: o.Allocator}
		o.Allocator = peak
		o.BatchBytes = batchBytes
		o.WriteRowGroupBytes = rowGroupBytes
	})
	const rows = 200_000
	tkt, w := f.writeTicket(fmt.Sprintf(`SELECT i, repeat('x', 500) || i::VARCHAR, (i %% 4)::INTEGER FROM range(%d) t(i)`, rows), false, "")
	w.Project, w.InputColumns = `CAST(__q.__c0 AS BIGINT) AS "id", CAST(__q.__c1 AS VARCHAR) AS "s", CAST(__q.__c2 AS INTEGER) AS "g"`, 3
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	results := f.writeResults(f.doGet(f.ctx, f.seal(tkt)))
	var n int64
	md := f.tbl.Metadata()
	for _, r := range results {
		n += r.Rows
		df, err := codec.DecodeDataFile(r.DataFile, *md.PartitionSpecByID(r.SpecID), md.CurrentSchema(), md.Version())
		if err != nil {
			t.Fatal(err)
		}
		pf, err := file.OpenParquetFile(strings.TrimPrefix(df.FilePath(), "file://"), false)
		if err != nil {
			t.Fatal(err)
		}
		// Rows of ~510 bytes: a row group of 4 MiB holds ~8,200 of them.
		for i := 0; i < pf.NumRowGroups(); i++ {
			if got := pf.RowGroup(i).NumRows(); got > 9000 {
				t.Errorf("%s: row group %d has %d rows, more than %d bytes' worth", df.FilePath(), i, got, rowGroupBytes)
			}
		}
		pf.Close()
	}
	if n != rows {
		t.Fatalf("wrote %d rows, want %d", n, rows)
	}
	// Held at once: the batch being merged, the one being conformed and
	// written, and writeQueueBatches queued — each at most BatchBytes
	// plus one DuckDB chunk (2048 rows of ~500 bytes, 1 MiB).
	if limit := int64(8 * 2 * batchBytes); peak.peak > limit {
		t.Errorf("the write held %d bytes of batches at once; want at most %d", peak.peak, limit)
	}
	// Twice: sync.Pool entries (arrow-go's and Parquet's buffers) survive
	// one collection.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("peak batches %d bytes; heap %d → %d bytes", peak.peak, before.HeapAlloc, after.HeapAlloc)
	if grown > 32<<20 {
		t.Errorf("the heap grew by %d bytes over the write and stayed", grown)
	}
}
