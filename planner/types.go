package planner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/icefloe/icefloe/internal/conform"
	"github.com/icefloe/icefloe/internal/engine"
)

// DuckTypeOf returns the DuckDB type that holds the values of Iceberg type
// t (engine.TypeOf); a type DuckDB cannot hold returns an error wrapping
// ErrUnsupported.
func DuckTypeOf(t iceberg.Type) (string, error) {
	s, err := engine.TypeOf(t)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	return s, nil
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

// ConformArray is conform.Array with its value errors as ErrInvalid.
func ConformArray(mem memory.Allocator, data arrow.ArrayData, to arrow.DataType, path string) (arrow.ArrayData, error) {
	out, err := conform.Array(mem, data, to, path)
	if errors.Is(err, conform.ErrValue) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return out, err
}
