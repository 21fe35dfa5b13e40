package flightsql

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/icefloe/icefloe/internal/conform"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/statement"
)

// useBatch does with rec what the server does with a client's batch
// after the check: read every value, retype it to a storable layout
// (conform.Storable, as ingest does), and write it as IPC (as ingest
// forwards it to the workers).
func useBatch(rec arrow.RecordBatch) error {
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

// readChecked reads a client's IPC stream b as the server does and uses
// each batch; a panic anywhere fails t.
func readChecked(t testing.TB, b []byte) (batches int, err error) {
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic reading a client's stream: %v", p)
		}
	}()
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer r.Release()
	rows := checkedRows(r)
	for rows.Next() {
		batches++
		if err := useBatch(rows.RecordBatch()); err != nil {
			t.Fatalf("a checked batch does not write: %v", err)
		}
	}
	return batches, rows.Err()
}

func ipcStream(t testing.TB, recs ...arrow.RecordBatch) []byte {
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

// ipcMessage is one encapsulated message of an IPC stream.
type ipcMessage struct {
	typ        ipc.MessageType
	meta, body []byte
}

// messagesOf splits an IPC stream into its messages (the end-of-stream
// marker dropped).
func messagesOf(t testing.TB, b []byte) []ipcMessage {
	t.Helper()
	mr := ipc.NewMessageReader(bytes.NewReader(b))
	defer mr.Release()
	var out []ipcMessage
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
		out = append(out, ipcMessage{typ: msg.Type(), meta: meta, body: body})
		pos += 8 + n + int(msg.BodyLen())
	}
}

// streamOf joins messages back into an IPC stream.
func streamOf(msgs []ipcMessage) []byte {
	var out []byte
	for _, m := range msgs {
		out = binary.LittleEndian.AppendUint32(out, 0xFFFFFFFF)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(m.meta)))
		out = append(out, m.meta...)
		out = append(out, m.body...)
	}
	return append(out, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0)
}

// craftedStreams are client streams whose batches are not what they claim
// to be, by name.
func craftedStreams(t testing.TB) map[string][]byte {
	str := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	strs := ipcStream(t, batchOf(t, str, `[{"s":"ab"},{"s":"cd"},{"s":"ef"}]`))
	lst := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	lists := ipcStream(t, batchOf(t, lst, `[{"l":[1,2]},{"l":[3]}]`))
	stc := arrow.NewSchema([]arrow.Field{{Name: "r", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64})}}, nil)
	structs := ipcStream(t, batchOf(t, stc, `[{"r":{"a":1}},{"r":{"a":2}},{"r":{"a":3}},{"r":{"a":4}},{"r":{"a":5}}]`))
	i64 := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	ints := ipcStream(t, batchOf(t, i64, `[{"n":11},{"n":12},{"n":13}]`))
	bv := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.StringView}}, nil)
	views := ipcStream(t, batchOf(t, bv, `[{"v":"a string longer than twelve bytes"},{"v":"x"}]`))

	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	db := array.NewDictionaryBuilder(memory.DefaultAllocator, dt).(*array.BinaryDictionaryBuilder)
	for _, s := range []string{"x", "y", "x"} {
		if err := db.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	dsc := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dt}}, nil)
	darr := db.NewArray()
	dicts := ipcStream(t, array.NewRecordBatch(dsc, []arrow.Array{darr}, 3))
	var noDict []ipcMessage
	for _, m := range messagesOf(t, dicts) {
		if m.typ != ipc.MessageDictionaryBatch {
			noDict = append(noDict, m)
		}
	}

	return map[string][]byte{
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
		"dictionary never sent":            streamOf(noDict),
		"dictionary index out of range":    patch(t, dicts, le32(0, 1, 0), le32(0, 77, 0), 0),
		"cut short":                        ints[:len(ints)-20],
	}
}

