package flightsql

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/wire"
)

var wantCodes = map[string]codes.Code{
	"syntax":          codes.InvalidArgument,
	"invalid":         codes.InvalidArgument,
	"notfound":        codes.NotFound,
	"catalog":         codes.NotFound,
	"schema":          codes.NotFound,
	"table":           codes.NotFound,
	"nosuchtable":     codes.NotFound,
	"nosuchnamespace": codes.NotFound,
	"exists":          codes.AlreadyExists,
	"tableexists":     codes.AlreadyExists,
	"nsexists":        codes.AlreadyExists,
	"unsupported":     codes.Unimplemented,
	"refused":         codes.PermissionDenied,
	"noworkers":       codes.Unavailable,
	"canceled":        codes.Canceled,
	"other":           codes.Internal,
}

func TestToStatus(t *testing.T) {
	if ToStatus(nil) != nil {
		t.Error("nil error became a status")
	}
	for name, err := range failures {
		want, ok := wantCodes[name]
		if !ok {
			t.Fatalf("no expected code for %s", name)
		}
		got := status.Convert(ToStatus(err))
		if got.Code() != want {
			t.Errorf("%s: %v → %s, want %s", name, err, got.Code(), want)
		}
		if got.Message() != err.Error() {
			t.Errorf("%s: message %q, want the error's text %q", name, got.Message(), err.Error())
		}
	}
	for err, want := range map[error]codes.Code{
		fmt.Errorf("x: %w", context.DeadlineExceeded):                codes.DeadlineExceeded,
		fmt.Errorf("%w: %w", ErrHandle, wire.ErrExpired):             codes.InvalidArgument,
		status.Error(codes.ResourceExhausted, "too big"):             codes.ResourceExhausted,
		fmt.Errorf("w: %w", status.Error(codes.Aborted, "conflict")): codes.Aborted,
		errors.New("plain"): codes.Internal,
	} {
		if got := status.Code(ToStatus(err)); got != want {
			t.Errorf("%v → %s, want %s", err, got, want)
		}
	}
}

// Each planner error reaches the client with its code, whichever command
// carried it.
func TestErrorCodesOverRPC(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	for name, want := range wantCodes {
		q := "FAIL " + name
		_, err := e.client.Execute(ctx, q)
		if status.Code(err) != want {
			t.Errorf("Execute %s: %v, want %s", name, err, want)
		}
		if want == codes.Canceled {
			continue // the client maps a Canceled status on its own
		}
		_, err = e.client.Prepare(ctx, q)
		if status.Code(err) != want {
			t.Errorf("Prepare %s: %v, want %s", name, err, want)
		}
		_, err = e.client.ExecuteUpdate(ctx, q)
		if status.Code(err) != want {
			t.Errorf("ExecuteUpdate %s: %v, want %s", name, err, want)
		}
		if got := status.Convert(err).Message(); got != failures[name].Error() {
			t.Errorf("%s: message %q", name, got)
		}
	}
}
