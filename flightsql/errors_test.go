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

func TestCheap(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1":                             true,
		"  select 1 + 2 AS x -- FROM orders":   true,
		"VALUES (1), (2)":                      true,
		"SELECT 'FROM' AS s":                   true,
		"SELECT count(*) FROM orders":          false,
		"SELECT (SELECT max(id) FROM t)":       false,
		"WITH a AS (SELECT 1) SELECT * FROM a": false,
		"SELECT 1; SELECT 2":                   false,
		"INSERT INTO t VALUES (1)":             false,
		"SELECT * INTO t":                      false,
		"SELECT 1 AS \"x\" " + strings.Repeat(" ", cheapTextBytes): false,
	} {
		if got := cheap(q); got != want {
			t.Errorf("cheap(%.40q) = %v, want %v", q, got, want)
		}
	}
}

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
		if got := status.Convert(err).Message(); got != withoutPrefixes(failures[name]) {
			t.Errorf("%s: message %q", name, got)
		}
	}
}

// withoutPrefixes is err's text as clients read it: the sentinels' words
// without their packages' names.
func withoutPrefixes(err error) string {
	return strings.NewReplacer("planner: ", "", "catalog: ", "", "flightsql: ", "", "wire: ", "").Replace(err.Error())
}

func TestUserErrorMessage(t *testing.T) {
	err := fmt.Errorf("plan: %w", &planner.UserError{Kind: planner.ErrNotFound, Msg: "table x does not exist; did you mean y?"})
	st := status.Convert(ToStatus(err))
	if st.Code() != codes.NotFound || st.Message() != "table x does not exist; did you mean y?" {
		t.Errorf("UserError: %s %q", st.Code(), st.Message())
	}
}
