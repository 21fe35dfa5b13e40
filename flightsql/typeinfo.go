package flightsql

import (
	"cmp"
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
)

// XDBC data type codes and datetime subcodes (the Flight SQL enums).
const (
	xdbcDecimal   = 3
	xdbcInteger   = 4
	xdbcReal      = 7
	xdbcDouble    = 8
	xdbcDatetime  = 9
	xdbcVarchar   = 12
	xdbcDate      = 91
	xdbcTime      = 92
	xdbcTimestamp = 93
	xdbcBinary    = -2
	xdbcVarbinary = -3
	xdbcBigint    = -5
	xdbcBit       = -7

	subcodeDate        = 1
	subcodeTime        = 2
	subcodeTimestamp   = 3
	subcodeTimestampTZ = 5
)

// typeInfo is one row of GetXdbcTypeInfo; nil pointers are nulls.
type typeInfo struct {
	name          string
	dataType      int32
	columnSize    *int32
	prefix        *string
	suffix        *string
	createParams  []string
	caseSensitive bool
	unsigned      *bool
	fixedPrec     bool
	minScale      *int32
	maxScale      *int32
	sqlDataType   int32
	subcode       *int32
	radix         *int32
}

func i32(v int32) *int32   { return &v }
func str(v string) *string { return &v }
func boolp(v bool) *bool   { return &v }

// typeInfos are the column types icefloe tables have, named as TypeName
// names them.
var typeInfos = []typeInfo{
	{name: "BOOLEAN", dataType: xdbcBit, columnSize: i32(1), sqlDataType: xdbcBit},
	{name: "INTEGER", dataType: xdbcInteger, columnSize: i32(10), unsigned: boolp(false), sqlDataType: xdbcInteger, radix: i32(10), minScale: i32(0), maxScale: i32(0)},
	{name: "BIGINT", dataType: xdbcBigint, columnSize: i32(19), unsigned: boolp(false), sqlDataType: xdbcBigint, radix: i32(10), minScale: i32(0), maxScale: i32(0)},
	{name: "FLOAT", dataType: xdbcReal, columnSize: i32(24), unsigned: boolp(false), sqlDataType: xdbcReal, radix: i32(2)},
	{name: "DOUBLE", dataType: xdbcDouble, columnSize: i32(53), unsigned: boolp(false), sqlDataType: xdbcDouble, radix: i32(2)},
	{name: "DECIMAL", dataType: xdbcDecimal, columnSize: i32(38), createParams: []string{"precision", "scale"}, unsigned: boolp(false), fixedPrec: true, minScale: i32(0), maxScale: i32(38), sqlDataType: xdbcDecimal, radix: i32(10)},
	{name: "VARCHAR", dataType: xdbcVarchar, prefix: str("'"), suffix: str("'"), caseSensitive: true, sqlDataType: xdbcVarchar},
	{name: "BLOB", dataType: xdbcVarbinary, prefix: str("'"), suffix: str("'::BLOB"), sqlDataType: xdbcVarbinary},
	// UUID values travel as text (DuckDB returns UUIDs as VARCHAR).
	{name: "UUID", dataType: xdbcVarchar, columnSize: i32(36), prefix: str("'"), suffix: str("'::UUID"), sqlDataType: xdbcVarchar},
	{name: "DATE", dataType: xdbcDate, columnSize: i32(10), prefix: str("DATE '"), suffix: str("'"), sqlDataType: xdbcDatetime, subcode: i32(subcodeDate)},
	{name: "TIME", dataType: xdbcTime, columnSize: i32(15), prefix: str("TIME '"), suffix: str("'"), minScale: i32(6), maxScale: i32(6), sqlDataType: xdbcDatetime, subcode: i32(subcodeTime)},
	{name: "TIMESTAMP", dataType: xdbcTimestamp, columnSize: i32(26), prefix: str("TIMESTAMP '"), suffix: str("'"), minScale: i32(6), maxScale: i32(6), sqlDataType: xdbcDatetime, subcode: i32(subcodeTimestamp)},
	{name: "TIMESTAMP_NS", dataType: xdbcTimestamp, columnSize: i32(29), prefix: str("TIMESTAMP_NS '"), suffix: str("'"), minScale: i32(9), maxScale: i32(9), sqlDataType: xdbcDatetime, subcode: i32(subcodeTimestamp)},
	{name: "TIMESTAMP WITH TIME ZONE", dataType: xdbcTimestamp, columnSize: i32(32), prefix: str("TIMESTAMPTZ '"), suffix: str("'"), minScale: i32(6), maxScale: i32(6), sqlDataType: xdbcDatetime, subcode: i32(subcodeTimestampTZ)},
}

func init() {
	slices.SortStableFunc(typeInfos, func(a, b typeInfo) int {
		return cmp.Or(cmp.Compare(a.dataType, b.dataType), cmp.Compare(a.name, b.name))
	})
}

// GetFlightInfoXdbcTypeInfo answers GetXdbcTypeInfo.
func (s *Server) GetFlightInfoXdbcTypeInfo(_ context.Context, _ flightsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.XdbcTypeInfo), nil
}

// DoGetXdbcTypeInfo lists the column types, all or those of one data type,
// ordered by data type and name.
func (s *Server) DoGetXdbcTypeInfo(_ context.Context, cmd flightsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.alloc, schema_ref.XdbcTypeInfo)
	defer b.Release()
	strOrNull := func(fb array.Builder, v *string) {
		if v == nil {
			fb.AppendNull()
			return
		}
		fb.(*array.StringBuilder).Append(*v)
	}
	i32OrNull := func(fb array.Builder, v *int32) {
		if v == nil {
			fb.AppendNull()
			return
		}
		fb.(*array.Int32Builder).Append(*v)
	}
	for _, t := range typeInfos {
		if dt := cmd.GetDataType(); dt != nil && *dt != t.dataType {
			continue
		}
		b.Field(0).(*array.StringBuilder).Append(t.name)
		b.Field(1).(*array.Int32Builder).Append(t.dataType)
		i32OrNull(b.Field(2), t.columnSize)
		strOrNull(b.Field(3), t.prefix)
		strOrNull(b.Field(4), t.suffix)
		lb := b.Field(5).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).AppendValues(t.createParams, nil)
		b.Field(6).(*array.Int32Builder).Append(1) // NULLABLE
		b.Field(7).(*array.BooleanBuilder).Append(t.caseSensitive)
		b.Field(8).(*array.Int32Builder).Append(3) // SEARCHABLE_FULL
		if t.unsigned == nil {
			b.Field(9).AppendNull()
		} else {
			b.Field(9).(*array.BooleanBuilder).Append(*t.unsigned)
		}
		b.Field(10).(*array.BooleanBuilder).Append(t.fixedPrec)
		b.Field(11).(*array.BooleanBuilder).Append(false) // auto_increment
		b.Field(12).(*array.StringBuilder).Append(t.name)
		i32OrNull(b.Field(13), t.minScale)
		i32OrNull(b.Field(14), t.maxScale)
		b.Field(15).(*array.Int32Builder).Append(t.sqlDataType)
		i32OrNull(b.Field(16), t.subcode)
		i32OrNull(b.Field(17), t.radix)
		b.Field(18).AppendNull() // interval_precision
	}
	return schema_ref.XdbcTypeInfo, oneBatch(b.NewRecordBatch()), nil
}
