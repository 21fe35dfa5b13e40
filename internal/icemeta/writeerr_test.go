package icemeta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// fullIO is an IO whose files take no byte: a disk with no space left.
type fullIO struct{ iceio.WriteFileIO }

func (f fullIO) Create(name string) (iceio.FileWriter, error) {
	w, err := f.WriteFileIO.Create(name)
	if err != nil {
		return nil, err
	}
	return fullWriter{w}, nil
}

type fullWriter struct{ iceio.FileWriter }

func (fullWriter) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}
}

// TestWriteKeepsTheFirstError: a write whose every file write fails
// with no space left ends with that error, not with the writer is closed
// that iceberg-go's rolling writer answers the batches after it failed
// (and loses its error with), partitioned or not.
func TestWriteKeepsTheFirstError(t *testing.T) {
	f := newFixture(t)
	for _, part := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", part), func(t *testing.T) {
			f := f.on(t)
			var tbl *table.Table
			if part {
				tbl = f.table("id BIGINT; k BIGINT", func(s *iceberg.Schema) iceberg.PartitionSpec {
					fld, _ := s.FindFieldByName("k")
					return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{fld.ID}, FieldID: 1000, Name: "k", Transform: iceberg.IdentityTransform{}})
				}, nil)
			} else {
				tbl = f.table("id BIGINT; k BIGINT", nil, nil)
			}
			full := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(ctx context.Context) (iceio.IO, error) {
				fsys, err := tbl.FS(ctx)
				if err != nil {
					return nil, err
				}
				return fullIO{fsys.(iceio.WriteFileIO)}, nil
			}, nil)
			sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
			if err != nil {
				t.Fatal(err)
			}
			records := func(yield func(arrow.RecordBatch, error) bool) {
				for b := range 200 {
					bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
					for i := range 1000 {
						bld.Field(0).(*array.Int64Builder).Append(int64(b*1000 + i))
						bld.Field(1).(*array.Int64Builder).Append(int64(b % 2))
					}
					rec := bld.NewRecordBatch()
					bld.Release()
					// The writer releases what it is given.
					if !yield(rec, nil) {
						return
					}
				}
			}
			for range 5 {
				var got error
				for _, err := range Write(f.ctx, full, sc, records, table.WithMaxWriteWorkers(1)) {
					if err != nil {
						got = err
						break
					}
				}
				if !errors.Is(got, syscall.ENOSPC) {
					t.Fatalf("a write to a full disk: %v, want no space left on device", got)
				}
			}
		})
	}
}
