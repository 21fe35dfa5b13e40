package conform

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	target := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u", Type: extensions.NewUUIDType(), Nullable: true},
	}, nil)
	build := func(ids []int64, valid []bool, u []string) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, src)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues(ids, valid)
		b.Field(1).(*array.StringBuilder).AppendValues(u, nil)
		return b.NewRecordBatch()
	}
	rec := build([]int64{1, 2}, nil, []string{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", "6ba7b811-9dad-11d1-80b4-00c04fd430c8"})
	out, err := Record(mem, rec, target, 0)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	if !out.Schema().Equal(target) || out.NumRows() != 2 || out.Column(1).ValueStr(0) != "6ba7b810-9dad-11d1-80b4-00c04fd430c8" {
		t.Fatalf("got %v", out)
	}
	out.Release()

	rec = build([]int64{1, 0}, []bool{true, false}, []string{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"})
	_, err = Record(mem, rec, target, 0)
	rec.Release()
	if !errors.Is(err, ErrNotNull) || !strings.Contains(err.Error(), "id") {
		t.Fatalf("NULL into NOT NULL: %v", err)
	}
	rec = build([]int64{1}, nil, []string{"not a uuid"})
	_, err = Record(mem, rec, target, 0)
	rec.Release()
	if !errors.Is(err, ErrValue) {
		t.Fatalf("bad uuid: %v", err)
	}
}
