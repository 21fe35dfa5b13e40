package streamidle

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Key is the config key of the idle timeout, named in the error a cut
// stream ends with.
const Key = "limits.stream_idle_timeout"

// DefaultTimeout is the idle timeout when the config sets none.
const DefaultTimeout = 5 * time.Minute

// ErrIdle is the cause of a cut stream's context.
var ErrIdle = errors.New("streamidle: stream idle timeout")

// Options configure the cut.
type Options struct {
	// Timeout is how long one Send or Recv may block; 0 or less cuts
	// nothing.
	Timeout time.Duration
	// OnCut, when set, is told of every cut stream: its method and
	// whether it waited to send (the client did not read) or to receive
	// (the client did not send).
	OnCut func(method string, sending bool)
}

// Interceptor returns the stream interceptor that applies o. It belongs
// innermost in the chain, next to the handler, so that interceptors
// around it see the cut's status.
func Interceptor(o Options) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if o.Timeout <= 0 {
			return handler(srv, ss)
		}
		return watch(o, srv, ss, info, handler)
	}
}

// watched is a server stream whose blocking calls are timed.
type watched struct {
	grpc.ServerStream
	ctx context.Context
	// since is when the Send or Recv under way began, in Unix
	// nanoseconds; 0 when none is.
	since   atomic.Int64
	sending atomic.Bool
}

func (w *watched) Context() context.Context { return w.ctx }

func (w *watched) SendMsg(m any) error {
	w.sending.Store(true)
	w.since.Store(time.Now().UnixNano())
	defer w.since.Store(0)
	return w.ServerStream.SendMsg(m)
}

func (w *watched) RecvMsg(m any) error {
	w.sending.Store(false)
	w.since.Store(time.Now().UnixNano())
	defer w.since.Store(0)
	return w.ServerStream.RecvMsg(m)
}

// watch runs the handler in a goroutine of its own and returns when it
// does, or when one of its Sends or Recvs blocked for o.Timeout. Then it
// cancels the handler's context and returns the cut's status: gRPC ends
// the stream, which wakes the blocked call, so the handler returns soon
// after.
func watch(o Options, srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, cancel := context.WithCancelCause(ss.Context())
	defer cancel(nil)
	w := &watched{ServerStream: ss, ctx: ctx}
	done := make(chan error, 1)
	go func() { done <- handler(srv, w) }()
	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-timer.C:
		}
		since := w.since.Load()
		if since == 0 {
			timer.Reset(o.Timeout)
			continue
		}
		if left := time.Until(time.Unix(0, since).Add(o.Timeout)); left > 0 {
			timer.Reset(left)
			continue
		}
		sending := w.sending.Load()
		cancel(ErrIdle)
		if o.OnCut != nil {
			o.OnCut(info.FullMethod, sending)
		}
		return cutStatus(o.Timeout, sending)
	}
}

// cutStatus is what the client of a cut stream reads.
func cutStatus(timeout time.Duration, sending bool) error {
	what := "the client read nothing"
	if !sending {
		what = "the client sent nothing"
	}
	return status.Error(codes.DeadlineExceeded, fmt.Sprintf("stream idle timeout: %s for %s, so the server ended the stream (limit key %s)", what, timeout, Key))
}
