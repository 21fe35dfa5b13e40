package tracing

import (
	"context"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// holder is where a call's statement or fragment span leaves its trace id,
// for the interceptor that annotates the call's error.
type holder struct{ id atomic.Pointer[trace.TraceID] }

type holderKey struct{}

func remember(ctx context.Context, sc trace.SpanContext) {
	if h, ok := ctx.Value(holderKey{}).(*holder); ok && sc.HasTraceID() {
		id := sc.TraceID()
		h.id.CompareAndSwap(nil, &id)
	}
}

// metadataCarrier adapts gRPC metadata to the propagator.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// ServerOptions are the interceptors of a traced listener: the caller's
// traceparent (call metadata) becomes the parent of the spans the call
// starts, and an error the call returns names its trace, "… (trace
// 4bf92f3577b34da6a3ce929d0e0e4736)". Without tracing there are none.
func ServerOptions() []grpc.ServerOption {
	if !Enabled() {
		return nil
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unaryServer), grpc.ChainStreamInterceptor(streamServer)}
}

func incoming(ctx context.Context) (context.Context, *holder) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = w3c.Extract(ctx, metadataCarrier(md))
	}
	h := &holder{}
	return context.WithValue(ctx, holderKey{}, h), h
}

func unaryServer(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, h := incoming(ctx)
	resp, err := handler(ctx, req)
	return resp, annotate(h, err)
}

func streamServer(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, h := incoming(ss.Context())
	return annotate(h, handler(srv, &serverStream{ServerStream: ss, ctx: ctx}))
}

type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }

// annotate adds the trace id to err's status message, once: an error a
// peer's fragment returned already names the same trace.
func annotate(h *holder, err error) error {
	id := h.id.Load()
	if err == nil || id == nil {
		return err
	}
	st, _ := status.FromError(err)
	if st.Code() == codes.OK {
		return err
	}
	suffix := "(trace " + id.String() + ")"
	if strings.Contains(st.Message(), suffix) {
		return err
	}
	p := st.Proto()
	p.Message += " " + suffix
	return status.FromProto(p).Err()
}

// DialOptions are the interceptors of a traced client: each call carries
// the span of its context as a traceparent. Without tracing there are
// none.
func DialOptions() []grpc.DialOption {
	if !Enabled() {
		return nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unaryClient), grpc.WithChainStreamInterceptor(streamClient)}
}

func outgoing(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	w3c.Inject(ctx, metadataCarrier(md))
	return metadata.NewOutgoingContext(ctx, md)
}

func unaryClient(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(outgoing(ctx), method, req, reply, cc, opts...)
}

func streamClient(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(outgoing(ctx), desc, cc, method, opts...)
}
