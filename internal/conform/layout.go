package conform

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Arrow layouts a client sends (bulk ingest). Arrow has several layouts
// for one logical type (string, large_string and string_view; list,
// large_list, list_view, fixed_size_list; dictionary and run-end encoded
// arrays of any of them; decimals of 32 to 256 bits; times and timestamps
// in four units), and iceberg-go takes only some of them. Storable maps
// each to the one layout the rest of the write path takes, with the same
// values; what Iceberg has no type for (durations, intervals, unions,
// extension types other than uuid, json and bool8) is refused, naming the
// column and the type. docs/types.md lists the mapping.

// ErrType: a column's Arrow type has no Iceberg type to store it as.
var ErrType = errors.New("conform: no Iceberg type for the Arrow type")

// maxDecimalPrecision is Iceberg's (decimal128's) largest precision.
const maxDecimalPrecision = 38

// StorableType is the Arrow type a column of type t is stored as: the
// same logical type in the layout iceberg-go writes (a view or large
// string is a string, every list layout a list of the element's storable
// type, a dictionary or run-end encoded array its values' type, a narrow
// integer int32, uint32 and uint64 int64, float16 float32, date64 date32,
// every time time64[us], timestamps in s or ms microseconds (ns kept) and
// every zone UTC, decimals decimal128). path names the column in errors.
func StorableType(t arrow.DataType, path string) (arrow.DataType, error) {
	switch t.ID() {
	case arrow.NULL, arrow.BOOL, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64,
		arrow.STRING, arrow.BINARY, arrow.DATE32, arrow.DECIMAL128, arrow.FIXED_SIZE_BINARY:
		return t, nil
	case arrow.INT8, arrow.INT16, arrow.UINT8, arrow.UINT16:
		return arrow.PrimitiveTypes.Int32, nil
	case arrow.UINT32, arrow.UINT64:
		return arrow.PrimitiveTypes.Int64, nil
	case arrow.FLOAT16:
		return arrow.PrimitiveTypes.Float32, nil
	case arrow.LARGE_STRING, arrow.STRING_VIEW:
		return arrow.BinaryTypes.String, nil
	case arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return arrow.BinaryTypes.Binary, nil
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL256:
		d := t.(arrow.DecimalType)
		if d.GetPrecision() > maxDecimalPrecision {
			return nil, fmt.Errorf("%w: column %s is %s; Iceberg decimals have at most %d digits", ErrType, path, t, maxDecimalPrecision)
		}
		return &arrow.Decimal128Type{Precision: d.GetPrecision(), Scale: d.GetScale()}, nil
	case arrow.DATE64:
		return arrow.FixedWidthTypes.Date32, nil
	case arrow.TIME32, arrow.TIME64:
		return arrow.FixedWidthTypes.Time64us, nil
	case arrow.TIMESTAMP:
		return storableTimestamp(t), nil
	case arrow.LIST, arrow.LARGE_LIST, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW, arrow.FIXED_SIZE_LIST, arrow.MAP, arrow.STRUCT:
		return storableNested(t, path)
	case arrow.DICTIONARY:
		return StorableType(t.(*arrow.DictionaryType).ValueType, path)
	case arrow.RUN_END_ENCODED:
		return StorableType(t.(*arrow.RunEndEncodedType).Encoded(), path)
	case arrow.EXTENSION:
		switch t.(type) {
		case *extensions.UUIDType:
			return t, nil
		case *extensions.JSONType:
			return StorableType(t.(arrow.ExtensionType).StorageType(), path)
		case *extensions.Bool8Type:
			return arrow.FixedWidthTypes.Boolean, nil
		}
		return nil, fmt.Errorf("%w: column %s is of the Arrow extension type %s, which Iceberg cannot store (send its storage type, %s)",
			ErrType, path, t.(arrow.ExtensionType).ExtensionName(), t.(arrow.ExtensionType).StorageType())
	}
	return nil, fmt.Errorf("%w: column %s is of Arrow type %s, which Iceberg has no type for", ErrType, path, t)
}

