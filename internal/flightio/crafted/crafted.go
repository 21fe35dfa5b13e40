// Package crafted makes Arrow IPC streams for the tests of what reads a
// client's batches: valid ones of every layout a client sends, and ones
// crafted to claim what they are not (offsets past their buffers,
// negative lengths, children shorter than their parents, dictionaries
// never sent).
package crafted

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icefloe/icefloe/internal/conform"
)

func stream(t testing.TB, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(recs[0].Schema()))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func batchOf(t testing.TB, sc *arrow.Schema, js string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, bytes.NewReader([]byte(js)))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// patch replaces the n-th occurrence (from 0; -1 for the last) of old in
// b with new, failing t when there is none.
func patch(t testing.TB, b, old, new []byte, n int) []byte {
	t.Helper()
	var at []int
	for i := 0; i+len(old) <= len(b); i++ {
		if bytes.Equal(b[i:i+len(old)], old) {
			at = append(at, i)
		}
	}
	if n < 0 {
		n = len(at) - 1
	}
	if n < 0 || n >= len(at) {
		t.Fatalf("pattern %x: %d occurrences, want #%d", old, len(at), n)
	}
	out := bytes.Clone(b)
	copy(out[at[n]:], new)
	return out
}

// patchAll replaces every occurrence of old in b with new.
func patchAll(t testing.TB, b, old, new []byte) []byte {
	t.Helper()
	if !bytes.Contains(b, old) {
		t.Fatalf("pattern %x not found", old)
	}
	return bytes.ReplaceAll(b, old, new)
}

func le32(vs ...int32) []byte {
	var out []byte
	for _, v := range vs {
		out = binary.LittleEndian.AppendUint32(out, uint32(v))
	}
	return out
}

func le64(vs ...int64) []byte {
	var out []byte
	for _, v := range vs {
		out = binary.LittleEndian.AppendUint64(out, uint64(v))
	}
	return out
}

// Message is one encapsulated message of an IPC stream.
type Message struct {
	Type       ipc.MessageType
	Meta, Body []byte
}

// Messages splits an IPC stream into its messages (the end-of-stream
// marker dropped).
func Messages(t testing.TB, b []byte) []Message {
	t.Helper()
	mr := ipc.NewMessageReader(bytes.NewReader(b))
	defer mr.Release()
	var out []Message
	pos := 0
	for {
		msg, err := mr.Message()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if binary.LittleEndian.Uint32(b[pos:]) != 0xFFFFFFFF {
			t.Fatalf("no continuation marker at %d", pos)
		}
		n := int(binary.LittleEndian.Uint32(b[pos+4:]))
		meta := b[pos+8 : pos+8+n]
		body := b[pos+8+n : pos+8+n+int(msg.BodyLen())]
		out = append(out, Message{Type: msg.Type(), Meta: meta, Body: body})
		pos += 8 + n + int(msg.BodyLen())
	}
}

// Join joins messages back into an IPC stream.
func Join(msgs []Message) []byte {
	var out []byte
	for _, m := range msgs {
		out = binary.LittleEndian.AppendUint32(out, 0xFFFFFFFF)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(m.Meta)))
		out = append(out, m.Meta...)
		out = append(out, m.Body...)
	}
	return append(out, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0)
}

