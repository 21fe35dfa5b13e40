package flightsql

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/icefloe/icefloe/internal/flightio/crafted"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/statement"
)

// ingestPlanner is the fake planner that also ingests: it reads the
// stream and uses each batch as the real ingest does.
type ingestPlanner struct{ *fakePlanner }

func (p ingestPlanner) Ingest(_ context.Context, _ planner.Session, in statement.Ingest) (int64, error) {
	var n int64
	for in.Rows.Next() {
		rec := in.Rows.RecordBatch()
		if err := crafted.Use(rec); err != nil {
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
	e := start(t, func(o *Options) { o.Capabilities.Ingest = ingestPlanner{o.Backend.(*fakePlanner)} })
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
		for i, m := range crafted.Messages(t, stream) {
			fd := &flight.FlightData{DataHeader: m.Meta, DataBody: m.Body}
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
	for name, b := range crafted.Streams(t) {
		if name == "cut short" {
			continue // not whole messages: tested above
		}
		t.Run(name, func(t *testing.T) {
			wantCode(t, put(t, b), codes.InvalidArgument)
		})
	}
	for i, b := range crafted.Seeds(t) {
		if err := put(t, b); err != nil {
			t.Fatalf("valid stream %d: %v", i, err)
		}
	}
}
