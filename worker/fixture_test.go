package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testSchema is the table the worker tests read: id is required, s and g
// are nullable.
var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "g", Type: iceberg.PrimitiveTypes.Int32},
)

// filesOf and rowsPerFile shape the test table: one data file per commit.
const (
	filesOf     = 3
	rowsPerFile = 10
	totalRows   = filesOf * rowsPerFile
)

// sValue is the s column of row id: null every fifth row.
func sValue(id int) string {
	if id%5 == 0 {
		return "(null)"
	}
	return fmt.Sprintf("s%d", id)
}

// fixture is one worker serving on 127.0.0.1:0 and a client of it, over a
// local catalog with one table of filesOf data files.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	key     *wire.Key
	alloc   *memory.CheckedAllocator
	cliMem  *memory.CheckedAllocator
	eng     *engine.Engine
	cache   *catalog.MetadataCache
	srv     *Server
	gs      *grpc.Server
	addr    string
	client  flight.Client
	cat     icecat.Catalog
	tbl     *table.Table
	handled chan error
}

func newFixture(t *testing.T, opts ...func(*Options)) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{
		t:       t,
		ctx:     ctx,
		alloc:   memory.NewCheckedAllocator(memory.NewGoAllocator()),
		cliMem:  memory.NewCheckedAllocator(memory.NewGoAllocator()),
		cache:   catalog.NewMetadataCache(0),
		handled: make(chan error, 64),
	}
	var err error
	if f.key, err = wire.RandomKey(); err != nil {
		t.Fatal(err)
	}
	f.eng, err = engine.Open(ctx, engine.Options{Threads: 2, MemoryLimit: "1GB", TempDir: t.TempDir() + "/spill"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.eng.Close() })

	cat, _, err := catalog.OpenLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.cat = cat
	t.Cleanup(func() { cat.(icecat.Closer).Close() })
	f.tbl = f.createTable("t", filesOf)

	o := Options{Key: f.key, Engine: f.eng, Cache: f.cache, Allocator: f.alloc}
	for _, fn := range opts {
		fn(&o)
	}
	f.srv, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	f.gs = grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		err := handler(srv, ss)
		if strings.HasSuffix(info.FullMethod, "/DoGet") {
			f.handled <- err
		}
		return err
	}))
	f.srv.Register(f.gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = lis.Addr().String()
	go f.gs.Serve(lis)
	f.client, err = flight.NewClientWithMiddleware(f.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.client.Close()
		f.gs.Stop()
		if err := f.srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		f.alloc.AssertSize(t, 0)
		f.cliMem.AssertSize(t, 0)
	})
	return f
}

// createTable creates a table of testSchema with commits data files of
// rowsPerFile rows each, ids counting from 0.
func (f *fixture) createTable(name string, commits int) *table.Table {
	f.t.Helper()
	tbl, err := f.cat.CreateTable(f.ctx, table.Identifier{catalog.DefaultSchema, name}, testSchema)
	if err != nil {
		f.t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(testSchema, nil, false, false)
	if err != nil {
		f.t.Fatal(err)
	}
	for c := range commits {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := c * rowsPerFile; i < (c+1)*rowsPerFile; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			if i%5 == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(sValue(i))
			}
			b.Field(2).(*array.Int32Builder).Append(int32(i % 3))
		}
		rec := b.NewRecordBatch()
		b.Release()
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			f.t.Fatal(err)
		}
		tbl, err = tbl.Append(f.ctx, rdr, nil)
		rdr.Release()
		if err != nil {
			f.t.Fatal(err)
		}
	}
	return tbl
}

