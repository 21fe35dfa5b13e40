package conform

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
)

// ErrValue: a value cannot be stored in the target column (a NULL in a
// required field, a malformed UUID, a fixed value of the wrong length).
var ErrValue = errors.New("conform: value does not fit the column")

// ErrNotNull: a NULL reached a NOT NULL column.
var ErrNotNull = errors.New("conform: NULL in NOT NULL column")

// Record turns a batch whose columns DuckDB produced with the DuckDB types
// of target's columns (in target's order) into a batch of target. A NULL
// in a non-nullable column fails with an error wrapping ErrNotNull that
// names the column; a value Iceberg cannot store (Validate) with one
// wrapping ErrValue that names the column and the row, counting the
// batch's first row as firstRow + 1. The caller releases the result.
func Record(mem memory.Allocator, rec arrow.RecordBatch, target *arrow.Schema, firstRow int64) (arrow.RecordBatch, error) {
	if int(rec.NumCols()) != target.NumFields() {
		return nil, fmt.Errorf("conform: batch has %d columns, the table %d", rec.NumCols(), target.NumFields())
	}
	cols := make([]arrow.Array, 0, target.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i, f := range target.Fields() {
		data, err := Array(mem, rec.Column(i).Data(), f.Type, f.Name)
		if err != nil {
			return nil, err
		}
		arr := array.MakeFromData(data)
		data.Release()
		cols = append(cols, arr)
		if !f.Nullable && arr.NullN() > 0 {
			return nil, fmt.Errorf("%w: column %s", ErrNotNull, f.Name)
		}
		if err := Validate(arr, f.Name, firstRow); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(target, cols, rec.NumRows()), nil
}

// ddlConform returns data as an array of type to, the Arrow type iceberg-go
// writes for the column. data comes from DuckDB reading a stand-in whose
// column types DuckTypeOf chose, so the layouts already agree except for
// UUID (DuckDB sends text) and fixed (DuckDB sends BLOB); nested field
// names, nullability flags and field-id metadata are retyped in place. path
// names the field in errors. The caller releases the result.
func Array(mem memory.Allocator, data arrow.ArrayData, to arrow.DataType, path string) (arrow.ArrayData, error) {
	from := data.DataType()
	switch to := to.(type) {
	case *extensions.UUIDType:
		if from.ID() != arrow.STRING {
			break
		}
		src := array.NewStringData(data)
		defer src.Release()
		b := extensions.NewUUIDBuilder(mem)
		defer b.Release()
		b.Reserve(src.Len())
		for i := 0; i < src.Len(); i++ {
			if src.IsNull(i) {
				b.AppendNull()
				continue
			}
			u, err := uuid.Parse(src.Value(i))
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %q is not a UUID", ErrValue, path, src.Value(i))
			}
			b.Append(u)
		}
		arr := b.NewArray()
		defer arr.Release()
		out := arr.Data()
		out.Retain()
		return out, nil
	case *arrow.FixedSizeBinaryType:
		if from.ID() != arrow.BINARY {
			break
		}
		src := array.NewBinaryData(data)
		defer src.Release()
		b := array.NewFixedSizeBinaryBuilder(mem, to)
		defer b.Release()
		b.Reserve(src.Len())
		for i := 0; i < src.Len(); i++ {
			if src.IsNull(i) {
				b.AppendNull()
				continue
			}
			v := src.Value(i)
			if len(v) != to.ByteWidth {
				return nil, fmt.Errorf("%w: %s holds fixed[%d] but a value has %d bytes", ErrValue, path, to.ByteWidth, len(v))
			}
			b.Append(v)
		}
		arr := b.NewArray()
		defer arr.Release()
		out := arr.Data()
		out.Retain()
		return out, nil
	case *arrow.ListType:
		if from.ID() != arrow.LIST {
			break
		}
		elem := to.ElemField()
		child, err := Array(mem, listValues(data), elem.Type, path+".element")
		if err != nil {
			return nil, err
		}
		defer child.Release()
		if !elem.Nullable && child.NullN() > 0 {
			return nil, fmt.Errorf("%w: NULL in required list element %s.element", ErrValue, path)
		}
		return rewrap(data, to, child), nil
	case *arrow.MapType:
		if from.ID() != arrow.MAP {
			break
		}
		entries, err := Array(mem, listValues(data), to.Elem(), path)
		if err != nil {
			return nil, err
		}
		defer entries.Release()
		return rewrap(data, to, entries), nil
	case *arrow.StructType:
		if from.ID() != arrow.STRUCT || len(data.Children()) != to.NumFields() {
			break
		}
		children := make([]arrow.ArrayData, to.NumFields())
		defer func() {
			for _, c := range children {
				if c != nil {
					c.Release()
				}
			}
		}()
		for i, f := range to.Fields() {
			c, err := Array(mem, data.Children()[i], f.Type, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			children[i] = c
			if !f.Nullable && nullWhereValid(data, c) {
				return nil, fmt.Errorf("%w: NULL in required field %s.%s", ErrValue, path, f.Name)
			}
		}
		return array.NewData(to, data.Len(), data.Buffers(), children, data.NullN(), data.Offset()), nil
	default:
		if sameLayout(from, to) {
			return array.NewData(to, data.Len(), data.Buffers(), data.Children(), data.NullN(), data.Offset()), nil
		}
	}
	return nil, fmt.Errorf("%s: DuckDB produced %s where %s was expected", path, from, to)
}

// listValues is the child of a list or map array. Null lists may own
// child slots, so the child is used whole and the offsets stay as they are.
func listValues(data arrow.ArrayData) arrow.ArrayData { return data.Children()[0] }

// rewrap is data with type to and child in place of its child.
func rewrap(data arrow.ArrayData, to arrow.DataType, child arrow.ArrayData) arrow.ArrayData {
	return array.NewData(to, data.Len(), data.Buffers(), []arrow.ArrayData{child}, data.NullN(), data.Offset())
}

// nullWhereValid reports whether child is NULL in a row where the struct
// parent is not. A struct's offset applies to its children too.
func nullWhereValid(parent, child arrow.ArrayData) bool {
	if child.NullN() == 0 {
		return false
	}
	pb, cb := parent.Buffers()[0], child.Buffers()[0]
	for i := 0; i < parent.Len(); i++ {
		pValid := pb == nil || bitutil.BitIsSet(pb.Bytes(), parent.Offset()+i)
		cValid := cb == nil || bitutil.BitIsSet(cb.Bytes(), child.Offset()+parent.Offset()+i)
		if pValid && !cValid {
			return true
		}
	}
	return false
}

// sameLayout reports whether a primitive array of type from can be read
// as type to without touching its buffers.
func sameLayout(from, to arrow.DataType) bool {
	if arrow.TypeEqual(from, to) {
		return true
	}
	if from.ID() != to.ID() {
		return false
	}
	switch f := from.(type) {
	case *arrow.TimestampType:
		return f.Unit == to.(*arrow.TimestampType).Unit
	case *arrow.Time64Type:
		return f.Unit == to.(*arrow.Time64Type).Unit
	case *arrow.Decimal128Type:
		t := to.(*arrow.Decimal128Type)
		return f.Precision == t.Precision && f.Scale == t.Scale
	}
	return false
}
