package flightsql

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
)

// Union arms of the SqlInfo value column.
const (
	armString   = 0
	armBool     = 1
	armBigint   = 2
	armInt32    = 3
	armStrList  = 4
	armInt32Map = 5
)

// wantArm is the arm each SqlInfo key must use, from the Flight SQL spec
// and the casts of the JDBC driver (ArrowDatabaseMetadata), written out
// independently of sqlinfo.go.
var wantArm = func() map[int32]int {
	m := map[int32]int{}
	set := func(arm int, keys ...int32) {
		for _, k := range keys {
			m[k] = arm
		}
	}
	set(armString, 0, 1, 2, 6, 7, 504, 513, 514, 529, 530, 531)
	set(armBool, 3, 4, 5, 9, 10, 11, 500, 501, 502, 506, 515, 516, 518, 519, 520, 521, 523, 524, 527,
		532, 536, 537, 539, 556, 563, 565, 566, 572, 573, 574, 575, 576)
	for k := int32(541); k <= 561; k++ {
		if k != 556 {
			set(armBigint, k)
		}
	}
	set(armBigint, 562) // JDBC reads SQL_DEFAULT_TRANSACTION_ISOLATION as a Long
	set(armInt32, 8, 100, 101, 503, 505, 507, 522, 525, 526, 528, 533, 534, 535, 538, 540, 564,
		567, 568, 569, 570, 571)
	set(armStrList, 508, 509, 510, 511, 512)
	set(armInt32Map, 517)
	return m
}()

// sqlInfoRow is one decoded row of a GetSqlInfo result.
type sqlInfoRow struct {
	arm   int
	value any
}

func readSqlInfo(t *testing.T, e *env, keys []flightsql.SqlInfo) map[uint32]sqlInfoRow {
	t.Helper()
	info, err := e.client.GetSqlInfo(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	sc, recs := fetch(t, e.client, info)
	checkSchemas(t, info, sc, schema_ref.SqlInfo)
	out := map[uint32]sqlInfoRow{}
	for _, rec := range recs {
		names := rec.Column(0).(*array.Uint32)
		vals := rec.Column(1).(*array.DenseUnion)
		for i := 0; i < int(rec.NumRows()); i++ {
			code := names.Value(i)
			if _, dup := out[code]; dup {
				t.Errorf("key %d answered twice", code)
			}
			arm := int(vals.TypeCode(i))
			off := int(vals.ValueOffset(i))
			var v any
			switch child := vals.Field(vals.ChildID(i)).(type) {
			case *array.String:
				v = child.Value(off)
			case *array.Boolean:
				v = child.Value(off)
			case *array.Int64:
				v = child.Value(off)
			case *array.Int32:
				v = child.Value(off)
			case *array.List:
				start, end := child.ValueOffsets(off)
				strs := child.ListValues().(*array.String)
				var l []string
				for j := start; j < end; j++ {
					l = append(l, strs.Value(int(j)))
				}
				v = l
			case *array.Map:
				start, end := child.ValueOffsets(off)
				keys := child.Keys().(*array.Int32)
				items := child.Items().(*array.List)
				itemVals := items.ListValues().(*array.Int32)
				mm := map[int32][]int32{}
				for j := start; j < end; j++ {
					s, e := items.ValueOffsets(int(j))
					var l []int32
					for k := s; k < e; k++ {
						l = append(l, itemVals.Value(int(k)))
					}
					mm[keys.Value(int(j))] = l
				}
				v = mm
			default:
				t.Fatalf("key %d: unexpected arm type %T", code, child)
			}
			out[code] = sqlInfoRow{arm, v}
		}
	}
	return out
}

// TestSqlInfoEveryKey asks for all keys (an empty list, as JDBC does) and
// checks that every key of arrow-go's SqlInfo enum is answered once, with
// the right arm, and that nothing outside the enum is.
func TestSqlInfoEveryKey(t *testing.T) {
	e := start(t)
	got := readSqlInfo(t, e, nil)
	for code, name := range pb.SqlInfo_name {
		arm, ok := wantArm[code]
		if !ok {
			t.Errorf("test has no expected arm for %s (%d): update wantArm", name, code)
			continue
		}
		row, ok := got[uint32(code)]
		if !ok {
			t.Errorf("%s (%d) not answered", name, code)
			continue
		}
		if row.arm != arm {
			t.Errorf("%s (%d) uses arm %d, want %d", name, code, row.arm, arm)
		}
	}
	for code := range got {
		if _, ok := pb.SqlInfo_name[int32(code)]; !ok {
			t.Errorf("key %d is outside the SqlInfo enum", code)
		}
	}
	want := map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:             "icefloe",
		flightsql.SqlInfoFlightSqlServerVersion:          "test",
		flightsql.SqlInfoFlightSqlServerArrowVersion:     arrow.PkgVersion,
		flightsql.SqlInfoFlightSqlServerReadOnly:         false,
		flightsql.SqlInfoFlightSqlServerTransaction:      int32(flightsql.SqlTransactionNone),
		flightsql.SqlInfoDDLCatalog:                      false,
		flightsql.SqlInfoDDLSchema:                       true,
		flightsql.SqlInfoDDLTable:                        true,
		flightsql.SqlInfoIdentifierQuoteChar:             `"`,
		flightsql.SqlInfoSearchStringEscape:              `\`,
		flightsql.SqlInfoTransactionsSupported:           false,
		flightsql.SqlInfoSupportsColumnAliasing:          true,
		flightsql.SqlInfoFlightSqlServerStatementTimeout: int32(DefaultPreparedTTL.Milliseconds()),
	}
	for k, v := range want {
		if row := got[uint32(k)]; row.value != v {
			t.Errorf("%s = %#v, want %#v", k, row.value, v)
		}
	}
	kw, _ := got[uint32(flightsql.SqlInfoKeywords)].value.([]string)
	if !slices.Contains(kw, "SELECT") || !slices.Contains(kw, "QUALIFY") {
		t.Errorf("keywords = %v", kw)
	}
	for _, k := range []flightsql.SqlInfo{flightsql.SqlInfoNumericFunctions, flightsql.SqlInfoStringFunctions,
		flightsql.SqlInfoSystemFunctions, flightsql.SqlInfoDateTimeFunctions} {
		if l, _ := got[uint32(k)].value.([]string); len(l) == 0 {
			t.Errorf("%s is empty", k)
		}
	}
	conv, _ := got[uint32(flightsql.SqlInfoSupportsConvert)].value.(map[int32][]int32)
	if !slices.Contains(conv[int32(flightsql.SqlConvertBigInt)], int32(flightsql.SqlConvertVarchar)) ||
		!slices.Contains(conv[int32(flightsql.SqlConvertVarchar)], int32(flightsql.SqlConvertDate)) {
		t.Errorf("supports convert = %v", conv)
	}
	for k := range conv {
		if _, ok := pb.SqlSupportsConvert_name[k]; !ok {
			t.Errorf("supports convert key %d outside the enum", k)
		}
	}
}

// flightsql-dbapi asks for four keys and indexes them directly.
func TestSqlInfoSomeKeys(t *testing.T) {
	e := start(t)
	keys := []flightsql.SqlInfo{0, 2, 3, 504}
	got := readSqlInfo(t, e, keys)
	if len(got) != len(keys) {
		t.Fatalf("got %d keys, want %d", len(got), len(keys))
	}
	if got[3].value != false || got[504].value != `"` {
		t.Errorf("READ_ONLY = %v, quote = %v", got[3].value, got[504].value)
	}
}
