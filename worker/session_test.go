package worker

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/wire"
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
}

// Actions the worker refuses keep their codes and messages.
func TestRefusedActions(t *testing.T) {
	f := newFixture(t)
	other, err := wire.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	foreign, _, err := membership.NewChallenge(other)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		typ  string
		body []byte
		code codes.Code
		msg  string
	}{
		{"CreatePreparedStatement", nil, codes.Unimplemented, `worker: action "CreatePreparedStatement" is served by the coordinator`},
		{flight.SetSessionOptionsActionType, []byte{0xff}, codes.InvalidArgument, "unable to unmarshal SetSessionOptionsRequest: "},
		{membership.KeyCheckAction, foreign, codes.PermissionDenied, membership.ErrKeyMismatch.Error()},
		{membership.KeyCheckAction, []byte("not sealed"), codes.InvalidArgument, membership.ErrMalformed.Error() + ": "},
	} {
		_, err := flightclient.DoAction(context.Background(), f.client, c.typ, c.body)
		st, _ := status.FromError(err)
		if st.Code() != c.code || !strings.HasPrefix(st.Message(), c.msg) {
			t.Errorf("%s: %v, want %s %q", c.typ, err, c.code, c.msg)
		}
	}
}
