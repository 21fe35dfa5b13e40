package planner

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"

	"github.com/icefloe/icefloe/internal/engine"
)

// DuckTypeOf returns the DuckDB type that holds the values of Iceberg type
// t, e.g. "DECIMAL(12,2)", "VARCHAR[]" or `STRUCT("a" INTEGER)`. Iceberg
// fixed[L] becomes BLOB (the length is checked on write) and timestamp_ns
// TIMESTAMP_NS. Types DuckDB cannot hold without loss (timestamptz_ns,
// unknown, variant, geometry, geography) return an error wrapping
// ErrUnsupported.
func DuckTypeOf(t iceberg.Type) (string, error) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "BOOLEAN", nil
	case iceberg.Int32Type:
		return "INTEGER", nil
	case iceberg.Int64Type:
		return "BIGINT", nil
	case iceberg.Float32Type:
		return "FLOAT", nil
	case iceberg.Float64Type:
		return "DOUBLE", nil
	case iceberg.DecimalType:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision(), t.Scale()), nil
	case iceberg.DateType:
		return "DATE", nil
	case iceberg.TimeType:
		return "TIME", nil
	case iceberg.TimestampType:
		return "TIMESTAMP", nil
	case iceberg.TimestampTzType:
		return "TIMESTAMPTZ", nil
	case iceberg.TimestampNsType:
		return "TIMESTAMP_NS", nil
	case iceberg.StringType:
		return "VARCHAR", nil
	case iceberg.UUIDType:
		return "UUID", nil
	case iceberg.BinaryType, iceberg.FixedType:
		return "BLOB", nil
	case *iceberg.ListType:
		elem, err := DuckTypeOf(t.Element)
		if err != nil {
			return "", err
		}
		return elem + "[]", nil
	case *iceberg.MapType:
		k, err := DuckTypeOf(t.KeyType)
		if err != nil {
			return "", err
		}
		v, err := DuckTypeOf(t.ValueType)
		if err != nil {
			return "", err
		}
		return "MAP(" + k + ", " + v + ")", nil
	case *iceberg.StructType:
		if len(t.FieldList) == 0 {
			return "", fmt.Errorf("%w: DuckDB has no empty STRUCT", ErrUnsupported)
		}
		parts := make([]string, len(t.FieldList))
		for i, f := range t.FieldList {
			ft, err := DuckTypeOf(f.Type)
			if err != nil {
				return "", err
			}
			parts[i] = engine.Quote(f.Name) + " " + ft
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")", nil
	}
	if t == nil {
		return "", fmt.Errorf("%w: no Iceberg type", ErrUnsupported)
	}
	return "", fmt.Errorf("%w: Iceberg type %s has no DuckDB type", ErrUnsupported, t)
}

// ddlNoIcebergType says a DuckDB type has no Iceberg counterpart; it names
// the innermost offending type.
type ddlNoIcebergType struct{ duck string }

func (e *ddlNoIcebergType) Error() string { return e.duck + " has no Iceberg type" }

// ddlDuckTypeNames names the DuckDB types the mapping refuses.
var ddlDuckTypeNames = map[duckdb.Type]string{
	duckdb.TYPE_UTINYINT:     "UTINYINT",
	duckdb.TYPE_USMALLINT:    "USMALLINT",
	duckdb.TYPE_UINTEGER:     "UINTEGER",
	duckdb.TYPE_UBIGINT:      "UBIGINT",
	duckdb.TYPE_HUGEINT:      "HUGEINT",
	duckdb.TYPE_UHUGEINT:     "UHUGEINT",
	duckdb.TYPE_INTERVAL:     "INTERVAL",
	duckdb.TYPE_TIMESTAMP_S:  "TIMESTAMP_S",
	duckdb.TYPE_TIMESTAMP_MS: "TIMESTAMP_MS",
	duckdb.TYPE_TIMESTAMP_NS: "TIMESTAMP_NS",
	duckdb.TYPE_TIME_TZ:      "TIME WITH TIME ZONE",
	duckdb.TYPE_ENUM:         "ENUM",
	duckdb.TYPE_ARRAY:        "ARRAY",
	duckdb.TYPE_UNION:        "UNION",
	duckdb.TYPE_BIT:          "BIT",
	duckdb.TYPE_BIGNUM:       "BIGNUM",
	duckdb.TYPE_SQLNULL:      "NULL",
	duckdb.TYPE_GEOMETRY:     "GEOMETRY",
	duckdb.TYPE_VARIANT:      "VARIANT",
}

