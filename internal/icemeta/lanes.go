package icemeta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// Partition values whose paths collide.
//
// iceberg-go v0.7.0's partitioned writer keeps one open file writer per
// partition *path* (table/partitioned_fanout_writer.go hands
// getOrCreateRollingDataWriter the path PartitionSpec.PartitionToPath
// gives), and the first partition tuple to reach a path is the one its
// files record. Two tuples that render to the same path therefore share
// one file, recorded under the first tuple with the other's rows in it.
// A field's path value is its transform's human string, query-escaped;
// for a non-NULL value it is injective in every transform and type
// (lanes_test.go holds iceberg-go to that) but one: NULL renders as
// "null", and so do the string 'null' (identity, or a truncate that
// leaves 'null' of 'nullx'), and the binary (or fixed) value whose base64
// is "null" (0x9E 0xE9 0x65, or a truncate to it).
//
// So Write sends the rows whose partition values render as "null"
// without being NULL to iceberg-go writers of their own, one per set of
// such fields (a lane), each with a write UUID of its own so that its
// file names differ from the other lanes' in the same directory; every
// other row goes to lane 0, the write's own UUID. Within a lane, equal
// paths mean equal partition tuples. Most tables have no partition field
// that can render as "null" (no string, binary or fixed source under
// identity or truncate), and most batches have no such value: both keep
// the single writer of before, the batch untouched.

// nullRender is the path value of a NULL partition value.
const nullRender = "null"

// nullBytes is the binary value iceberg-go renders as "null" (base64).
var nullBytes = func() []byte {
	b, err := base64.StdEncoding.DecodeString(nullRender)
	if err != nil {
		panic(err)
	}
	return b
}()

// laneField is a partition field whose non-NULL values may render as
// "null": its source column's path in the records' schema and the test.
type laneField struct {
	path  []int
	name  string
	isNul func(arr arrow.Array, i int) bool // a non-NULL value rendering "null"
}

// laneSplitter sorts the rows of a write into lanes (see above).
type laneSplitter struct {
	fields []laneField
	mem    memory.Allocator
}

// newLaneSplitter returns the splitter of a write into tbl of records
// with schema sc, or nil when no partition field of tbl's current spec
// can render a non-NULL value as "null".
func newLaneSplitter(tbl *table.Table, sc *arrow.Schema) (*laneSplitter, error) {
	spec := tbl.Spec()
	schema := tbl.Schema()
	var fields []laneField
	for _, pf := range spec.Fields() {
		src, ok := schema.FindFieldByID(pf.SourceID())
		if !ok {
			continue
		}
		test, ok := rendersNull(pf, src.Type)
		if !ok {
			continue
		}
		name, ok := schema.FindColumnName(pf.SourceID())
		if !ok {
			continue
		}
		path, ok := arrowColumnPath(sc, name)
		if !ok {
			return nil, fmt.Errorf("icemeta: partition source column %q is not in the records", name)
		}
		fields = append(fields, laneField{path: path, name: name, isNul: test})
	}
	if len(fields) == 0 {
		return nil, nil
	}
	if len(fields) > 63 {
		return nil, fmt.Errorf("icemeta: %d partition fields over strings and binaries; at most 63 are written", len(fields))
	}
	return &laneSplitter{fields: fields, mem: memory.NewGoAllocator()}, nil
}

