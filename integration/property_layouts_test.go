package integration

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Arrow layouts for the property test's bulk ingest: each column of the
// batches sent is, at random, in another layout of its type than the one
// DuckDB gives (string and binary views, large strings, binaries and
// lists, dictionaries, run-end encoding, list views, fixed-size lists,
// decimal32/64/256, date64, time64[ns], timestamps in other units and
// zones), as clients such as pyarrow and polars send them. The values are
// the same, so the table must be too.

// layoutChoices are the other layouts of a type, by the layout's name.
func layoutChoices(t arrow.DataType) []string {
	switch t.ID() {
	case arrow.STRING:
		return []string{"string_view", "large_string", "dictionary", "run_end_encoded"}
	case arrow.BINARY:
		return []string{"binary_view", "large_binary", "run_end_encoded"}
	case arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL:
		return []string{"run_end_encoded"}
	case arrow.DECIMAL128:
		out := []string{"decimal256"}
		if p := t.(*arrow.Decimal128Type).Precision; p <= 9 {
			out = append(out, "decimal32", "decimal64")
		} else if p <= 18 {
			out = append(out, "decimal64")
		}
		return out
	case arrow.DATE32:
		return []string{"date64"}
	case arrow.TIME64:
		return []string{"time64[ns]", "time32[ms]"}
	case arrow.TIMESTAMP:
		out := []string{"timestamp[ns]", "timestamp[ms]", "timestamp[s]"}
		if t.(*arrow.TimestampType).TimeZone != "" {
			out = append(out, "America/New_York", "+05:30")
		}
		return out
	case arrow.LIST:
		return []string{"list_view", "large_list", "large_list_view", "fixed_size_list"}
	case arrow.STRUCT:
		return []string{"struct of layouts"}
	case arrow.MAP:
		return []string{"map of layouts"}
	}
	return nil
}

// layoutRand picks the layouts of generated table name's columns, the
// same for its shrunk copies.
func layoutRand(name string, col int) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", name, col)
	return rand.New(rand.NewPCG(h.Sum64(), 7))
}

// relayout returns rec with each column but the id in a layout chosen
// with r (or as it is, when the values do not fit the layout); it does
// not release rec. The names of the layouts used are returned too.
func relayout(ctx context.Context, r func(col int) *rand.Rand, rec arrow.RecordBatch) (arrow.RecordBatch, []string, error) {
	mem := memory.DefaultAllocator
	cols := make([]arrow.Array, rec.NumCols())
	fields := rec.Schema().Fields()
	var used []string
	for i := range cols {
		col := rec.Column(i)
		out := col
		out.Retain()
		if i > 0 {
			if a, name, err := toLayout(ctx, mem, r(i), col); err != nil {
				out.Release()
				return nil, nil, err
			} else if a != nil {
				out.Release()
				out = a
				used = append(used, fmt.Sprintf("%s as %s", fields[i].Name, name))
			}
		}
		cols[i] = out
		fields[i].Type = out.DataType()
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), used, nil
}

