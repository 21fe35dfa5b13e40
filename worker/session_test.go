package worker

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The JDBC driver sends the connection's session options to every worker
// it reads from, and closes the session there: both must succeed.
func TestSessionActionsAccepted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	opts, err := flight.NewSessionOptionValues(map[string]any{"catalog": "local"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.client.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: opts})
	if err != nil || len(res.GetErrors()) != 0 {
		t.Fatalf("SetSessionOptions: %v %v", res, err)
	}
	closed, err := f.client.CloseSession(ctx, &flight.CloseSessionRequest{})
	if err != nil || closed.GetStatus() != flight.CloseSessionResultClosed {
		t.Fatalf("CloseSession: %v %v", closed, err)
	}
	stream, err := f.client.DoAction(ctx, &flight.Action{Type: "CreatePreparedStatement"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("other actions: %v, want Unimplemented", err)
	}
}
