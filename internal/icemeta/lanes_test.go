package icemeta

import (
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"go.uber.org/goleak"
)

// pathCase is a source type, the transforms it takes and values of it
// chosen to make renderings meet: NULL-like text, escapes and their
// escaped forms, zeros of both signs, NaNs, scales, the ends of ranges.
type pathCase struct {
	typ        iceberg.Type
	transforms []iceberg.Transform
	values     []iceberg.Literal
}

func pathCases() []pathCase {
	strs := []string{"null", "NULL", "Null", "nullx", "nul", "", " ", "+", "%20", "%2B", "a b", "a+b", "a%20b", "a%2Bb",
		"a/b", "a%2Fb", "a=b", "é", "%C3%A9", "\x00", "none", "None", "nan", "NaN", "true", "0", "-0", "1970-01-01"}
	var strLits, binLits, fixLits []iceberg.Literal
	for _, s := range strs {
		strLits = append(strLits, iceberg.NewLiteral(s))
		binLits = append(binLits, iceberg.NewLiteral([]byte(s)))
	}
	for _, b := range [][]byte{nullBytes, append(slices.Clone(nullBytes), 0), {0x9e, 0xe9}, {0xff, 0xff, 0xff}, {0, 0, 0}, []byte("nul")} {
		binLits = append(binLits, iceberg.NewLiteral(b))
		if len(b) == 3 {
			fixLits = append(fixLits, iceberg.NewLiteral(b))
		}
	}
	fixed := iceberg.FixedTypeOf(3)
	for i, l := range fixLits {
		c, err := l.To(fixed)
		if err != nil {
			panic(err)
		}
		fixLits[i] = c
	}
	floats := []float64{0, math.Copysign(0, -1), math.NaN(), math.Float64frombits(0x7ff0000000000001), math.Inf(1), math.Inf(-1),
		1, 1.0000000000000002, 1e21, 1e-7, -1, math.MaxFloat64, math.SmallestNonzeroFloat64}
	var f64, f32 []iceberg.Literal
	for _, v := range floats {
		f64 = append(f64, iceberg.NewLiteral(v))
		f32 = append(f32, iceberg.NewLiteral(float32(v)))
	}
	dec := func(scale int, vs ...int64) []iceberg.Literal {
		var out []iceberg.Literal
		for _, v := range vs {
			out = append(out, iceberg.NewLiteral(iceberg.Decimal{Val: decimal128.FromI64(v), Scale: scale}))
		}
		return out
	}
	ts := func(vs ...time.Time) []iceberg.Literal {
		var out []iceberg.Literal
		for _, v := range vs {
			out = append(out, iceberg.NewLiteral(iceberg.Timestamp(v.UnixMicro())))
		}
		return out
	}
	times := []time.Time{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Unix(0, 0).UTC(), time.Unix(-1, 999999000).UTC(), time.Unix(0, 1000).UTC(), time.Unix(0, 10000).UTC(), time.Unix(0, 100000).UTC()}
	var dates, tods, tsns []iceberg.Literal
	for _, v := range times {
		dates = append(dates, iceberg.NewLiteral(iceberg.Date(v.Unix()/86400)))
		tsns = append(tsns, iceberg.NewLiteral(iceberg.TimestampNano(v.UnixNano())))
	}
	for _, us := range []int64{0, 1, 10, 100000, 86399999999} {
		tods = append(tods, iceberg.NewLiteral(iceberg.Time(us)))
	}
	ints := func(vs ...int64) (i32, i64 []iceberg.Literal) {
		for _, v := range vs {
			i32 = append(i32, iceberg.NewLiteral(int32(v)))
			i64 = append(i64, iceberg.NewLiteral(v))
		}
		return
	}
	i32, i64 := ints(0, -1, 1, 10, math.MaxInt32, math.MinInt32)
	uuids := []iceberg.Literal{iceberg.NewLiteral(uuid.Nil), iceberg.NewLiteral(uuid.Max), iceberg.NewLiteral(uuid.MustParse("6e756c6c-0000-4000-8000-000000000000"))}
	bools := []iceberg.Literal{iceberg.NewLiteral(true), iceberg.NewLiteral(false)}
	temporal := []iceberg.Transform{iceberg.IdentityTransform{}, iceberg.BucketTransform{NumBuckets: 16}, iceberg.YearTransform{},
		iceberg.MonthTransform{}, iceberg.DayTransform{}, iceberg.VoidTransform{}}
	hour := append(slices.Clone(temporal), iceberg.HourTransform{})
	trunc := func(ws ...int) []iceberg.Transform {
		out := []iceberg.Transform{iceberg.IdentityTransform{}, iceberg.BucketTransform{NumBuckets: 16}, iceberg.VoidTransform{}}
		for _, w := range ws {
			out = append(out, iceberg.TruncateTransform{Width: w})
		}
		return out
	}
	simple := []iceberg.Transform{iceberg.IdentityTransform{}, iceberg.BucketTransform{NumBuckets: 16}, iceberg.VoidTransform{}}
	return []pathCase{
		{iceberg.PrimitiveTypes.String, trunc(1, 3, 4, 5), strLits},
		{iceberg.PrimitiveTypes.Binary, trunc(1, 2, 3, 4), binLits},
		{fixed, simple, fixLits},
		{iceberg.PrimitiveTypes.Bool, []iceberg.Transform{iceberg.IdentityTransform{}, iceberg.VoidTransform{}}, bools},
		{iceberg.PrimitiveTypes.Int32, trunc(1, 10), i32},
		{iceberg.PrimitiveTypes.Int64, trunc(1, 10), i64},
		{iceberg.PrimitiveTypes.Float32, []iceberg.Transform{iceberg.IdentityTransform{}, iceberg.VoidTransform{}}, f32},
		{iceberg.PrimitiveTypes.Float64, []iceberg.Transform{iceberg.IdentityTransform{}, iceberg.VoidTransform{}}, f64},
		{iceberg.DecimalTypeOf(9, 2), trunc(1, 10), dec(2, 0, 1, -1, 100, 10, 999999999, -999999999)},
		{iceberg.DecimalTypeOf(9, 0), trunc(1, 10), dec(0, 0, 1, -1, 100, 10)},
		{iceberg.PrimitiveTypes.Date, temporal, dates},
		{iceberg.PrimitiveTypes.Time, simple, tods},
		{iceberg.PrimitiveTypes.Timestamp, hour, ts(times...)},
		{iceberg.PrimitiveTypes.TimestampTz, hour, ts(times...)},
		{iceberg.PrimitiveTypes.TimestampNs, hour, tsns},
		{iceberg.PrimitiveTypes.TimestampTzNs, hour, tsns},
		{iceberg.PrimitiveTypes.UUID, simple, uuids},
	}
}