// rendersNull returns, for a partition field over a source of type typ
// whose non-NULL values can render as "null", the test of a value; ok is
// false for every other field. The test is the transform's own
// (iceberg-go's Transformer and ToHumanStrType), after a prefix check
// that rules out almost every value cheaply: identity and truncate keep
// a prefix of the value, and a rendering of "null" needs "null" (or
// nullBytes) to start it.
func rendersNull(pf iceberg.PartitionField, typ iceberg.Type) (func(arrow.Array, int) bool, bool) {
	transform := func(v any) any { return v }
	switch tr := pf.Transform.(type) {
	case iceberg.IdentityTransform:
	case iceberg.TruncateTransform:
		fn, err := tr.Transformer(typ)
		if err != nil {
			return nil, false
		}
		transform = fn
	default:
		return nil, false
	}
	result := pf.Transform.ResultType(typ)
	render := func(v any) bool { return pf.Transform.ToHumanStrType(result, transform(v)) == nullRender }
	switch typ.(type) {
	case iceberg.StringType:
		return func(arr arrow.Array, i int) bool {
			s, ok := stringAt(arr, i)
			return ok && strings.HasPrefix(s, nullRender) && render(s)
		}, true
	case iceberg.BinaryType, iceberg.FixedType:
		return func(arr arrow.Array, i int) bool {
			b, ok := bytesAt(arr, i)
			return ok && bytes.HasPrefix(b, nullBytes) && render(b)
		}, true
	}
	return nil, false
}

func stringAt(arr arrow.Array, i int) (string, bool) {
	switch a := arr.(type) {
	case *array.String:
		return a.Value(i), true
	case *array.LargeString:
		return a.Value(i), true
	case *array.StringView:
		return a.Value(i), true
	}
	return "", false
}

func bytesAt(arr arrow.Array, i int) ([]byte, bool) {
	switch a := arr.(type) {
	case *array.Binary:
		return a.Value(i), true
	case *array.LargeBinary:
		return a.Value(i), true
	case *array.BinaryView:
		return a.Value(i), true
	case *array.FixedSizeBinary:
		return a.Value(i), true
	}
	return nil, false
}

// arrowColumnPath resolves a dotted column name to field indexes in sc,
// the way iceberg-go's partitioned writer does (the longest name first,
// for names with dots of their own).
func arrowColumnPath(sc *arrow.Schema, name string) ([]int, bool) {
	type fields interface {
		FieldIndices(string) []int
		Field(int) arrow.Field
	}
	var resolve func(c fields, rest string) ([]int, bool)
	resolve = func(c fields, rest string) ([]int, bool) {
		for end := len(rest); end > 0; end = strings.LastIndex(rest[:end], ".") {
			idx := c.FieldIndices(rest[:end])
			if idx == nil {
				continue
			}
			if end == len(rest) {
				return []int{idx[0]}, true
			}
			st, ok := c.Field(idx[0]).Type.(*arrow.StructType)
			if !ok {
				continue
			}
			if sub, ok := resolve(st, rest[end+1:]); ok {
				return append([]int{idx[0]}, sub...), true
			}
		}
		return nil, false
	}
	return resolve(sc, name)
}

// column is the leaf array of path in rec and, for a nested one, whether
// row i reaches it (no NULL struct above it).
func column(rec arrow.RecordBatch, path []int) (leaf arrow.Array, reach func(int) bool) {
	col := rec.Column(path[0])
	var parents []arrow.Array
	for _, k := range path[1:] {
		st, ok := col.(*array.Struct)
		if !ok {
			return nil, nil
		}
		parents = append(parents, col)
		col = st.Field(k)
	}
	return col, func(i int) bool {
		for _, p := range parents {
			if p.IsNull(i) {
				return false
			}
		}
		return true
	}
}

// masks returns each row's lane (a bit per field whose value renders as
// "null" without being NULL) and whether any row is off lane 0.
func (s *laneSplitter) masks(rec arrow.RecordBatch) ([]uint64, bool) {
	var masks []uint64
	for k, f := range s.fields {
		leaf, reach := column(rec, f.path)
		if leaf == nil || leaf.NullN() == leaf.Len() {
			continue
		}
		for i := range leaf.Len() {
			if leaf.IsNull(i) || !reach(i) || !f.isNul(leaf, i) {
				continue
			}
			if masks == nil {
				masks = make([]uint64, rec.NumRows())
			}
			masks[i] |= 1 << k
		}
	}
	return masks, masks != nil
}

