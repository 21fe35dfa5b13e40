package flightclient

import (
	"errors"
	"strings"
	"testing"

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
