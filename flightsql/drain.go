package flightsql

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"

	"github.com/icefloe/icefloe/internal/drain"
	"github.com/icefloe/icefloe/internal/membership"
)

// Defaults of a drain.
const (
	// DefaultDrainGrace is how long statements in flight may run on once
	// a drain begins.
	DefaultDrainGrace = 25 * time.Second
	// DefaultDrainQuiet is how long a drained server keeps answering
	// after its last call ended, and at least after its drain began: for
	// the follow-up calls of the statements it let finish
	// (ClosePreparedStatement, the DoGet of an update's count,
	// CloseSession), and on a worker for the tickets planned on it until
	// the coordinators' health checks (every 500 ms) saw it drain.
	DefaultDrainQuiet = time.Second
)

// followUps are the actions a draining server still answers: they end
// statements or sessions, or tell it about workers, and start nothing.
var followUps = map[string]bool{
	flightsql.ClosePreparedStatementActionType: true,
	flight.CloseSessionActionType:              true,
	flight.CancelFlightInfoActionType:          true,
	"CancelQuery":                              true,
	membership.AnnounceAction:                  true,
}

// drainGate counts the Flight calls in flight and, once draining, refuses
// the ones that would start new work.
type drainGate struct {
	calls    *drain.Calls
	mu       sync.Mutex
	draining bool
}

func newDrainGate() *drainGate { return &drainGate{calls: drain.New()} }

// enter registers a call; refuse says whether the server drains and the
// call may not start new work given the method alone.
func (g *drainGate) enter(ctx context.Context, method string) (context.Context, func(), bool) {
	ctx, end := g.calls.Begin(ctx)
	refuse := false
	if g.isDraining() {
		switch strings.TrimPrefix(method, flightMethodPrefix) {
		case "DoGet", "DoAction", "ListActions":
		default:
			refuse = true
		}
	}
	return ctx, end, refuse
}

func (g *drainGate) isDraining() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.draining
}

func (g *drainGate) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !strings.HasPrefix(info.FullMethod, flightMethodPrefix) {
		return handler(ctx, req)
	}
	ctx, leave, refuse := g.enter(ctx, info.FullMethod)
	defer leave()
	if refuse && !isPollRetry(req) { // the polls of a running statement are follow-ups
		return nil, ToStatus(ErrDraining)
	}
	res, err := handler(ctx, req)
	return res, g.drainErr(ctx, err)
}

func (g *drainGate) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !strings.HasPrefix(info.FullMethod, flightMethodPrefix) {
		return handler(srv, ss)
	}
	ctx, leave, refuse := g.enter(ss.Context(), info.FullMethod)
	defer leave()
	if refuse {
		return ToStatus(ErrDraining)
	}
	err := handler(srv, &gatedStream{ServerStream: ss, ctx: ctx, gate: g})
	return g.drainErr(ctx, err)
}

// drainErr turns the failure of a call the drain cancelled into
// Unavailable.
func (g *drainGate) drainErr(ctx context.Context, err error) error {
	if err != nil && context.Cause(ctx) == errDrainCancelled {
		return ToStatus(errDrainCancelled)
	}
	return err
}

// gatedStream carries the call's cancellable context and, while draining,
// refuses actions that are not follow-ups.
type gatedStream struct {
	grpc.ServerStream
	ctx  context.Context
	gate *drainGate
}

func (s *gatedStream) Context() context.Context { return s.ctx }

func (s *gatedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if a, ok := m.(*flight.Action); ok && !followUps[a.GetType()] && s.gate.isDraining() {
		return ToStatus(ErrDraining)
	}
	return nil
}

// Drain refuses new statements from now on with Unavailable (ErrDraining),
// lets the calls in flight run for up to grace, then cancels the rest,
// which end with Unavailable too. It returns once no call has been in
// flight for quiet (so the follow-ups of the statements that finished
// are answered), or after grace and the cancellations; cancelled is how
// many calls it cancelled.
func (s *Server) Drain(grace, quiet time.Duration) (cancelled int) {
	g := s.gate
	g.mu.Lock()
	g.draining = true
	g.mu.Unlock()
	if g.calls.WaitIdle(time.Now().Add(grace), quiet) {
		return 0
	}
	cancelled = g.calls.CancelAll(errDrainCancelled)
	// The cancelled calls end promptly (a started commit runs to its end).
	g.calls.WaitIdle(time.Now().Add(5*time.Second), 0)
	return cancelled
}
