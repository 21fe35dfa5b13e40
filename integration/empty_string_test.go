package integration

import (
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestEmptyStringPartitions: the empty string as a partition value,
// committed with other values, hides none of them from filters, through
// icefloe and through pyiceberg's own pruning over the metadata icefloe
// wrote (identity and truncate, written by VALUES, CTAS and bulk ingest).
func TestEmptyStringPartitions(t *testing.T) {
	dir := t.TempDir()
	s := StartCluster(t, Workers(2), DataDir(dir))
	cnxn := adbcConn(t, s.Addr())
	py := startPyScanner(t, dir)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	names := []string{"ab", ""}
	for i, spec := range []string{"name", "truncate(2, name)"} {
		src := fmt.Sprintf("e%d_values", i)
		for _, path := range []string{"values", "ctas", "ingest"} {
			tbl := fmt.Sprintf("e%d_%s", i, path)
			switch path {
			case "values":
				execUpdate(t, cnxn, "CREATE TABLE "+tbl+" (id BIGINT, name VARCHAR) PARTITIONED BY ("+spec+")")
				execUpdate(t, cnxn, "INSERT INTO "+tbl+" VALUES (1, 'ab'), (2, '')")
			case "ctas":
				execUpdate(t, cnxn, "CREATE TABLE "+tbl+" PARTITIONED BY ("+spec+") AS SELECT * FROM "+src)
			case "ingest":
				execUpdate(t, cnxn, "CREATE TABLE "+tbl+" (id BIGINT, name VARCHAR) PARTITIONED BY ("+spec+")")
				rdr := rowStream(t, sc, 1, 1, 2, func(bld *array.RecordBuilder, _, id int) {
					bld.Field(0).(*array.Int64Builder).Append(int64(id))
					bld.Field(1).(*array.StringBuilder).Append(names[id-1])
				})
				if _, err := ingest(t, cnxn, tbl, adbc.OptionValueIngestModeAppend, rdr); err != nil {
					t.Fatalf("bulk ingest into %s: %v", tbl, err)
				}
			}
			for _, c := range []struct {
				where string
				want  []string
			}{
				{"name = 'ab'", []string{"1"}},
				{"name = ''", []string{"2"}},
				{"name IN ('ab', 'q')", []string{"1"}},
				{"name LIKE 'a%'", []string{"1"}},
				{"name < 'b'", []string{"1", "2"}},
				{"NOT (name = 'ab')", []string{"2"}},
			} {
				wantRows(t, cnxn, "SELECT id FROM "+tbl+" WHERE "+c.where, c.want...)
			}
			for _, c := range []struct {
				filter map[string]any
				want   []int64
			}{
				{map[string]any{"op": "eq", "col": "name", "v": "ab"}, []int64{1}},
				{map[string]any{"op": "eq", "col": "name", "v": ""}, []int64{2}},
				{map[string]any{"op": "starts_with", "col": "name", "v": "a"}, []int64{1}},
				{map[string]any{"op": "lt", "col": "name", "v": "b"}, []int64{1, 2}},
			} {
				got, unsupported, err := py.scan(tbl, c.filter)
				if err != nil || unsupported != "" {
					t.Fatalf("pyiceberg scan of %s with %v: %v %s", tbl, c.filter, err, unsupported)
				}
				if !slices.Equal(got, c.want) {
					t.Fatalf("pyiceberg scan of %s (partitioned by %s, %s) with %v: ids %v, want %v", tbl, spec, path, c.filter, got, c.want)
				}
			}
		}
	}
}
