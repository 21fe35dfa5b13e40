package icemeta

import (
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// partitionLiteral is the partition value v (as a DataFile's Partition map
// holds it: a Go value or a Literal) as a literal of the partition field's
// type typ.
func partitionLiteral(typ iceberg.Type, v any) (iceberg.Literal, error) {
	if lit, ok := v.(iceberg.Literal); ok {
		out, err := lit.To(typ)
		if err != nil {
			return nil, fmt.Errorf("value %v: %w", v, err)
		}
		return out, nil
	}
	lit := numberLiteral(typ, v)
	if lit == nil {
		lit = timeLiteral(typ, v)
	}
	if lit == nil {
		lit = bytesLiteral(typ, v)
	}
	if lit == nil {
		return nil, fmt.Errorf("value %v of Go type %T is not a %s", v, v, typ)
	}
	return lit, nil
}

// numberLiteral is v as a boolean, integer or floating-point literal of typ, or nil.
func numberLiteral(typ iceberg.Type, v any) iceberg.Literal {
	var lit iceberg.Literal
	switch typ.(type) {
	case iceberg.BooleanType:
		if b, ok := v.(bool); ok {
			lit = iceberg.NewLiteral(b)
		}
	case iceberg.Int32Type:
		if i, ok := asInt64(v); ok {
			lit = iceberg.NewLiteral(int32(i))
		}
	case iceberg.Int64Type:
		if i, ok := asInt64(v); ok {
			lit = iceberg.NewLiteral(i)
		}
	case iceberg.Float32Type:
		switch f := v.(type) {
		case float32:
			lit = iceberg.NewLiteral(f)
		case float64:
			lit = iceberg.NewLiteral(float32(f))
		}
	case iceberg.Float64Type:
		switch f := v.(type) {
		case float64:
			lit = iceberg.NewLiteral(f)
		case float32:
			lit = iceberg.NewLiteral(float64(f))
		}
	}
	return lit
}

// timeLiteral is v as a date, time or timestamp literal of typ, or nil.
func timeLiteral(typ iceberg.Type, v any) iceberg.Literal {
	var lit iceberg.Literal
	switch typ.(type) {
	case iceberg.DateType:
		switch d := v.(type) {
		case iceberg.Date:
			lit = iceberg.NewLiteral(d)
		case time.Time:
			lit = iceberg.NewLiteral(iceberg.Date(d.UTC().Truncate(24*time.Hour).Unix() / 86400))
		default:
			if i, ok := asInt64(v); ok {
				lit = iceberg.NewLiteral(iceberg.Date(i))
			}
		}
	case iceberg.TimeType:
		switch t := v.(type) {
		case iceberg.Time:
			lit = iceberg.NewLiteral(t)
		case time.Duration:
			lit = iceberg.NewLiteral(iceberg.Time(t.Microseconds()))
		default:
			if i, ok := asInt64(v); ok {
				lit = iceberg.NewLiteral(iceberg.Time(i))
			}
		}
	case iceberg.TimestampType, iceberg.TimestampTzType:
		switch t := v.(type) {
		case iceberg.Timestamp:
			lit = iceberg.NewLiteral(t)
		case time.Time:
			lit = iceberg.NewLiteral(iceberg.Timestamp(t.UnixMicro()))
		default:
			if i, ok := asInt64(v); ok {
				lit = iceberg.NewLiteral(iceberg.Timestamp(i))
			}
		}
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		switch t := v.(type) {
		case iceberg.TimestampNano:
			lit = iceberg.NewLiteral(t)
		case time.Time:
			lit = iceberg.NewLiteral(iceberg.TimestampNano(t.UnixNano()))
		default:
			if i, ok := asInt64(v); ok {
				lit = iceberg.NewLiteral(iceberg.TimestampNano(i))
			}
		}
	}
	return lit
}

// bytesLiteral is v as a string, binary, UUID or decimal literal of typ, or nil.
func bytesLiteral(typ iceberg.Type, v any) iceberg.Literal {
	var lit iceberg.Literal
	switch typ.(type) {
	case iceberg.StringType:
		switch s := v.(type) {
		case string:
			lit = iceberg.NewLiteral(s)
		case []byte:
			lit = iceberg.NewLiteral(string(s))
		}
	case iceberg.BinaryType, iceberg.FixedType:
		switch b := v.(type) {
		case []byte:
			lit = iceberg.NewLiteral(b)
		case string:
			lit = iceberg.NewLiteral([]byte(b))
		}
	case iceberg.UUIDType:
		switch u := v.(type) {
		case uuid.UUID:
			lit = iceberg.NewLiteral(u)
		case [16]byte:
			lit = iceberg.NewLiteral(uuid.UUID(u))
		case []byte:
			if id, err := uuid.FromBytes(u); err == nil {
				lit = iceberg.NewLiteral(id)
			}
		case string:
			if id, err := uuid.Parse(u); err == nil {
				lit = iceberg.NewLiteral(id)
			}
		}
	case iceberg.DecimalType:
		if d, ok := v.(iceberg.Decimal); ok {
			lit = iceberg.NewLiteral(d)
		}

	}
	return lit
}

func asInt64(v any) (int64, bool) {
	switch i := v.(type) {
	case int32:
		return int64(i), true
	case int64:
		return i, true
	case int:
		return int64(i), true
	case iceberg.Date:
		return int64(i), true
	case iceberg.Time:
		return int64(i), true
	case iceberg.Timestamp:
		return int64(i), true
	case iceberg.TimestampNano:
		return int64(i), true
	}
	return 0, false
}
