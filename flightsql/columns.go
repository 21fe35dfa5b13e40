package flightsql

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/colmeta"
)

// TypeName is the SQL type name of an Iceberg type as DuckDB, icefloe's
// engine, spells it: BIGINT, DECIMAL(12,2), VARCHAR, TIMESTAMP WITH TIME
// ZONE, INTEGER[], STRUCT(a INTEGER, b VARCHAR), MAP(VARCHAR, BIGINT).
func TypeName(t iceberg.Type) string {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "BOOLEAN"
	case iceberg.Int32Type:
		return "INTEGER"
	case iceberg.Int64Type:
		return "BIGINT"
	case iceberg.Float32Type:
		return "FLOAT"
	case iceberg.Float64Type:
		return "DOUBLE"
	case iceberg.DecimalType:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision(), t.Scale())
	case iceberg.DateType:
		return "DATE"
	case iceberg.TimeType:
		return "TIME"
	case iceberg.TimestampType:
		return "TIMESTAMP"
	case iceberg.TimestampTzType, iceberg.TimestampTzNsType:
		return "TIMESTAMP WITH TIME ZONE"
	case iceberg.TimestampNsType:
		return "TIMESTAMP_NS"
	case iceberg.StringType:
		return "VARCHAR"
	case iceberg.UUIDType:
		return "UUID"
	case iceberg.BinaryType, iceberg.FixedType:
		return "BLOB"
	case *iceberg.ListType:
		return TypeName(t.Element) + "[]"
	case *iceberg.MapType:
		return "MAP(" + TypeName(t.KeyField().Type) + ", " + TypeName(t.ValueField().Type) + ")"
	case *iceberg.StructType:
		parts := make([]string, 0, len(t.FieldList))
		for _, f := range t.FieldList {
			parts = append(parts, quoteIdent(f.Name)+" "+TypeName(f.Type))
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")"
	default:
		return strings.ToUpper(t.String())
	}
}

// quoteIdent quotes a struct field name when it is not a plain identifier.
func quoteIdent(name string) string {
	plain := name != ""
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// TableArrowSchema is the Arrow schema of an Iceberg schema as GetTables
// returns it with include_schema, typed as queries return the columns
// (uuid is text, see resultType): each top-level field carries the Flight
// SQL column metadata (internal/colmeta: CATALOG_NAME, SCHEMA_NAME,
// TABLE_NAME, TYPE_NAME, PRECISION and SCALE, IS_AUTO_INCREMENT, REMARKS
// from the field's doc) that JDBC's getColumns reads.
func TableArrowSchema(ref catalog.TableRef, sc *iceberg.Schema) (*arrow.Schema, error) {
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema of %s: %w", ref, err)
	}
	ice := sc.Fields()
	if len(ice) != as.NumFields() {
		return nil, fmt.Errorf("arrow schema of %s: %d fields, iceberg schema has %d", ref, as.NumFields(), len(ice))
	}
	fields := make([]arrow.Field, as.NumFields())
	for i, f := range as.Fields() {
		nf := ice[i]
		f.Type = resultType(f.Type)
		f.Metadata = colmeta.Metadata(colmeta.Column{
			Catalog: ref.Catalog, Schema: ref.Schema, Table: ref.Table,
			TypeName: TypeName(nf.Type), Type: f.Type, Remarks: nf.Doc,
		})
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil), nil
}

// resultType is the Arrow type a query returns for a column of type t:
// DuckDB hands UUID out as text, so the arrow.uuid extension becomes utf8,
// nested types included. Other types are returned as they are.
func resultType(t arrow.DataType) arrow.DataType {
	switch t := t.(type) {
	case arrow.ExtensionType:
		if t.ExtensionName() == "arrow.uuid" {
			return arrow.BinaryTypes.String
		}
	case *arrow.ListType:
		f := t.ElemField()
		f.Type = resultType(f.Type)
		return arrow.ListOfField(f)
	case *arrow.LargeListType:
		f := t.ElemField()
		f.Type = resultType(f.Type)
		return arrow.LargeListOfField(f)
	case *arrow.MapType:
		k, v := t.KeyField(), t.ItemField()
		k.Type, v.Type = resultType(k.Type), resultType(v.Type)
		m := arrow.MapOfFields(k, v)
		m.KeysSorted = t.KeysSorted
		return m
	case *arrow.StructType:
		fields := t.Fields()
		for i := range fields {
			fields[i].Type = resultType(fields[i].Type)
		}
		return arrow.StructOf(fields...)
	}
	return t
}
