package pqfile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	iceio "github.com/apache/iceberg-go/io"
)

// TestRoundTrip: Write reports the size on disk and ReadTable gives the
// rows back.
func TestRoundTrip(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.BinaryTypes.String}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for i := range 1000 {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.StringBuilder).Append("v")
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "f.parquet")
	size, err := Write(iceio.LocalFS{}, path, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != size {
		t.Fatalf("size %d, on disk %v (%v)", size, st, err)
	}
	tb, err := ReadTable(context.Background(), iceio.LocalFS{}, path)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Release()
	if tb.NumRows() != 1000 || tb.NumCols() != 2 || tb.Schema().Field(1).Name != "b" || tb.Column(0).Data().Chunk(0).(*array.Int64).Value(999) != 999 {
		t.Fatalf("read %d rows of %s", tb.NumRows(), tb.Schema())
	}
	if _, err := ReadTable(context.Background(), iceio.LocalFS{}, path+".missing"); err == nil {
		t.Fatal("read a missing file")
	}
}
