package flightclient

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestStoppedAnswering: a call failed because its connection's keepalive
// pings went unanswered is still Unavailable, and says which server
// stopped answering; any other error is left as it is.
func TestStoppedAnswering(t *testing.T) {
	gone := status.Error(codes.Unavailable, `connection error: desc = "keepalive ping failed to receive ACK within timeout"`)
	err := stoppedAnswering("10.0.3.7:4001", gone)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "10.0.3.7:4001 stopped answering") ||
		!strings.Contains(err.Error(), StoppedAnsweringAfter.String()) {
		t.Fatalf("keepalive failure: %v", err)
	}
	for _, other := range []error{
		status.Error(codes.Unavailable, "connection refused"),
		status.Error(codes.Internal, "keepalive ping failed to receive ACK"),
		errors.New("plain"),
		nil,
	} {
		if got := stoppedAnswering("10.0.3.7:4001", other); got != other {
			t.Fatalf("%v rewritten to %v", other, got)
		}
	}
}

// silentServer answers a DoGet after a long silence, as a worker does
// that computes a large aggregate before its first batch.
type silentServer struct {
	flight.BaseFlightServer
	silence time.Duration
}

func (s *silentServer) DoGet(_ *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	select {
	case <-time.After(s.silence):
	case <-stream.Context().Done():
		return stream.Context().Err()
	}
	return stream.Send(&flight.FlightData{DataBody: []byte("done")})
}

// TestKeepaliveAcceptedBySilentServer: a call whose server sends nothing
// for longer than gRPC's default ping policy tolerates (three pings
// within 5 minutes end the connection with GOAWAY too_many_pings) still
// succeeds against a server with ServerKeepalive: the pings keep a slow
// stream alive instead of killing it.
func TestKeepaliveAcceptedBySilentServer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 5 keepalive intervals")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(ServerKeepalive())
	flight.RegisterFlightServiceServer(g, &silentServer{silence: 5 * KeepaliveTime})
	go g.Serve(lis)
	defer g.Stop()
	cl, err := Dial("grpc://"+lis.Addr().String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	stream, err := cl.DoGet(context.Background(), &flight.Ticket{})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := stream.Recv()
	if err != nil || string(fd.GetDataBody()) != "done" {
		t.Fatalf("a stream silent for %s: %v, %v", 5*KeepaliveTime, fd, err)
	}
}