// scanOf plans tbl's files like the coordinator does and returns the wire
// scan that reads them as view. A non-nil filter prunes files and becomes
// the scan's row filter; stripResidual drops the tasks' residuals, as a
// planner that does not ship them would.
func (f *fixture) scanOf(tbl *table.Table, view string, columns []string, filter iceberg.BooleanExpression, stripResidual bool) wire.Scan {
	f.t.Helper()
	var snap int64
	if s := tbl.CurrentSnapshot(); s != nil {
		snap = s.SnapshotID
	}
	opts := catalog.ScanOptions(snap, columns)
	sc := wire.Scan{
		View:             view,
		Table:            "local." + strings.Join(tbl.Identifier(), "."),
		MetadataLocation: tbl.MetadataLocation(),
		SnapshotID:       snap,
		Columns:          columns,
	}
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
		js, err := json.Marshal(filter)
		if err != nil {
			f.t.Fatal(err)
		}
		sc.RowFilter = string(js)
	}
	tasks, err := tbl.Scan(opts...).PlanFiles(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	meta := tbl.Metadata()
	schema, err := snapshotSchema(tbl, snap)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, task := range tasks {
		if stripResidual {
			task.Residual = nil
		}
		spec := meta.PartitionSpecByID(int(task.File.SpecID()))
		data, err := codec.EncodeFileScanTask(task, *spec, schema, meta.Version())
		if err != nil {
			f.t.Fatal(err)
		}
		sc.Tasks = append(sc.Tasks, wire.Task{SpecID: spec.ID(), Data: data})
	}
	return sc
}

// ticket builds the ticket of sql over scans, with the result schema DuckDB
// binds over empty stand-ins of the scans, as the planner does.
func (f *fixture) ticket(sql string, scans ...wire.Scan) *wire.Ticket {
	f.t.Helper()
	conn, err := f.eng.Conn(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close()
	for _, sc := range scans {
		tbl, err := f.cache.Open(f.ctx, strings.Split(sc.Table, "."), sc.MetadataLocation, sc.Props)
		if err != nil {
			f.t.Fatal(err)
		}
		schema, err := catalog.ScanSchema(tbl, sc.SnapshotID, sc.Columns)
		if err != nil {
			f.t.Fatal(err)
		}
		rdr, err := array.NewRecordReader(schema, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		err = conn.LoadTable(f.ctx, sc.View, rdr)
		rdr.Release()
		if err != nil {
			f.t.Fatal(err)
		}
	}
	schema, err := conn.QuerySchema(f.ctx, sql)
	if err != nil {
		f.t.Fatal(err)
	}
	return &wire.Ticket{
		QueryID:   f.t.Name(),
		ExpiresAt: time.Now().Add(time.Hour),
		Scans:     scans,
		SQL:       sql,
		Schema:    flight.SerializeSchema(schema, memory.DefaultAllocator),
	}
}

func (f *fixture) seal(t *wire.Ticket) []byte {
	f.t.Helper()
	b, err := f.key.Seal(t)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// result is what one DoGet streamed.
type result struct {
	schema  *arrow.Schema
	rows    []string
	batches []int64
	err     error
}

// doGet fetches a sealed ticket and renders every row as its columns'
// ValueStr joined by "|". A stream error is returned in the result.
func (f *fixture) doGet(ctx context.Context, sealed []byte) result {
	f.t.Helper()
	stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: sealed})
	if err != nil {
		return result{err: err}
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(f.cliMem))
	if err != nil {
		return result{err: err}
	}
	defer rdr.Release()
	res := result{schema: rdr.Schema()}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		res.batches = append(res.batches, rec.NumRows())
		for i := range int(rec.NumRows()) {
			cells := make([]string, rec.NumCols())
			for j, col := range rec.Columns() {
				cells[j] = col.ValueStr(i)
			}
			res.rows = append(res.rows, strings.Join(cells, "|"))
		}
	}
	res.err = rdr.Err()
	return res
}

// lastHandled returns the error the server's DoGet handler returned last.
func (f *fixture) lastHandled() error {
	f.t.Helper()
	select {
	case err := <-f.handled:
		return err
	case <-time.After(30 * time.Second):
		f.t.Fatal("no DoGet finished on the server")
		return errors.New("unreachable")
	}
}

func ipcAlloc(mem memory.Allocator) ipc.Option { return ipc.WithAllocator(mem) }
