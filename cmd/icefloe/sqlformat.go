package main

import (
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// resultWriter prints statement results in one format.
type resultWriter interface {
	// begin starts a result with the given columns.
	begin(schema *arrow.Schema) error
	// write prints (or buffers) a batch; the caller keeps ownership.
	write(rec arrow.RecordBatch) error
	// end finishes the result begun last.
	end() error
	// affected reports an update's row count (-1: unknown).
	affected(n int64) error
}

func newResultWriter(format string, out, stderr io.Writer) (resultWriter, error) {
	switch format {
	case "table":
		return &tableWriter{out: out}, nil
	case "csv":
		return &csvWriter{out: out, stderr: stderr}, nil
	case "json":
		return &jsonWriter{out: out}, nil
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

func affectedText(n int64) string {
	switch {
	case n < 0:
		return "OK"
	case n == 1:
		return "1 row affected"
	}
	return fmt.Sprintf("%d rows affected", n)
}

// csvWriter prints RFC 4180 CSV with a header line; NULL is an empty field.
// An update's row count goes to stderr, keeping stdout CSV.
type csvWriter struct {
	out    io.Writer
	stderr io.Writer
	w      *csv.Writer
}

func (c *csvWriter) begin(schema *arrow.Schema) error {
	c.w = csv.NewWriter(c.out)
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	return c.w.Write(names)
}

func (c *csvWriter) write(rec arrow.RecordBatch) error {
	cols := rec.Columns()
	row := make([]string, len(cols))
	for r := range int(rec.NumRows()) {
		for i, col := range cols {
			if col.IsNull(r) {
				row[i] = ""
			} else {
				row[i] = cellText(col, r)
			}
		}
		if err := c.w.Write(row); err != nil {
			return err
		}
	}
	return nil
}

func (c *csvWriter) end() error {
	c.w.Flush()
	return c.w.Error()
}

func (c *csvWriter) affected(n int64) error {
	_, err := io.WriteString(c.stderr, affectedText(n)+"\n")
	return err
}

// jsonWriter prints one JSON object per row (JSON Lines), keys in column
// order. An update prints {"rows_affected": N}.
type jsonWriter struct {
	out   io.Writer
	names [][]byte // JSON-encoded column names
	buf   []byte
}

func (j *jsonWriter) begin(schema *arrow.Schema) error {
	j.names = make([][]byte, schema.NumFields())
	for i, f := range schema.Fields() {
		j.names[i] = appendJSONString(nil, f.Name)
	}
	return nil
}

func (j *jsonWriter) write(rec arrow.RecordBatch) error {
	cols := rec.Columns()
	for r := range int(rec.NumRows()) {
		b := append(j.buf[:0], '{')
		for i, col := range cols {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, j.names[i]...)
			b = append(b, ':')
			b = appendJSONValue(b, col, r)
		}
		b = append(b, '}', '\n')
		if _, err := j.out.Write(b); err != nil {
			return err
		}
		j.buf = b
	}
	return nil
}

func (j *jsonWriter) end() error { return nil }

func (j *jsonWriter) affected(n int64) error {
	_, err := fmt.Fprintf(j.out, "{\"rows_affected\":%d}\n", n)
	return err
}

func isNumeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	case arrow.DICTIONARY:
		return isNumeric(t.(*arrow.DictionaryType).ValueType)
	}
	return false
}

// escapeControl makes a table cell one line: \n, \r, \t and other control
// characters are written as escapes, and so is a backslash.
func escapeControl(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cellText is the text of the non-null value arr[i]: decimals exact at their
// scale, timestamps ISO 8601 (with the offset when the type has a zone),
// dates YYYY-MM-DD, binary as \x hex, lists, structs and maps as JSON.
func cellText(arr arrow.Array, i int) string {
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Uint8:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10)
	case *array.Float16:
		return formatFloat(float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return formatFloat(float64(a.Value(i)), 32)
	case *array.Float64:
		return formatFloat(a.Value(i), 64)
	case *array.Decimal32, *array.Decimal64, *array.Decimal128, *array.Decimal256:
		return decimalText(arr, i)
	case array.StringLike:
		return a.Value(i)
	case interface{ Value(int) []byte }:
		return `\x` + hex.EncodeToString(a.Value(i))
	case *array.Date32:
		return time.Unix(int64(a.Value(i))*86400, 0).UTC().Format(time.DateOnly)
	case *array.Date64:
		return time.UnixMilli(int64(a.Value(i))).UTC().Format(time.DateOnly)
	case *array.Time32:
		return timeOfDay(int64(a.Value(i)) * int64(a.DataType().(*arrow.Time32Type).Unit.Multiplier()))
	case *array.Time64:
		return timeOfDay(int64(a.Value(i)) * int64(a.DataType().(*arrow.Time64Type).Unit.Multiplier()))
	case *array.Timestamp:
		return timestampText(int64(a.Value(i)), a.DataType().(*arrow.TimestampType))
	case *array.Dictionary:
		return cellText(a.Dictionary(), a.GetValueIndex(i))
	case *array.Map, array.ListLike, *array.Struct:
		return string(appendJSONValue(nil, arr, i))
	}
	return arr.ValueStr(i)
}

func formatFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(v, 'g', -1, bits)
}

// decimalText formats a decimal array's value exactly, with all the digits
// of its scale (12.50 for decimal(12,2)).
func decimalText(arr arrow.Array, i int) string {
	var n *big.Int
	switch a := arr.(type) {
	case *array.Decimal32:
		n = big.NewInt(int64(a.Value(i)))
	case *array.Decimal64:
		n = big.NewInt(int64(a.Value(i)))
	case *array.Decimal128:
		n = a.Value(i).BigInt()
	case *array.Decimal256:
		n = a.Value(i).BigInt()
	default:
		return arr.ValueStr(i)
	}
	scale := int(arr.DataType().(arrow.DecimalType).GetScale())
	digits := new(big.Int).Abs(n).String()
	switch {
	case scale < 0:
		if digits != "0" {
			digits += strings.Repeat("0", -scale)
		}
	case scale > 0:
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if n.Sign() < 0 {
		return "-" + digits
	}
	return digits
}

// timeOfDay formats nanoseconds since midnight as HH:MM:SS[.fraction].
func timeOfDay(ns int64) string {
	return time.Unix(0, ns).UTC().Format("15:04:05.999999999")
}

func timestampText(v int64, t *arrow.TimestampType) string {
	var tm time.Time
	switch t.Unit {
	case arrow.Second:
		tm = time.Unix(v, 0)
	case arrow.Millisecond:
		tm = time.UnixMilli(v)
	case arrow.Microsecond:
		tm = time.UnixMicro(v)
	default:
		tm = time.Unix(0, v)
	}
	if t.TimeZone == "" {
		return tm.UTC().Format("2006-01-02T15:04:05.999999999")
	}
	loc, err := t.GetZone()
	if err != nil {
		loc = time.UTC
	}
	return tm.In(loc).Format("2006-01-02T15:04:05.999999999Z07:00")
}

// appendJSONValue appends arr[i] as JSON: null, true/false, numbers
// (decimals exact), strings (temporal and binary values in their text form),
// arrays for lists, objects for structs and maps (keys as text).
func appendJSONValue(b []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(b, "null"...)
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(i))
	case *array.Int8, *array.Int16, *array.Int32, *array.Int64,
		*array.Uint8, *array.Uint16, *array.Uint32, *array.Uint64,
		*array.Decimal32, *array.Decimal64, *array.Decimal128, *array.Decimal256:
		return append(b, cellText(arr, i)...)
	case *array.Float16, *array.Float32, *array.Float64:
		s := cellText(arr, i)
		if s == "NaN" || strings.HasSuffix(s, "Infinity") {
			return appendJSONString(b, s)
		}
		return append(b, s...)
	case *array.Dictionary:
		return appendJSONValue(b, a.Dictionary(), a.GetValueIndex(i))
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		b = append(b, '{')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			key := "null"
			if !keys.IsNull(int(j)) {
				key = cellText(keys, int(j))
			}
			b = appendJSONString(b, key)
			b = append(b, ':')
			b = appendJSONValue(b, items, int(j))
		}
		return append(b, '}')
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		values := a.ListValues()
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			b = appendJSONValue(b, values, int(j))
		}
		return append(b, ']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		b = append(b, '{')
		for f := range a.NumField() {
			if f > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, st.Field(f).Name)
			b = append(b, ':')
			b = appendJSONValue(b, a.Field(f), i)
		}
		return append(b, '}')
	}
	return appendJSONString(b, cellText(arr, i))
}

// appendJSONString appends s as a JSON string without HTML escaping;
// invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, `\"`...)
		case r == '\\':
			b = append(b, `\\`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			b = append(b, `\u`...)
			b = append(b, hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