// tupleKey identifies a partition value as iceberg-go's fanout writer
// does (NaNs alike, -0.0 and 0.0 apart, NULL apart from every value).
func tupleKey(v iceberg.Optional[iceberg.Literal]) string {
	if !v.Valid {
		return "NULL"
	}
	switch x := v.Val.Any().(type) {
	case float32:
		if math.IsNaN(float64(x)) {
			return "float32:NaN"
		}
		return fmt.Sprintf("float32:%x", math.Float32bits(x))
	case float64:
		if math.IsNaN(x) {
			return "float64:NaN"
		}
		return fmt.Sprintf("float64:%x", math.Float64bits(x))
	}
	b, err := v.Val.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%T:%x", v.Val, b)
}

// TestPartitionPathCollisions holds iceberg-go's partition paths to what
// the lanes of Write assume, for every transform of every type over
// values chosen to collide: two partition values (NULL among them) share
// a path only when one is NULL and the other a non-NULL value rendersNull
// accepts, and rendersNull accepts exactly the non-NULL values rendering
// as "null".
func TestPartitionPathCollisions(t *testing.T) {
	for _, c := range pathCases() {
		schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "c", Type: c.typ})
		for _, tr := range c.transforms {
			if !tr.CanTransform(c.typ) {
				t.Fatalf("%s cannot transform %s", tr, c.typ)
			}
			pf := iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "p", Transform: tr}
			spec := iceberg.NewPartitionSpec(pf)
			test, testable := rendersNull(pf, c.typ)
			arrowType, err := table.TypeToArrowType(c.typ, true, false)
			if err != nil {
				t.Fatal(err)
			}
			byPath := map[string]map[string]bool{}
			values := append([]iceberg.Literal{nil}, c.values...)
			for _, lit := range values {
				in := iceberg.Optional[iceberg.Literal]{Valid: lit != nil, Val: lit}
				out := tr.Apply(in)
				var data partitionData
				if out.Valid {
					data = partitionData{out.Val.Any()}
				} else {
					data = partitionData{nil}
				}
				path := spec.PartitionToPath(data, schema)
				if byPath[path] == nil {
					byPath[path] = map[string]bool{}
				}
				byPath[path][tupleKey(out)] = true
				rendered := strings.TrimPrefix(path, "p=") == nullRender
				if lit == nil {
					continue
				}
				got := testable && test(oneValue(t, arrowType, lit), 0)
				if want := out.Valid && rendered; got != want {
					t.Errorf("%s(%s) of %v renders %q: rendersNull says %v", tr, c.typ, lit, path, got)
				}
			}
			for path, tuples := range byPath {
				if len(tuples) == 1 {
					continue
				}
				if path != "p="+nullRender || len(tuples) != 2 || !tuples["NULL"] {
					t.Errorf("%s(%s): partition values %v share path %q", tr, c.typ, slices.Sorted(maps.Keys(tuples)), path)
				}
			}
		}
	}
}

