package flightsql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/planner"
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
		if want := withoutPrefixes(err); got.Message() != want {
			t.Errorf("%s: message %q, want the error's text without package prefixes %q", name, got.Message(), want)
		}
	}
	for err, want := range map[error]codes.Code{
		fmt.Errorf("x: %w", context.DeadlineExceeded):                codes.DeadlineExceeded,
		fmt.Errorf("%w: %w", ErrHandle, wire.ErrExpired):             codes.InvalidArgument,
		status.Error(codes.ResourceExhausted, "too big"):             codes.ResourceExhausted,
		fmt.Errorf("w: %w", status.Error(codes.Aborted, "conflict")): codes.Aborted,
		errors.New("plain"): codes.Internal,
		// Out of memory is not the statement's fault, whatever wraps it.
		fmt.Errorf("%w: Out of Memory Error: failed to allocate", planner.ErrInvalid): codes.ResourceExhausted,
		fmt.Errorf("w: %w", status.Error(codes.ResourceExhausted, "queue full")):      codes.ResourceExhausted,
		fmt.Errorf("w: %w", admit.ErrQueueFull):                                       codes.ResourceExhausted,
		admit.TimeoutError(time.Second):                                               codes.DeadlineExceeded,
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
		q, u := "SELECT 1 -- FAIL "+name, "DELETE FROM t -- FAIL "+name
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
		_, err = e.client.ExecuteUpdate(ctx, u)
		if status.Code(err) != want {
			t.Errorf("ExecuteUpdate %s: %v, want %s", name, err, want)
		}
		if got := status.Convert(err).Message(); got != withoutPrefixes(failures[name]) {
			t.Errorf("%s: message %q", name, got)
		}
	}
}

// withoutPrefixes is err's text as clients read it: the sentinels' words
// without their packages' names.
func withoutPrefixes(err error) string {
	return strings.NewReplacer("planner: ", "", "parse: ", "", "catalog: ", "", "flightsql: ", "", "wire: ", "").Replace(err.Error())
}

func TestUserErrorMessage(t *testing.T) {
	err := fmt.Errorf("plan: %w", &planner.UserError{Kind: planner.ErrNotFound, Msg: "table x does not exist; did you mean y?"})
	st := status.Convert(ToStatus(err))
	if st.Code() != codes.NotFound || st.Message() != "table x does not exist; did you mean y?" {
		t.Errorf("UserError: %s %q", st.Code(), st.Message())
	}
}