// storableTimestamp is a timestamp type in the write path's layout:
// microseconds or nanoseconds, UTC when zoned.
func storableTimestamp(t arrow.DataType) arrow.DataType {
	ts := t.(*arrow.TimestampType)
	out := &arrow.TimestampType{Unit: arrow.Microsecond}
	if ts.Unit == arrow.Nanosecond {
		out.Unit = arrow.Nanosecond
	}
	if ts.TimeZone != "" {
		out.TimeZone = "UTC" // the values are instants in every zone
	}
	if arrow.TypeEqual(out, ts) {
		return t
	}
	return out
}

// storableNested is a list, map or struct type with its children in
// the write path's layout (t itself when they already are, for a list
// only when it is a plain list).
func storableNested(t arrow.DataType, path string) (arrow.DataType, error) {
	switch t.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW, arrow.FIXED_SIZE_LIST:
		elem := t.(arrow.ListLikeType).ElemField()
		et, err := StorableType(elem.Type, path+".element")
		if err != nil {
			return nil, err
		}
		if t.ID() == arrow.LIST && arrow.TypeEqual(et, elem.Type) {
			return t, nil
		}
		elem.Type = et
		return arrow.ListOfField(elem), nil
	case arrow.MAP:
		m := t.(*arrow.MapType)
		key, item := m.KeyField(), m.ItemField()
		kt, err := StorableType(key.Type, path+".key")
		if err != nil {
			return nil, err
		}
		it, err := StorableType(item.Type, path+".value")
		if err != nil {
			return nil, err
		}
		if arrow.TypeEqual(kt, key.Type) && arrow.TypeEqual(it, item.Type) {
			return t, nil
		}
		key.Type, item.Type = kt, it
		out := arrow.MapOfFields(key, item)
		out.KeysSorted = m.KeysSorted
		return out, nil
	case arrow.STRUCT:
		st := t.(*arrow.StructType)
		fields := st.Fields()
		same := true
		for i, f := range fields {
			ft, err := StorableType(f.Type, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			same = same && arrow.TypeEqual(ft, f.Type)
			fields[i].Type = ft
		}
		if same {
			return t, nil
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("%w: column %s is of Arrow type %s, which Iceberg has no type for", ErrType, path, t)
}

// StorableSchema is sc with every field of its storable type
// (StorableType), for a table made from a client's stream: a column of
// the null type, whose values say nothing of their type, is refused too.
func StorableSchema(sc *arrow.Schema) (*arrow.Schema, error) {
	if err := UnknownExtensions(sc); err != nil {
		return nil, err
	}
	fields := sc.Fields()
	for i, f := range fields {
		t, err := StorableType(f.Type, f.Name)
		if err != nil {
			return nil, err
		}
		if path, ok := nullTyped(t, f.Name); ok {
			return nil, fmt.Errorf("%w: column %s is of Arrow type null, which gives no type for a new table's column (cast it, or create the table first)", ErrType, path)
		}
		fields[i].Type = t
	}
	md := sc.Metadata()
	return arrow.NewSchema(fields, &md), nil
}

// nullTyped finds a field of the null type in t (a storable type).
func nullTyped(t arrow.DataType, path string) (string, bool) {
	switch t := t.(type) {
	case *arrow.NullType:
		return path, true
	case *arrow.ListType:
		return nullTyped(t.Elem(), path+".element")
	case *arrow.MapType:
		if p, ok := nullTyped(t.KeyType(), path+".key"); ok {
			return p, ok
		}
		return nullTyped(t.ItemType(), path+".value")
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if p, ok := nullTyped(f.Type, path+"."+f.Name); ok {
				return p, ok
			}
		}
	}
	return "", false
}

// Storable returns arr in its storable layout (StorableType) with the
// same values; a value the layout cannot hold (a uint64 over 2^63−1, a
// decimal256 of more than 38 digits, a time or a date64 finer than
// microseconds or days) fails with an error wrapping ErrValue that names
// the column. The caller releases the result.
func Storable(ctx context.Context, mem memory.Allocator, arr arrow.Array, path string) (arrow.Array, error) {
	to, err := StorableType(arr.DataType(), path)
	if err != nil {
		return nil, err
	}
	if arrow.TypeEqual(arr.DataType(), to) {
		arr.Retain()
		return arr, nil
	}
	ctx = compute.WithAllocator(ctx, mem)
	convErr := func(err error) error {
		if errors.Is(err, ErrValue) || errors.Is(err, ErrType) {
			return err
		}
		return fmt.Errorf("%w: column %s: %s does not convert to %s: %v", ErrValue, path, arr.DataType(), to, err)
	}
	switch a := arr.(type) {
	case *array.Dictionary:
		decoded, err := compute.TakeArray(ctx, a.Dictionary(), a.Indices())
		if err != nil {
			return nil, convErr(err)
		}
		defer decoded.Release()
		return Storable(ctx, mem, decoded, path)
	case *array.RunEndEncoded:
		decoded, err := runEndDecode(ctx, mem, a)
		if err != nil {
			return nil, convErr(err)
		}
		defer decoded.Release()
		return Storable(ctx, mem, decoded, path)
	case array.ExtensionArray:
		storage := a.Storage()
		if _, ok := a.DataType().(*extensions.Bool8Type); ok {
			out, err := compute.CastArray(ctx, storage, compute.SafeCastOptions(to))
			if err != nil {
				return nil, convErr(err)
			}
			return out, nil
		}
		return Storable(ctx, mem, storage, path)
	case *array.Struct:
		return storableStruct(ctx, mem, a, to.(*arrow.StructType), path)
	case array.ListLike:
		return storableList(ctx, mem, a, to, path)
	case *array.Decimal32:
		return widenDecimal(mem, a, to, func(i int) decimal128.Num { return decimal128.FromI64(int64(a.Value(i))) }), nil
	case *array.Decimal64:
		return widenDecimal(mem, a, to, func(i int) decimal128.Num { return decimal128.FromI64(int64(a.Value(i))) }), nil
	}
	out, err := compute.CastArray(ctx, arr, compute.SafeCastOptions(to))
	if err != nil {
		return nil, convErr(err)
	}
	return out, nil
}

// runEndDecode is the values of a run-end encoded array, one per row:
// each row takes its run's value. (arrow-go's run_end_decode kernel
// panics on strings with a NULL run, in a goroutine of its own.)
func runEndDecode(ctx context.Context, mem memory.Allocator, a *array.RunEndEncoded) (arrow.Array, error) {
	var end func(int) int64
	switch ends := a.RunEndsArr().(type) {
	case *array.Int16:
		end = func(r int) int64 { return int64(ends.Value(r)) }
	case *array.Int32:
		end = func(r int) int64 { return int64(ends.Value(r)) }
	case *array.Int64:
		end = ends.Value
	default:
		return nil, fmt.Errorf("run ends of type %s", ends.DataType())
	}
	runs := a.RunEndsArr().Len()
	idx := array.NewInt64Builder(mem)
	defer idx.Release()
	idx.Reserve(a.Len())
	r := 0
	for i := int64(a.Data().Offset()); i < int64(a.Data().Offset()+a.Len()); i++ {
		for r < runs && end(r) <= i {
			r++
		}
		if r == runs {
			return nil, fmt.Errorf("row %d is past the last run", i)
		}
		idx.Append(int64(r))
	}
	indices := idx.NewArray()
	defer indices.Release()
	return compute.TakeArray(ctx, a.Values(), indices)
}

// storableStruct is a struct array with its fields storable.
func storableStruct(ctx context.Context, mem memory.Allocator, a *array.Struct, to *arrow.StructType, path string) (arrow.Array, error) {
	children := make([]arrow.ArrayData, a.NumField())
	defer func() {
		for _, c := range children {
			if c != nil {
				c.Release()
			}
		}
	}()
	st := a.DataType().(*arrow.StructType)
	for i := range children {
		// Field(i) is aligned with the struct's own rows (offset applied).
		c, err := Storable(ctx, mem, a.Field(i), path+"."+st.Field(i).Name)
		if err != nil {
			return nil, err
		}
		children[i] = c.Data()
		children[i].Retain()
		c.Release()
	}
	validity, nulls := validityOf(mem, a)
	if validity != nil {
		defer validity.Release()
	}
	data := array.NewData(to, a.Len(), []*memory.Buffer{validity}, children, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// storableList is a list (or map) of to's layout holding a's lists (of
// any list layout), their elements storable: the elements each row
// refers to, in row order (list views may share or reorder them).
func storableList(ctx context.Context, mem memory.Allocator, a array.ListLike, to arrow.DataType, path string) (arrow.Array, error) {
	child := path + ".element"
	if _, ok := to.(*arrow.MapType); ok {
		child = path
	}
	values, err := Storable(ctx, mem, a.ListValues(), child)
	if err != nil {
		return nil, err
	}
	defer values.Release()
	n := a.Len()
	offsets := memory.NewResizableBuffer(mem)
	defer offsets.Release()
	offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	idx := array.NewInt64Builder(mem)
	defer idx.Release()
	var total int64
	for i := range n {
		offs[i] = int32(total)
		if a.IsNull(i) {
			continue
		}
		start, end := a.ValueOffsets(i)
		if total+end-start > math.MaxInt32 {
			return nil, fmt.Errorf("%w: column %s: a batch holds more than 2^31 list elements; send smaller batches", ErrValue, path)
		}
		for j := start; j < end; j++ {
			idx.Append(j)
		}
		total += end - start
	}
	offs[n] = int32(total)
	indices := idx.NewArray()
	defer indices.Release()
	taken, err := compute.TakeArray(ctx, values, indices)
	if err != nil {
		return nil, fmt.Errorf("%w: column %s: %v", ErrValue, path, err)
	}
	defer taken.Release()
	validity, nulls := validityOf(mem, a)
	if validity != nil {
		defer validity.Release()
	}
	data := array.NewData(to, n, []*memory.Buffer{validity, offsets}, []arrow.ArrayData{taken.Data()}, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// validityOf is a fresh validity bitmap of a's rows (nil without NULLs)
// and their NULL count.
func validityOf(mem memory.Allocator, a arrow.Array) (*memory.Buffer, int) {
	if a.NullN() == 0 {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(a.Len()))))
	bits := buf.Bytes()
	for i := range bits {
		bits[i] = 0
	}
	for i := range a.Len() {
		if a.IsValid(i) {
			bitutil.SetBit(bits, i)
		}
	}
	return buf, a.NullN()
}

// widenDecimal is a decimal32 or decimal64 array as decimal128 (to).
func widenDecimal(mem memory.Allocator, a arrow.Array, to arrow.DataType, value func(int) decimal128.Num) arrow.Array {
	b := array.NewDecimal128Builder(mem, to.(*arrow.Decimal128Type))
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.Append(value(i))
	}
	return b.NewArray()
}

// extensionNameKey is the field metadata key naming an Arrow extension
// type, which a reader that does not know the extension leaves on a field
// of its storage type.
const extensionNameKey = "ARROW:extension:name"

// UnknownExtensions refuses a schema with a field (at any depth) of an
// extension type this process does not know, which arrives as its
// storage type with the extension's name in the field's metadata (a
// fixed_shape_tensor as a fixed_size_list): storing the storage values
// would drop what the extension means.
func UnknownExtensions(sc *arrow.Schema) error {
	var check func(f arrow.Field, path string) error
	check = func(f arrow.Field, path string) error {
		if name, ok := f.Metadata.GetValue(extensionNameKey); ok {
			return fmt.Errorf("%w: column %s is of the Arrow extension type %s, which Iceberg cannot store (send its storage type, %s)", ErrType, path, name, f.Type)
		}
		switch t := f.Type.(type) {
		case arrow.ListLikeType:
			if _, ok := t.(*arrow.MapType); !ok {
				return check(t.ElemField(), path+".element")
			}
			m := t.(*arrow.MapType)
			if err := check(m.KeyField(), path+".key"); err != nil {
				return err
			}
			return check(m.ItemField(), path+".value")
		case *arrow.StructType:
			for _, c := range t.Fields() {
				if err := check(c, path+"."+c.Name); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, f := range sc.Fields() {
		if err := check(f, f.Name); err != nil {
			return err
		}
	}
	return nil
}