// partitionData is one partition tuple as iceberg.StructLike.
type partitionData []any

func (p partitionData) Size() int        { return len(p) }
func (p partitionData) Get(i int) any    { return p[i] }
func (p partitionData) Set(i int, v any) { p[i] = v }

// oneValue is an array of one value of lit's type, as Write gets it.
func oneValue(t *testing.T, typ arrow.DataType, lit iceberg.Literal) arrow.Array {
	t.Helper()
	mem := memory.DefaultAllocator
	switch v := lit.Any().(type) {
	case string:
		b := array.NewStringBuilder(mem)
		b.Append(v)
		return b.NewArray()
	case []byte:
		if ft, ok := typ.(*arrow.FixedSizeBinaryType); ok {
			b := array.NewFixedSizeBinaryBuilder(mem, ft)
			b.Append(v)
			return b.NewArray()
		}
		b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		b.Append(v)
		return b.NewArray()
	}
	// Other types: rendersNull has no test for them (checked above).
	return array.MakeArrayOfNull(mem, typ, 1)
}

// TestWriteSeparatesCollidingPartitions: rows whose partition values
// render to the same path (NULL and 'null' under identity; NULL and
// 'nullx' under truncate(4); NULL and the bytes whose base64 is "null";
// every combination over two fields) land in files of their own, each
// recording its own partition tuple, and scans filtering on the
// partition columns find every row.
func TestWriteSeparatesCollidingPartitions(t *testing.T) {
	f := newFixture(t)
	field := func(name string, id int, tr iceberg.Transform) iceberg.PartitionField {
		return iceberg.PartitionField{SourceIDs: []int{id}, FieldID: 1000 + id, Name: name + "_p", Transform: tr}
	}
	cases := []struct {
		name, cols string
		fields     []iceberg.PartitionField
		rows       string
		filters    map[string]iceberg.BooleanExpression
	}{
		{"identity string", "id BIGINT; s VARCHAR", []iceberg.PartitionField{field("s", 2, iceberg.IdentityTransform{})},
			`SELECT * FROM (VALUES (1::BIGINT, 'null'), (2, NULL), (3, 'null'), (4, NULL), (5, 'x')) t(id, s)`,
			map[string]iceberg.BooleanExpression{"2,4": iceberg.IsNull(iceberg.Reference("s")), "1,3": iceberg.EqualTo(iceberg.Reference("s"), "null")}},
		{"truncate string", "id BIGINT; s VARCHAR", []iceberg.PartitionField{field("s", 2, iceberg.TruncateTransform{Width: 4})},
			`SELECT * FROM (VALUES (1::BIGINT, 'nullx'), (2, NULL), (3, 'null'), (4, 'nul')) t(id, s)`,
			map[string]iceberg.BooleanExpression{"2": iceberg.IsNull(iceberg.Reference("s")), "1": iceberg.EqualTo(iceberg.Reference("s"), "nullx"),
				"1,3": iceberg.StartsWith(iceberg.Reference("s"), "null")}},
		{"identity binary", "id BIGINT; b BLOB", []iceberg.PartitionField{field("b", 2, iceberg.IdentityTransform{})},
			`SELECT * FROM (VALUES (1::BIGINT, '\x9E\xE9\x65'::BLOB), (2, NULL)) t(id, b)`,
			map[string]iceberg.BooleanExpression{"2": iceberg.IsNull(iceberg.Reference("b")), "1": iceberg.NotNull(iceberg.Reference("b"))}},
		{"truncate binary", "id BIGINT; b BLOB", []iceberg.PartitionField{field("b", 2, iceberg.TruncateTransform{Width: 3})},
			`SELECT * FROM (VALUES (1::BIGINT, '\x9E\xE9\x65\x00'::BLOB), (2, NULL), (3, '\x9E\xE9'::BLOB)) t(id, b)`,
			map[string]iceberg.BooleanExpression{"2": iceberg.IsNull(iceberg.Reference("b")), "1,3": iceberg.NotNull(iceberg.Reference("b"))}},
		{"two fields", "id BIGINT; a VARCHAR; b VARCHAR", []iceberg.PartitionField{field("a", 2, iceberg.IdentityTransform{}), field("b", 3, iceberg.IdentityTransform{})},
			`SELECT * FROM (VALUES (1::BIGINT, 'null', NULL), (2, NULL, 'null'), (3, 'null', 'null'), (4, NULL, NULL), (5, 'null', 'x'), (6, NULL, 'x')) t(id, a, b)`,
			map[string]iceberg.BooleanExpression{
				"2,4,6": iceberg.IsNull(iceberg.Reference("a")), "1,4": iceberg.IsNull(iceberg.Reference("b")),
				"4":     iceberg.NewAnd(iceberg.IsNull(iceberg.Reference("a")), iceberg.IsNull(iceberg.Reference("b"))),
				"3":     iceberg.NewAnd(iceberg.EqualTo(iceberg.Reference("a"), "null"), iceberg.EqualTo(iceberg.Reference("b"), "null")),
				"1,3,5": iceberg.EqualTo(iceberg.Reference("a"), "null")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := f.on(t)
			spec := func(*iceberg.Schema) iceberg.PartitionSpec { return iceberg.NewPartitionSpec(c.fields...) }
			tbl := f.table(c.cols, spec, nil)
			files := f.write(tbl, true, []table.WriteRecordOption{table.WithMaxWriteWorkers(1)}, c.rows)
			paths := map[string]bool{}
			for _, df := range files {
				if paths[df.FilePath()] {
					t.Fatalf("two data files at %s", df.FilePath())
				}
				paths[df.FilePath()] = true
			}
			tbl = f.commit(tbl, files)
			// Every file holds rows of the tuple it records only: read
			// each one alone and compare its partition columns.
			for _, df := range files {
				checkFileTuple(t, f, tbl, df)
			}
			for want, filter := range c.filters {
				if got := scanIDs(t, f, tbl, filter); got != want {
					t.Errorf("scan %s: ids %s, want %s", filter, got, want)
				}
			}
		})
	}
}

