package flightsql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// actionStream is a DoAction server stream that receives one action.
type actionStream struct {
	grpc.ServerStream
	ctx    context.Context
	action string
}

func (s *actionStream) Context() context.Context { return s.ctx }

func (s *actionStream) RecvMsg(m any) error {
	m.(*flight.Action).Type = s.action
	return nil
}

// doAction runs an action of the given type through the gate's stream
// interceptor, with a handler that only reads it.
func doAction(g *drainGate, action string) error {
	ss := &actionStream{ctx: context.Background(), action: action}
	info := &grpc.StreamServerInfo{FullMethod: flightMethodPrefix + "DoAction"}
	return g.stream(nil, ss, info, func(_ any, ss grpc.ServerStream) error {
		return ss.RecvMsg(&flight.Action{})
	})
}

func unaryCall(g *drainGate, method string, handler grpc.UnaryHandler) error {
	_, err := g.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: flightMethodPrefix + method}, handler)
	return err
}

func wantDraining(t *testing.T, what string, err error, phrase string) {
	t.Helper()
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), phrase) {
		t.Fatalf("%s: %v, want Unavailable saying %q", what, err, phrase)
	}
}

// TestDrain: once draining, new statements are refused with Unavailable
// while follow-up calls and the calls in flight go on; a drain whose
// calls end returns after the quiet spell, cancelling nothing.
func TestDrain(t *testing.T) {
	s := &Server{gate: newDrainGate()}
	ok := func(context.Context, any) (any, error) { return nil, nil }
	if err := unaryCall(s.gate, "GetFlightInfo", ok); err != nil {
		t.Fatalf("before the drain: %v", err)
	}
	release, running := make(chan struct{}), make(chan struct{})
	inFlight := make(chan error, 1)
	go func() {
		inFlight <- unaryCall(s.gate, "GetFlightInfo", func(ctx context.Context, _ any) (any, error) {
			close(running)
			<-release
			return nil, ctx.Err()
		})
	}()
	<-running
	drained := make(chan int, 1)
	go func() { drained <- s.Drain(5*time.Second, 100*time.Millisecond) }()
	for !s.gate.isDraining() {
		time.Sleep(time.Millisecond)
	}

	wantDraining(t, "GetFlightInfo while draining", unaryCall(s.gate, "GetFlightInfo", ok), "draining")
	wantDraining(t, "CreatePreparedStatement while draining", doAction(s.gate, flightsql.CreatePreparedStatementActionType), "draining")
	for _, a := range []string{flightsql.ClosePreparedStatementActionType, flight.CloseSessionActionType} {
		if err := doAction(s.gate, a); err != nil {
			t.Fatalf("follow-up %s while draining: %v", a, err)
		}
	}
	// Health checks and other services pass untouched.
	if _, err := s.gate.unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}, ok); err != nil {
		t.Fatalf("health check while draining: %v", err)
	}
	start := time.Now()
	close(release)
	if err := <-inFlight; err != nil {
		t.Fatalf("the call in flight at the drain: %v", err)
	}
	if n := <-drained; n != 0 {
		t.Fatalf("drain cancelled %d calls, want 0", n)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("drain returned %s after the last call, before its quiet spell", took)
	}
}

// TestDrainGracePeriod: a call still running when the grace period ends
// is cancelled and ends with Unavailable naming the grace period.
func TestDrainGracePeriod(t *testing.T) {
	s := &Server{gate: newDrainGate()}
	running := make(chan struct{})
	inFlight := make(chan error, 1)
	go func() {
		inFlight <- unaryCall(s.gate, "GetFlightInfo", func(ctx context.Context, _ any) (any, error) {
			close(running)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}()
	<-running
	if n := s.Drain(200*time.Millisecond, 0); n != 1 {
		t.Fatalf("drain cancelled %d calls, want 1", n)
	}
	wantDraining(t, "a call past the grace period", <-inFlight, "grace period")
}