// lanePart is the rows of one batch that go to one lane.
type lanePart struct {
	lane uint64
	rec  arrow.RecordBatch
}

// split returns rec's rows by lane, in order of first appearance; it
// takes over rec (released, or passed on whole when it has one lane).
func (s *laneSplitter) split(ctx context.Context, rec arrow.RecordBatch) ([]lanePart, error) {
	masks, any := s.masks(rec)
	if !any {
		return []lanePart{{rec: rec}}, nil
	}
	defer rec.Release()
	var order []uint64
	rows := map[uint64][]int64{}
	for i, m := range masks {
		if _, ok := rows[m]; !ok {
			order = append(order, m)
		}
		rows[m] = append(rows[m], int64(i))
	}
	parts := make([]lanePart, 0, len(order))
	for _, m := range order {
		b := array.NewInt64Builder(s.mem)
		b.AppendValues(rows[m], nil)
		idx := b.NewArray()
		b.Release()
		out, err := compute.Take(compute.WithAllocator(ctx, s.mem), *compute.DefaultTakeOptions(),
			compute.NewDatumWithoutOwning(rec), compute.NewDatumWithoutOwning(idx))
		idx.Release()
		if err != nil {
			for _, p := range parts {
				p.rec.Release()
			}
			return nil, fmt.Errorf("icemeta: split the rows by partition: %w", err)
		}
		parts = append(parts, lanePart{lane: m, rec: out.(*compute.RecordDatum).Value})
	}
	return parts, nil
}

// laneUUID is the write UUID of lane k (k > 0) of a write with UUID id:
// the same first ten bytes, which every file of a statement shares and
// its cleanup looks for (the planner varies only the last six per
// fragment and file), and in the last six a hash of id and k with the
// top bit set, which the planner's own never have (a fragment number
// below 2^23).
func laneUUID(id uuid.UUID, k uint64) uuid.UUID {
	if k == 0 {
		return id
	}
	h := sha256.New()
	h.Write(id[:])
	fmt.Fprintf(h, "/lane %d", k)
	sum := h.Sum(nil)
	out := id
	copy(out[10:], sum[:6])
	out[10] |= 0x80
	return out
}

// laneFile is a data file a lane's writer yielded, or its error.
type laneFile struct {
	df  iceberg.DataFile
	err error
}

// writeLanes writes records with one iceberg-go writer per lane (see
// above), all with opts, each with its lane's UUID, and yields their data
// files as they come. It returns after every goroutine it started ended.
func writeLanes(ctx context.Context, tbl *table.Table, schema *arrow.Schema, records iter.Seq2[arrow.RecordBatch, error], id uuid.UUID, split *laneSplitter, opts []table.WriteRecordOption) iter.Seq2[iceberg.DataFile, error] {
	return func(yield func(iceberg.DataFile, error) bool) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		out := make(chan laneFile)
		send := func(f laneFile) bool {
			select {
			case out <- f:
				return true
			case <-ctx.Done():
				return false
			}
		}
		var writers sync.WaitGroup
		lanes := map[uint64]chan arrow.RecordBatch{}
		start := func(k uint64) chan arrow.RecordBatch {
			in := make(chan arrow.RecordBatch)
			lanes[k] = in
			seq := func(yield func(arrow.RecordBatch, error) bool) {
				for rec := range in {
					if !yield(rec, nil) {
						return
					}
				}
			}
			laneOpts := append(append([]table.WriteRecordOption(nil), opts...), table.WithWriteUUID(laneUUID(id, k)))
			writers.Go(func() {
				for df, err := range table.WriteRecords(ctx, tbl, schema, seq, laneOpts...) {
					if !send(laneFile{df, err}) || err != nil {
						return
					}
				}
			})
			return in
		}
		// The dispatcher reads records (only it does) and hands each
		// lane its rows; out closes once it and every writer are done.
		go func() {
			defer close(out)
			defer writers.Wait()
			defer func() {
				for _, in := range lanes {
					close(in)
				}
			}()
			start(0)
			for rec, err := range records {
				if err != nil {
					send(laneFile{err: err})
					return
				}
				parts, err := split.split(ctx, rec)
				if err != nil {
					send(laneFile{err: err})
					return
				}
				for i, p := range parts {
					in, ok := lanes[p.lane]
					if !ok {
						in = start(p.lane)
					}
					select {
					case in <- p.rec:
					case <-ctx.Done():
						for _, q := range parts[i:] {
							q.rec.Release()
						}
						return
					}
				}
			}
		}()
		defer func() {
			cancel(errLanesDone)
			for range out {
			}
		}()
		for f := range out {
			if !yield(f.df, f.err) || f.err != nil {
				return
			}
		}
	}
}