// Streams are client streams whose batches are not what they claim
// to be, by name.
func Streams(t testing.TB) map[string][]byte {
	str := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	strs := stream(t, batchOf(t, str, `[{"s":"ab"},{"s":"cd"},{"s":"ef"}]`))
	lst := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	lists := stream(t, batchOf(t, lst, `[{"l":[1,2]},{"l":[3]}]`))
	stc := arrow.NewSchema([]arrow.Field{{Name: "r", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64})}}, nil)
	structs := stream(t, batchOf(t, stc, `[{"r":{"a":1}},{"r":{"a":2}},{"r":{"a":3}},{"r":{"a":4}},{"r":{"a":5}}]`))
	i64 := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	ints := stream(t, batchOf(t, i64, `[{"n":11},{"n":12},{"n":13}]`))
	bv := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.StringView}}, nil)
	views := stream(t, batchOf(t, bv, `[{"v":"a string longer than twelve bytes"},{"v":"x"}]`))

	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	db := array.NewDictionaryBuilder(memory.DefaultAllocator, dt).(*array.BinaryDictionaryBuilder)
	for _, s := range []string{"x", "y", "x"} {
		if err := db.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	dsc := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dt}}, nil)
	darr := db.NewArray()
	dicts := stream(t, array.NewRecordBatch(dsc, []arrow.Array{darr}, 3))
	var noDict []Message
	for _, m := range Messages(t, dicts) {
		if m.Type != ipc.MessageDictionaryBatch {
			noDict = append(noDict, m)
		}
	}

	nul := arrow.NewSchema([]arrow.Field{{Name: "z", Type: arrow.Null, Nullable: true}}, nil)
	nulls := stream(t, array.NewRecordBatch(nul, []arrow.Array{array.NewNull(77)}, 77))

	return map[string][]byte{
		"null column of 2^40 rows":         patchAll(t, nulls, le64(77), le64(1<<40)),
		"string offset past the data":      patch(t, strs, le32(0, 2, 4, 6), le32(0, 2, 4, 4096), 0),
		"negative string offset":           patch(t, strs, le32(0, 2, 4, 6), le32(0, -1, 4, 6), 0),
		"decreasing string offsets":        patch(t, strs, le32(0, 2, 4, 6), le32(0, 4, 2, 6), 0),
		"list offset past the child":       patch(t, lists, le32(0, 2, 3), le32(0, 2, 99), 0),
		"negative list offset":             patch(t, lists, le32(0, 2, 3), le32(0, -8, 3), 0),
		"struct child shorter than parent": patch(t, structs, le64(5, 0, 5, 0), le64(5, 0, 2, 0), 0),
		"column longer than its buffer":    patch(t, ints, le64(3, 0), le64(1000, 0), 0),
		"negative column length":           patch(t, ints, le64(3, 0), le64(-1, 0), 0),
		"negative null count":              patch(t, ints, le64(3, 0), le64(3, -5), 0),
		"buffer past the body":             patch(t, ints, le64(0, 24), le64(0, 1<<40), -1),
		"negative buffer length":           patch(t, ints, le64(0, 24), le64(0, -24), -1),
		"view past its data buffer":        patch(t, views, append(append(le32(33), "a st"...), le32(0, 0)...), append(append(le32(33), "a st"...), le32(0, 3400)...), 0),
		"view of a buffer never sent":      patch(t, views, append(append(le32(33), "a st"...), le32(0, 0)...), append(append(le32(33), "a st"...), le32(5, 0)...), 0),
		"dictionary never sent":            Join(noDict),
		"dictionary index out of range":    patch(t, dicts, le32(0, 1, 0), le32(0, 77, 0), 0),
		"cut short":                        ints[:len(ints)-20],
	}
}

// Seeds are valid streams of every layout a client sends.
func Seeds(t testing.TB) [][]byte {
	mk := func(typ arrow.DataType, js string) []byte {
		sc := arrow.NewSchema([]arrow.Field{{Name: "c", Type: typ, Nullable: true}}, nil)
		return stream(t, batchOf(t, sc, js))
	}
	return [][]byte{
		mk(arrow.BinaryTypes.String, `[{"c":"ab"},{"c":null},{"c":"ef"}]`),
		mk(arrow.BinaryTypes.LargeString, `[{"c":"ab"},{"c":"cd"}]`),
		mk(arrow.BinaryTypes.StringView, `[{"c":"a string longer than twelve bytes"},{"c":"x"}]`),
		mk(arrow.BinaryTypes.BinaryView, `[{"c":"YWJj"},{"c":null}]`),
		mk(arrow.ListOf(arrow.PrimitiveTypes.Int64), `[{"c":[1,2]},{"c":[3]},{"c":null}]`),
		mk(arrow.ListViewOf(arrow.PrimitiveTypes.Int32), `[{"c":[1,2]},{"c":[]}]`),
		mk(arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), `[{"c":[1,2,3]},{"c":[4,5,6]}]`),
		mk(arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), `[{"c":[{"key":"a","value":1}]}]`),
		mk(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), `[{"c":{"a":1,"b":"x"}},{"c":null}]`),
		mk(&arrow.Decimal128Type{Precision: 10, Scale: 2}, `[{"c":"1.25"}]`),
		stream(t, array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "z", Type: arrow.Null, Nullable: true}}, nil), []arrow.Array{array.NewNull(77)}, 77)),
		mk(arrow.FixedWidthTypes.Date32, `[{"c":"2020-01-01"}]`),
	}
}

// Use does with rec what the server does with a client's batch
// after the check: read every value, retype it to a storable layout
// (conform.Storable, as ingest does), and write it as IPC (as ingest
// forwards it to the workers).
func Use(rec arrow.RecordBatch) error {
	for i, col := range rec.Columns() {
		for j := 0; j < col.Len(); j++ {
			_ = col.ValueStr(j)
		}
		st, err := conform.Storable(context.Background(), memory.DefaultAllocator, col, rec.Schema().Field(i).Name)
		if err != nil {
			continue
		}
		for j := 0; j < st.Len(); j++ {
			_ = st.ValueStr(j)
		}
		st.Release()
	}
	w := ipc.NewWriter(io.Discard, ipc.WithSchema(rec.Schema()))
	defer w.Close()
	return w.Write(rec)
}