// checkFileTuple reads df and checks that its rows' partition source
// columns give the partition tuple df records.
func checkFileTuple(t *testing.T, f *fixture, tbl *table.Table, df iceberg.DataFile) {
	t.Helper()
	rdr, err := readDataFile(f, tbl, df)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	part := df.Partition()
	spec := tbl.Spec()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for _, pf := range spec.Fields() {
			name, _ := tbl.Schema().FindColumnName(pf.SourceID())
			col := rec.Column(rec.Schema().FieldIndices(name)[0])
			want, recorded := part[pf.FieldID]
			for i := range col.Len() {
				var got any
				if col.IsValid(i) {
					lit := arrowLiteral(col, i)
					out := pf.Transform.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: lit})
					if out.Valid {
						got = out.Val.Any()
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) || (got == nil) != (!recorded || want == nil) {
					t.Errorf("%s: row %d of column %s has partition value %v, the file records %v", df.FilePath(), i, name, got, want)
				}
			}
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
}

func arrowLiteral(col arrow.Array, i int) iceberg.Literal {
	switch a := col.(type) {
	case *array.String:
		return iceberg.NewLiteral(a.Value(i))
	case *array.Binary:
		return iceberg.NewLiteral(a.Value(i))
	}
	panic(fmt.Sprintf("no literal of %T", col))
}

