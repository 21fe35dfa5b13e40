package colmeta

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// Column is what the metadata of one column says.
type Column struct {
	// Catalog, Schema and Table name the table the column belongs to, when
	// it is a table's column (table listings); empty otherwise.
	Catalog, Schema, Table string
	// TypeName is the column's SQL type as DuckDB spells it, e.g. BIGINT,
	// DECIMAL(12,2), TIMESTAMP WITH TIME ZONE, UUID.
	TypeName string
	// Type is the Arrow type clients receive for the column.
	Type arrow.DataType
	// Remarks is the column's comment (an Iceberg field's doc).
	Remarks string
}

// Metadata is the Flight SQL column metadata of c: TYPE_NAME, PRECISION
// and SCALE for the types that have them (see PrecisionScale),
// IS_AUTO_INCREMENT false, the table's names and REMARKS when known.
func Metadata(c Column) arrow.Metadata {
	b := flightsql.NewColumnMetadataBuilder()
	if c.Table != "" {
		b.CatalogName(c.Catalog).SchemaName(c.Schema).TableName(c.Table)
	}
	if c.TypeName != "" {
		b.TypeName(c.TypeName)
	}
	if p, s, ok := PrecisionScale(c.TypeName, c.Type); ok {
		b.Precision(p).Scale(s)
	}
	b.IsAutoIncrement(false)
	if c.Remarks != "" {
		b.Remarks(c.Remarks)
	}
	return b.Metadata()
}

// PrecisionScale returns the PRECISION and SCALE of a column of Arrow
// type t and SQL type typeName: the digits of integers and decimals, the
// characters of a UUID's text form (which queries return) and the byte
// length of a fixed-size binary.
func PrecisionScale(typeName string, t arrow.DataType) (prec, scale int32, ok bool) {
	if typeName == "UUID" {
		return 36, 0, true
	}
	switch t := t.(type) {
	case *arrow.Decimal128Type:
		return t.Precision, t.Scale, true
	case *arrow.Decimal256Type:
		return t.Precision, t.Scale, true
	case *arrow.Int8Type:
		return 3, 0, true
	case *arrow.Int16Type:
		return 5, 0, true
	case *arrow.Int32Type:
		return 10, 0, true
	case *arrow.Int64Type:
		return 19, 0, true
	case *arrow.FixedSizeBinaryType:
		return int32(t.ByteWidth), 0, true
	}
	return 0, 0, false
}

// Schema returns s with each field's metadata set from its Arrow type and
// typeNames[i], DuckDB's name of its type (none when typeNames is
// shorter). Schema metadata is kept.
func Schema(s *arrow.Schema, typeNames []string) *arrow.Schema {
	fields := s.Fields()
	for i := range fields {
		c := Column{Type: fields[i].Type}
		if i < len(typeNames) {
			c.TypeName = typeNames[i]
		}
		fields[i].Metadata = Metadata(c)
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}