// toLayout is a in one of its other layouts, picked with r, with its name;
// nil when a keeps its own (a choice of it, or values the layout cannot
// hold, such as timestamps outside timestamp[ns]'s years).
func toLayout(ctx context.Context, mem memory.Allocator, r *rand.Rand, a arrow.Array) (arrow.Array, string, error) {
	choices := layoutChoices(a.DataType())
	if len(choices) == 0 || r.IntN(4) == 0 {
		return nil, "", nil
	}
	name := choices[r.IntN(len(choices))]
	cast := func(to arrow.DataType) (arrow.Array, string, error) {
		out, err := compute.CastArray(ctx, a, compute.SafeCastOptions(to))
		if err != nil {
			return nil, "", nil // values this layout cannot hold exactly
		}
		return out, name, nil
	}
	retype := func(to arrow.DataType) (arrow.Array, string, error) {
		d := a.Data()
		data := array.NewData(to, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset())
		defer data.Release()
		return array.MakeFromData(data), name, nil
	}
	switch name {
	case "string_view":
		// Built, not cast: arrow-go v18.8's cast to a view makes an array
		// its IPC writer fails on (a nil pointer).
		s := a.(*array.String)
		b := array.NewStringViewBuilder(mem)
		return buildView(a, b, func(i int) { b.Append(s.Value(i)) }), name, nil
	case "binary_view":
		s := a.(*array.Binary)
		b := array.NewBinaryViewBuilder(mem)
		return buildView(a, b, func(i int) { b.Append(s.Value(i)) }), name, nil
	case "large_string":
		return cast(arrow.BinaryTypes.LargeString)
	case "large_binary":
		return cast(arrow.BinaryTypes.LargeBinary)
	case "dictionary":
		b := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
		defer b.Release()
		s := a.(*array.String)
		for i := range s.Len() {
			if s.IsNull(i) {
				b.AppendNull()
			} else if err := b.AppendString(s.Value(i)); err != nil {
				return nil, "", err
			}
		}
		return b.NewArray(), name, nil
	case "run_end_encoded":
		out, err := compute.RunEndEncodeArray(ctx, compute.RunEndEncodeOptions{RunEndType: arrow.PrimitiveTypes.Int32}, a)
		if err != nil {
			return nil, "", err
		}
		return out, name, nil
	case "decimal256":
		t := a.DataType().(*arrow.Decimal128Type)
		return cast(&arrow.Decimal256Type{Precision: t.Precision, Scale: t.Scale})
	case "decimal32", "decimal64":
		return narrowDecimal(mem, a.(*array.Decimal128), name), name, nil
	case "date64":
		return cast(arrow.FixedWidthTypes.Date64)
	case "time64[ns]":
		return cast(arrow.FixedWidthTypes.Time64ns)
	case "time32[ms]":
		return cast(arrow.FixedWidthTypes.Time32ms)
	case "timestamp[ns]", "timestamp[ms]", "timestamp[s]":
		unit := map[string]arrow.TimeUnit{"timestamp[ns]": arrow.Nanosecond, "timestamp[ms]": arrow.Millisecond, "timestamp[s]": arrow.Second}[name]
		return cast(&arrow.TimestampType{Unit: unit, TimeZone: a.DataType().(*arrow.TimestampType).TimeZone})
	case "America/New_York", "+05:30":
		// The same instants, labelled with another zone.
		return retype(&arrow.TimestampType{Unit: a.DataType().(*arrow.TimestampType).Unit, TimeZone: name})
	case "list_view", "large_list", "large_list_view", "fixed_size_list":
		return listLayout(ctx, mem, a.(*array.List), name)
	case "struct of layouts":
		return structLayout(ctx, mem, r, a.(*array.Struct), name)
	case "map of layouts":
		return mapLayout(ctx, mem, r, a.(*array.Map), name)
	}
	return nil, "", fmt.Errorf("no layout %s", name)
}

// structLayout is a struct whose fields each take a layout of their own
// (toLayout); nil for a sliced struct.
func structLayout(ctx context.Context, mem memory.Allocator, r *rand.Rand, s *array.Struct, name string) (arrow.Array, string, error) {
	if s.Data().Offset() != 0 {
		return nil, "", nil // Field(i) is sliced to the struct's rows
	}
	st := s.DataType().(*arrow.StructType)
	fields := st.Fields()
	children := make([]arrow.ArrayData, s.NumField())
	for i := range children {
		c := s.Field(i)
		if o, _, err := toLayout(ctx, mem, r, c); err != nil {
			return nil, "", err
		} else if o != nil {
			c = o
			defer o.Release()
		}
		children[i] = c.Data()
		fields[i].Type = c.DataType()
	}
	d := s.Data()
	data := array.NewData(arrow.StructOf(fields...), s.Len(), []*memory.Buffer{d.Buffers()[0]}, children, d.NullN(), d.Offset())
	defer data.Release()
	return array.MakeFromData(data), name, nil
}

// mapLayout is a map whose keys and values each take a layout of their
// own (toLayout); keys are never dictionary or run-end encoded.
func mapLayout(ctx context.Context, mem memory.Allocator, r *rand.Rand, m *array.Map, name string) (arrow.Array, string, error) {
	mt := m.DataType().(*arrow.MapType)
	keys, items := m.Keys(), m.Items()
	if o, _, err := toLayout(ctx, mem, r, keys); err != nil {
		return nil, "", err
	} else if o != nil && o.DataType().ID() != arrow.DICTIONARY && o.DataType().ID() != arrow.RUN_END_ENCODED {
		keys = o
		defer o.Release()
	}
	if o, _, err := toLayout(ctx, mem, r, items); err != nil {
		return nil, "", err
	} else if o != nil {
		items = o
		defer o.Release()
	}
	kf, vf := mt.KeyField(), mt.ItemField()
	kf.Type, vf.Type = keys.DataType(), items.DataType()
	to := arrow.MapOfFields(kf, vf)
	entries := array.NewData(to.Elem(), keys.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{keys.Data(), items.Data()}, 0, 0)
	defer entries.Release()
	d := m.Data()
	data := array.NewData(to, m.Len(), d.Buffers(), []arrow.ArrayData{entries}, d.NullN(), d.Offset())
	defer data.Release()
	return array.MakeFromData(data), name, nil
}

