package flightsql

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/icefloe/icefloe/planner"
)

// fakeWorker serves DoGet of ticket "ids:<from>" with two batches of
// planSchema rows, or blocks until the client goes away for "block"
// (reporting that on cancelled).
type fakeWorker struct {
	flight.BaseFlightServer
	cancelled chan struct{}
}

func (w *fakeWorker) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	wr := flight.NewRecordWriter(stream, ipc.WithSchema(planSchema))
	defer wr.Close()
	batch := func(from int64) error {
		b := array.NewRecordBuilder(memory.DefaultAllocator, planSchema)
		defer b.Release()
		for i := from; i < from+3; i++ {
			b.Field(0).(*array.Int64Builder).Append(i)
			b.Field(1).(*array.StringBuilder).Append("x")
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		return wr.Write(rec)
	}
	switch string(t.GetTicket()) {
	case "block":
		if err := batch(0); err != nil {
			return err
		}
		<-stream.Context().Done()
		close(w.cancelled)
		return stream.Context().Err()
	case "ids:100":
		if err := batch(100); err != nil {
			return err
		}
		return batch(103)
	default:
		if err := batch(0); err != nil {
			return err
		}
		return batch(3)
	}
}

func startFakeWorker(t *testing.T) (*fakeWorker, string) {
	t.Helper()
	w := &fakeWorker{cancelled: make(chan struct{})}
	g := grpc.NewServer()
	flight.RegisterFlightServiceServer(g, w)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return w, "grpc://" + lis.Addr().String()
}

func readIDs(t *testing.T, e *env, ctx context.Context, info *flight.FlightInfo) []int64 {
	t.Helper()
	rdr, err := e.client.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Schema().Equal(planSchema) {
		t.Fatalf("stream schema %v", rdr.Schema())
	}
	var ids []int64
	for rdr.Next() {
		ids = append(ids, rdr.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestSingleEndpointByHeader(t *testing.T) {
	e := start(t)
	_, loc := startFakeWorker(t)
	// The first endpoint's owner is unreachable: its fallback serves it.
	e.planner.endpoints = []planner.Endpoint{
		{Ticket: []byte("ids:0"), Locations: []string{"grpc://127.0.0.1:1", loc}},
		{Ticket: []byte("ids:100"), Locations: []string{loc}},
	}
	ctx := context.Background()

	plain, err := e.client.Execute(ctx, "SELECT id, name FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Endpoint) != 2 {
		t.Fatalf("without the header: %d endpoints", len(plain.Endpoint))
	}

	hctx := metadata.AppendToOutgoingContext(ctx, HeaderSingleEndpoint, "true")
	info, err := e.client.Execute(hctx, "SELECT id, name FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
		t.Fatalf("single-endpoint mode: %v", info.Endpoint)
	}
	got := readIDs(t, e, ctx, info)
	want := []int64{0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105}
	if len(got) != len(want) {
		t.Fatalf("ids %v, want %v (endpoint order)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ids %v, want %v (endpoint order)", got, want)
		}
	}
}

func TestSingleEndpointBySessionOption(t *testing.T) {
	e := start(t)
	_, loc := startFakeWorker(t)
	e.planner.endpoints = []planner.Endpoint{{Ticket: []byte("ids:0"), Locations: []string{loc}}}
	ctx := context.Background()
	res, err := e.client.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{
		SessionOptions: mustOptions(t, map[string]any{OptionSingleEndpoint: "yes"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, bad := res.GetErrors()[OptionSingleEndpoint]; !bad {
		t.Fatalf("value yes must be refused: %v", res)
	}
	// The session cookie is what carries the option: the client of the
	// test fixture keeps cookies.
	res, err = e.client.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{
		SessionOptions: mustOptions(t, map[string]any{OptionSingleEndpoint: true})})
	if err != nil || len(res.GetErrors()) > 0 {
		t.Fatalf("set: %v %v", res, err)
	}
	info, err := e.client.Execute(ctx, "SELECT id, name FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
		t.Fatalf("endpoints %v", info.Endpoint)
	}
	if ids := readIDs(t, e, ctx, info); len(ids) != 6 {
		t.Fatalf("ids %v", ids)
	}
}

func TestSingleEndpointCancelReachesWorkers(t *testing.T) {
	e := start(t)
	w, loc := startFakeWorker(t)
	e.planner.endpoints = []planner.Endpoint{{Ticket: []byte("block"), Locations: []string{loc}}}
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), HeaderSingleEndpoint, "1"))
	defer cancel()
	info, err := e.client.Execute(ctx, "SELECT id, name FROM t")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := e.client.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("first batch: %v", rdr.Err())
	}
	cancel()
	select {
	case <-w.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker stream was not cancelled after the client went away")
	}
	rdr.Release()
}

func mustOptions(t *testing.T, m map[string]any) map[string]*flight.SessionOptionValue {
	t.Helper()
	v, err := flight.NewSessionOptionValues(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
