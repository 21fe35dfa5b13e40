package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// ErrNoDuckType: an Iceberg type DuckDB cannot hold without loss.
var ErrNoDuckType = errors.New("no DuckDB type")

// TypeOf returns the DuckDB type that holds the values of Iceberg type
// t, e.g. "DECIMAL(12,2)", "VARCHAR[]" or `STRUCT("a" INTEGER)`. Iceberg
// fixed[L] becomes BLOB (the length is checked on write) and timestamp_ns
// TIMESTAMP_NS. Types DuckDB cannot hold without loss (timestamptz_ns,
// unknown, variant, geometry, geography) return an error wrapping
// ErrNoDuckType.
func TypeOf(t iceberg.Type) (string, error) {
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
		elem, err := TypeOf(t.Element)
		if err != nil {
			return "", err
		}
		return elem + "[]", nil
	case *iceberg.MapType:
		k, err := TypeOf(t.KeyType)
		if err != nil {
			return "", err
		}
		v, err := TypeOf(t.ValueType)
		if err != nil {
			return "", err
		}
		return "MAP(" + k + ", " + v + ")", nil
	case *iceberg.StructType:
		if len(t.FieldList) == 0 {
			return "", fmt.Errorf("%w: DuckDB has no empty STRUCT", ErrNoDuckType)
		}
		parts := make([]string, len(t.FieldList))
		for i, f := range t.FieldList {
			ft, err := TypeOf(f.Type)
			if err != nil {
				return "", err
			}
			parts[i] = Quote(f.Name) + " " + ft
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")", nil
	}
	if t == nil {
		return "", fmt.Errorf("%w: no Iceberg type", ErrNoDuckType)
	}
	return "", fmt.Errorf("%w for Iceberg type %s", ErrNoDuckType, t)
}
