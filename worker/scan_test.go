package worker

import (
	"errors"
	"iter"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

var intSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

// batches yields n batches of rows rows each from mem, then err if not nil.
func batches(mem memory.Allocator, n, rows int, err error) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for range n {
			b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "as_read", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil))
			for i := range rows {
				b.Field(0).(*array.Int64Builder).Append(int64(i))
			}
			rec := b.NewRecordBatch()
			b.Release()
			if !yield(rec, nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

func TestScanReaderReleaseEarly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newScanReader("c.s.t", intSchema, nil, batches(mem, 5, 10, nil))
	if !r.Next() {
		t.Fatal(r.Err())
	}
	// Each batch carries the planned schema, not the one it was read with.
	if !r.RecordBatch().Schema().Equal(intSchema) {
		t.Fatalf("schema %s", r.RecordBatch().Schema())
	}
	r.Release()
}

func TestScanReaderSkipsEmptyAndKeepsError(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tasks := []table.FileScanTask{{File: fakeFile("s3://b/t/data/a.parquet")}, {File: fakeFile("s3://b/t/data/b.parquet")}}
	failure := errors.New(`blob (key "t/data/b.parquet") (code=NotFound): not found`)
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range batches(mem, 1, 0, nil) {
			if !yield(rec, err) {
				return
			}
		}
		for rec, err := range batches(mem, 2, 3, failure) {
			if !yield(rec, err) {
				return
			}
		}
	}
	r := newScanReader("c.s.t", intSchema, tasks, seq)
	defer r.Release()
	n := 0
	for r.Next() {
		if r.RecordBatch().NumRows() == 0 {
			t.Fatal("an empty batch was passed on")
		}
		n++
	}
	var re *readError
	if n != 2 || !errors.As(r.Err(), &re) || re.file != "s3://b/t/data/b.parquet" || !errors.Is(r.Err(), failure) {
		t.Fatalf("%d batches, err %v", n, r.Err())
	}
	if r.Next() {
		t.Fatal("Next after an error")
	}
}

func TestScanReaderTypeMismatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	want := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	r := newScanReader("c.s.t", want, nil, batches(mem, 2, 3, nil))
	defer r.Release()
	if r.Next() || !errors.Is(r.Err(), errInternal) || !strings.Contains(r.Err().Error(), `"v"`) {
		t.Fatalf("mismatch: %v", r.Err())
	}
}

func TestReadErrAttribution(t *testing.T) {
	tasks := []table.FileScanTask{
		{File: fakeFile("file:///w/t/data/p=1/00000-0-u-00001.parquet")},
		{File: fakeFile("file:///w/t/data/p=2/00000-0-u-00001.parquet")},
		{File: fakeFile("file:///w/t/data/p=2/00001-0-u-00002.parquet")},
	}
	r := &scanReader{table: "c.s.t", tasks: tasks}
	for _, tc := range []struct {
		msg, file string
	}{
		{"open /w/t/data/p=2/00000-0-u-00001.parquet: no such file or directory", tasks[1].File.FilePath()},
		{"parquet: bad magic in 00001-0-u-00002.parquet", tasks[2].File.FilePath()},
		// Two tasks share the base name: say which files the read was over.
		{"parquet: bad magic in 00000-0-u-00001.parquet", "(one of 3: "},
		{"corrupt footer", "(one of 3: "},
	} {
		var re *readError
		err := r.readErr(errors.New(tc.msg))
		if !errors.As(err, &re) || !strings.HasPrefix(re.file, tc.file) {
			t.Errorf("%q: %v, want file %s", tc.msg, err, tc.file)
		}
	}
	if err := r.readErr(os.ErrNotExist); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("readErr loses the cause: %v", err)
	}
}

// fakeFile is a data file known only by its location.
type fakeFileT struct {
	iceberg.DataFile
	path string
}

func (f fakeFileT) FilePath() string { return f.path }

func fakeFile(p string) iceberg.DataFile { return fakeFileT{path: p} }
