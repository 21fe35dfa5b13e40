package flightsql

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"google.golang.org/grpc/codes"
)

// paramBatch is a batch of one int64 column with the given values.
func paramBatch(mem memory.Allocator, vals ...int64) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{{Name: "$1", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(vals, nil)
	return b.NewRecordBatch()
}

func argInts(t *testing.T, args []any) []int64 {
	t.Helper()
	out := make([]int64, len(args))
	for i, a := range args {
		s, ok := a.(*scalar.Int64)
		if !ok {
			t.Fatalf("arg %d is %T, want *scalar.Int64", i, a)
		}
		out[i] = s.Value
	}
	return out
}

func TestPreparedQueryBindsOneRow(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	prep, err := e.client.Prepare(ctx, "SELECT id FROM t WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	rec := paramBatch(e.mem, 42)
	prep.SetParameters(rec)
	rec.Release()
	info, err := prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 2 {
		t.Fatalf("endpoints: %d", len(info.Endpoint))
	}
	if got := argInts(t, e.planner.last(t, "Plan").args); len(got) != 1 || got[0] != 42 {
		t.Fatalf("plan args: %v", got)
	}

	// Two rows for a query is refused.
	rec = paramBatch(e.mem, 1, 2)
	prep.SetParameters(rec)
	rec.Release()
	_, err = prep.Execute(ctx)
	wantCode(t, err, codes.Unimplemented)
	prep.SetParameters(nil)
}

func TestPreparedUpdateRunsAllRowsInOneCall(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	prep, err := e.client.Prepare(ctx, "INSERT INTO t VALUES (?)")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	rec := paramBatch(e.mem, 1, 2, 3)
	prep.SetParameters(rec)
	rec.Release()
	before := e.planner.count("ExecBatch")
	n, err := prep.ExecuteUpdate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 21 || e.planner.count("ExecBatch")-before != 1 {
		t.Fatalf("count %d after %d ExecBatch calls; want 21 after 1", n, e.planner.count("ExecBatch")-before)
	}
	rows := e.planner.last(t, "ExecBatch").args
	if len(rows) != 3 {
		t.Fatalf("rows of the batch: %v", rows)
	}
	if got := argInts(t, rows[2].([]any)); len(got) != 1 || got[0] != 3 {
		t.Fatalf("last row: %v", got)
	}

	// The same through GetFlightInfo (ADBC's execute of a bound update):
	// the update runs exactly once per row.
	rec = paramBatch(e.mem, 9)
	prep.SetParameters(rec)
	rec.Release()
	before = e.planner.count("ExecBatch")
	info, err := prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.TotalRecords != 7 || e.planner.count("ExecBatch")-before != 1 {
		t.Fatalf("records %d after %d ExecBatch calls", info.TotalRecords, e.planner.count("ExecBatch")-before)
	}
	prep.SetParameters(nil)
}

func TestPreparedParameterSchemaFallsBackToEmpty(t *testing.T) {
	// The fake planner does not describe parameters: the schema is empty.
	e := start(t)
	ctx := context.Background()
	prep, err := e.client.Prepare(ctx, "SELECT id FROM t WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	if ps := prep.ParameterSchema(); ps == nil || ps.NumFields() != 0 {
		t.Fatalf("parameter schema: %v", ps)
	}
}