// buildView is a's values appended to b (appendAt appends row i), which
// it releases.
func buildView(a arrow.Array, b array.Builder, appendAt func(i int)) arrow.Array {
	defer b.Release()
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
		} else {
			appendAt(i)
		}
	}
	return b.NewArray()
}

// narrowDecimal is a as decimal32 or decimal64 of the same precision and
// scale (which its precision allows).
func narrowDecimal(mem memory.Allocator, a *array.Decimal128, name string) arrow.Array {
	t := a.DataType().(*arrow.Decimal128Type)
	if name == "decimal32" {
		b := array.NewDecimal32Builder(mem, &arrow.Decimal32Type{Precision: t.Precision, Scale: t.Scale})
		defer b.Release()
		for i := range a.Len() {
			if a.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(decimal.Decimal32(a.Value(i).LowBits()))
			}
		}
		return b.NewArray()
	}
	b := array.NewDecimal64Builder(mem, &arrow.Decimal64Type{Precision: t.Precision, Scale: t.Scale})
	defer b.Release()
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(decimal.Decimal64(a.Value(i).LowBits()))
		}
	}
	return b.NewArray()
}

// listLayout is a list array in another list layout: a view (offsets and
// sizes, here in reverse order of the rows' elements), a large list, or a
// fixed-size list when every list has the same length.
func listLayout(ctx context.Context, mem memory.Allocator, a *array.List, name string) (arrow.Array, string, error) {
	elem := a.DataType().(*arrow.ListType).ElemField()
	n := a.Len()
	switch name {
	case "fixed_size_list":
		size := -1
		for i := range n {
			if a.IsNull(i) {
				continue
			}
			s, e := a.ValueOffsets(i)
			if size >= 0 && int(e-s) != size {
				return nil, "", nil // not all the same length
			}
			size = int(e - s)
		}
		if size <= 0 {
			return nil, "", nil
		}
		idx := array.NewInt64Builder(mem)
		defer idx.Release()
		for i := range n {
			s, _ := a.ValueOffsets(i)
			for j := range size {
				if a.IsNull(i) {
					idx.AppendNull()
				} else {
					idx.Append(s + int64(j))
				}
			}
		}
		indices := idx.NewArray()
		defer indices.Release()
		child, err := compute.TakeArray(ctx, a.ListValues(), indices)
		if err != nil {
			return nil, "", err
		}
		defer child.Release()
		data := array.NewData(arrow.FixedSizeListOfField(int32(size), elem), n, []*memory.Buffer{validityCopy(a)}, []arrow.ArrayData{child.Data()}, a.NullN(), 0)
		defer data.Release()
		return array.MakeFromData(data), name, nil
	case "large_list":
		out, err := compute.CastArray(ctx, a, compute.SafeCastOptions(arrow.LargeListOfField(elem)))
		if err != nil {
			return nil, "", nil
		}
		return out, name, nil
	}
	// Views: the rows' elements laid out last row first, so that offsets
	// do not ascend.
	idx := array.NewInt64Builder(mem)
	defer idx.Release()
	offs := make([]int64, n)
	sizes := make([]int64, n)
	var at int64
	for i := n - 1; i >= 0; i-- {
		s, e := a.ValueOffsets(i)
		if a.IsNull(i) {
			continue
		}
		offs[i], sizes[i] = at, e-s
		for j := s; j < e; j++ {
			idx.Append(j)
		}
		at += e - s
	}
	indices := idx.NewArray()
	defer indices.Release()
	child, err := compute.TakeArray(ctx, a.ListValues(), indices)
	if err != nil {
		return nil, "", err
	}
	defer child.Release()
	var bufs []*memory.Buffer
	var to arrow.DataType
	if name == "list_view" {
		o, s := make([]int32, n), make([]int32, n)
		for i := range n {
			o[i], s[i] = int32(offs[i]), int32(sizes[i])
		}
		bufs = []*memory.Buffer{validityCopy(a), memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(o)), memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(s))}
		to = arrow.ListViewOfField(elem)
	} else {
		bufs = []*memory.Buffer{validityCopy(a), memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(offs)), memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(sizes))}
		to = arrow.LargeListViewOfField(elem)
	}
	data := array.NewData(to, n, bufs, []arrow.ArrayData{child.Data()}, a.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), name, nil
}

// validityCopy is a's validity bitmap from bit 0 (nil without NULLs).
func validityCopy(a arrow.Array) *memory.Buffer {
	if a.NullN() == 0 {
		return nil
	}
	bits := make([]byte, (a.Len()+7)/8)
	for i := range a.Len() {
		if a.IsValid(i) {
			bits[i/8] |= 1 << (i % 8)
		}
	}
	return memory.NewBufferBytes(bits)
}