// readDataFile reads one data file of tbl (committed) through iceberg-go.
func readDataFile(f *fixture, tbl *table.Table, df iceberg.DataFile) (array.RecordReader, error) {
	tasks, err := tbl.Scan().PlanFiles(f.ctx)
	if err != nil {
		return nil, err
	}
	var mine []table.FileScanTask
	for _, task := range tasks {
		if task.File.FilePath() == df.FilePath() {
			mine = append(mine, task)
		}
	}
	if len(mine) == 0 {
		return nil, fmt.Errorf("no task reads %s", df.FilePath())
	}
	sc, recs, err := tbl.Scan().ReadTasks(f.ctx, mine)
	if err != nil {
		return nil, err
	}
	var batches []arrow.RecordBatch
	for rec, err := range recs {
		if err != nil {
			return nil, err
		}
		rec.Retain()
		batches = append(batches, rec)
	}
	return array.NewRecordReader(sc, batches)
}

// scanIDs returns the sorted ids a scan of tbl with filter reads, joined
// by commas (files pruned by their partition values and metrics).
func scanIDs(t *testing.T, f *fixture, tbl *table.Table, filter iceberg.BooleanExpression) string {
	t.Helper()
	_, recs, err := tbl.Scan(table.WithRowFilter(filter)).ToArrowRecords(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		col := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		ids = append(ids, col.Int64Values()...)
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	return strings.Join(out, ",")
}

// TestLaneUUID: a lane's write UUID keeps the first ten bytes (the
// statement's, which cleanup matches) and differs from the write's own,
// every other lane's and every UUID the planner gives a fragment or a
// file (its byte 10 is below 0x80).
func TestLaneUUID(t *testing.T) {
	id := uuid.New()
	seen := map[uuid.UUID]bool{id: true}
	for k := uint64(1); k < 1000; k++ {
		l := laneUUID(id, k)
		if [10]byte(l[:10]) != [10]byte(id[:10]) || l[10] < 0x80 || seen[l] {
			t.Fatalf("lane %d: %s of %s", k, l, id)
		}
		seen[l] = true
	}
	if laneUUID(id, 0) != id {
		t.Fatal("lane 0 is the write's own UUID")
	}
	if base64.StdEncoding.EncodeToString(nullBytes) != "null" {
		t.Fatal("nullBytes")
	}
}

// TestWriteLanesEnd: a write with two lanes over many batches yields every
// row; one whose caller stops at the first file, or whose rows fail
// midway, ends every goroutine it started and reports the rows' error.
func TestWriteLanesEnd(t *testing.T) {
	f := newFixture(t)
	tbl := f.table("id BIGINT; s VARCHAR", identitySpec("s"), nil)
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	for b := range 20 {
		queries = append(queries, fmt.Sprintf(`SELECT i::BIGINT AS id, CASE i %% 3 WHEN 0 THEN 'null' WHEN 1 THEN NULL ELSE 'v' || (i %% 5) END AS s
			FROM range(%d, %d) r(i)`, b*500, (b+1)*500))
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var rows int64
	nulls := map[string]int64{}
	for df, err := range Write(f.ctx, tbl, target, f.rows(tbl, queries...), uuid.New(), table.WithMaxWriteWorkers(1)) {
		if err != nil {
			t.Fatal(err)
		}
		rows += df.Count()
		nulls[fmt.Sprint(df.Partition()[1000])] += df.NullValueCounts()[2]
	}
	if rows != 10000 || nulls["<nil>"] != 3333 || nulls["null"] != 0 {
		t.Fatalf("%d rows; NULL counts by partition %v", rows, nulls)
	}
	for range Write(f.ctx, tbl, target, f.rows(tbl, queries...), uuid.New(), table.WithMaxWriteWorkers(1)) {
		break
	}
	boom := errors.New("the rows failed")
	failing := func(yield func(arrow.RecordBatch, error) bool) {
		for rec := range seqOf(f.rows(tbl, queries[:3]...)) {
			if !yield(rec, nil) {
				return
			}
		}
		yield(nil, boom)
	}
	var got error
	for _, err := range Write(f.ctx, tbl, target, failing, uuid.New(), table.WithMaxWriteWorkers(1)) {
		if err != nil {
			got = err
		}
	}
	if !errors.Is(got, boom) {
		t.Fatalf("error %v, want %v", got, boom)
	}
}

// seqOf is the batches of rows.
func seqOf(rows iter.Seq2[arrow.RecordBatch, error]) iter.Seq[arrow.RecordBatch] {
	return func(yield func(arrow.RecordBatch) bool) {
		for rec := range rows {
			if !yield(rec) {
				return
			}
		}
	}
}