// errLanesDone ends a lane write's goroutines once its caller is done.
var errLanesDone = errors.New("icemeta: write done")

// Deletes. iceberg-go's writers of position and equality delete files
// keep one file per partition path too (pos_delete_partitioned_fanout_
// writer.go, equality_delete_writer.go), and a reader applies a delete
// file only to the data files of the partition it records: deletes of
// the NULL partition written with those of the 'null' one are lost. They
// take no lanes; a caller checks with these first and deletes another way
// (rewriting the files, through Write) when they would mix partitions.

// PartitionPathsCollide reports whether two of the data files (of a table
// with metadata meta) have different partition tuples that render to the
// same partition path, so that deletes of both in one iceberg-go delete
// write would share a file.
func PartitionPathsCollide(meta table.Metadata, files []iceberg.DataFile) bool {
	schema := meta.CurrentSchema()
	tuples := map[string]string{}
	for _, df := range files {
		spec := meta.PartitionSpecByID(int(df.SpecID()))
		if spec == nil || spec.IsUnpartitioned() {
			continue
		}
		part := df.Partition()
		var path, tuple strings.Builder
		fmt.Fprintf(&path, "%d", df.SpecID())
		for _, pf := range spec.Fields() {
			v := part[pf.FieldID]
			fmt.Fprintf(&tuple, "/%#v", v)
			if src, ok := schema.FindFieldByID(pf.SourceID()); ok && v != nil {
				if _, collidable := rendersNull(pf, src.Type); collidable &&
					pf.Transform.ToHumanStrType(pf.Transform.ResultType(src.Type), v) == nullRender {
					v = nil // renders as NULL does
				}
			}
			// Other values render injectively: a value stands for its path.
			fmt.Fprintf(&path, "/%#v", v)
		}
		if t, ok := tuples[path.String()]; ok && t != tuple.String() {
			return true
		}
		tuples[path.String()] = tuple.String()
	}
	return false
}

// MayCollide reports whether any partition spec of meta has a field whose
// non-NULL values can render as "null" (string, binary or fixed sources
// under identity or truncate): only such a table can have partitions
// whose paths collide.
func MayCollide(meta table.Metadata) bool {
	schema := meta.CurrentSchema()
	for _, spec := range meta.PartitionSpecs() {
		for _, pf := range spec.Fields() {
			if src, ok := schema.FindFieldByID(pf.SourceID()); ok {
				if _, collidable := rendersNull(pf, src.Type); collidable {
					return true
				}
			}
		}
	}
	return false
}

// RowsNeedLanes reports whether rows to be written into tbl (its partition
// source columns among them, by name) hold a partition value that renders
// as "null" without being NULL, which one iceberg-go write would put in
// the NULL partition's file.
func RowsNeedLanes(tbl *table.Table, rows []arrow.RecordBatch) (bool, error) {
	if len(rows) == 0 {
		return false, nil
	}
	split, err := newLaneSplitter(tbl, rows[0].Schema())
	if err != nil || split == nil {
		return false, err
	}
	for _, rec := range rows {
		if _, off := split.masks(rec); off {
			return true, nil
		}
	}
	return false, nil
}
