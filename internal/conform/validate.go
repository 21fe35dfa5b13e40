package conform

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Iceberg stores what these bounds allow, and every reader reads it back:
// partition values and column bounds go into metadata in Iceberg's JSON
// single-value form (ISO-8601, four-digit years), and readers turn dates
// and timestamps into their languages' types (Java, Python and Spark take
// years 1 to 9999). DuckDB goes further (to ±5.8 million years) and has
// 'infinity' and '-infinity', which are its largest and smallest values;
// TIME '24:00:00' is DuckDB's too. None of these can be written.
var (
	minDate = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDate = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	// Days from the epoch.
	minDays = int32(minDate.Unix() / 86400)
	maxDays = int32(maxDate.Unix() / 86400)
	// Microseconds from the epoch, to the last microsecond of 9999-12-31.
	minMicros = minDate.Unix() * 1e6
	maxMicros = (maxDate.Unix()+86400)*1e6 - 1
	dayMicros = int64(86400e6)
)

// Validate checks every value of arr (a column of a table's Arrow schema,
// nested values included) is one Iceberg can store and readers read back:
// strings are valid UTF-8, and dates, timestamps and times are in range
// (see minDate, maxDate). The error wraps ErrValue and names the column
// (path) and the row, counted from firstRow + 1.
func Validate(arr arrow.Array, path string, firstRow int64) error {
	return validate(arr, path, 0, arr.Len(), func(i int) int64 { return firstRow + int64(i) + 1 })
}

// validate checks elements [from, to) of arr; row maps an element to the
// row it belongs to.
func validate(arr arrow.Array, path string, from, to int, row func(int) int64) error {
	bad := func(i int, format string, args ...any) error {
		return fmt.Errorf("%w: column %s, row %d: %s", ErrValue, path, row(i), fmt.Sprintf(format, args...))
	}
	switch a := arr.(type) {
	case *array.String:
		for i := from; i < to; i++ {
			if a.IsValid(i) && !utf8.ValidString(a.Value(i)) {
				return bad(i, "the string %q is not valid UTF-8", a.Value(i))
			}
		}
	case *array.LargeString:
		for i := from; i < to; i++ {
			if a.IsValid(i) && !utf8.ValidString(a.Value(i)) {
				return bad(i, "the string %q is not valid UTF-8", a.Value(i))
			}
		}
	case *array.Date32:
		for i := from; i < to; i++ {
			if v := int32(a.Value(i)); a.IsValid(i) && (v < minDays || v > maxDays) {
				return bad(i, "date %s is outside the dates Iceberg can store (0001-01-01 to 9999-12-31)", dateText(v))
			}
		}
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		for i := from; i < to; i++ {
			if v := int64(a.Value(i)); a.IsValid(i) && !timestampOK(v, unit) {
				return bad(i, "timestamp %s is outside the timestamps Iceberg can store (0001-01-01 to 9999-12-31)", timestampText(v, unit))
			}
		}
	case *array.Time64:
		per := int64(1)
		if a.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
			per = 1000
		}
		for i := from; i < to; i++ {
			if v := int64(a.Value(i)); a.IsValid(i) && (v < 0 || v >= dayMicros*per) {
				return bad(i, "time %s is not a time of day (00:00:00 to 23:59:59.999999)", time.Duration(v*1000/per))
			}
		}
	case *array.Struct:
		return validateStruct(a, path, from, to, row)
	case array.ListLike:
		return validateList(a, path, from, to, row)
	}
	return nil
}

// validateStruct validates the fields of a struct's valid rows (a NULL
// struct's fields are not written).
func validateStruct(a *array.Struct, path string, from, to int, row func(int) int64) error {
	st := a.DataType().(*arrow.StructType)
	for k := 0; k < a.NumField(); k++ {
		f, fpath := a.Field(k), path+"."+st.Field(k).Name
		if a.NullN() == 0 {
			if err := validate(f, fpath, from, to, row); err != nil {
				return err
			}
			continue
		}
		for i := from; i < to; i++ {
			if !a.IsValid(i) {
				continue
			}
			if err := validate(f, fpath, i, i+1, row); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateList validates each valid list's (or map's) elements, against
// the list's row.
func validateList(a array.ListLike, path string, from, to int, row func(int) int64) error {
	child, cpath := a.ListValues(), path+".element"
	if _, ok := a.(*array.Map); ok {
		cpath = path
	}
	for i := from; i < to; i++ {
		if !a.IsValid(i) {
			continue
		}
		s, e := a.ValueOffsets(i)
		r := row(i)
		if err := validate(child, cpath, int(s), int(e), func(int) int64 { return r }); err != nil {
			return err
		}
	}
	return nil
}

func timestampOK(v int64, unit arrow.TimeUnit) bool {
	switch unit {
	case arrow.Second:
		return v >= minMicros/1e6 && v <= maxMicros/1e6
	case arrow.Millisecond:
		return v >= minMicros/1e3 && v <= maxMicros/1e3
	case arrow.Microsecond:
		return v >= minMicros && v <= maxMicros
	}
	// Nanoseconds cover 1677 to 2262 only; DuckDB's infinities are the
	// ends of that range.
	return v != math.MaxInt64 && v != -math.MaxInt64 && v != math.MinInt64
}

// dateText shows a date the way DuckDB writes it, infinities included.
func dateText(days int32) string {
	switch days {
	case math.MaxInt32:
		return "'infinity'"
	case -math.MaxInt32, math.MinInt32:
		return "'-infinity'"
	}
	return time.Unix(int64(days)*86400, 0).UTC().Format("2006-01-02")
}

func timestampText(v int64, unit arrow.TimeUnit) string {
	switch v {
	case math.MaxInt64:
		return "'infinity'"
	case -math.MaxInt64, math.MinInt64:
		return "'-infinity'"
	}
	per := map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}[unit]
	sec, frac := v/per, v%per
	if frac < 0 {
		sec, frac = sec-1, frac+per
	}
	return time.Unix(sec, frac*(1e9/per)).UTC().Format("2006-01-02 15:04:05.999999999")
}