// ddlIcebergType maps a DuckDB column type to an Iceberg type; nextID hands
// out the ids of nested fields. Nested fields are optional (DuckDB has no
// NOT NULL inside a type) except map keys, which are never NULL.
func ddlIcebergType(ti duckdb.TypeInfo, nextID func() int) (iceberg.Type, error) {
	if a := ti.Alias(); a != "" {
		return nil, &ddlNoIcebergType{duck: strings.ToUpper(a)}
	}
	switch ti.InternalType() {
	case duckdb.TYPE_BOOLEAN:
		return iceberg.PrimitiveTypes.Bool, nil
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_INTEGER:
		return iceberg.PrimitiveTypes.Int32, nil
	case duckdb.TYPE_BIGINT:
		return iceberg.PrimitiveTypes.Int64, nil
	case duckdb.TYPE_FLOAT:
		return iceberg.PrimitiveTypes.Float32, nil
	case duckdb.TYPE_DOUBLE:
		return iceberg.PrimitiveTypes.Float64, nil
	case duckdb.TYPE_DECIMAL:
		d := ti.Details().(*duckdb.DecimalDetails)
		return iceberg.DecimalTypeOf(int(d.Width), int(d.Scale)), nil
	case duckdb.TYPE_DATE:
		return iceberg.PrimitiveTypes.Date, nil
	case duckdb.TYPE_TIME:
		return iceberg.PrimitiveTypes.Time, nil
	case duckdb.TYPE_TIMESTAMP:
		return iceberg.PrimitiveTypes.Timestamp, nil
	case duckdb.TYPE_TIMESTAMP_TZ:
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case duckdb.TYPE_VARCHAR:
		return iceberg.PrimitiveTypes.String, nil
	case duckdb.TYPE_UUID:
		return iceberg.PrimitiveTypes.UUID, nil
	case duckdb.TYPE_BLOB:
		return iceberg.PrimitiveTypes.Binary, nil
	case duckdb.TYPE_LIST:
		d := ti.Details().(*duckdb.ListDetails)
		id := nextID()
		elem, err := ddlIcebergType(d.Child, nextID)
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: id, Element: elem}, nil
	case duckdb.TYPE_MAP:
		d := ti.Details().(*duckdb.MapDetails)
		kid, vid := nextID(), nextID()
		k, err := ddlIcebergType(d.Key, nextID)
		if err != nil {
			return nil, err
		}
		v, err := ddlIcebergType(d.Value, nextID)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: kid, KeyType: k, ValueID: vid, ValueType: v}, nil
	case duckdb.TYPE_STRUCT:
		d := ti.Details().(*duckdb.StructDetails)
		fields := make([]iceberg.NestedField, len(d.Entries))
		for i, e := range d.Entries {
			fields[i] = iceberg.NestedField{ID: nextID(), Name: e.Name()}
		}
		for i, e := range d.Entries {
			ft, err := ddlIcebergType(e.Info(), nextID)
			if err != nil {
				return nil, err
			}
			fields[i].Type = ft
		}
		return &iceberg.StructType{FieldList: fields}, nil
	}
	name, ok := ddlDuckTypeNames[ti.InternalType()]
	if !ok {
		name = fmt.Sprintf("DuckDB type #%d", ti.InternalType())
	}
	return nil, &ddlNoIcebergType{duck: name}
}

// ddlConform returns data as an array of type to, the Arrow type iceberg-go
// writes for the column. data comes from DuckDB reading a stand-in whose
// column types DuckTypeOf chose, so the layouts already agree except for
// UUID (DuckDB sends text) and fixed (DuckDB sends BLOB); nested field
// names, nullability flags and field-id metadata are retyped in place. path
// names the field in errors. The caller releases the result.
func ddlConform(mem memory.Allocator, data arrow.ArrayData, to arrow.DataType, path string) (arrow.ArrayData, error) {
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
				return nil, fmt.Errorf("%w: %s: %q is not a UUID", ErrInvalid, path, src.Value(i))
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
				return nil, fmt.Errorf("%w: %s holds fixed[%d] but a value has %d bytes", ErrInvalid, path, to.ByteWidth, len(v))
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
		child, err := ddlConform(mem, ddlListValues(data), elem.Type, path+".element")
		if err != nil {
			return nil, err
		}
		defer child.Release()
		if !elem.Nullable && child.NullN() > 0 {
			return nil, fmt.Errorf("%w: NULL in required list element %s.element", ErrInvalid, path)
		}
		return ddlRewrap(data, to, child), nil
	case *arrow.MapType:
		if from.ID() != arrow.MAP {
			break
		}
		entries, err := ddlConform(mem, ddlListValues(data), to.Elem(), path)
		if err != nil {
			return nil, err
		}
		defer entries.Release()
		return ddlRewrap(data, to, entries), nil
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
			c, err := ddlConform(mem, data.Children()[i], f.Type, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			children[i] = c
			if !f.Nullable && ddlNullWhereValid(data, c) {
				return nil, fmt.Errorf("%w: NULL in required field %s.%s", ErrInvalid, path, f.Name)
			}
		}
		return array.NewData(to, data.Len(), data.Buffers(), children, data.NullN(), data.Offset()), nil
	default:
		if ddlSameLayout(from, to) {
			return array.NewData(to, data.Len(), data.Buffers(), data.Children(), data.NullN(), data.Offset()), nil
		}
	}
	return nil, fmt.Errorf("%s: DuckDB produced %s where %s was expected", path, from, to)
}

// ddlListValues is the child of a list or map array. Null lists may own
// child slots, so the child is used whole and the offsets stay as they are.
func ddlListValues(data arrow.ArrayData) arrow.ArrayData { return data.Children()[0] }

// ddlRewrap is data with type to and child in place of its child.
func ddlRewrap(data arrow.ArrayData, to arrow.DataType, child arrow.ArrayData) arrow.ArrayData {
	return array.NewData(to, data.Len(), data.Buffers(), []arrow.ArrayData{child}, data.NullN(), data.Offset())
}

// ddlNullWhereValid reports whether child is NULL in a row where the struct
// parent is not. A struct's offset applies to its children too.
func ddlNullWhereValid(parent, child arrow.ArrayData) bool {
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

// ddlSameLayout reports whether a primitive array of type from can be read
// as type to without touching its buffers.
func ddlSameLayout(from, to arrow.DataType) bool {
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