// TestCraftedStreamsRefused: every crafted stream ends with
// planner.ErrInvalid (InvalidArgument), and nothing panics reading or
// using its batches.
func TestCraftedStreamsRefused(t *testing.T) {
	for name, b := range craftedStreams(t) {
		t.Run(name, func(t *testing.T) {
			_, err := readChecked(t, b)
			if !errors.Is(err, planner.ErrInvalid) {
				t.Fatalf("error %v, want planner.ErrInvalid", err)
			}
			if code := status.Code(ToStatus(err)); code != codes.InvalidArgument {
				t.Fatalf("code %s, want InvalidArgument", code)
			}
		})
	}
}

// TestValidStreamsRead: the streams the crafted ones come from read
// whole, so the check refuses only what is broken.
func TestValidStreamsRead(t *testing.T) {
	for _, b := range seedStreams(t) {
		if _, err := readChecked(t, b); err != nil {
			t.Fatal(err)
		}
	}
}

// seedStreams are valid streams of every layout a client sends.
func seedStreams(t testing.TB) [][]byte {
	mk := func(typ arrow.DataType, js string) []byte {
		sc := arrow.NewSchema([]arrow.Field{{Name: "c", Type: typ, Nullable: true}}, nil)
		return ipcStream(t, batchOf(t, sc, js))
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
		mk(arrow.FixedWidthTypes.Date32, `[{"c":"2020-01-01"}]`),
	}
}

// FuzzClientStream: whatever bytes a client sends as an IPC stream, the
// server reads and uses its batches without a panic, and a stream it
// refuses is refused with planner.ErrInvalid.
func FuzzClientStream(f *testing.F) {
	for _, b := range seedStreams(f) {
		f.Add(b)
	}
	for _, b := range craftedStreams(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := readChecked(t, b)
		if err != nil && !errors.Is(err, planner.ErrInvalid) {
			// The reader's own errors before the first batch (a schema
			// that does not decode) come from ipc.NewReader: the Flight
			// SQL server refuses those itself, as InvalidArgument.
			var first bool
			if _, rerr := ipc.NewReader(bytes.NewReader(b)); rerr != nil {
				first = true
			}
			if !first {
				t.Fatalf("error %v, want planner.ErrInvalid", err)
			}
		}
	})
}

// ingestPlanner is the fake planner that also ingests: it reads the
// stream and uses each batch as the real ingest does.
type ingestPlanner struct{ *fakePlanner }

func (p ingestPlanner) Ingest(_ context.Context, _ planner.Session, in statement.Ingest) (int64, error) {
	var n int64
	for in.Rows.Next() {
		rec := in.Rows.RecordBatch()
		if err := useBatch(rec); err != nil {
			return n, err
		}
		n += rec.NumRows()
	}
	return n, in.Rows.Err()
}

// TestCraftedIngestRefused: a crafted bulk ingest (DoPut of
// CommandStatementIngest) and crafted bound parameters get
// InvalidArgument over gRPC, and the server keeps serving.
func TestCraftedIngestRefused(t *testing.T) {
	e := start(t, func(o *Options) { o.Planner = ingestPlanner{o.Planner.(*fakePlanner)} })
	ctx := context.Background()
	cmd, err := anypb.New(&pb.CommandStatementIngest{Table: "t"})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	put := func(t *testing.T, stream []byte) error {
		s, err := e.client.Client.DoPut(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range messagesOf(t, stream) {
			fd := &flight.FlightData{DataHeader: m.meta, DataBody: m.body}
			if i == 0 {
				fd.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: desc}
			}
			if err := s.Send(fd); err != nil {
				break // the server answered already: Recv says how
			}
		}
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := s.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	for name, b := range craftedStreams(t) {
		if name == "cut short" {
			continue // not whole messages: tested above
		}
		t.Run(name, func(t *testing.T) {
			wantCode(t, put(t, b), codes.InvalidArgument)
		})
	}
	for i, b := range seedStreams(t) {
		if err := put(t, b); err != nil {
			t.Fatalf("valid stream %d: %v", i, err)
		}
	}
}
